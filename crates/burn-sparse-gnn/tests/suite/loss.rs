//! The weighted cross-entropy op: terms and the logits' gradient against the f64 CPU reference
//! on the CPU backend (the composed ops) and on wgpu (the kernels, with and without plane
//! reductions); bad shapes are errors. The binary cross-entropy with logits the same way.

use burn::backend::{Autodiff, NdArray};
use burn::tensor::{ElementConversion, Int, Tensor, TensorData};
use burn_sparse_gnn::conformance::{binary_cross_entropy_checks, cross_entropy_checks};
use burn_sparse_gnn::loss::{binary_cross_entropy, cross_entropy_rows};
use sparse_gnn_kernels::config::KernelConfig;

/// f32 arithmetic against f64 on logits up to 1e3: rounding of the largest logits decides.
const TOLERANCE: f64 = 5e-5;

fn assert_close(checks: Vec<(String, f64)>, count: usize) {
    assert_eq!(checks.len(), count);
    for (what, err) in &checks {
        println!("{what}: {err:.2e}");
    }
    for (what, err) in checks {
        assert!(err <= TOLERANCE, "{what}: error {err:.2e}");
    }
}

#[test]
fn cross_entropy_equals_the_reference_on_the_cpu() {
    let checks = cross_entropy_checks::<Autodiff<NdArray>>(&Default::default(), &[1, 7, 47], &KernelConfig::default());
    assert_close(checks, 12);
}

#[cfg(feature = "wgpu")]
#[test]
fn cross_entropy_equals_the_reference_on_wgpu() {
    type B = Autodiff<burn_sparse_gnn::Wgpu>;
    let device = Default::default();
    assert_close(cross_entropy_checks::<B>(&device, &[1, 7, 47, 300], &KernelConfig::default()), 16);
    let shared = KernelConfig::default().shared_memory_only();
    assert_close(cross_entropy_checks::<B>(&device, &[7, 47], &shared), 8);
}

#[test]
fn labels_or_weights_of_other_rows_are_errors() {
    type B = NdArray;
    let device = Default::default();
    let x = Tensor::<B, 2>::zeros([4, 3], &device);
    let labels = Tensor::<B, 1, Int>::from_data(TensorData::new(vec![0i64, 1, 2], [3]), &device);
    let w = Tensor::<B, 1>::ones([4], &device);
    let e = cross_entropy_rows(x.clone(), labels, w, &KernelConfig::default()).unwrap_err();
    assert!(e.to_string().contains("labels"), "{e}");
    let labels = Tensor::<B, 1, Int>::from_data(TensorData::new(vec![0i64, 1, 2, 0], [4]), &device);
    let e = cross_entropy_rows(x, labels, Tensor::ones([5], &device), &KernelConfig::default()).unwrap_err();
    assert!(e.to_string().contains("weights"), "{e}");
}

#[test]
fn binary_cross_entropy_equals_the_reference_on_the_cpu() {
    assert_close(binary_cross_entropy_checks::<Autodiff<NdArray>>(&Default::default()), 12);
}

#[cfg(feature = "wgpu")]
#[test]
fn binary_cross_entropy_equals_the_reference_on_wgpu() {
    assert_close(binary_cross_entropy_checks::<Autodiff<burn_sparse_gnn::Wgpu>>(&Default::default()), 12);
}

#[test]
fn binary_labels_or_weights_of_other_lengths_are_errors() {
    type B = NdArray;
    let device = Default::default();
    let s = Tensor::<B, 1>::zeros([4], &device);
    let one = Tensor::<B, 1>::ones([1], &device);
    let e = binary_cross_entropy(s.clone(), Tensor::ones([3], &device), one.clone()).unwrap_err();
    assert!(e.to_string().contains("labels"), "{e}");
    let e = binary_cross_entropy(s.clone(), one.clone(), Tensor::ones([2], &device)).unwrap_err();
    assert!(e.to_string().contains("weights"), "{e}");
    // one per score and one for all are both accepted
    assert_eq!(binary_cross_entropy(s.clone(), Tensor::ones([4], &device), one).map(|t| t.dims()).ok(), Some([4]));
}

/// `sum_terms` of `[n]` terms, its value and the terms' gradient, for lengths around the block
/// size (1,024) and past it.
fn sum_terms_checks<B: burn::tensor::backend::AutodiffBackend>(device: &B::Device, tolerance: f64) {
    use burn_sparse_gnn::loss::sum_terms;
    for n in [1usize, 5, 1023, 1024, 1025, 5000, 70_001] {
        let values: Vec<f64> = (0..n).map(|i| ((i * 7919) % 1000) as f64 / 997.0 - 0.3).collect();
        let want: f64 = values.iter().sum();
        let terms = Tensor::<B, 1>::from_data(TensorData::new(values, [n]), device).require_grad();
        let total = sum_terms(terms.clone());
        assert_eq!(total.dims(), [1]);
        let again: f64 = sum_terms(terms.clone()).into_scalar().elem();
        let grads = total.backward();
        let got: f64 = total.into_scalar().elem();
        assert!((got - want).abs() <= tolerance * want.abs().max(1.0), "n {n}: {got} against {want}");
        assert_eq!(got.to_bits(), again.to_bits(), "n {n}: the same bits every call");
        let g: Vec<f64> = terms.grad(&grads).expect("a gradient").into_data().convert::<f64>().to_vec().unwrap();
        assert!(g.iter().all(|&v| v == 1.0), "n {n}: the gradient of a sum is ones");
    }
}

#[test]
fn sum_terms_is_the_sum_on_the_cpu() {
    // f32 terms against the f64 sum
    sum_terms_checks::<Autodiff<NdArray>>(&Default::default(), 1e-5);
}

#[cfg(feature = "wgpu")]
#[test]
fn sum_terms_is_the_sum_on_wgpu() {
    sum_terms_checks::<Autodiff<burn_sparse_gnn::Wgpu>>(&Default::default(), 1e-5);
}
