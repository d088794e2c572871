//! Helpers of the tests that compare an op with its composition: values read back and their
//! normwise difference.

/// `|a - b| / |b|` over the whole vectors (Euclidean norms).
pub fn normwise(a: &[f64], b: &[f64]) -> f64 {
    assert_eq!(a.len(), b.len());
    let diff: f64 = a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum::<f64>().sqrt();
    let norm: f64 = b.iter().map(|y| y * y).sum::<f64>().sqrt();
    diff / norm.max(1e-30)
}

/// A tensor's values as f64 on the host.
pub fn host<B: burn::tensor::backend::Backend, const D: usize>(t: burn::tensor::Tensor<B, D>) -> Vec<f64> {
    t.into_data().convert::<f64>().into_vec::<f64>().expect("f64")
}
