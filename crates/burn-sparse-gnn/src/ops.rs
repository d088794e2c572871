//! Tensor-level sparse operations: what models call. Each function dispatches to
//! [`SparseGnnBackend`], is differentiable on `Autodiff<B>`, and has a `try_` form that
//! returns an [`OpError`] instead of panicking on bad arguments.

use crate::backend::{CbsrPrim, PoolSpec, Reduce, SampleSpec, SparseGnnBackend};
use crate::error::OpError;
use crate::graph::Graph;
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorPrimitive};
use sparse_gnn_kernels::config::KernelConfig;

fn float<B: Backend, const D: usize>(t: Tensor<B, D>) -> burn::tensor::ops::FloatTensor<B> {
    t.into_primitive().tensor()
}

fn wrap<B: Backend, const D: usize>(t: burn::tensor::ops::FloatTensor<B>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(t))
}

fn expect_rows(op: &'static str, what: &'static str, dims: &[usize], rows: usize) -> Result<(), OpError> {
    if dims[0] != rows {
        return Err(OpError::Shape { op, what, got: dims.to_vec(), expected: format!("[{rows}, _]") });
    }
    Ok(())
}

fn check_weights(op: &'static str, dims: &[usize], nnz: usize, width: usize) -> Result<usize, OpError> {
    let heads = if dims.len() == 1 { 1 } else { dims[1] };
    if dims[0] != nnz || dims.len() > 2 {
        return Err(OpError::Shape {
            op,
            what: "edge weights",
            got: dims.to_vec(),
            expected: format!("[{nnz}] or [{nnz}, heads]"),
        });
    }
    if heads == 0 || width % heads != 0 {
        return Err(OpError::Heads { op, heads, width });
    }
    Ok(heads)
}

/// A CBSR matrix: `k` (value, column) entries per row of a `dim`-wide matrix, as MaxK and
/// k-max-pooling produce. Its values are differentiable.
#[derive(Clone, Debug)]
pub struct Cbsr<B: Backend> {
    prim: CbsrPrim<B>,
}

impl<B: SparseGnnBackend> Cbsr<B> {
    /// Wraps a primitive.
    pub fn from_prim(prim: CbsrPrim<B>) -> Self {
        Self { prim }
    }
    /// The primitive.
    pub fn prim(&self) -> &CbsrPrim<B> {
        &self.prim
    }
    /// `[n, k]` values.
    pub fn values(&self) -> Tensor<B, 2> {
        wrap(self.prim.values.clone())
    }
    /// `[n, k]` column ids (unpacked).
    pub fn indices(&self) -> Tensor<B, 2, Int> {
        Tensor::from_primitive(B::cbsr_indices(&self.prim))
    }
    /// Entries per row.
    pub fn k(&self) -> usize {
        self.prim.k
    }
    /// Width of the dense rows.
    pub fn dim(&self) -> usize {
        self.prim.dim
    }
    /// Rows.
    pub fn rows(&self) -> usize {
        self.prim.n
    }
    /// Dense `[n, dim]` form (zeros off the pattern), differentiable.
    pub fn to_dense(&self) -> Tensor<B, 2> {
        wrap(B::ad_cbsr_to_dense(&self.prim))
    }
    /// The distinct rows `rows` selects, in its order (values differentiable through a gather,
    /// see [`crate::rows`]).
    pub fn take_rows(&self, rows: &crate::rows::RowIndex<B>) -> Self {
        let values = crate::rows::take_rows(self.values(), rows);
        let indices = Tensor::<B, 2, Int>::from_primitive(self.prim.indices.clone()).select(0, rows.indices());
        Self {
            prim: CbsrPrim {
                values: float(values),
                indices: indices.into_primitive(),
                n: rows.len(),
                ..self.prim.clone()
            },
        }
    }
    /// The first `n` rows, copied (a view would keep all rows alive as long as these are).
    pub fn head_rows(&self, n: usize) -> Self {
        if n == self.prim.n {
            return self.clone();
        }
        // `* 1` / `+ 0` write the rows to buffers of their own (exact)
        let values = self.values().slice(0..n).mul_scalar(1.0);
        let indices = Tensor::<B, 2, Int>::from_primitive(self.prim.indices.clone()).slice(0..n).add_scalar(0);
        Self { prim: CbsrPrim { values: float(values), indices: indices.into_primitive(), n, ..self.prim.clone() } }
    }
    /// The same matrix on another device (differentiable: the gradient of the values returns).
    pub fn to_device(&self, device: &B::Device) -> Self {
        let values = self.values().to_device(device);
        let indices = Tensor::<B, 2, Int>::from_primitive(self.prim.indices.clone()).to_device(device);
        Self { prim: CbsrPrim { values: float(values), indices: indices.into_primitive(), ..self.prim.clone() } }
    }
    /// The rows of `parts` one after another (same `k`, `dim` and index packing; `None` when
    /// they differ or `parts` is empty).
    pub fn cat_rows(parts: Vec<Self>) -> Option<Self> {
        let first = parts.first()?.prim.clone();
        if parts.iter().any(|p| p.prim.k != first.k || p.prim.dim != first.dim || p.prim.packed != first.packed) {
            return None;
        }
        if parts.len() == 1 {
            return parts.into_iter().next();
        }
        let n = parts.iter().map(|p| p.prim.n).sum();
        let values = Tensor::cat(parts.iter().map(|p| p.values()).collect(), 0);
        let indices =
            Tensor::cat(parts.iter().map(|p| Tensor::<B, 2, Int>::from_primitive(p.prim.indices.clone())).collect(), 0);
        Some(Self { prim: CbsrPrim { values: float(values), indices: indices.into_primitive(), n, ..first } })
    }
    /// The same pattern with other values (`[n, k]`), e.g. after an element-wise op.
    pub fn with_values(&self, values: Tensor<B, 2>) -> Self {
        let mut prim = self.prim.clone();
        prim.values = float(values);
        Self { prim }
    }
}

