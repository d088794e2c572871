//! Attention over the edges: SDDMM and the edge softmax, as a backend trait and tensor-level ops.

mod autodiff;
mod cube;
mod host;

use crate::error::OpError;
use crate::graph::Graph;
use crate::ops::args::expect_rows;
use crate::ops::args::float;
use crate::ops::args::wrap;
use crate::ops::primitive::CsrPrimitive;
use crate::ops::primitive::GraphPrimitive;
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::Tensor;

/// Attention over the edges: SDDMM and the edge softmax.
///
/// Part of [`crate::backend::SparseGnnBackend`] (see its conventions).
pub trait AttentionOps: Backend {
    /// `out[e, h] = <a[row e, head h], b[col e, head h]>`, `[nnz, heads]`.
    fn sddmm(csr: &CsrPrimitive<Self>, a: FloatTensor<Self>, b: FloatTensor<Self>, heads: usize) -> FloatTensor<Self>;

    /// Softmax of `scores` (`[nnz, heads]`) over the edges of each row, max-subtracted.
    fn edge_softmax(csr: &CsrPrimitive<Self>, scores: FloatTensor<Self>) -> FloatTensor<Self>;

    /// Backward of [`Self::edge_softmax`] from its output `y` and gradient `dy`.
    fn edge_softmax_grad(csr: &CsrPrimitive<Self>, y: FloatTensor<Self>, dy: FloatTensor<Self>) -> FloatTensor<Self>;

    /// Differentiable [`Self::sddmm`].
    fn ad_sddmm(
        g: &GraphPrimitive<Self>,
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
        heads: usize,
    ) -> FloatTensor<Self> {
        Self::sddmm(&g.csr, a, b, heads)
    }

    /// Differentiable [`Self::edge_softmax`].
    fn ad_edge_softmax(g: &GraphPrimitive<Self>, scores: FloatTensor<Self>) -> FloatTensor<Self> {
        Self::edge_softmax(&g.csr, scores)
    }
}

/// SDDMM per head: `out[e, h] = <a[row e, head h], b[col e, head h]>`, `[nnz, heads]`.
pub fn try_sddmm<B: AttentionOps>(
    g: &Graph<B>,
    a: Tensor<B, 2>,
    b: Tensor<B, 2>,
    heads: usize,
) -> Result<Tensor<B, 2>, OpError> {
    let (da, db) = (a.dims(), b.dims());
    expect_rows("sddmm", "a", &da, g.n_rows())?;
    expect_rows("sddmm", "b", &db, g.n_cols())?;
    if da[1] != db[1] {
        return Err(OpError::Shape {
            op: "sddmm",
            what: "b",
            got: db.to_vec(),
            expected: format!("[{}, {}]", g.n_cols(), da[1]),
        });
    }
    if heads == 0 || da[1] % heads != 0 {
        return Err(OpError::Heads { op: "sddmm", heads, width: da[1] });
    }
    Ok(wrap(B::ad_sddmm(g.prim(), float(a), float(b), heads)))
}

/// SDDMM: `out[e] = <a[row e], b[col e]>` (one head).
pub fn sddmm<B: AttentionOps>(g: &Graph<B>, a: Tensor<B, 2>, b: Tensor<B, 2>) -> Tensor<B, 1> {
    let out = try_sddmm(g, a, b, 1).unwrap_or_else(|e| panic!("{e}"));
    let n = out.dims()[0];
    out.reshape([n])
}

/// Multi-head SDDMM (see [`try_sddmm`]).
pub fn sddmm_heads<B: AttentionOps>(g: &Graph<B>, a: Tensor<B, 2>, b: Tensor<B, 2>, heads: usize) -> Tensor<B, 2> {
    try_sddmm(g, a, b, heads).unwrap_or_else(|e| panic!("{e}"))
}

/// Edge softmax of `scores` (`[nnz, heads]`) over each row's edges, max-subtracted.
pub fn try_edge_softmax<B: AttentionOps>(g: &Graph<B>, scores: Tensor<B, 2>) -> Result<Tensor<B, 2>, OpError> {
    let d = scores.dims();
    if d[0] != g.num_edges() || d[1] == 0 {
        return Err(OpError::Shape {
            op: "edge_softmax",
            what: "scores",
            got: d.to_vec(),
            expected: format!("[{}, heads]", g.num_edges()),
        });
    }
    Ok(wrap(B::ad_edge_softmax(g.prim(), float(scores))))
}

/// Edge softmax (see [`try_edge_softmax`]).
pub fn edge_softmax<B: AttentionOps>(g: &Graph<B>, scores: Tensor<B, 2>) -> Tensor<B, 2> {
    try_edge_softmax(g, scores).unwrap_or_else(|e| panic!("{e}"))
}
