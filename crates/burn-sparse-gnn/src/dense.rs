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

/// `y + bias` with the `[n]` bias added to every row of the `[m, n]` `y`: where a layer's bias
/// is not the epilogue of its product.
pub(crate) fn add_row_bias<B: burn::tensor::backend::Backend>(
    y: FloatTensor<B>,
    bias: FloatTensor<B>,
) -> FloatTensor<B> {
    prim(t2::<B>(y) + Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(bias)).unsqueeze::<2>())
}

/// The f32 product `y` rounded to `half` when that is F16 or BF16 (the default of
/// [`SparseGnnBackend::dense_product_half`]).
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

/// One product `x @ w` of a linear layer ([`crate::ops::linear`], [`crate::ops::linear_pair`]).
///
/// With a half-precision forward ([`LinearPrecision::Half`]) the product multiplies, in this
/// order of preference: `x` itself when it already has the half type (its gradient then has
/// that type too); `x_half`, a plain half copy of `x` the caller already holds (the gradient
/// still flows to `x` in its own type); or a row-scaled half copy made here
/// ([`SparseGnnBackend::rows_to_half`]).
#[derive(Clone, Debug)]
pub struct Term<B: burn::tensor::backend::Backend> {
    /// `[n, d_in]` input.
    pub x: FloatTensor<B>,
    /// `[d_in, d_out]` weight.
    pub w: FloatTensor<B>,
    /// A half copy of `x` (not differentiated) for the half-precision forward.
    pub x_half: Option<FloatTensor<B>>,
}

impl<B: burn::tensor::backend::Backend> Term<B> {
    /// `x @ w`.
    pub fn new(x: FloatTensor<B>, w: FloatTensor<B>) -> Self {
        Self { x, w, x_half: None }
    }
}

/// What the backward pass keeps of a term's input.
#[derive(Clone, Debug)]
pub(crate) enum SavedInput<B: burn::tensor::backend::Backend> {
    /// The input itself (full-precision products).
    Whole(FloatTensor<B>),
    /// The half copy the forward multiplied and, when it was row-scaled, its row scales.
    Half(FloatTensor<B>, Option<FloatTensor<B>>),
}

/// What the backward pass of a term needs: its saved input, its weight and the dtype of its
/// input (the dtype of its gradient).
#[derive(Clone, Debug)]
pub(crate) struct SavedTerm<B: burn::tensor::backend::Backend> {
    pub input: SavedInput<B>,
    pub w: FloatTensor<B>,
    pub x_dtype: burn::tensor::DType,
}

fn dtype_of<B: burn::tensor::backend::Backend>(t: &FloatTensor<B>) -> burn::tensor::DType {
    burn::tensor::TensorMetadata::dtype(t)
}

/// `sum_i x_i @ w_i (+ b)` with `precision`, without autodiff bookkeeping (the forward of
/// [`crate::ops::linear`] and [`crate::ops::linear_pair`]): the first product writes the output
/// and the others add to it in place ([`SparseGnnBackend::dense_product_acc`]); a row-scaled
/// half product is scaled before the next one adds to it. Returns the output and what each
/// term's backward needs.
pub(crate) fn linear_forward<B: SparseGnnBackend>(
    terms: Vec<Term<B>>,
    mut b: Option<FloatTensor<B>>,
    precision: LinearPrecision,
) -> (FloatTensor<B>, Vec<SavedTerm<B>>) {
    let mut y: Option<FloatTensor<B>> = None;
    // the bias rides on the first product when it is not rescaled afterwards (cuBLASLt's bias
    // epilogue on CUDA), else it is added at the end
    let mut saved = Vec::with_capacity(terms.len());
    for Term { x, w, x_half } in terms {
        let x_dtype = dtype_of::<B>(&x);
        let (a, wm, scale, input, math) = match precision {
            LinearPrecision::Half(h) => {
                let w_half = prim(t2::<B>(w.clone()).cast(h));
                let (a, scale) = if x_dtype == burn::tensor::DType::from(h) {
                    (x, None)
                } else if let Some(xh) = x_half {
                    (xh, None)
                } else {
                    let (xh, scale) = B::rows_to_half(x, h, &Default::default());
                    (xh, Some(scale))
                };
                let input = SavedInput::Half(a.clone(), scale.clone());
                (a, w_half, scale, input, ProductMath::Tf32)
            }
            p => (x.clone(), w.clone(), None, SavedInput::Whole(x), p.math()),
        };
        y = Some(match (y, scale) {
            (None, None) => match b.take() {
                Some(bias) => B::dense_product_bias(a, wm, bias, math),
                None => B::dense_product(a, wm, false, false, math),
            },
            (None, Some(s)) => prim(t2::<B>(B::dense_product(a, wm, false, false, math)) * t2::<B>(s)),
            (Some(acc), None) => B::dense_product_acc(acc, a, wm, false, false, math),
            (Some(acc), Some(s)) => {
                prim(t2::<B>(acc) + t2::<B>(B::dense_product(a, wm, false, false, math)) * t2::<B>(s))
            }
        });
        saved.push(SavedTerm { input, w, x_dtype });
    }
    let y = y.expect("a linear layer has at least one product");
    let y = match b {
        Some(b) => add_row_bias::<B>(y, b),
        None => y,
    };
    (y, saved)
}

/// The gradients of [`linear_forward`] from `dy`: per term `(dx, dw)`, and `db`, each computed
/// when asked (`want[i]` per term, `want_b`). A term whose input had the half type gets its
/// `dx` in that type.
pub(crate) fn linear_backward<B: SparseGnnBackend>(
    dy: FloatTensor<B>,
    terms: Vec<SavedTerm<B>>,
    precision: LinearPrecision,
    want: &[[bool; 2]],
    want_b: bool,
) -> (Vec<[Option<FloatTensor<B>>; 2]>, Option<FloatTensor<B>>) {
    let math = precision.math();
    let dy_dtype = FloatDType::from(dtype_of::<B>(&dy));
    let grads = terms
        .into_iter()
        .zip(want)
        .map(|(SavedTerm { input, w, x_dtype }, want)| {
            let dx = want[0].then(|| {
                let dx = B::dense_product(dy.clone(), w, false, true, math);
                if dtype_of::<B>(&dx) == x_dtype {
                    dx
                } else {
                    prim(t2::<B>(dx).cast(FloatDType::from(x_dtype)))
                }
            });
            let dw = want[1].then(|| {
                let x = match input {
                    SavedInput::Whole(x) => x,
                    SavedInput::Half(x_half, Some(scale)) => B::rows_from_half(x_half, scale, dy_dtype),
                    SavedInput::Half(x_half, None) => prim(t2::<B>(x_half).cast(dy_dtype)),
                };
                B::dense_product(x, dy.clone(), true, false, math)
            });
            [dx, dw]
        })
        .collect();
    let db = want_b.then(|| {
        let dy2 = t2::<B>(dy);
        let [n, d] = dy2.dims();
        let ones = Tensor::<B, 2>::ones([n, 1], (&dy2.device(), dy2.dtype()));
        let s = t2::<B>(B::dense_product(prim(ones), prim(dy2), true, false, math));
        s.reshape([d]).into_primitive().tensor()
    });
    (grads, db)
}
