//! The arithmetic of dense products and linear layers.

use burn::tensor::FloatDType;
use serde::{Deserialize, Serialize};

/// Arithmetic of a product of f32 tensors.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProductMath {
    /// IEEE f32 multiply-adds.
    #[default]
    F32,
    /// Inputs rounded to TF32 (10-bit mantissa) on the tensor cores, f32 accumulation (about
    /// 1e-3 relative error per product against f64, where f32 gives about 1e-6).
    Tf32,
}

/// Arithmetic of a linear layer's products ([`crate::ops::linear`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LinearPrecision {
    /// Forward and backward in exact f32.
    #[default]
    F32,
    /// Forward and backward in TF32 on the tensor cores (f32 tensors).
    Tf32,
    /// The forward product on the half type's tensor cores: each row of the input divided by
    /// its largest magnitude and rounded to the half type (so nothing overflows f16), the weight
    /// rounded to it, f32 accumulation, the rows scaled back. The half copy and the row scales
    /// are all the backward pass keeps of the input; the gradients run in TF32 on f32 tensors.
    Half(FloatDType),
}

impl LinearPrecision {
    /// The arithmetic of the products of f32 tensors (the gradients, and the forward of
    /// [`LinearPrecision::F32`] / [`LinearPrecision::Tf32`]).
    pub fn math(self) -> ProductMath {
        match self {
            LinearPrecision::F32 => ProductMath::F32,
            LinearPrecision::Tf32 | LinearPrecision::Half(_) => ProductMath::Tf32,
        }
    }
}
