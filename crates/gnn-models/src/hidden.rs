//! Hidden states between layers: dense, or CBSR after a MaxK / max-pooling activation, and the
//! precision the sparse aggregations run in.

use burn::nn::Linear;
use burn::tensor::backend::Backend;
use burn::tensor::{FloatDType, Int, Tensor, TensorData};
use burn_sparse_gnn::dense::{LinearPrecision, ProductMath};
use burn_sparse_gnn::{ops, Cbsr, Graph, Reduce, SparseGnnBackend};
use serde::{Deserialize, Serialize};

/// A layer input: dense `[n, d]` or CBSR (`k` kept entries per row of a `d`-wide row).
#[derive(Clone, Debug)]
pub enum Hidden<B: Backend> {
    /// Dense features.
    Dense(Tensor<B, 2>),
    /// Sparse (CBSR) features from MaxK or k-max-pooling.
    Sparse(Cbsr<B>),
}

impl<B: SparseGnnBackend> Hidden<B> {
    /// Dense form (the dense fallback for layers that need dense input).
    pub fn dense(&self) -> Tensor<B, 2> {
        match self {
            Hidden::Dense(t) => t.clone(),
            Hidden::Sparse(c) => c.to_dense(),
        }
    }

    /// `[rows, width]`.
    pub fn dims(&self) -> [usize; 2] {
        match self {
            Hidden::Dense(t) => t.dims(),
            Hidden::Sparse(c) => [c.rows(), c.dim()],
        }
    }

    /// The first `n` rows: a part's own nodes when the state also holds its halo rows (the
    /// state itself when it has `n` rows, as on a whole graph). A copy, not a view: the layers
    /// save these rows for their backward pass, and a view would keep the whole state, halo
    /// rows included, alive until then.
    pub fn head(&self, n: usize) -> Self {
        match self {
            // `* 1` writes the rows to a buffer of their own (exact; its gradient is the identity)
            Hidden::Dense(t) if t.dims()[0] != n => Hidden::Dense(t.clone().slice(0..n).mul_scalar(1.0)),
            Hidden::Dense(t) => Hidden::Dense(t.clone()),
            Hidden::Sparse(c) => Hidden::Sparse(c.head_rows(n)),
        }
    }

    /// The distinct rows `rows` selects, in its order (the gradient returns through a gather,
    /// see [`burn_sparse_gnn::rows`]).
    pub fn take_rows(&self, rows: &burn_sparse_gnn::RowIndex<B>) -> Self {
        match self {
            Hidden::Dense(t) => Hidden::Dense(burn_sparse_gnn::take_rows(t.clone(), rows)),
            Hidden::Sparse(c) => Hidden::Sparse(c.take_rows(rows)),
        }
    }

    /// The same state on another device (differentiable).
    pub fn to_device(&self, device: &B::Device) -> Self {
        match self {
            Hidden::Dense(t) => Hidden::Dense(t.clone().to_device(device)),
            Hidden::Sparse(c) => Hidden::Sparse(c.to_device(device)),
        }
    }

    /// The rows of `parts` one after another (all dense, or all CBSR of one shape).
    pub fn cat_rows(parts: Vec<Self>) -> Option<Self> {
        if parts.iter().all(|p| matches!(p, Hidden::Dense(_))) {
            let ts: Vec<_> = parts.into_iter().map(|p| p.dense()).collect();
            return (!ts.is_empty())
                .then(|| Hidden::Dense(if ts.len() == 1 { ts[0].clone() } else { Tensor::cat(ts, 0) }));
        }
        let cs: Option<Vec<_>> = parts
            .into_iter()
            .map(|p| match p {
                Hidden::Sparse(c) => Some(c),
                Hidden::Dense(_) => None,
            })
            .collect();
        Cbsr::cat_rows(cs?).map(Hidden::Sparse)
    }

