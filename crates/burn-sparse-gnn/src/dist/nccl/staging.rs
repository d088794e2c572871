//! Uploads of host bytes to a CUDA device in one transfer from the caller's memory ([`upload`]).

use super::comm::{err, resource, Unavailable};
use burn_cubecl::ops::numeric::empty_device_contiguous_dtype;
use burn_cubecl::tensor::CubeTensor;
use cubecl::cuda::{CudaDevice, CudaRuntime};
use cubecl::Runtime;
use cudarc::driver::result as drv;

/// A contiguous tensor of `shape` and `dtype` on `device` holding `bytes` (row-major,
/// little-endian): one transfer straight from `bytes`, queued on the stream CubeCL orders the
/// tensor's work on and not waited for. `bytes` is pageable memory, which the driver copies
/// into its own staging buffers before the call returns, so the caller may drop it afterwards.
/// Burn's upload copies the bytes into a fresh allocation first and took 7 to 11 times as long
/// on the H200 host (`bench --ops launch`: 256 KiB in 223 µs against 29 µs, 4 MiB in 4.9 ms
/// against 0.44 ms).
pub(crate) fn upload(
    bytes: &[u8],
    shape: &[usize],
    dtype: burn::tensor::DType,
    device: &CudaDevice,
) -> Result<CubeTensor<CudaRuntime>, Unavailable> {
    let n = shape.iter().product::<usize>() * dtype.size();
    if bytes.len() != n {
        return Err(Unavailable(format!("{} bytes for a {shape:?} tensor of {dtype:?}", bytes.len())));
    }
    let client = CudaRuntime::client(device);
    let t = empty_device_contiguous_dtype::<CudaRuntime>(client, device.clone(), shape.into(), dtype);
    if n == 0 {
        return Ok(t);
    }
    let (dst, size, stream) = resource(&t)?;
    if size != n {
        return Err(Unavailable(format!("a tensor of {size} bytes for {n}")));
    }
    // SAFETY: `dst` is a live CubeCL allocation of `n` bytes whose work is ordered on `stream`,
    // where the transfer is queued; the source is read before the call returns.
    unsafe { drv::memcpy_htod_async(dst, bytes, stream) }.map_err(|e| err("cuMemcpyHtoDAsync", &e))?;
    Ok(t)
}
