//! The second half of a GraphSAGE mean / sum layer on one part of a partitioned graph whose
//! halo columns are held apart from its own ([`crate::ops::split_pair`]):
//!
//! ```text
//! s   = own_sum + A_halo halo            (own_sum = A_own own, computed while the halo moved)
//! agg = s / deg                          (the whole graph's degrees; the sum layer keeps s)
//! y   = agg @ w_neigh + own @ w_root + b
//! ```
//!
//! One op in place of an addition, a broadcast product by `1 / deg`, a linear pair and their
//! autodiff steps. The backward pass shares `d_s = (dy / deg) w_neigh^T` between the two
//! sums: the halo rows' gradient `A_halo^T d_s` is computed here (before the exchange sends
//! it back) and `d_s` goes to `own_sum`, whose own step (`A_own^T d_s`) runs while the halo
//! gradients move. In half precision the sums, `agg`, `d_s` and the halo gradient keep the
//! half type, and the four products take half inputs; `dy` is rounded to the half type twice
//! (once scaled by `1 / deg`), the only element-wise passes of the backward pass.

use crate::ops::aggregation::AggregationOps;
use crate::ops::dense::precision::LinearPrecision;
use crate::ops::dense::DenseOps;
use crate::ops::layer::pair::cast;
use crate::ops::layer::terms::bias_gradient;
use crate::ops::primitive::prim;
use crate::ops::primitive::t2;
use crate::ops::primitive::GraphPrimitive;
use crate::ops::primitive::Reduce;
use crate::ops::rows::RowOps;
use burn::tensor::ops::FloatTensor;
use burn::tensor::DType;
use burn::tensor::FloatDType;
use burn::tensor::TensorMetadata;

/// The inputs of [`split_forward`].
#[derive(Clone, Debug)]
pub struct SplitInputs<B: burn::tensor::backend::Backend> {
    /// `[n, d_in]`: the sum over the part's own columns, in the aggregation's storage type
    /// (the half type in half precision).
    pub own_sum: FloatTensor<B>,
    /// The part's rows over its halo columns and the `[h, d_in]` halo rows (storage type);
    /// `None` for a part without a halo.
    pub halo: Option<(GraphPrimitive<B>, FloatTensor<B>)>,
    /// `[n]`: `1 / deg` of the part's rows by the whole graph's degrees (mean); `None`: sum.
    pub inv_degree: Option<FloatTensor<B>>,
    /// `[n, d_in]`: the part's own rows (the root map's input; its gradient has its type).
    pub own: FloatTensor<B>,
    /// A plain half copy of `own` the caller holds (half precision), for the root product.
    pub own_half: Option<FloatTensor<B>>,
    /// `[d_in, d_out]`: the neighbour map.
    pub w_neigh: FloatTensor<B>,
    /// `[d_in, d_out]`: the root map.
    pub w_root: FloatTensor<B>,
    /// `[d_out]`: the bias.
    pub b: Option<FloatTensor<B>>,
    /// The products' arithmetic.
    pub precision: LinearPrecision,
}

/// What the backward pass of [`split_forward`] keeps.
#[derive(Clone, Debug)]
pub(crate) struct SplitSaved<B: burn::tensor::backend::Backend> {
    halo_g: Option<GraphPrimitive<B>>,
    halo_dtype: Option<DType>,
    /// `[n, 1]` `1 / deg` in the storage type (mean).
    scale: Option<FloatTensor<B>>,
    /// The neighbour product's input (`agg`) and the root product's (`own` or its half copy).
    agg: FloatTensor<B>,
    own_in: FloatTensor<B>,
    own_dtype: DType,
    w_neigh: FloatTensor<B>,
    w_root: FloatTensor<B>,
    precision: LinearPrecision,
}

fn half_of(precision: LinearPrecision) -> Option<FloatDType> {
    match precision {
        LinearPrecision::Half(h) => Some(h),
        _ => None,
    }
}

