//! The fused Adam step: the kernel (wgpu) and the host implementation (NdArray) against the CPU
//! reference, and ten steps of `FusedAdam` against Burn's `Adam` on both.

use burn::backend::{Autodiff, NdArray};
use burn_sparse_gnn::conformance::{adam_checks, fused_adam_checks};

fn assert_close(checks: &[(String, Option<f64>)], cases: usize) {
    assert_eq!(checks.len(), cases);
    for (what, err) in checks {
        println!("{what}: {err:?}");
        assert!(err.is_some_and(|e| e <= 1e-5), "{what}: {err:?}");
    }
}

#[test]
fn host_adam_step_matches_the_reference_and_burns_adam() {
    let device = Default::default();
    assert_close(&adam_checks::<NdArray>(&device), 8);
    assert_close(&fused_adam_checks::<Autodiff<NdArray>>(&device), 2);
}

#[cfg(feature = "wgpu")]
#[test]
fn adam_kernel_matches_the_reference_and_burns_adam_on_wgpu() {
    let device = burn::backend::wgpu::WgpuDevice::DefaultDevice;
    assert_close(&adam_checks::<burn_sparse_gnn::Wgpu>(&device), 8);
    assert_close(&fused_adam_checks::<Autodiff<burn_sparse_gnn::Wgpu>>(&device), 2);
}
