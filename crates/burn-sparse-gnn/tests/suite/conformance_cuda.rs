//! The conformance suite on CUDA: the cases of `conformance_wgpu` on the first CUDA device. Every
//! test is ignored unless asked for, since machines without a GPU build this file too: run them
//! with `cargo test-cuda` (an alias in `.cargo/config.toml`) on a GPU machine.

use burn::backend::Autodiff;
use burn_sparse_gnn::kernels::device::has_plane_ops;
use burn_sparse_gnn::{Cuda, PlaneUse};
use cubecl::cuda::{CudaDevice, CudaRuntime};
use cubecl::Runtime;

fn device() -> CudaDevice {
    CudaDevice::default()
}

/// Whether the kernels take plane operations on this device under `planes`.
fn uses_planes(planes: PlaneUse) -> bool {
    has_plane_ops(&CudaRuntime::client(&device()), planes)
}

burn_sparse_gnn::testgen_device_conformance! {
    backend: Autodiff<Cuda>,
    device: device(),
    uses_planes: uses_planes,
    attributes: [#[ignore = "needs a CUDA device: cargo test-cuda"]],
}
