//! `CubeBackend` implementation of [`super::DeviceOps`]: the CubeCL kernels of `sparse-gnn-kernels`.

use super::DeviceOps;
use burn_cubecl::BoolElement;
use burn_cubecl::CubeBackend;
use burn_cubecl::CubeRuntime;
use burn_cubecl::FloatElement;
use burn_cubecl::IntElement;

impl<R, F, I, BT> DeviceOps for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn device_memory(device: &R::Device) -> Option<(u64, u64)> {
        let client = R::client(device);
        client.memory_usage().ok().map(|m| (m.bytes_reserved, m.bytes_in_use))
    }

    fn device_capacity(device: &R::Device) -> Option<(u64, u64)> {
        #[cfg(feature = "cuda")]
        {
            use std::any::Any;
            if let Some(d) = (device as &dyn Any).downcast_ref::<cubecl::cuda::CudaDevice>() {
                return crate::ops::dense::cublas::memory_info(d.index);
            }
        }
        let _ = device;
        None
    }

    fn max_buffer_bytes(device: &R::Device) -> Option<u64> {
        #[cfg(feature = "wgpu")]
        {
            use std::any::Any;
            if (device as &dyn Any).is::<cubecl::wgpu::WgpuDevice>() {
                return Some(R::client(device).properties().memory.max_page_size);
            }
        }
        let _ = device;
        None
    }
}
