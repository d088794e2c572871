//! The terms `x @ w` of a linear layer and their forward and backward passes without autodiff
//! bookkeeping (on any backend with the dense and row ops).

use crate::ops::dense::add_row_bias;
use crate::ops::dense::precision::LinearPrecision;
use crate::ops::dense::precision::ProductMath;
use crate::ops::dense::DenseOps;
use crate::ops::primitive::prim;
use crate::ops::primitive::t2;
use crate::ops::rows::RowOps;
use burn::tensor::ops::FloatTensor;
use burn::tensor::FloatDType;
use burn::tensor::Tensor;

/// One product `x @ w` of a linear layer ([`crate::ops::linear`], [`crate::ops::linear_pair`]).
///
/// With a half-precision forward ([`LinearPrecision::Half`]) the product multiplies, in this
/// order of preference: `x` itself when it already has the half type (its gradient then has
/// that type too); `x_half`, a plain half copy of `x` the caller already holds (the gradient
/// still flows to `x` in its own type); or a row-scaled half copy made here
/// ([`RowOps::rows_to_half`](crate::ops::rows::RowOps::rows_to_half)).
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
/// and the others add to it in place
/// ([`DenseOps::dense_product_acc`](crate::ops::dense::DenseOps::dense_product_acc)); a row-scaled
/// half product is scaled before the next one adds to it. Returns the output and what each term's
/// backward needs.
pub(crate) fn linear_forward<B: DenseOps + RowOps>(
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
pub(crate) fn linear_backward<B: DenseOps + RowOps>(
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
    let db = want_b.then(|| bias_gradient::<B>(dy, math));
    (grads, db)
}

/// The gradient `[d]` (f32) of a bias added to every row of an `[n, d]` output whose gradient
/// is `dy`: the column sums of `dy`, as the product `ones[n, 1]^T dy` (cuBLAS on CUDA, Burn's
/// chunked split-K product elsewhere) rather than a reduction along the strided axis.
pub(crate) fn bias_gradient<B: DenseOps>(dy: FloatTensor<B>, math: ProductMath) -> FloatTensor<B> {
    let dy2 = t2::<B>(dy);
    let [n, d] = dy2.dims();
    let ones = Tensor::<B, 2>::ones([n, 1], (&dy2.device(), dy2.dtype()));
    let s = t2::<B>(B::dense_product(prim(ones), prim(dy2), true, false, math));
    s.reshape([d]).into_primitive().tensor()
}
