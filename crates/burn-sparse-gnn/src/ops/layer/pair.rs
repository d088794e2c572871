//! `aggr(x) @ w_neigh + x @ w_root + b`: a mean / sum aggregation followed by a SAGE layer's
//! two linear maps ([`crate::ops::aggregate_pair`]), with a backward pass that keeps no copy of
//! the aggregate.
//!
//! The aggregation is linear, `aggr(x) = A x` (`A` scaled by `1 / deg` for the mean), so the
//! neighbour map's gradients can be taken from `t = A^T dy` instead of the aggregate:
//! `dw_neigh = aggr(x)^T dy = x^T t` and `dx = A^T (dy w_neigh^T) = t w_neigh^T`. With
//! `d_out <= d_in` the transposed SpMM is no wider than the one it replaces, the `n x d_in`
//! aggregate is not kept between the forward and the backward pass, and `dx` gets the root
//! map's gradient `dy w_root^T` added in place (no addition pass of its own). In half
//! precision the transposed SpMM and both products of `t` run on half inputs.

use crate::ops::aggregation::AggregationOps;
use crate::ops::dense::precision::LinearPrecision;
use crate::ops::dense::DenseOps;
use crate::ops::layer::terms::linear_backward;
use crate::ops::layer::terms::linear_forward;
use crate::ops::layer::terms::SavedTerm;
use crate::ops::layer::terms::Term;
use crate::ops::primitive::GraphPrimitive;
use crate::ops::primitive::Reduce;
use crate::ops::rows::inv_degree_rows;
use crate::ops::rows::RowOps;
use burn::tensor::ops::FloatTensor;
use burn::tensor::DType;
use burn::tensor::FloatDType;
use burn::tensor::Tensor;
use burn::tensor::TensorMetadata;
use burn::tensor::TensorPrimitive;

fn t2<B: burn::tensor::backend::Backend>(t: FloatTensor<B>) -> Tensor<B, 2> {
    Tensor::from_primitive(TensorPrimitive::Float(t))
}

fn prim<B: burn::tensor::backend::Backend>(t: Tensor<B, 2>) -> FloatTensor<B> {
    t.into_primitive().tensor()
}

/// The first `n` rows of `t` (`t` itself when it has `n` rows).
pub(crate) fn head<B: burn::tensor::backend::Backend>(t: FloatTensor<B>, n: usize) -> FloatTensor<B> {
    if t.shape()[0] == n {
        t
    } else {
        prim(t2::<B>(t).slice([0..n]))
    }
}

/// `t` in `to` (itself where it has that dtype).
pub(crate) fn cast<B: burn::tensor::backend::Backend>(t: FloatTensor<B>, to: FloatDType) -> FloatTensor<B> {
    if t.dtype() == DType::from(to) {
        t
    } else {
        prim(t2::<B>(t).cast(to))
    }
}

/// What the backward pass of [`pair_forward`] keeps.
#[derive(Clone, Debug)]
pub(crate) struct PairSaved<B: burn::tensor::backend::Backend> {
    /// The aggregation's input as it was multiplied: `x`, or its plain half copy.
    xin: FloatTensor<B>,
    /// The dtype of `x` (of its gradient).
    x_dtype: DType,
    w_neigh: FloatTensor<B>,
    root: SavedTerm<B>,
    reduce: Reduce,
    precision: LinearPrecision,
}

/// The forward pass: `aggr(x) @ w_neigh + x[..n] @ w_root + b` (`n` = the graph's rows; `x` has
/// one row per column of the graph). In half precision `x` is rounded to the half type once,
/// and that copy feeds the aggregation and the root product.
pub(crate) fn pair_forward<B: AggregationOps + DenseOps + RowOps>(
    g: &GraphPrimitive<B>,
    x: FloatTensor<B>,
    w_neigh: FloatTensor<B>,
    w_root: FloatTensor<B>,
    b: Option<FloatTensor<B>>,
    reduce: Reduce,
    precision: LinearPrecision,
) -> (FloatTensor<B>, PairSaved<B>) {
    let n = g.csr.n_rows;
    let x_dtype = x.dtype();
    let xin = match precision {
        LinearPrecision::Half(h) => cast::<B>(x.clone(), h),
        _ => x.clone(),
    };
    let agg = B::spmm(&g.csr, None, xin.clone(), reduce).out;
    let root = Term {
        x: head::<B>(x, n),
        w: w_root,
        x_half: matches!(precision, LinearPrecision::Half(_)).then(|| head::<B>(xin.clone(), n)),
    };
    let (y, mut saved) = linear_forward::<B>(vec![Term::new(agg, w_neigh.clone()), root], b, precision);
    let root = saved.pop().expect("the root term");
    // the neighbour term's saved input (the aggregate) is dropped here
    drop(saved);
    (y, PairSaved { xin, x_dtype, w_neigh, root, reduce, precision })
}

/// The gradients of [`pair_forward`] from `dy` (`[n, d_out]`): `(dx, dw_neigh, dw_root, db)`,
/// each computed when asked. `dx` has one row per column of the graph and the dtype of `x`.
#[allow(clippy::type_complexity)]
pub(crate) fn pair_backward<B: AggregationOps + DenseOps + RowOps>(
    g: &GraphPrimitive<B>,
    dy: FloatTensor<B>,
    saved: PairSaved<B>,
    want: [bool; 4],
) -> [Option<FloatTensor<B>>; 4] {
    let PairSaved { xin, x_dtype, w_neigh, root, reduce, precision } = saved;
    let [want_x, want_wn, want_wr, want_b] = want;
    let n = g.csr.n_rows;
    let math = precision.math();
    let half = match precision {
        LinearPrecision::Half(h) => Some(h),
        _ => None,
    };
    // the root map's weight and bias gradients first: in half precision the f32 copy of its
    // saved input is freed before `dx` is allocated, so the pools hand its buffer on (one
    // `[n, d]` f32 buffer fewer at the peak of the backward pass)
    let wr = root.w.clone();
    let (mut root_grads, db) = linear_backward::<B>(dy.clone(), vec![root], precision, &[[false, want_wr]], want_b);
    let [_, dwr] = root_grads.pop().expect("the root term's gradients");
    let (mut dx, mut dwn) = (None, None);
    if want_x || want_wn {
        // t = A^T dy (A scaled by 1 / deg for the mean), in the half type in half precision
        let to = half.unwrap_or_else(|| FloatDType::from(dy.dtype()));
        let d = match reduce {
            Reduce::Mean => inv_degree_rows::<B>(&g.csr, dy.clone(), to),
            _ => cast::<B>(dy.clone(), to),
        };
        let t = B::spmm(&g.csc, None, d, Reduce::Sum).out;
        let wn = match half {
            Some(h) => cast::<B>(w_neigh, h),
            None => w_neigh,
        };
        dwn = want_wn.then(|| B::dense_product(xin, t.clone(), true, false, math));
        dx = want_x.then(|| {
            let dx = B::dense_product(t, wn, false, true, math);
            // the root map's gradient added to the part's own rows
            let dx = if dx.shape()[0] == n {
                B::dense_product_acc(dx, dy.clone(), wr.clone(), false, true, math)
            } else {
                let dr = t2::<B>(B::dense_product(dy.clone(), wr.clone(), false, true, math));
                let dx = t2::<B>(dx);
                let d_in = dx.dims()[1];
                let own = dx.clone().slice([0..n]) + dr;
                prim(dx.slice_assign([0..n, 0..d_in], own))
            };
            cast::<B>(dx, FloatDType::from(x_dtype))
        });
    }
    [dx, dwn, dwr, db]
}