    /// Multiplies every row by `scale[row]` (keeps the CBSR pattern).
    pub fn scale_rows(&self, scale: Tensor<B, 1>) -> Self {
        let s = scale.unsqueeze_dim::<2>(1);
        match self {
            Hidden::Dense(t) => Hidden::Dense(t.clone() * s),
            Hidden::Sparse(c) => Hidden::Sparse(c.with_values(c.values() * s)),
        }
    }

    /// Applies `f` to the stored values (dense tensor or CBSR values), e.g. dropout.
    pub fn map_values(&self, f: impl FnOnce(Tensor<B, 2>) -> Tensor<B, 2>) -> Self {
        match self {
            Hidden::Dense(t) => Hidden::Dense(f(t.clone())),
            Hidden::Sparse(c) => Hidden::Sparse(c.with_values(f(c.values()))),
        }
    }
}

/// Arithmetic of the dense products and storage precision of the bandwidth-bound sparse
/// aggregations and of the activations kept for the backward pass. Parameters, optimizer state
/// and gradients stay f32 in every mode.
/// - `f32`: everything in f32, the dense products in exact f32 (as PyTorch's default).
/// - `tf32`: as `f32`, with the dense products on the TF32 tensor cores (f32 accumulation,
///   inputs rounded to a 10-bit mantissa; on CUDA with cuBLAS).
/// - `mixedf16` / `mixedbf16`: the aggregation inputs are cast to half precision around the
///   sparse kernel and the result back to f32 (gradients flow through the casts back to f32);
///   the linear maps of the convolutions and of the output layer multiply their input rounded
///   per row to half precision on the half type's tensor cores and keep only that half copy for
///   the backward pass, which halves the memory of the saved activations; their gradients and
///   the input layer run in TF32 ([`burn_sparse_gnn::dense::LinearPrecision::Half`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Everything in f32.
    #[default]
    F32,
    /// f32 storage, TF32 dense products.
    Tf32,
    /// f16 storage for the sparse aggregations.
    MixedF16,
    /// bf16 storage for the sparse aggregations (CUDA).
    MixedBf16,
}

impl Precision {
    /// The half-precision storage type of the aggregations (`None` for f32).
    pub fn half(&self) -> Option<FloatDType> {
        match self {
            Precision::F32 | Precision::Tf32 => None,
            Precision::MixedF16 => Some(FloatDType::F16),
            Precision::MixedBf16 => Some(FloatDType::BF16),
        }
    }

    /// Casts a tensor to the aggregation storage type.
    pub fn down<const D: usize, B: Backend>(&self, t: Tensor<B, D>) -> Tensor<B, D> {
        match self.half() {
            Some(h) => t.cast(h),
            None => t,
        }
    }

    /// The arithmetic of the hidden layers' linear maps.
    pub fn linear_precision(&self) -> LinearPrecision {
        match self {
            Precision::F32 => LinearPrecision::F32,
            Precision::Tf32 => LinearPrecision::Tf32,
            Precision::MixedF16 => LinearPrecision::Half(FloatDType::F16),
            Precision::MixedBf16 => LinearPrecision::Half(FloatDType::BF16),
        }
    }

    /// The arithmetic of products of f32 tensors (exact in `f32`, TF32 otherwise).
    pub fn product_math(&self) -> ProductMath {
        match self {
            Precision::F32 => ProductMath::F32,
            _ => ProductMath::Tf32,
        }
    }

    /// `x @ w` over all nodes with [`Precision::linear_precision`] ([`ops::linear`]).
    pub fn matmul_nodes<B: SparseGnnBackend>(&self, x: Tensor<B, 2>, w: Tensor<B, 2>) -> Tensor<B, 2> {
        ops::linear(x, w, None, self.linear_precision())
    }

    /// A Burn [`Linear`] over all nodes with [`Precision::linear_precision`] ([`ops::linear`]).
    pub fn linear<B: SparseGnnBackend>(&self, lin: &Linear<B>, x: Tensor<B, 2>) -> Tensor<B, 2> {
        ops::linear(x, lin.weight.val(), lin.bias.as_ref().map(|b| b.val()), self.linear_precision())
    }

