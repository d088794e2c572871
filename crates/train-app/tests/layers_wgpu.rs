//! The self test's layer check on wgpu (lavapipe in CI): MaxK-GNN's GraphSAGE layer through
//! `Autodiff<Wgpu>` against the CPU backend, output and every gradient.
#![cfg(feature = "wgpu")]

use burn::backend::Autodiff;
use burn_sparse_gnn::Wgpu;
use train_app::selftest::{layer_checks, LAYER_TOLERANCE};

#[test]
fn sage_maxk_layer_on_wgpu_matches_the_cpu_backend() {
    let checks = layer_checks::<Autodiff<Wgpu>>(&burn::backend::wgpu::WgpuDevice::DefaultDevice);
    assert_eq!(checks.len(), 10);
    for (what, err) in &checks {
        println!("{what}: {err:.2e}");
        assert!(*err <= LAYER_TOLERANCE, "{what}: error {err:.2e}");
    }
}
