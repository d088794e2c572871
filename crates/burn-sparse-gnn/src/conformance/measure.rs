//! Error measures: the normwise error of a tested output against its reference, and the
//! largest difference of two tensors whose arithmetic must be the same.

use burn::tensor::backend::Backend;
use burn::tensor::{FloatDType, Tensor};

/// Normwise error between `a` (tested) and `b` (reference); infinite on length mismatch or NaN.
pub fn normwise_error(a: &[f64], b: &[f64]) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    let scale = b.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    let mut err = 0.0f64;
    for (x, y) in a.iter().zip(b) {
        let d = (x - y).abs();
        if d.is_nan() {
            return f64::INFINITY;
        }
        err = err.max(d);
    }
    err / scale
}

/// The largest difference between two float tensors of the same device read back as f32 (at
/// least `f64::MIN_POSITIVE` wherever two entries differ, so any difference shows), or
/// infinity when their sizes differ or they are empty: the measure of the checks whose
/// arithmetic must be the same.
pub(super) fn exact_difference<B: Backend>(
    got: burn::tensor::ops::FloatTensor<B>,
    want: burn::tensor::ops::FloatTensor<B>,
) -> f64 {
    use burn::tensor::TensorPrimitive;
    let host = |t: burn::tensor::ops::FloatTensor<B>| {
        let t = Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(t)).cast(FloatDType::F32);
        t.into_data().convert::<f64>().into_vec::<f64>().unwrap_or_default()
    };
    let (p, q) = (host(got), host(want));
    if p.len() != q.len() || p.is_empty() {
        return f64::INFINITY;
    }
    p.iter().zip(&q).map(|(a, b)| if a == b { 0.0 } else { (a - b).abs().max(f64::MIN_POSITIVE) }).fold(0.0, f64::max)
}
