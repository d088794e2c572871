//! Neighbour aggregation: SpMM (sum / mean / max; weighted; multi-head) and ES-SpMM sampled
//! aggregation, as a backend trait and tensor-level ops.

mod autodiff;
mod cube;
mod host;

use crate::error::OpError;
use crate::graph::Graph;
use crate::ops::args::check_weights;
use crate::ops::args::expect_rows;
use crate::ops::args::float;
use crate::ops::args::wrap;
use crate::ops::primitive::CsrPrimitive;
use crate::ops::primitive::GraphPrimitive;
use crate::ops::primitive::Reduce;
use crate::ops::primitive::SampleSpec;
use crate::ops::primitive::SpmmOutput;
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::ops::IntTensor;
use burn::tensor::Tensor;

/// Neighbour aggregation: SpMM (sum / mean / max, weighted, multi-head), its max-reduce gradients and ES-SpMM sampled aggregation.
///
/// Part of [`crate::backend::SparseGnnBackend`] (see its conventions).
pub trait AggregationOps: Backend {
    /// `out[i] = reduce_{e in row i} w[e] * x[col e]` (see [`Reduce`]).
    fn spmm(
        csr: &CsrPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        x: FloatTensor<Self>,
        reduce: Reduce,
    ) -> SpmmOutput<Self>;

    /// Max-reduce gradient for `x`: `dx[j, c] = sum_{e=(i,j): argmax[i,c]=e} w[e] dout[i, c]`,
    /// computed over the transpose (no atomics).
    fn spmm_max_grad_x(
        g: &GraphPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        dout: FloatTensor<Self>,
        argmax: IntTensor<Self>,
    ) -> FloatTensor<Self>;

    /// Max-reduce gradient for the edge weights (`[nnz, heads]`).
    fn spmm_max_grad_w(
        csr: &CsrPrimitive<Self>,
        heads: usize,
        dout: FloatTensor<Self>,
        x: FloatTensor<Self>,
        argmax: IntTensor<Self>,
    ) -> FloatTensor<Self>;

    /// Per-edge scale of a sampled aggregation (`[nnz]`, dtype of `like`): 0 if the edge is
    /// not sampled, 1 (sum) or `1 / kept` (mean) otherwise.
    fn edge_sample_scale(
        csr: &CsrPrimitive<Self>,
        spec: SampleSpec,
        reduce: Reduce,
        like: &FloatTensor<Self>,
    ) -> FloatTensor<Self>;

    /// ES-SpMM: SpMM over at most `spec.width` sampled edges per row, normalised by the
    /// sampled count for [`Reduce::Mean`].
    fn sampled_spmm(
        csr: &CsrPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        x: FloatTensor<Self>,
        spec: SampleSpec,
        reduce: Reduce,
    ) -> FloatTensor<Self>;

    /// Differentiable [`Self::spmm`] (gradients for `x` and `w`).
    fn ad_spmm(
        g: &GraphPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        x: FloatTensor<Self>,
        reduce: Reduce,
    ) -> FloatTensor<Self> {
        Self::spmm(&g.csr, w, x, reduce).out
    }

    /// Differentiable [`Self::sampled_spmm`]: the backward uses the same sample.
    fn ad_sampled_spmm(
        g: &GraphPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        x: FloatTensor<Self>,
        spec: SampleSpec,
        reduce: Reduce,
    ) -> FloatTensor<Self> {
        Self::sampled_spmm(&g.csr, w, x, spec, reduce)
    }
}

/// SpMM with optional edge weights `w` (`[nnz]` or `[nnz, heads]`, heads dividing the width).
pub fn try_spmm<B: AggregationOps>(
    g: &Graph<B>,
    w: Option<Tensor<B, 2>>,
    x: Tensor<B, 2>,
    reduce: Reduce,
) -> Result<Tensor<B, 2>, OpError> {
    let dims = x.dims();
    expect_rows("spmm", "x", &dims, g.n_cols())?;
    if let Some(w) = &w {
        check_weights("spmm", &w.dims(), g.num_edges(), dims[1])?;
    }
    Ok(wrap(B::ad_spmm(g.prim(), w.map(float), float(x), reduce)))
}

/// `out[i] = reduce_{j -> i} x[j]` over the graph's edges. Panics on a shape mismatch (see
/// [`try_spmm`]).
pub fn spmm<B: AggregationOps>(g: &Graph<B>, x: Tensor<B, 2>, reduce: Reduce) -> Tensor<B, 2> {
    try_spmm(g, None, x, reduce).unwrap_or_else(|e| panic!("{e}"))
}

/// `out[i] = reduce_{e=(j -> i)} w[e] * x[j]` with one weight per edge.
pub fn spmm_weighted<B: AggregationOps>(
    g: &Graph<B>,
    w: Tensor<B, 1>,
    x: Tensor<B, 2>,
    reduce: Reduce,
) -> Tensor<B, 2> {
    try_spmm(g, Some(w.unsqueeze_dim(1)), x, reduce).unwrap_or_else(|e| panic!("{e}"))
}

/// Multi-head weighted SpMM: `w` is `[nnz, heads]`, head `h` scales features
/// `h * f / heads .. (h + 1) * f / heads` (what GAT's attention aggregation needs).
pub fn spmm_heads<B: AggregationOps>(g: &Graph<B>, w: Tensor<B, 2>, x: Tensor<B, 2>, reduce: Reduce) -> Tensor<B, 2> {
    try_spmm(g, Some(w), x, reduce).unwrap_or_else(|e| panic!("{e}"))
}

/// ES-SpMM: aggregation over at most `spec.width` edges per row (Bucket or FastRand, seeded),
/// normalised by the sampled count for [`Reduce::Mean`]. Gradients use the same sample.
pub fn try_sampled_spmm<B: AggregationOps>(
    g: &Graph<B>,
    w: Option<Tensor<B, 2>>,
    x: Tensor<B, 2>,
    spec: SampleSpec,
    reduce: Reduce,
) -> Result<Tensor<B, 2>, OpError> {
    let dims = x.dims();
    expect_rows("sampled_spmm", "x", &dims, g.n_cols())?;
    if spec.width == 0 {
        return Err(OpError::Config { op: "sampled_spmm", msg: "sample width must be >= 1".into() });
    }
    if reduce == Reduce::Max {
        return Err(OpError::Config { op: "sampled_spmm", msg: "sampled aggregation supports sum and mean".into() });
    }
    if let Some(w) = &w {
        check_weights("sampled_spmm", &w.dims(), g.num_edges(), dims[1])?;
    }
    Ok(wrap(B::ad_sampled_spmm(g.prim(), w.map(float), float(x), spec, reduce)))
}

/// Sampled SpMM without weights (see [`try_sampled_spmm`]).
pub fn sampled_spmm<B: AggregationOps>(
    g: &Graph<B>,
    x: Tensor<B, 2>,
    spec: SampleSpec,
    reduce: Reduce,
) -> Tensor<B, 2> {
    try_sampled_spmm(g, None, x, spec, reduce).unwrap_or_else(|e| panic!("{e}"))
}
