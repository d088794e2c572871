//! Dense node-wise products: a GNN's linear layers multiply an `[n, d_in]` node matrix (n in
//! the hundreds of thousands or millions) by a small `[d_in, d_out]` weight, and their
//! gradients are `dy w^T` and `x^T dy` (a reduction over all `n` rows).
//!
//! On the CUDA backend they run through cuBLAS (loaded at run time; see [`crate::cublas`])
//! with the arithmetic of [`LinearPrecision`]: exact f32 (the default, as PyTorch's default
//! keeps TF32 off for matmul), TF32 on the tensor cores (opt-in), or half-precision inputs on
//! the tensor cores with f32 accumulation. Elsewhere, and where libcublas is missing, they run
//! on Burn's matmul (the weight gradient as a sum of per-chunk products, which fills the device
//! where a single `x^T dy` would not); Burn's matmul on CUDA itself uses TF32 for f32 inputs.

use crate::backend::SparseGnnBackend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{FloatDType, Tensor, TensorPrimitive};
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

/// How many dense products of this process ran through cuBLAS (0 without the `cuda` feature or
/// where libcublas is missing): lets benchmarks and the self test tell which path ran.
pub fn cublas_products() -> usize {
    #[cfg(feature = "cuda")]
    {
        crate::cublas::products()
    }
    #[cfg(not(feature = "cuda"))]
    {
        0
    }
}

/// Rows per chunk of the weight-gradient products on Burn's matmul (split-K).
pub const CHUNK_ROWS: usize = 2048;

pub(crate) fn t2<B: burn::tensor::backend::Backend>(t: FloatTensor<B>) -> Tensor<B, 2> {
    Tensor::from_primitive(TensorPrimitive::Float(t))
}

pub(crate) fn prim<B: burn::tensor::backend::Backend>(t: Tensor<B, 2>) -> FloatTensor<B> {
    t.into_primitive().tensor()
}

/// `op(a) @ op(b)` on Burn's matmul (the default of [`SparseGnnBackend::dense_product`]):
/// half inputs are multiplied in f32 (and the result is f32); `a^T b` over many rows is split into chunks of
/// [`CHUNK_ROWS`] rows.
pub fn burn_product<B: burn::tensor::backend::Backend>(
    a: FloatTensor<B>,
    b: FloatTensor<B>,
    ta: bool,
    tb: bool,
) -> FloatTensor<B> {
    // half inputs are multiplied in f32 (f32 and f64 stay as they are)
    let f32 = |t: FloatTensor<B>| {
        let t = t2::<B>(t);
        match t.dtype() {
            burn::tensor::DType::F16 | burn::tensor::DType::BF16 => t.cast(FloatDType::F32),
            _ => t,
        }
    };
    let (a, b) = (f32(a), f32(b));
    let b = if tb { b.transpose() } else { b };
    if ta {
        return prim(crate::backend::weight_grad(a, b, CHUNK_ROWS));
    }
    prim(a.matmul(b))
}

/// `x @ w (+ b)` with `precision`, without autodiff bookkeeping (the forward of
/// [`crate::ops::linear`]); returns the output and, for [`LinearPrecision::Half`], the half
/// copy of `x` and its row scales.
#[allow(clippy::type_complexity)]
pub(crate) fn linear_forward<B: SparseGnnBackend>(
    x: FloatTensor<B>,
    w: FloatTensor<B>,
    b: Option<FloatTensor<B>>,
    precision: LinearPrecision,
) -> (FloatTensor<B>, Option<(FloatTensor<B>, FloatTensor<B>)>) {
    let (y, saved) = match precision {
        LinearPrecision::Half(h) => {
            let (x_half, scale) = B::rows_to_half(x, h, &Default::default());
            let w_half = prim(t2::<B>(w).cast(h));
            let acc = t2::<B>(B::dense_product(x_half.clone(), w_half, false, false, ProductMath::Tf32));
            (acc * t2::<B>(scale.clone()), Some((x_half, scale)))
        }
        p => (t2::<B>(B::dense_product(x, w, false, false, p.math())), None),
    };
    let y = match b {
        Some(b) => y + Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(b)).unsqueeze::<2>(),
        None => y,
    };
    (prim(y), saved)
}

/// The gradients of [`linear_forward`] from `dy`: `(dx, dw, db)`, each computed when asked.
#[allow(clippy::too_many_arguments)]
pub(crate) fn linear_backward<B: SparseGnnBackend>(
    dy: FloatTensor<B>,
    x: Option<FloatTensor<B>>,
    half: Option<(FloatTensor<B>, FloatTensor<B>)>,
    w: FloatTensor<B>,
    precision: LinearPrecision,
    want: [bool; 3],
) -> [Option<FloatTensor<B>>; 3] {
    let math = precision.math();
    let dx = want[0].then(|| B::dense_product(dy.clone(), w.clone(), false, true, math));
    let dw = if want[1] {
        let x = match (x, half) {
            (Some(x), _) => x,
            (None, Some((x_half, scale))) => {
                let dtype = FloatDType::from(burn::tensor::TensorMetadata::dtype(&dy));
                B::rows_from_half(x_half, scale, dtype)
            }
            (None, None) => unreachable!("the forward saved its input"),
        };
        Some(B::dense_product(x, dy.clone(), true, false, math))
    } else {
        None
    };
    let db = want[2].then(|| {
        let dy2 = t2::<B>(dy);
        let [n, d] = dy2.dims();
        let ones = Tensor::<B, 2>::ones([n, 1], (&dy2.device(), dy2.dtype()));
        let s = t2::<B>(B::dense_product(prim(ones), prim(dy2), true, false, math));
        s.reshape([d]).into_primitive().tensor()
    });
    [dx, dw, db]
}
