//! Attention over the edges: SDDMM, the edge softmax and GAT's fused attention coefficients, as a
//! backend trait and tensor-level ops.

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

/// Attention over the edges: SDDMM, the edge softmax and GAT's attention coefficients.
///
/// Part of [`crate::backend::SparseGnnBackend`] (see its conventions).
pub trait AttentionOps: Backend {
    /// `out[e, h] = <a[row e, head h], b[col e, head h]>`, `[nnz, heads]`.
    fn sddmm(csr: &CsrPrimitive<Self>, a: FloatTensor<Self>, b: FloatTensor<Self>, heads: usize) -> FloatTensor<Self>;

    /// Softmax of `scores` (`[nnz, heads]`) over the edges of each row, max-subtracted.
    fn edge_softmax(csr: &CsrPrimitive<Self>, scores: FloatTensor<Self>) -> FloatTensor<Self>;

    /// Backward of [`Self::edge_softmax`] from its output `y` and gradient `dy`.
    fn edge_softmax_grad(csr: &CsrPrimitive<Self>, y: FloatTensor<Self>, dy: FloatTensor<Self>) -> FloatTensor<Self>;

    /// GAT's attention coefficients, `[nnz, heads]`: per head, the softmax over each row's edges
    /// of `leaky_relu(s_dst[row e] + s_src[col e], negative_slope)`, from `s_dst` (`[n_rows,
    /// heads]`) and `s_src` (`[n_cols, heads]`) of one float type, which the output takes.
    fn gat_attention(
        csr: &CsrPrimitive<Self>,
        s_dst: FloatTensor<Self>,
        s_src: FloatTensor<Self>,
        negative_slope: f64,
    ) -> FloatTensor<Self>;

    /// Backward of [`Self::gat_attention`] from its inputs, its output `alpha` and the output's
    /// gradient: `(d_s_dst, d_s_src)`. The scores are recomputed, not stored.
    fn gat_attention_grad(
        g: &GraphPrimitive<Self>,
        s_dst: FloatTensor<Self>,
        s_src: FloatTensor<Self>,
        alpha: FloatTensor<Self>,
        d_alpha: FloatTensor<Self>,
        negative_slope: f64,
    ) -> (FloatTensor<Self>, FloatTensor<Self>);

    /// Differentiable [`Self::gat_attention`]: its backward keeps only the output and the two
    /// `[nodes, heads]` inputs.
    fn ad_gat_attention(
        g: &GraphPrimitive<Self>,
        s_dst: FloatTensor<Self>,
        s_src: FloatTensor<Self>,
        negative_slope: f64,
    ) -> FloatTensor<Self> {
        Self::gat_attention(&g.csr, s_dst, s_src, negative_slope)
    }

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

/// GAT's attention coefficients in one op: per head `h`, the softmax over each row's edges of
/// `leaky_relu(s_dst[row, h] + s_src[col, h], negative_slope)`, `[nnz, heads]`.
///
/// `s_dst` is `[n_rows, heads]`, `s_src` `[n_cols, heads]`, of the same float type, which the
/// output takes (half precision inputs: f32 arithmetic, half storage). It computes what
/// `edge_softmax(leaky_relu(sddmm_heads(g, [s_dst, 1], [1, s_src], heads)))` does, but neither
/// the scores nor the activation's mask are stored for the backward, which recomputes them from
/// the two `[nodes, heads]` inputs: of the `[edges, heads]` tensors only the output is kept.
///
/// ```
/// use burn::backend::NdArray;
/// use burn::tensor::Tensor;
/// use burn_sparse_gnn::graph::csr::{BuildOptions, Csr};
/// use burn_sparse_gnn::graph::{Graph, GraphOptions};
/// use burn_sparse_gnn::ops::try_gat_attention;
///
/// let dev = Default::default();
/// // node 0 attends to 1 and 2, node 1 to 0
/// let csr = Csr::from_edges(3, &[1, 2, 0], &[0, 0, 1], None, BuildOptions::default()).unwrap();
/// let g = Graph::<NdArray>::new(&csr, &dev, GraphOptions::default());
/// let s_dst = Tensor::<NdArray, 2>::from_floats([[0.5], [0.0], [1.0]], &dev);
/// let s_src = Tensor::<NdArray, 2>::from_floats([[1.0], [2.0], [-3.0]], &dev);
/// let alpha = try_gat_attention(&g, s_dst, s_src, 0.2).unwrap();
/// let a: Vec<f32> = alpha.into_data().into_vec().unwrap();
/// // row 0: softmax of leaky(0.5 + 2), leaky(0.5 - 3) = 2.5, -0.5; row 1: one edge
/// let want = 1.0 / (1.0 + (-3.0f32).exp());
/// assert!((a[0] - want).abs() < 1e-6 && (a[0] + a[1] - 1.0).abs() < 1e-6 && a[2] == 1.0);
/// ```
pub fn try_gat_attention<B: AttentionOps>(
    g: &Graph<B>,
    s_dst: Tensor<B, 2>,
    s_src: Tensor<B, 2>,
    negative_slope: f64,
) -> Result<Tensor<B, 2>, OpError> {
    let (dd, ds) = (s_dst.dims(), s_src.dims());
    expect_rows("gat_attention", "s_dst", &dd, g.n_rows())?;
    expect_rows("gat_attention", "s_src", &ds, g.n_cols())?;
    if dd[1] == 0 || ds[1] != dd[1] {
        return Err(OpError::Shape {
            op: "gat_attention",
            what: "s_src",
            got: ds.to_vec(),
            expected: format!("[{}, {}] with at least one head", g.n_cols(), dd[1]),
        });
    }
    if dd[1] > sparse_gnn_kernels::attention::kernel::MAX_HEADS {
        return Err(OpError::Config {
            op: "gat_attention",
            msg: format!("{} heads; at most {} are supported", dd[1], sparse_gnn_kernels::attention::kernel::MAX_HEADS),
        });
    }
    if s_dst.dtype() != s_src.dtype() {
        return Err(OpError::Config {
            op: "gat_attention",
            msg: format!("s_dst is {:?} but s_src is {:?}; both need one float type", s_dst.dtype(), s_src.dtype()),
        });
    }
    Ok(wrap(B::ad_gat_attention(g.prim(), float(s_dst), float(s_src), negative_slope)))
}

/// GAT's attention coefficients (see [`try_gat_attention`]).
pub fn gat_attention<B: AttentionOps>(
    g: &Graph<B>,
    s_dst: Tensor<B, 2>,
    s_src: Tensor<B, 2>,
    negative_slope: f64,
) -> Tensor<B, 2> {
    try_gat_attention(g, s_dst, s_src, negative_slope).unwrap_or_else(|e| panic!("{e}"))
}