    /// Casts an aggregation result back to f32.
    pub fn up<const D: usize, B: Backend>(&self, t: Tensor<B, D>) -> Tensor<B, D> {
        match self.half() {
            Some(_) => t.cast(FloatDType::F32),
            None => t,
        }
    }
}

/// Neighbour aggregation of a hidden state over the graph's edges, weighted by the graph's
/// edge weights where it has them ([`Graph::weights`]; see [`aggregate_weighted`]): dense input
/// goes through the SpMM kernels, CBSR input through the CBSR SpGEMM for sum and mean, and
/// through the dense fallback for max. The CBSR mean is the SpGEMM then `1 / deg` in f32; in
/// half precision it is the SpGEMM with the per-edge weights `1 / deg(row)`
/// ([`mean_edge_weights`]), so the half output holds the mean, not the sum: a hub row's sum of
/// thousands of values would overflow f16 (65,504).
pub fn aggregate<B: SparseGnnBackend>(
    g: &Graph<B>,
    h: &Hidden<B>,
    reduce: Reduce,
    precision: Precision,
) -> Tensor<B, 2> {
    match g.weights() {
        Some(w) => aggregate_with(g, h, w, reduce, precision, || weighted_mean_edge_weights(g, precision)),
        None => aggregate_unweighted(g, h, reduce, precision),
    }
}

/// [`aggregate`] with the per-edge weights `w` (`[nnz]`, CSR order, the graph's float type;
/// `None`: every weight 1, whatever the graph holds): sum `sum_j w_ij h_j`, mean
/// `sum_j w_ij h_j / deg(i)` (divided by the number of the row's edges, not by the sum of their
/// weights: all weights 1 give the unweighted mean, and a row whose weights cancel out stays
/// finite), max `max_j w_ij h_j` (feature-wise). In mixed precision the weights are rounded to
/// the half type with the rows (f16: magnitudes above 65,504 become infinite, below about
/// 6e-8 zero). Weights are data: they receive no gradient.
pub fn aggregate_weighted<B: SparseGnnBackend>(
    g: &Graph<B>,
    h: &Hidden<B>,
    w: Option<&Tensor<B, 1>>,
    reduce: Reduce,
    precision: Precision,
) -> Tensor<B, 2> {
    match w {
        Some(w) => aggregate_with(g, h, w, reduce, precision, || {
            precision.down(w.clone() * per_edge_row_values(g, g.norms().in_inv.clone()))
        }),
        None => aggregate_unweighted(g, h, reduce, precision),
    }
}

fn aggregate_unweighted<B: SparseGnnBackend>(
    g: &Graph<B>,
    h: &Hidden<B>,
    reduce: Reduce,
    precision: Precision,
) -> Tensor<B, 2> {
    match (h, reduce) {
        (Hidden::Sparse(c), Reduce::Sum | Reduce::Mean) => {
            let c = c.with_values(precision.down(c.values()));
            if reduce == Reduce::Mean && precision.half().is_some() {
                let w = mean_edge_weights(g, precision);
                return precision.up(ops::cbsr_spgemm_weighted(g, w, &c));
            }
            let out = precision.up(ops::cbsr_spgemm(g, &c));
            if reduce == Reduce::Mean {
                out * g.norms().in_inv.clone().unsqueeze_dim::<2>(1)
            } else {
                out
            }
        }
        _ => precision.up(ops::spmm(g, precision.down(h.dense()), reduce)),
    }
}

