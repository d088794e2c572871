//! Dense node-wise products: a GNN's linear layers multiply an `[n, d_in]` node matrix (n in
//! the hundreds of thousands or millions) by a small `[d_in, d_out]` weight, and their
//! gradients are `dy w^T` and `x^T dy` (a reduction over all `n` rows).
//!
//! On the CUDA backend they run through cuBLAS (loaded at run time; see `cublas`)
//! with the arithmetic of [`LinearPrecision`]: exact f32 (the default, as PyTorch's default
//! keeps TF32 off for matmul), TF32 on the tensor cores (opt-in), or half-precision inputs on
//! the tensor cores with f32 accumulation. Elsewhere, and where libcublas is missing, they run
//! on Burn's matmul (the weight gradient as a sum of per-chunk products, which fills the device
//! where a single `x^T dy` would not); Burn's matmul on CUDA itself uses TF32 for f32 inputs.
//!
//! [`ProductMath`] and [`LinearPrecision`] are in [`precision`].

mod autodiff;
mod cube;
#[cfg(feature = "cuda")]
pub(crate) mod cublas;
mod host;
pub mod precision;
pub use precision::{LinearPrecision, ProductMath};

use crate::ops::primitive::prim;
use crate::ops::primitive::t2;
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::FloatDType;
use burn::tensor::Tensor;
use burn::tensor::TensorPrimitive;

/// Dense node-wise products (`op(a) @ op(b)`), on cuBLAS where the backend can.
///
/// Part of [`crate::backend::SparseGnnBackend`] (see its conventions).
pub trait DenseOps: Backend {
    /// `op(a) @ op(b)` of 2-D tensors (`ta` / `tb`: the operand is used transposed) into an
    /// f32 tensor: f32 inputs with `math`, f16 / bf16 inputs (both the same) with f32
    /// accumulation. Burn's matmul by default; cuBLAS on CUDA (see [`crate::dense`]).
    fn dense_product(
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
        ta: bool,
        tb: bool,
        math: crate::ops::dense::precision::ProductMath,
    ) -> FloatTensor<Self> {
        let _ = math;
        crate::ops::dense::burn_product::<Self>(a, b, ta, tb)
    }

    /// `op(a) @ op(b)` of half inputs (both f16 or both bf16) into a tensor of their type:
    /// f32 accumulation, one rounding at the end (what `torch.matmul` returns for half
    /// tensors). cuBLAS on CUDA; elsewhere [`Self::dense_product`] then a cast.
    /// Inputs of another type give the f32 product.
    fn dense_product_half(a: FloatTensor<Self>, b: FloatTensor<Self>, ta: bool, tb: bool) -> FloatTensor<Self> {
        let half = burn::tensor::TensorMetadata::dtype(&a);
        crate::ops::dense::half_product::<Self>(Self::dense_product(a, b, ta, tb, Default::default()), half)
    }

    /// `acc + op(a) @ op(b)` for an f32 `acc` of the product's shape (see
    /// [`Self::dense_product`]): a sum of products without a separate addition
    /// pass where the backend adds in place (cuBLAS with `beta = 1` on CUDA, when no other
    /// tensor shares `acc`); the product then an addition by default.
    fn dense_product_acc(
        acc: FloatTensor<Self>,
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
        ta: bool,
        tb: bool,
        math: crate::ops::dense::precision::ProductMath,
    ) -> FloatTensor<Self> {
        let p = Self::dense_product(a, b, ta, tb, math);
        crate::ops::primitive::prim(crate::ops::primitive::t2::<Self>(acc) + crate::ops::primitive::t2::<Self>(p))
    }

    /// `a @ b + bias` (`bias`: `[n]` f32, added to every row) into an f32 `[m, n]` tensor (see
    /// [`Self::dense_product`]): on CUDA the bias is cuBLASLt's epilogue of the
    /// product, elsewhere an addition after it.
    fn dense_product_bias(
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
        bias: FloatTensor<Self>,
        math: crate::ops::dense::precision::ProductMath,
    ) -> FloatTensor<Self> {
        crate::ops::dense::add_row_bias::<Self>(Self::dense_product(a, b, false, false, math), bias)
    }
}

/// How many dense products of this process ran through cuBLAS (0 without the `cuda` feature or
/// where libcublas is missing): lets benchmarks and the self test tell which path ran.
pub fn cublas_products() -> usize {
    #[cfg(feature = "cuda")]
    {
        crate::ops::dense::cublas::products()
    }
    #[cfg(not(feature = "cuda"))]
    {
        0
    }
}

/// Rows per chunk of the weight-gradient products on Burn's matmul (split-K).
pub const CHUNK_ROWS: usize = 2048;

/// `y + bias` with the `[n]` bias added to every row of the `[m, n]` `y`: where a layer's bias
/// is not the epilogue of its product.
pub(crate) fn add_row_bias<B: burn::tensor::backend::Backend>(
    y: FloatTensor<B>,
    bias: FloatTensor<B>,
) -> FloatTensor<B> {
    prim(t2::<B>(y) + Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(bias)).unsqueeze::<2>())
}

/// The f32 product `y` rounded to `half` when that is F16 or BF16 (the default of
/// [`DenseOps::dense_product_half`](crate::ops::dense::DenseOps::dense_product_half)).
pub(crate) fn half_product<B: burn::tensor::backend::Backend>(
    y: FloatTensor<B>,
    half: burn::tensor::DType,
) -> FloatTensor<B> {
    match half {
        burn::tensor::DType::F16 => prim(t2::<B>(y).cast(FloatDType::F16)),
        burn::tensor::DType::BF16 => prim(t2::<B>(y).cast(FloatDType::BF16)),
        _ => y,
    }
}

/// `op(a) @ op(b)` on Burn's matmul (the default of
/// [`DenseOps::dense_product`](crate::ops::dense::DenseOps::dense_product)): half inputs are
/// multiplied in f32 (and the result is f32); `a^T b` over many rows is split into chunks of
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
        return prim(crate::ops::dense::weight_grad(a, b, CHUNK_ROWS));
    }
    prim(a.matmul(b))
}

/// `x^T dy` for `[n, a]` and `[n, b]` node matrices as a sum of per-chunk products (`chunk`
/// rows each; one plain product when there are fewer than two chunks or `chunk == 0`).
pub(crate) fn weight_grad<B: Backend>(x: Tensor<B, 2>, dy: Tensor<B, 2>, chunk: usize) -> Tensor<B, 2> {
    let [n, a] = x.dims();
    let b = dy.dims()[1];
    if chunk == 0 || n < 2 * chunk {
        return x.transpose().matmul(dy);
    }
    let chunks = n / chunk;
    let main = chunks * chunk;
    let xs = x.clone().slice([0..main]).reshape([chunks, chunk, a]).swap_dims(1, 2);
    let ds = dy.clone().slice([0..main]).reshape([chunks, chunk, b]);
    let dw = xs.matmul(ds).sum_dim(0).reshape([a, b]);
    if main == n {
        return dw;
    }
    dw + x.slice([main..n]).transpose().matmul(dy.slice([main..n]))
}
