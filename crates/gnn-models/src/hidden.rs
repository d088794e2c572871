//! Hidden states between layers: dense, or CBSR after a MaxK / max-pooling activation, and the
//! precision the sparse aggregations run in.

use crate::linear::{add_bias, chunk_rows, matmul_nodes};
use burn::nn::Linear;
use burn::tensor::backend::Backend;
use burn::tensor::{FloatDType, Tensor};
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

/// Storage precision of the bandwidth-bound sparse aggregations and of the activations kept for
/// the backward pass. Parameters, optimizer state, gradients and the dense products stay f32.
/// With a mixed mode the aggregation inputs are cast to half precision around the sparse
/// kernel and the result back to f32 (gradients flow through the casts back to f32), and the
/// linear maps of the convolutions and of the output layer read their input rounded to half
/// precision and keep only that half copy for the backward pass
/// ([`ops::matmul_half_saved`]), which halves the memory of the saved activations.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Precision {
    /// Everything in f32.
    #[default]
    F32,
    /// f16 storage for the sparse aggregations.
    MixedF16,
    /// bf16 storage for the sparse aggregations (CUDA).
    MixedBf16,
}

impl Precision {
    /// The half-precision storage type of the aggregations (`None` for f32).
    pub fn half(&self) -> Option<FloatDType> {
        match self {
            Precision::F32 => None,
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

    /// `x @ w` over all nodes: [`matmul_nodes`] in f32, [`ops::matmul_half_saved`] (input
    /// rounded to half precision, half copy saved for the backward pass) in a mixed mode.
    pub fn matmul_nodes<B: SparseGnnBackend>(&self, x: Tensor<B, 2>, w: Tensor<B, 2>) -> Tensor<B, 2> {
        match self.half() {
            Some(h) => ops::matmul_half_saved(x, w, h, chunk_rows()),
            None => matmul_nodes(x, w),
        }
    }

    /// A Burn [`Linear`] over all nodes through [`Precision::matmul_nodes`] and
    /// [`add_bias`].
    pub fn linear<B: SparseGnnBackend>(&self, lin: &Linear<B>, x: Tensor<B, 2>) -> Tensor<B, 2> {
        let y = self.matmul_nodes(x, lin.weight.val());
        match &lin.bias {
            Some(b) => add_bias(y, b.val()),
            None => y,
        }
    }

    /// Casts an aggregation result back to f32.
    pub fn up<const D: usize, B: Backend>(&self, t: Tensor<B, D>) -> Tensor<B, D> {
        match self.half() {
            Some(_) => t.cast(FloatDType::F32),
            None => t,
        }
    }
}

/// Neighbour aggregation of a hidden state: dense input goes through the SpMM kernels, CBSR
/// input through the CBSR SpGEMM for sum and mean (mean = SpGEMM then `1 / deg`), and through
/// the dense fallback for max.
pub fn aggregate<B: SparseGnnBackend>(
    g: &Graph<B>,
    h: &Hidden<B>,
    reduce: Reduce,
    precision: Precision,
) -> Tensor<B, 2> {
    match (h, reduce) {
        (Hidden::Sparse(c), Reduce::Sum | Reduce::Mean) => {
            let c = c.with_values(precision.down(c.values()));
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
