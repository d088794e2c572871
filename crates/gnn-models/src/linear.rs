//! Dense linear transforms over all nodes of a graph.
//!
//! A GNN's linear layers multiply an `[n, d_in]` node matrix (n in the hundreds of thousands or
//! millions) by a small `[d_in, d_out]` weight. The weight gradient of that product is
//! `x^T dy`: a `[d_in, d_out]` output with a reduction over all `n` rows, which a tiled matmul
//! kernel gives to only `(d_in / tile) * (d_out / tile)` cubes. [`linear`] and [`add_bias`] run
//! through `burn_sparse_gnn`'s ops, whose products use cuBLAS on CUDA and split the reduction
//! over row chunks on Burn's matmul elsewhere (`burn_sparse_gnn::dense`).

use burn::nn::Linear;
use burn::tensor::Tensor;

/// `y + b` with the bias `b` broadcast over the `n` rows of `y` ([`burn_sparse_gnn::ops::add_bias`]).
///
/// The gradient of a broadcast bias is a column sum of `dy` over all rows; Burn computes it as
/// a reduction along the strided axis, which ran at under 10 GB/s on the H200 (28 ms for a
/// `[232965, 256]` f32 gradient). The op computes it as the product `ones^T dy` and passes
/// `dy` on to `y` as it is. (The same product composed from Burn's tensor ops, `y + ones[n, 1]
/// @ b[1, d]`, keeps one `[n, d]` tensor per layer alive until the end of the backward pass.)
pub fn add_bias<B: burn_sparse_gnn::SparseGnnBackend>(y: Tensor<B, 2>, b: Tensor<B, 1>) -> Tensor<B, 2> {
    burn_sparse_gnn::ops::add_bias(y, b)
}

/// A Burn [`Linear`] applied to an `[n, d_in]` node matrix in full precision with `math` (exact
/// f32 or TF32; [`burn_sparse_gnn::ops::linear`]: cuBLAS on CUDA).
pub fn linear<B: burn_sparse_gnn::SparseGnnBackend>(
    lin: &Linear<B>,
    x: Tensor<B, 2>,
    math: burn_sparse_gnn::dense::ProductMath,
) -> Tensor<B, 2> {
    let precision = match math {
        burn_sparse_gnn::dense::ProductMath::F32 => burn_sparse_gnn::dense::LinearPrecision::F32,
        burn_sparse_gnn::dense::ProductMath::Tf32 => burn_sparse_gnn::dense::LinearPrecision::Tf32,
    };
    burn_sparse_gnn::ops::linear(x, lin.weight.val(), lin.bias.as_ref().map(|b| b.val()), precision)
}
