//! Shared pieces of the partitioned-model tests: the test graph, the gradient reader and the
//! largest difference.
#![allow(dead_code)]

use burn::backend::{Autodiff, NdArray};
use burn::module::{ModuleVisitor, Param};
use burn::tensor::Tensor;
use burn_sparse_gnn::random::{random_csr, RandomGraphSpec};
use burn_sparse_gnn::{BuildOptions, Csr};

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

/// The largest absolute difference of two equally long lists.
pub fn max_diff(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len(), "lengths differ");
    a.iter().zip(b).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}
