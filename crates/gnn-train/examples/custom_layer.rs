//! A graph layer written from the sparse ops, with a check of its backward pass.
//!
//! `out_i = sum_{j -> i} softmax_j(<x_i, x_j>) * x_j W`: dot-product attention over each node's
//! in-edges (SDDMM for the scores, edge softmax over each row, weighted SpMM), then a linear
//! map. Autodiff differentiates through the ops' hand-written backward passes; `main` compares
//! the gradient of a scalar loss with central finite differences in f64 on the CPU backend.
//!
//! `cargo run --release -p gnn-train --example custom_layer`

use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use burn_sparse_gnn::random::{random_csr, random_values, RandomGraphSpec};
use burn_sparse_gnn::{ops, Graph, GraphOptions, Reduce, SparseGnnBackend};

type B = Autodiff<NdArray<f64, i64>>;

/// The layer: attention weights from the features, then aggregation and a linear map.
fn attention_layer<B: SparseGnnBackend>(g: &Graph<B>, x: Tensor<B, 2>, w: Tensor<B, 2>) -> Tensor<B, 2> {
    let scores = ops::sddmm_heads(g, x.clone(), x.clone(), 1); // [edges, 1]
    let alpha = ops::edge_softmax(g, scores);
    ops::spmm_heads(g, alpha, x, Reduce::Sum).matmul(w)
}

fn main() {
    let dev = Default::default();
    let (n, d, out) = (60, 5, 3);
    let adj = random_csr(&RandomGraphSpec {
        n_rows: n,
        n_cols: n,
        avg_degree: 4,
        hub_degree: 30,
        seed: 2,
        ..Default::default()
    });
    let g = Graph::<B>::new(&adj, &dev, GraphOptions::default());
    let xv = random_values(n * d, 1);
    let w = Tensor::<B, 2>::from_data(TensorData::new(random_values(d * out, 2), [d, out]), &dev);
    let loss_of = |xv: &[f64]| -> Tensor<B, 1> {
        let x = Tensor::<B, 2>::from_data(TensorData::new(xv.to_vec(), [n, d]), &dev).require_grad();
        attention_layer(&g, x, w.clone()).powf_scalar(2.0).sum()
    };
    // the analytic gradient through the ops' backward passes
    let x = Tensor::<B, 2>::from_data(TensorData::new(xv.clone(), [n, d]), &dev).require_grad();
    let loss = attention_layer(&g, x.clone(), w.clone()).powf_scalar(2.0).sum();
    let grads = loss.backward();
    let analytic = x.grad(&grads).expect("x takes part in the loss").into_data().to_vec::<f64>().expect("f64");
    // central differences on a few inputs
    let h = 1e-6;
    let mut worst = 0.0f64;
    for k in (0..n * d).step_by(37) {
        let (mut up, mut down) = (xv.clone(), xv.clone());
        up[k] += h;
        down[k] -= h;
        let numeric = (loss_of(&up).into_scalar() - loss_of(&down).into_scalar()) / (2.0 * h);
        worst = worst.max((numeric - analytic[k]).abs() / numeric.abs().max(1.0));
    }
    println!("largest relative difference between the analytic and numeric gradient: {worst:.2e}");
    assert!(worst < 1e-5, "the backward pass disagrees with finite differences");
    let _ = <B as Backend>::name(&dev);
}
