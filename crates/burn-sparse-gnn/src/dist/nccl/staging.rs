//! Uploads from host bytes through a pinned staging buffer per device ([`upload`]).

use super::comm::{err, resource, Unavailable};
use burn_cubecl::ops::numeric::empty_device_contiguous_dtype;
use burn_cubecl::tensor::CubeTensor;
use cubecl::cuda::{CudaDevice, CudaRuntime};
use cubecl::Runtime;
use cudarc::driver::{result as drv, sys as dsys};
use std::collections::HashMap;
use std::sync::Mutex;

/// A pinned (page-locked) host buffer in one device's primary context, kept for the process
/// and grown as needed: the staging buffer of [`upload`].
struct Staging {
    ctx: dsys::CUcontext,
    ptr: *mut u8,
    len: usize,
}

// SAFETY: a context handle and a pinned allocation any thread may use; all use goes through
// `STAGING`.
unsafe impl Send for Staging {}

static STAGING: Mutex<Option<HashMap<usize, Staging>>> = Mutex::new(None);

/// A contiguous `[rows, width]` tensor of `dtype` on `device` holding `bytes`: copied into a
/// pinned staging buffer, then one DMA transfer on the stream CubeCL orders the tensor's work
/// on, waited for before returning (the staging buffer is free again). Burn's upload copies the
/// bytes into a fresh allocation and transfers from pageable memory: about 0.5 GB/s on the
/// H200 host (docs/MULTI_GPU.md).
pub(crate) fn upload(
    bytes: &[u8],
    shape: [usize; 2],
    dtype: burn::tensor::DType,
    device: &CudaDevice,
) -> Result<CubeTensor<CudaRuntime>, Unavailable> {
    let n = shape[0] * shape[1] * dtype.size();
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
    let mut all = STAGING.lock().unwrap_or_else(|e| e.into_inner());
    let staging = all.get_or_insert_with(HashMap::new);
    let buf = match staging.entry(device.index) {
        std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
        std::collections::hash_map::Entry::Vacant(e) => {
            let dev = drv::device::get(device.index as i32).map_err(|e| err("device", &e))?;
            // SAFETY: `dev` is a valid device; CubeCL runs on the same primary context (kept
            // retained for the process).
            let ctx = unsafe { drv::primary_ctx::retain(dev) }.map_err(|e| err("primary context", &e))?;
            e.insert(Staging { ctx, ptr: std::ptr::null_mut(), len: 0 })
        }
    };
    // SAFETY: the context was retained above.
    unsafe { drv::ctx::set_current(buf.ctx) }.map_err(|e| err("context", &e))?;
    if buf.len < n {
        if !buf.ptr.is_null() {
            // SAFETY: allocated by `malloc_host` below; no transfer reads it any more (every
            // upload waits for its transfer, under the lock)
            unsafe { drv::free_host(buf.ptr.cast()) }.map_err(|e| err("cuMemFreeHost", &e))?;
            (buf.ptr, buf.len) = (std::ptr::null_mut(), 0);
        }
        // SAFETY: a plain pinned allocation in the current (primary) context
        let ptr =
            unsafe { drv::malloc_host(n, dsys::CU_MEMHOSTALLOC_PORTABLE) }.map_err(|e| err("cuMemHostAlloc", &e))?;
        (buf.ptr, buf.len) = (ptr.cast(), n);
    }
    // SAFETY: the staging buffer holds at least `n` bytes and no transfer uses it (the lock is
    // held, and every upload waits for its transfer); `dst` is a live CubeCL allocation of `n`
    // bytes whose work is ordered on `stream`, where the transfer is queued.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf.ptr, n);
        let src = std::slice::from_raw_parts(buf.ptr, n);
        drv::memcpy_htod_async(dst, src, stream).map_err(|e| err("cuMemcpyHtoDAsync", &e))?;
        drv::stream::synchronize(stream).map_err(|e| err("cuStreamSynchronize", &e))?;
    }
    Ok(t)
}
