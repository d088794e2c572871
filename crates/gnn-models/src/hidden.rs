//! Hidden states between layers: dense, or CBSR after a MaxK / max-pooling activation.

use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use burn_sparse_gnn::{Cbsr, SparseGnnBackend};

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
