//! Shared pieces of the partitioned-model tests: the test graph, the whole-graph run, the
//! gradient reader and the largest difference.
#![allow(dead_code)]

use burn::backend::{Autodiff, NdArray};
use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor};
use burn_sparse_gnn::random::{random_csr, RandomGraphSpec};
use burn_sparse_gnn::{BuildOptions, Csr, Graph, GraphOptions};
use gnn_models::GnnModel;

pub type B = Autodiff<NdArray<f64, i64>>;

/// The CPU backend's random generator is process-global: the tests take turns.
pub static RNG: std::sync::Mutex<()> = std::sync::Mutex::new(());
pub const N: usize = 157;
pub const D_IN: usize = 7;
pub const CLASSES: usize = 4;

/// A square graph with a hub, empty rows, self-loops and duplicates, made symmetric.
pub fn graph(seed: u64) -> Csr {
    let r = random_csr(&RandomGraphSpec {
        n_rows: N,
        n_cols: N,
        avg_degree: 4,
        hub_degree: 300,
        empty_fraction: 0.1,
        self_loops: true,
        duplicates: true,
        seed,
    });
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    for i in 0..N {
        for &j in &r.col_idx()[r.row_ptr()[i]..r.row_ptr()[i + 1]] {
            src.push(j as i64);
            dst.push(i as i64);
        }
    }
    Csr::from_edges(N, &src, &dst, None, BuildOptions { symmetrize: true, add_self_loops: false, dedup: false })
        .expect("valid graph")
}

/// Every parameter's gradient (empty where it has none), in the model's order.
pub struct Grads<'a> {
    pub grads: &'a <B as burn::tensor::backend::AutodiffBackend>::Gradients,
    pub out: Vec<Vec<f64>>,
}

impl ModuleVisitor<B> for Grads<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let g = param.val().grad(self.grads).map(|g| g.into_data().to_vec::<f64>().expect("f64")).unwrap_or_default();
        self.out.push(g);
    }
}

/// A model's loss, logits (per node) and parameter gradients on a graph.
pub struct Run {
    pub loss: f64,
    pub logits: Vec<f64>,
    pub grads: Vec<Vec<f64>>,
}

/// `model` on the whole graph `adj` (dropout drawn after seeding with `seed`): the weighted
/// cross-entropy `-sum_i w_i log p_i[y_i]` of the inputs `x`, labels `y` and weights `w`, its
/// logits and its gradients.
pub fn whole(
    model: &GnnModel<B>,
    adj: &Csr,
    (x, y, w): (Tensor<B, 2>, Tensor<B, 1, Int>, Tensor<B, 1>),
    seed: u64,
) -> Run {
    let dev = x.device();
    let g = Graph::<B>::new(adj, &dev, GraphOptions::default());
    B::seed(&dev, seed);
    let logits = model.forward(&g, x);
    let logp = burn::tensor::activation::log_softmax(logits.clone(), 1);
    let loss = (logp.gather(1, y.unsqueeze_dim::<2>(1)).squeeze_dim::<1>(1) * w).sum().neg();
    let grads = loss.backward();
    let mut v = Grads { grads: &grads, out: Vec::new() };
    model.visit(&mut v);
    Run { loss: loss.into_scalar(), logits: logits.into_data().to_vec::<f64>().expect("f64"), grads: v.out }
}

/// The largest absolute difference of two equally long lists.
pub fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "lengths differ");
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}
