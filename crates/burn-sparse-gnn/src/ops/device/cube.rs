//! `CubeBackend` implementation of [`super::DeviceOps`]: the CubeCL kernels of `sparse-gnn-kernels`.

use super::DeviceOps;
use burn::tensor::{Shape, TensorData};
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::BoolElement;
use burn_cubecl::CubeBackend;
use burn_cubecl::CubeRuntime;
use burn_cubecl::FloatElement;
use burn_cubecl::IntElement;
use std::ops::Range;

/// The smallest upload that goes to a CUDA device in one transfer from the caller's memory;
/// smaller ones go through Burn, whose cost stays at its fixed cost per upload there (1 KiB:
/// 7 us on the H200 host; 256 KiB: 235 us through Burn against 42 us as one transfer,
/// `bench --ops launch`).
#[cfg(feature = "cuda")]
const DIRECT_UPLOAD_MIN_BYTES: usize = 8 << 10;

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

    fn float_upload(data: TensorData, device: &R::Device) -> CubeTensor<R> {
        direct::<R>(data, device)
            .unwrap_or_else(|data| <Self as burn::tensor::ops::FloatTensorOps<Self>>::float_from_data(data, device))
    }

    fn int_upload(data: TensorData, device: &R::Device) -> CubeTensor<R> {
        direct::<R>(data, device)
            .unwrap_or_else(|data| <Self as burn::tensor::ops::IntTensorOps<Self>>::int_from_data(data, device))
    }

    fn index_arrays(arrays: Vec<Vec<i32>>, device: &R::Device) -> Vec<CubeTensor<R>> {
        let (buf, ranges) = pack::<R, _>(arrays, 4, device);
        let n = buf.len();
        let all = Self::int_upload(TensorData::new(buf, [n]), device);
        views(all, &ranges)
    }

    fn float_arrays(arrays: Vec<Vec<f64>>, device: &R::Device) -> Vec<CubeTensor<R>> {
        let dtype = F::dtype();
        let (buf, ranges) = pack::<R, _>(arrays, dtype.size(), device);
        let n = buf.len();
        let all = Self::float_upload(TensorData::new(buf, [n]).convert_dtype(dtype), device);
        views(all, &ranges)
    }
}

/// `data` uploaded in one transfer from its bytes where `device` is a CUDA device and the upload
/// holds at least [`DIRECT_UPLOAD_MIN_BYTES`]; `data` back otherwise, for Burn's upload.
fn direct<R: CubeRuntime>(data: TensorData, device: &R::Device) -> Result<CubeTensor<R>, TensorData> {
    #[cfg(feature = "cuda")]
    if data.bytes.len() >= DIRECT_UPLOAD_MIN_BYTES {
        if let Some(t) = super::cuda::direct_upload::<R>(data.as_bytes(), &data.shape, data.dtype, device) {
            return Ok(t);
        }
    }
    let _ = device;
    Err(data)
}

/// The arrays one after the other, each starting at a multiple of the device's offset alignment
/// (at least 256 bytes, wgpu's storage-buffer offset alignment) for entries of `elem` bytes, and
/// each array's entry range.
fn pack<R: CubeRuntime, T: Copy + Default>(
    arrays: Vec<Vec<T>>,
    elem: usize,
    device: &R::Device,
) -> (Vec<T>, Vec<Range<usize>>) {
    let align = (R::client(device).properties().memory.alignment as usize).max(256).div_ceil(elem);
    let total: usize = arrays.iter().map(|a| a.len().next_multiple_of(align)).sum();
    let mut buf = Vec::with_capacity(total);
    let mut ranges = Vec::with_capacity(arrays.len());
    for a in arrays {
        let start = buf.len();
        buf.extend_from_slice(&a);
        ranges.push(start..buf.len());
        buf.resize(buf.len().next_multiple_of(align), T::default());
    }
    (buf, ranges)
}

/// A 1-D view of `all` for each range: the same memory, bound from the range's start.
fn views<R: CubeRuntime>(all: CubeTensor<R>, ranges: &[Range<usize>]) -> Vec<CubeTensor<R>> {
    let elem = all.dtype.size();
    let size = all.handle.size();
    ranges
        .iter()
        .map(|r| {
            let h = all.handle.clone().offset_start((r.start * elem) as u64).offset_end(size - (r.end * elem) as u64);
            CubeTensor::new_contiguous(all.client.clone(), all.device.clone(), Shape::new([r.len()]), h, all.dtype)
        })
        .collect()
}