/// The weighted aggregation; `mean_weights`: `w_e / deg(row e)` in the aggregation storage type
/// (the half-precision CBSR mean's edge weights).
fn aggregate_with<B: SparseGnnBackend>(
    g: &Graph<B>,
    h: &Hidden<B>,
    w: &Tensor<B, 1>,
    reduce: Reduce,
    precision: Precision,
    mean_weights: impl FnOnce() -> Tensor<B, 1>,
) -> Tensor<B, 2> {
    match (h, reduce) {
        (Hidden::Sparse(c), Reduce::Sum | Reduce::Mean) => {
            let c = c.with_values(precision.down(c.values()));
            if reduce == Reduce::Mean && precision.half().is_some() {
                return precision.up(ops::cbsr_spgemm_weighted(g, mean_weights(), &c));
            }
            let out = precision.up(ops::cbsr_spgemm_weighted(g, precision.down(w.clone()), &c));
            if reduce == Reduce::Mean {
                out * g.norms().in_inv.clone().unsqueeze_dim::<2>(1)
            } else {
                out
            }
        }
        _ => precision.up(ops::spmm_weighted(g, precision.down(w.clone()), precision.down(h.dense()), reduce)),
    }
}

/// `w_e / deg(row e)` of every edge of `g` with its own weights `w`, in the aggregation storage
/// type of `precision`, remembered per graph and precision (the weighted form of
/// [`mean_edge_weights`]). A graph without weights gives [`mean_edge_weights`].
pub fn weighted_mean_edge_weights<B: SparseGnnBackend>(g: &Graph<B>, precision: Precision) -> Tensor<B, 1> {
    let Some(w) = g.weights() else { return mean_edge_weights(g, precision) };
    g.memoized(&format!("mean:edge-weights:weighted:{precision:?}"), |g| {
        precision.down(w.clone() * per_edge_row_values(g, g.norms().in_inv.clone()))
    })
}

/// `v[row e]` of every edge `e` of `g` (`v`: `[n_rows]`), in CSR order: an SDDMM of `v` with
/// ones (each edge's product `v[row] * 1`, exact), on the device.
pub fn per_edge_row_values<B: SparseGnnBackend>(g: &Graph<B>, v: Tensor<B, 1>) -> Tensor<B, 1> {
    let ones = Tensor::<B, 2>::ones([g.n_cols(), 1], &v.device());
    ops::sddmm(g, v.unsqueeze_dim::<2>(1), ones)
}

/// `a[row e] * b[col e]` of every edge `e` of `g` (`a`: `[n_rows]`, `b`: `[n_cols]`), in CSR
/// order (an SDDMM of width 1, on the device).
pub fn per_edge_products<B: SparseGnnBackend>(g: &Graph<B>, a: Tensor<B, 1>, b: Tensor<B, 1>) -> Tensor<B, 1> {
    ops::sddmm(g, a.unsqueeze_dim::<2>(1), b.unsqueeze_dim::<2>(1))
}

/// `1 / deg(row)` of every edge of `g` (`[nnz]`, CSR order): the weights of a mean as a
/// weighted sum, in the aggregation storage type of `precision`. Built once per graph and
/// precision (one read of the row offsets to the host) and remembered ([`Graph::memoized`]).
pub fn mean_edge_weights<B: SparseGnnBackend>(g: &Graph<B>, precision: Precision) -> Tensor<B, 1> {
    g.memoized(&format!("mean:edge-weights:{precision:?}"), |g| {
        let device = g.device();
        let row_ptr: Vec<i64> = Tensor::<B, 1, Int>::from_primitive(g.prim().csr.row_ptr.clone())
            .into_data()
            .convert::<i64>()
            .into_vec::<i64>()
            .unwrap_or_default();
        let rows: Vec<i64> = row_ptr
            .windows(2)
            .enumerate()
            .flat_map(|(r, w)| std::iter::repeat_n(r as i64, (w[1] - w[0]).max(0) as usize))
            .collect();
        let len = rows.len();
        let rows = Tensor::<B, 1, Int>::from_data(TensorData::new(rows, [len]).convert::<B::IntElem>(), &device);
        precision.down(g.norms().in_inv.clone().select(0, rows))
    })
}