/// SpMM with optional edge weights `w` (`[nnz]` or `[nnz, heads]`, heads dividing the width).
pub fn try_spmm<B: SparseGnnBackend>(
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
pub fn spmm<B: SparseGnnBackend>(g: &Graph<B>, x: Tensor<B, 2>, reduce: Reduce) -> Tensor<B, 2> {
    try_spmm(g, None, x, reduce).unwrap_or_else(|e| panic!("{e}"))
}

/// `out[i] = reduce_{e=(j -> i)} w[e] * x[j]` with one weight per edge.
pub fn spmm_weighted<B: SparseGnnBackend>(
    g: &Graph<B>,
    w: Tensor<B, 1>,
    x: Tensor<B, 2>,
    reduce: Reduce,
) -> Tensor<B, 2> {
    try_spmm(g, Some(w.unsqueeze_dim(1)), x, reduce).unwrap_or_else(|e| panic!("{e}"))
}

/// Multi-head weighted SpMM: `w` is `[nnz, heads]`, head `h` scales features
/// `h * f / heads .. (h + 1) * f / heads` (what GAT's attention aggregation needs).
pub fn spmm_heads<B: SparseGnnBackend>(g: &Graph<B>, w: Tensor<B, 2>, x: Tensor<B, 2>, reduce: Reduce) -> Tensor<B, 2> {
    try_spmm(g, Some(w), x, reduce).unwrap_or_else(|e| panic!("{e}"))
}

/// SDDMM per head: `out[e, h] = <a[row e, head h], b[col e, head h]>`, `[nnz, heads]`.
pub fn try_sddmm<B: SparseGnnBackend>(
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
pub fn sddmm<B: SparseGnnBackend>(g: &Graph<B>, a: Tensor<B, 2>, b: Tensor<B, 2>) -> Tensor<B, 1> {
    let out = try_sddmm(g, a, b, 1).unwrap_or_else(|e| panic!("{e}"));
    let n = out.dims()[0];
    out.reshape([n])
}

/// Multi-head SDDMM (see [`try_sddmm`]).
pub fn sddmm_heads<B: SparseGnnBackend>(g: &Graph<B>, a: Tensor<B, 2>, b: Tensor<B, 2>, heads: usize) -> Tensor<B, 2> {
    try_sddmm(g, a, b, heads).unwrap_or_else(|e| panic!("{e}"))
}

/// Edge softmax of `scores` (`[nnz, heads]`) over each row's edges, max-subtracted.
pub fn try_edge_softmax<B: SparseGnnBackend>(g: &Graph<B>, scores: Tensor<B, 2>) -> Result<Tensor<B, 2>, OpError> {
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
pub fn edge_softmax<B: SparseGnnBackend>(g: &Graph<B>, scores: Tensor<B, 2>) -> Tensor<B, 2> {
    try_edge_softmax(g, scores).unwrap_or_else(|e| panic!("{e}"))
}

/// ES-SpMM: aggregation over at most `spec.width` edges per row (Bucket or FastRand, seeded),
/// normalised by the sampled count for [`Reduce::Mean`]. Gradients use the same sample.
pub fn try_sampled_spmm<B: SparseGnnBackend>(
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
pub fn sampled_spmm<B: SparseGnnBackend>(
    g: &Graph<B>,
    x: Tensor<B, 2>,
    spec: SampleSpec,
    reduce: Reduce,
) -> Tensor<B, 2> {
    try_sampled_spmm(g, None, x, spec, reduce).unwrap_or_else(|e| panic!("{e}"))
}

/// MaxK: the `k` largest entries of every row of `x` (`[n, dim]`), exactly `k` per row (ties
/// keep the lower column), as CBSR with ascending columns.
pub fn try_maxk<B: SparseGnnBackend>(x: Tensor<B, 2>, k: usize) -> Result<Cbsr<B>, OpError> {
    try_maxk_with(x, k, &KernelConfig::default())
}

/// [`try_maxk`] with a kernel launch configuration (e.g. the graph's,
/// [`Graph::kernel_config`]).
pub fn try_maxk_with<B: SparseGnnBackend>(
    x: Tensor<B, 2>,
    k: usize,
    config: &KernelConfig,
) -> Result<Cbsr<B>, OpError> {
    let [_, dim] = x.dims();
    if k == 0 || k > dim {
        return Err(OpError::K { op: "maxk", k, dim });
    }
    Ok(Cbsr::from_prim(B::ad_maxk(float(x), k, config)))
}

/// MaxK (see [`try_maxk`]).
pub fn maxk<B: SparseGnnBackend>(x: Tensor<B, 2>, k: usize) -> Cbsr<B> {
    try_maxk(x, k).unwrap_or_else(|e| panic!("{e}"))
}

/// k-max-pooling: window maxima of every row (see [`PoolSpec`]) as CBSR.
pub fn try_maxpool<B: SparseGnnBackend>(x: Tensor<B, 2>, spec: PoolSpec) -> Result<Cbsr<B>, OpError> {
    let [_, dim] = x.dims();
    spec.check(dim).map_err(|msg| OpError::Config { op: "maxpool", msg })?;
    Ok(Cbsr::from_prim(B::ad_maxpool(float(x), spec)))
}

/// k-max-pooling (see [`try_maxpool`]).
pub fn maxpool<B: SparseGnnBackend>(x: Tensor<B, 2>, spec: PoolSpec) -> Cbsr<B> {
    try_maxpool(x, spec).unwrap_or_else(|e| panic!("{e}"))
}

/// CBSR SpGEMM (MaxK-GNN's forward aggregation): `out[i] = sum_{e=(j->i)} w[e] * dense(c)[j]`
/// computed from the `k` entries per row only. Backward: SSpMM at the same pattern.
pub fn try_cbsr_spgemm<B: SparseGnnBackend>(
    g: &Graph<B>,
    w: Option<Tensor<B, 1>>,
    c: &Cbsr<B>,
) -> Result<Tensor<B, 2>, OpError> {
    if c.rows() != g.n_cols() {
        return Err(OpError::Shape {
            op: "cbsr_spgemm",
            what: "cbsr",
            got: vec![c.rows(), c.k()],
            expected: format!("[{}, k]", g.n_cols()),
        });
    }
    if let Some(w) = &w {
        if w.dims()[0] != g.num_edges() {
            return Err(OpError::Shape {
                op: "cbsr_spgemm",
                what: "edge weights",
                got: w.dims().to_vec(),
                expected: format!("[{}]", g.num_edges()),
            });
        }
    }
    Ok(wrap(B::ad_cbsr_spgemm(g.prim(), w.map(float), c.prim())))
}

/// CBSR SpGEMM without weights (see [`try_cbsr_spgemm`]).
pub fn cbsr_spgemm<B: SparseGnnBackend>(g: &Graph<B>, c: &Cbsr<B>) -> Tensor<B, 2> {
    try_cbsr_spgemm(g, None, c).unwrap_or_else(|e| panic!("{e}"))
}

/// Weighted CBSR SpGEMM (see [`try_cbsr_spgemm`]).
pub fn cbsr_spgemm_weighted<B: SparseGnnBackend>(g: &Graph<B>, w: Tensor<B, 1>, c: &Cbsr<B>) -> Tensor<B, 2> {
    try_cbsr_spgemm(g, Some(w), c).unwrap_or_else(|e| panic!("{e}"))
}

/// `x @ w + b` over all nodes (`x`: `[n, d_in]`, `w`: `[d_in, d_out]`, `b`: `[d_out]`),
/// differentiable in all three, with the arithmetic of `precision` (exact f32, TF32, or a
/// half-precision forward; see [`crate::dense`]). On CUDA the products run through cuBLAS.
///
/// ```
/// use burn::backend::{Autodiff, NdArray};
/// use burn::tensor::Tensor;
/// use burn_sparse_gnn::dense::LinearPrecision;
/// type B = Autodiff<NdArray>;
/// let dev = Default::default();
/// let x = Tensor::<B, 2>::from_floats([[1.0, 2.0], [3.0, 4.0]], &dev);
/// let w = Tensor::<B, 2>::from_floats([[1.0], [1.0]], &dev).require_grad();
/// let b = Tensor::<B, 1>::from_floats([0.5], &dev).require_grad();
/// let y = burn_sparse_gnn::ops::linear(x, w.clone(), Some(b.clone()), LinearPrecision::F32);
/// assert_eq!(y.to_data().to_vec::<f32>().unwrap(), vec![3.5, 7.5]);
/// let grads = y.sum().backward();
/// assert_eq!(w.grad(&grads).unwrap().to_data().to_vec::<f32>().unwrap(), vec![4.0, 6.0]);
/// assert_eq!(b.grad(&grads).unwrap().to_data().to_vec::<f32>().unwrap(), vec![2.0]);
/// ```
pub fn linear<B: SparseGnnBackend>(
    x: Tensor<B, 2>,
    w: Tensor<B, 2>,
    b: Option<Tensor<B, 1>>,
    precision: crate::dense::LinearPrecision,
) -> Tensor<B, 2> {
    Tensor::from_primitive(TensorPrimitive::Float(B::ad_linear(
        x.into_primitive().tensor(),
        w.into_primitive().tensor(),
        b.map(|b| b.into_primitive().tensor()),
        precision,
    )))
}

/// One product of [`linear_pair`]: `x @ w`, with an optional half copy of `x` (not
/// differentiated) that a half-precision forward multiplies instead of making a row-scaled
/// copy of its own (see [`crate::dense::Term`]).
#[derive(Clone, Debug)]
pub struct LinearTerm<B: Backend> {
    /// `[n, d_in]` input.
    pub x: Tensor<B, 2>,
    /// `[d_in, d_out]` weight.
    pub w: Tensor<B, 2>,
    /// A plain half copy of `x` for the half-precision forward.
    pub x_half: Option<Tensor<B, 2>>,
}

impl<B: Backend> LinearTerm<B> {
    /// `x @ w`.
    pub fn new(x: Tensor<B, 2>, w: Tensor<B, 2>) -> Self {
        Self { x, w, x_half: None }
    }

    /// Multiplies `x_half` in a half-precision forward.
    pub fn with_half(mut self, x_half: Tensor<B, 2>) -> Self {
        self.x_half = Some(x_half);
        self
    }

    fn prim(self) -> crate::dense::Term<B> {
        crate::dense::Term { x: float(self.x), w: float(self.w), x_half: self.x_half.map(float) }
    }
}

/// `x1 @ w1 + x2 @ w2 + b` over all nodes (a SAGE layer's neighbour and root maps), with the
/// arithmetic of `precision`, differentiable in every input. The second product adds to the
/// first one's output in place (cuBLAS with `beta = 1` on CUDA), so the sum costs no pass of its
/// own. In half precision an input that already has the half type is multiplied as it is (its
/// gradient has that type too).
///
/// ```
/// use burn::backend::{Autodiff, NdArray};
/// use burn::tensor::Tensor;
/// use burn_sparse_gnn::dense::LinearPrecision;
/// use burn_sparse_gnn::ops::{linear_pair, LinearTerm};
/// type B = Autodiff<NdArray>;
/// let dev = Default::default();
/// let x = Tensor::<B, 2>::from_floats([[1.0, 2.0], [3.0, 4.0]], &dev);
/// let w1 = Tensor::<B, 2>::from_floats([[1.0], [1.0]], &dev).require_grad();
/// let w2 = Tensor::<B, 2>::from_floats([[2.0], [0.0]], &dev).require_grad();
/// let y = linear_pair(LinearTerm::new(x.clone(), w1), LinearTerm::new(x, w2.clone()), None, LinearPrecision::F32);
/// assert_eq!(y.to_data().to_vec::<f32>().unwrap(), vec![5.0, 13.0]);
/// let grads = y.sum().backward();
/// assert_eq!(w2.grad(&grads).unwrap().to_data().to_vec::<f32>().unwrap(), vec![4.0, 6.0]);
/// ```
pub fn linear_pair<B: SparseGnnBackend>(
    first: LinearTerm<B>,
    second: LinearTerm<B>,
    b: Option<Tensor<B, 1>>,
    precision: crate::dense::LinearPrecision,
) -> Tensor<B, 2> {
    wrap(B::ad_linear_pair(first.prim(), second.prim(), b.map(float), precision))
}

/// `aggr(x) @ w_neigh + x[..n] @ w_root + b`: a mean or sum aggregation over `g` followed by a
/// GraphSAGE layer's neighbour and root maps, with the arithmetic of `precision`, differentiable
/// in every input. `x` has one row per column of `g` (on a part of a partitioned graph: its own
/// rows, then its halo); the root map takes its first `n = g.n_rows()` rows.
///
/// Where `x` needs a gradient and `d_out <= d_in`, the backward pass takes the neighbour map's
/// gradients from `A^T dy` and keeps no copy of the `n x d_in` aggregate (module docs of
/// `autodiff`); otherwise it runs as [`spmm`] then [`linear_pair`]. In half precision `x` is
/// rounded to the half type once for the aggregation and the root product.
///
/// ```
/// use burn::backend::{Autodiff, NdArray};
/// use burn::tensor::Tensor;
/// use burn_sparse_gnn::dense::LinearPrecision;
/// use burn_sparse_gnn::{ops, BuildOptions, Csr, Graph, GraphOptions, Reduce};
/// type B = Autodiff<NdArray>;
/// let dev = Default::default();
/// // 0 -> 1, 1 -> 2 and back: node 1 has two neighbours
/// let adj = Csr::from_edges(3, &[0, 1], &[1, 2], None, BuildOptions::undirected()).unwrap();
/// let g = Graph::<B>::new(&adj, &dev, GraphOptions::default());
/// let x = Tensor::<B, 2>::from_floats([[1.0], [2.0], [4.0]], &dev).require_grad();
/// let wn = Tensor::<B, 2>::from_floats([[1.0]], &dev).require_grad();
/// let wr = Tensor::<B, 2>::from_floats([[10.0]], &dev).require_grad();
/// let y = ops::aggregate_pair(&g, x.clone(), wn, wr, None, Reduce::Mean, LinearPrecision::F32);
/// assert_eq!(y.to_data().to_vec::<f32>().unwrap(), vec![12.0, 22.5, 42.0]);
/// let grads = y.sum().backward();
/// // dy = 1: x_j gets 10 from its root map and 1 / deg(i) from each neighbour i
/// assert_eq!(x.grad(&grads).unwrap().to_data().to_vec::<f32>().unwrap(), vec![10.5, 12.0, 10.5]);
/// ```
pub fn try_aggregate_pair<B: SparseGnnBackend>(
    g: &Graph<B>,
    x: Tensor<B, 2>,
    w_neigh: Tensor<B, 2>,
    w_root: Tensor<B, 2>,
    b: Option<Tensor<B, 1>>,
    reduce: Reduce,
    precision: crate::dense::LinearPrecision,
) -> Result<Tensor<B, 2>, OpError> {
    const OP: &str = "aggregate_pair";
    let dims = x.dims();
    expect_rows(OP, "x", &dims, g.n_cols())?;
    let d_in = dims[1];
    let wn = w_neigh.dims();
    if wn[0] != d_in {
        return Err(OpError::Shape { op: OP, what: "w_neigh", got: wn.to_vec(), expected: format!("[{d_in}, _]") });
    }
    let wr = w_root.dims();
    if wr != wn {
        return Err(OpError::Shape { op: OP, what: "w_root", got: wr.to_vec(), expected: format!("{wn:?}") });
    }
    if let Some(b) = &b {
        if b.dims() != [wn[1]] {
            return Err(OpError::Shape { op: OP, what: "b", got: b.dims().to_vec(), expected: format!("[{}]", wn[1]) });
        }
    }
    if !matches!(reduce, Reduce::Mean | Reduce::Sum) {
        return Err(OpError::Config { op: OP, msg: format!("the aggregation must be mean or sum, not {reduce:?}") });
    }
    Ok(wrap(B::ad_aggregate_pair(g.prim(), float(x), float(w_neigh), float(w_root), b.map(float), reduce, precision)))
}

/// [`try_aggregate_pair`], panicking on a shape mismatch or a max aggregation.
pub fn aggregate_pair<B: SparseGnnBackend>(
    g: &Graph<B>,
    x: Tensor<B, 2>,
    w_neigh: Tensor<B, 2>,
    w_root: Tensor<B, 2>,
    b: Option<Tensor<B, 1>>,
    reduce: Reduce,
    precision: crate::dense::LinearPrecision,
) -> Tensor<B, 2> {
    try_aggregate_pair(g, x, w_neigh, w_root, b, reduce, precision).unwrap_or_else(|e| panic!("{e}"))
}
