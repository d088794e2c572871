//! The conformance suite on wgpu (Mesa lavapipe in CI: `CUBECL_WGPU_DEFAULT_DEVICE=Cpu`).
#![cfg(feature = "wgpu")]

use burn::backend::Autodiff;
use burn_sparse_gnn::conformance::{run, ConformanceConfig};
use burn_sparse_gnn::Wgpu;

fn device() -> cubecl::wgpu::WgpuDevice {
    cubecl::wgpu::WgpuDevice::DefaultDevice
}

#[test]
fn conformance_suite_passes_on_wgpu() {
    let report = run::<Autodiff<Wgpu>>(&device(), &ConformanceConfig::default());
    println!("{}", report.table());
    assert!(report.results.len() > 100);
    assert!(report.passed(), "failures: {:#?}", report.failures());
}

#[test]
fn conformance_with_split_rows_passes_on_wgpu() {
    let cfg = ConformanceConfig { group_width: 3, hub_degree: 2_000, widths: vec![5, 64], ..Default::default() };
    let report = run::<Autodiff<Wgpu>>(&device(), &cfg);
    assert!(report.passed(), "failures: {:#?}", report.failures());
}

#[test]
fn atomic_cbsr_variants_pass_on_wgpu() {
    use burn_sparse_gnn::{KernelPolicy, SspmmStrategy};
    let cfg = ConformanceConfig {
        filter: Some("cbsr".into()),
        group_width: 16,
        policy: KernelPolicy { sspmm: SspmmStrategy::OuterAtomic, spgemm_atomic: true },
        ..Default::default()
    };
    let report = run::<Autodiff<Wgpu>>(&device(), &cfg);
    assert!(report.results.len() >= 20);
    assert!(report.passed(), "failures: {:#?}", report.failures());
}

#[test]
fn hot_column_split_passes_on_wgpu() {
    // 16 hot columns: the SpMM sum / mean runs as the cold pass plus the shared-memory pass
    // (forward, and the gradients over the split transpose); group widths 3 and 64 send the
    // cold split rows through the staging pass too
    let before = burn_sparse_gnn::kernels::spmm::hot::hot_launches();
    for group_width in [3, 64] {
        let cfg = ConformanceConfig {
            filter: Some("spmm".into()),
            group_width,
            hub_degree: 2_000,
            widths: vec![1, 5, 64],
            hot_cols: Some(16),
            ..Default::default()
        };
        let report = run::<Autodiff<Wgpu>>(&device(), &cfg);
        assert!(report.results.len() >= 20, "{}", report.table());
        assert!(report.passed(), "failures: {:#?}", report.failures());
    }
    assert!(burn_sparse_gnn::kernels::spmm::hot::hot_launches() > before, "the hot-column pass did not run");
}