/// The forward pass (see the module docs); returns `y` (f32) and what the backward pass needs.
pub(crate) fn split_forward<B: AggregationOps + DenseOps + RowOps>(
    inp: SplitInputs<B>,
) -> (FloatTensor<B>, SplitSaved<B>) {
    let SplitInputs { own_sum, halo, inv_degree, own, own_half, w_neigh, w_root, b, precision } = inp;
    let storage = FloatDType::from(own_sum.dtype());
    let n = own_sum.shape()[0];
    let halo_dtype = halo.as_ref().map(|(_, rows)| rows.dtype());
    let (halo_g, s) = match halo {
        Some((g, rows)) => {
            let halo_sum = B::spmm(&g.csr, None, cast::<B>(rows, storage), Reduce::Sum).out;
            (Some(g), prim(t2::<B>(own_sum) + t2::<B>(halo_sum)))
        }
        None => (None, own_sum),
    };
    let scale = inv_degree.map(|inv| {
        let inv = burn::tensor::Tensor::<B, 1>::from_primitive(burn::tensor::TensorPrimitive::Float(inv));
        prim(inv.cast(storage).reshape([n, 1]))
    });
    let agg = match &scale {
        Some(sc) => B::rows_from_half(s, sc.clone(), storage),
        None => s,
    };
    let half = half_of(precision);
    let math = precision.math();
    let own_dtype = own.dtype();
    let own_in = match half {
        Some(h) => own_half.unwrap_or_else(|| cast::<B>(own, h)),
        None => own,
    };
    let (wn, wr) = match half {
        Some(h) => (cast::<B>(w_neigh.clone(), h), cast::<B>(w_root.clone(), h)),
        None => (w_neigh.clone(), w_root.clone()),
    };
    let y = match b {
        Some(bias) => B::dense_product_bias(agg.clone(), wn, bias, math),
        None => B::dense_product(agg.clone(), wn, false, false, math),
    };
    let y = B::dense_product_acc(y, own_in.clone(), wr, false, false, math);
    (y, SplitSaved { halo_g, halo_dtype, scale, agg, own_in, own_dtype, w_neigh, w_root, precision })
}

/// The gradients of [`split_forward`] from `dy` (`[n, d_out]`): `own_sum`, `halo`, `own`,
/// `w_neigh`, `w_root`, `b`, each computed when `want` asks.
pub(crate) fn split_backward<B: AggregationOps + DenseOps + RowOps>(
    dy: FloatTensor<B>,
    saved: SplitSaved<B>,
    want: [bool; 6],
) -> [Option<FloatTensor<B>>; 6] {
    let SplitSaved { halo_g, halo_dtype, scale, agg, own_in, own_dtype, w_neigh, w_root, precision } = saved;
    let [want_sum, want_halo, want_own, want_wn, want_wr, want_b] = want;
    let half = half_of(precision);
    let math = precision.math();
    let storage = FloatDType::from(agg.dtype());
    let db = want_b.then(|| bias_gradient::<B>(dy.clone(), math));
    // `dy` in the products' input type (f32 precision: itself)
    let dy_in = (want_wn || want_wr).then(|| match half {
        Some(h) => cast::<B>(dy.clone(), h),
        None => dy.clone(),
    });
    let dwn = want_wn.then(|| B::dense_product(agg, dy_in.clone().expect("dy"), true, false, math));
    let dwr = want_wr.then(|| B::dense_product(own_in, dy_in.clone().expect("dy"), true, false, math));
    let dx_own = want_own.then(|| {
        let d = B::dense_product(dy.clone(), w_root, false, true, math);
        cast::<B>(d, FloatDType::from(own_dtype))
    });
    let (mut d_sum, mut d_halo) = (None, None);
    if want_sum || want_halo {
        // d_s = (dy / deg) w_neigh^T, in the storage type
        let dyn_ = match scale {
            Some(sc) => B::rows_from_half(dy, sc, storage),
            None => cast::<B>(dy, storage),
        };
        let ds = match half {
            Some(h) => B::dense_product_half(dyn_, cast::<B>(w_neigh, h), false, true),
            None => B::dense_product(dyn_, w_neigh, false, true, math),
        };
        let ds = cast::<B>(ds, storage);
        d_halo = match (&halo_g, want_halo) {
            (Some(g), true) => {
                let d = B::spmm(&g.csc, None, ds.clone(), Reduce::Sum).out;
                Some(match halo_dtype {
                    Some(t) => cast::<B>(d, FloatDType::from(t)),
                    None => d,
                })
            }
            _ => None,
        };
        d_sum = want_sum.then_some(ds);
    }
    [d_sum, d_halo, dx_own, dwn, dwr, db]
}
