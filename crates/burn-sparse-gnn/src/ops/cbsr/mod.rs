//! MaxK and k-max-pooling selection into CBSR (MaxK-GNN's compressed balanced sparse rows) and
//! the CBSR products (SpGEMM, its SSpMM backward), as a backend trait and tensor-level ops.

mod autodiff;
mod cube;
pub(crate) mod host;

use crate::error::OpError;
use crate::graph::Graph;
use crate::ops::args::float;
use crate::ops::args::wrap;
use crate::ops::primitive::CbsrPrim;
use crate::ops::primitive::CsrPrimitive;
use crate::ops::primitive::GraphPrimitive;
use crate::ops::primitive::PoolSpec;
use crate::ops::rows::RowOps;
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::ops::IntTensor;
use burn::tensor::Int;
use burn::tensor::Tensor;
use sparse_gnn_kernels::config::KernelConfig;

/// MaxK and k-max-pooling selection into CBSR, and the CBSR products (SpGEMM, SSpMM).
///
/// Part of [`crate::backend::SparseGnnBackend`] (see its conventions).
pub trait CbsrOps: Backend {
    /// MaxK selection of the `k` largest entries of each row into CBSR (`config`: the plane
    /// choice and selection method of the kernel).
    fn maxk(x: FloatTensor<Self>, k: usize, config: &KernelConfig) -> CbsrPrim<Self>;

    /// k-max-pooling selection into CBSR.
    fn maxpool(x: FloatTensor<Self>, spec: PoolSpec) -> CbsrPrim<Self>;

    /// Dense `[n, dim]` matrix of a CBSR matrix.
    fn cbsr_to_dense(c: &CbsrPrim<Self>) -> FloatTensor<Self>;

    /// Values of dense `x` (`[n, dim]`) at the pattern of `pattern` (its values are ignored).
    fn cbsr_gather(x: FloatTensor<Self>, pattern: &CbsrPrim<Self>) -> FloatTensor<Self>;

    /// CBSR SpGEMM: `out[i] = sum_{e=(i,j)} w[e] * scatter(c[j])`, `[n_rows, dim]`.
    fn cbsr_spgemm(g: &GraphPrimitive<Self>, w: Option<FloatTensor<Self>>, c: &CbsrPrim<Self>) -> FloatTensor<Self>;

    /// SSpMM: `dvalues[j, t] = sum_{e=(i,j)} w[e] * dy[i, idx[j, t]]`, `[n_cols, k]`.
    fn cbsr_sspmm(
        g: &GraphPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        dy: FloatTensor<Self>,
        pattern: &CbsrPrim<Self>,
    ) -> FloatTensor<Self>;

    /// Edge-weight gradient of the SpGEMM: `dw[e] = sum_t dy[i, idx[j, t]] * values[j, t]`.
    fn cbsr_spgemm_grad_w(csr: &CsrPrimitive<Self>, dy: FloatTensor<Self>, c: &CbsrPrim<Self>) -> FloatTensor<Self>;

    /// Unpacked `[n, k]` i32 column ids of a CBSR matrix.
    fn cbsr_indices(c: &CbsrPrim<Self>) -> IntTensor<Self>;

    /// Differentiable [`Self::maxk`]: the values carry the gradient to `x`.
    fn ad_maxk(x: FloatTensor<Self>, k: usize, config: &KernelConfig) -> CbsrPrim<Self> {
        Self::maxk(x, k, config)
    }

    /// Differentiable [`Self::maxpool`].
    fn ad_maxpool(x: FloatTensor<Self>, spec: PoolSpec) -> CbsrPrim<Self> {
        Self::maxpool(x, spec)
    }

    /// Differentiable [`Self::cbsr_to_dense`].
    fn ad_cbsr_to_dense(c: &CbsrPrim<Self>) -> FloatTensor<Self> {
        Self::cbsr_to_dense(c)
    }

    /// Differentiable [`Self::cbsr_spgemm`] (backward: SSpMM).
    fn ad_cbsr_spgemm(g: &GraphPrimitive<Self>, w: Option<FloatTensor<Self>>, c: &CbsrPrim<Self>) -> FloatTensor<Self> {
        Self::cbsr_spgemm(g, w, c)
    }
}

/// A CBSR matrix: `k` (value, column) entries per row of a `dim`-wide matrix, as MaxK and
/// k-max-pooling produce. Its values are differentiable.
#[derive(Clone, Debug)]
pub struct Cbsr<B: Backend> {
    prim: CbsrPrim<B>,
}

impl<B: CbsrOps + RowOps> Cbsr<B> {
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
    /// see [`crate::ops::rows`]).
    pub fn take_rows(&self, rows: &crate::ops::rows::RowIndex<B>) -> Self {
        let values = crate::ops::rows::take_rows(self.values(), rows);
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

/// MaxK: the `k` largest entries of every row of `x` (`[n, dim]`), exactly `k` per row (ties
/// keep the lower column), as CBSR with ascending columns.
pub fn try_maxk<B: CbsrOps + RowOps>(x: Tensor<B, 2>, k: usize) -> Result<Cbsr<B>, OpError> {
    try_maxk_with(x, k, &KernelConfig::default())
}

/// [`try_maxk`] with a kernel launch configuration (e.g. the graph's,
/// [`Graph::kernel_config`]).
pub fn try_maxk_with<B: CbsrOps + RowOps>(
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
pub fn maxk<B: CbsrOps + RowOps>(x: Tensor<B, 2>, k: usize) -> Cbsr<B> {
    try_maxk(x, k).unwrap_or_else(|e| panic!("{e}"))
}

/// k-max-pooling: window maxima of every row (see [`PoolSpec`]) as CBSR.
pub fn try_maxpool<B: CbsrOps + RowOps>(x: Tensor<B, 2>, spec: PoolSpec) -> Result<Cbsr<B>, OpError> {
    let [_, dim] = x.dims();
    spec.check(dim).map_err(|msg| OpError::Config { op: "maxpool", msg })?;
    Ok(Cbsr::from_prim(B::ad_maxpool(float(x), spec)))
}

/// k-max-pooling (see [`try_maxpool`]).
pub fn maxpool<B: CbsrOps + RowOps>(x: Tensor<B, 2>, spec: PoolSpec) -> Cbsr<B> {
    try_maxpool(x, spec).unwrap_or_else(|e| panic!("{e}"))
}

/// CBSR SpGEMM (MaxK-GNN's forward aggregation): `out[i] = sum_{e=(j->i)} w[e] * dense(c)[j]`
/// computed from the `k` entries per row only. Backward: SSpMM at the same pattern.
pub fn try_cbsr_spgemm<B: CbsrOps + RowOps>(
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
pub fn cbsr_spgemm<B: CbsrOps + RowOps>(g: &Graph<B>, c: &Cbsr<B>) -> Tensor<B, 2> {
    try_cbsr_spgemm(g, None, c).unwrap_or_else(|e| panic!("{e}"))
}

/// Weighted CBSR SpGEMM (see [`try_cbsr_spgemm`]).
pub fn cbsr_spgemm_weighted<B: CbsrOps + RowOps>(g: &Graph<B>, w: Tensor<B, 1>, c: &Cbsr<B>) -> Tensor<B, 2> {
    try_cbsr_spgemm(g, Some(w), c).unwrap_or_else(|e| panic!("{e}"))
}
