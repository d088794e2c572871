//! The precision of the dense products and of the sparse aggregations' storage.

use burn::nn::Linear;
use burn::tensor::backend::Backend;
use burn::tensor::{FloatDType, Tensor};
use burn_sparse_gnn::dense::{LinearPrecision, ProductMath};
use burn_sparse_gnn::{ops, SparseGnnBackend};
use serde::{Deserialize, Serialize};

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
