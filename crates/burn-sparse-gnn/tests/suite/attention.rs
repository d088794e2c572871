//! GAT's fused attention coefficients: the host implementation (NdArray) and the kernels (wgpu,
//! f32 and f16) against the CPU reference, forward and both gradients.

use burn::backend::{Autodiff, NdArray};
use burn::tensor::FloatDType;
use burn_sparse_gnn::conformance::{gat_attention_bound, gat_attention_checks};

fn assert_close(checks: &[(String, FloatDType, Option<f64>)], ran: usize) {
    assert_eq!(checks.iter().filter(|(_, _, e)| e.is_some()).count(), ran, "checks that ran");
    for (what, dtype, err) in checks {
        println!("{what} ({dtype:?}): {err:?}");
        if let Some(e) = err {
            assert!(*e <= gat_attention_bound(*dtype), "{what} ({dtype:?}): {e}");
        }
    }
}

#[test]
fn host_gat_attention_matches_the_reference() {
    let checks = gat_attention_checks::<Autodiff<NdArray>>(&Default::default(), &[FloatDType::F32]);
    assert_close(&checks, 36);
}

#[cfg(feature = "wgpu")]
#[test]
fn gat_attention_kernels_match_the_reference_on_wgpu() {
    use burn::tensor::backend::Backend;
    let device = burn::backend::wgpu::WgpuDevice::DefaultDevice;
    let f16 = burn_sparse_gnn::Wgpu::supports_dtype(&device, burn::tensor::DType::F16);
    let checks = gat_attention_checks::<Autodiff<burn_sparse_gnn::Wgpu>>(&device, &[FloatDType::F32, FloatDType::F16]);
    assert_close(&checks, if f16 { 72 } else { 36 });
}
