//! The conformance suite on wgpu (Mesa lavapipe in CI: `CUBECL_WGPU_DEFAULT_DEVICE=Cpu`), one
//! test per operation kind, configuration and plane use
//! ([`testgen_device_conformance!`](burn_sparse_gnn::testgen_device_conformance)).

use burn::backend::Autodiff;
use burn_sparse_gnn::kernels::device::has_plane_ops;
use burn_sparse_gnn::{PlaneUse, Wgpu};
use cubecl::wgpu::{WgpuDevice, WgpuRuntime};
use cubecl::Runtime;

fn device() -> WgpuDevice {
    WgpuDevice::DefaultDevice
}

/// Whether the kernels take plane operations on this device under `planes`.
fn uses_planes(planes: PlaneUse) -> bool {
    has_plane_ops(&WgpuRuntime::client(&device()), planes)
}

burn_sparse_gnn::testgen_device_conformance! {
    backend: Autodiff<Wgpu>,
    device: device(),
    uses_planes: uses_planes,
}
