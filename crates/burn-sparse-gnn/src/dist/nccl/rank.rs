//! One rank of a run of several processes: its communicator ([`RankNccl`]) and the transfers
//! and all-gathers between ranks.

use super::comm::{available, err, resource, wait_for, Unavailable, GROUPS};
use burn::tensor::TensorMetadata;
use burn_cubecl::ops::numeric::empty_device_contiguous_dtype;
use burn_cubecl::tensor::CubeTensor;
use cubecl::cuda::{CudaDevice, CudaRuntime};
use cubecl::Runtime;
use cudarc::driver::{result as drv, sys as dsys};
use cudarc::nccl::{result as nccl, sys as nsys};
use std::sync::atomic::Ordering;
use std::sync::Mutex;

/// This rank's NCCL communicator in a run of several processes (`ncclCommInitRank` with a
/// unique id rank 0 sent through the host transport), on one device, with a communication
/// stream of its own in the device's primary context. It lives as long as the process.
pub(crate) struct RankNccl {
    comm: nsys::ncclComm_t,
    stream: dsys::CUstream,
    ctx: dsys::CUcontext,
    device: usize,
}

// SAFETY: plain handles to driver and NCCL objects; every use goes through `lock`, one call at
// a time.
unsafe impl Send for RankNccl {}
unsafe impl Sync for RankNccl {}

impl std::fmt::Debug for RankNccl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RankNccl").field("device", &self.device).finish_non_exhaustive()
    }
}

static RANK_LOCK: Mutex<()> = Mutex::new(());

impl RankNccl {
    /// Runs `queue` (NCCL calls on the communication stream) in order with CubeCL's stream
    /// `compute`: the communication stream first waits for the work queued on `compute`, and
    /// `compute` waits for the queued calls before its next kernel. On failure the queued calls
    /// are waited for on the host, so no buffer they use is reused early.
    ///
    /// # Safety
    /// `compute` must live in this device's primary context, and the buffers `queue` passes to
    /// NCCL must stay alive until the compute stream waits (its caller keeps them).
    unsafe fn ordered(
        &self,
        compute: dsys::CUstream,
        queue: impl FnOnce() -> Result<(), Unavailable>,
    ) -> Result<(), Unavailable> {
        let _guard = RANK_LOCK.lock().unwrap_or_else(|e| e.into_inner());
        wait_for(self.ctx, compute, self.stream)?;
        let result = queue().and_then(|_| wait_for(self.ctx, self.stream, compute));
        if result.is_err() {
            let _ = drv::stream::synchronize(self.stream);
        }
        GROUPS.fetch_add(usize::from(result.is_ok()), Ordering::Relaxed);
        result
    }
}

/// A new NCCL unique id (rank 0 makes it, every rank initialises with it), as bytes.
pub(crate) fn unique_id() -> Result<Vec<u8>, Unavailable> {
    if !available() {
        return Err(Unavailable("libnccl.so not found".into()));
    }
    let id = nccl::get_uniqueid().map_err(|e| err("ncclGetUniqueId", &e))?;
    Ok(id.internal.iter().map(|&c| c as u8).collect())
}

/// Where device `index` sits: this host's name and the device's PCI domain, bus and device,
/// the identity two ranks must not share (NCCL refuses two ranks on one GPU).
pub(crate) fn device_identity(index: usize) -> Result<String, Unavailable> {
    drv::init().map_err(|e| err("cuInit", &e))?;
    let dev = drv::device::get(index as i32).map_err(|e| err("device", &e))?;
    let attr = |a| {
        // SAFETY: `dev` comes from `device::get`
        unsafe { drv::device::get_attribute(dev, a) }.map_err(|e| err("device attribute", &e))
    };
    use dsys::CUdevice_attribute as A;
    let (domain, bus, slot) = (
        attr(A::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
        attr(A::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
        attr(A::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?,
    );
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    Ok(format!("{}/{domain:04x}:{bus:02x}:{slot:02x}", host.trim()))
}

/// Joins the communicator of `world` ranks as `rank` on device `index`, with the unique id
/// `id` (from [`unique_id`] on rank 0). Blocks until every rank joined.
pub(crate) fn init_rank(index: usize, world: usize, rank: usize, id: &[u8]) -> Result<RankNccl, Unavailable> {
    if id.len() != 128 {
        return Err(Unavailable(format!("an NCCL unique id of {} bytes (128 expected)", id.len())));
    }
    let mut uid = nsys::ncclUniqueId { internal: [0; 128] };
    for (d, &s) in uid.internal.iter_mut().zip(id) {
        *d = s as std::ffi::c_char;
    }
    let dev = drv::device::get(index as i32).map_err(|e| err("device", &e))?;
    // SAFETY: `dev` is a valid device; CubeCL runs on the same primary context.
    let ctx = unsafe { drv::primary_ctx::retain(dev) }.map_err(|e| err("primary context", &e))?;
    unsafe { drv::ctx::set_current(ctx) }.map_err(|e| err("context", &e))?;
    let stream = drv::stream::create(drv::stream::StreamKind::NonBlocking).map_err(|e| err("stream", &e))?;
    let mut comm = std::ptr::null_mut();
    // SAFETY: the device's context is current; `comm` receives the communicator.
    unsafe { nccl::comm_init_rank(&mut comm, world as i32, uid, rank as i32) }
        .map_err(|e| err("ncclCommInitRank", &e))?;
    Ok(RankNccl { comm, stream, ctx, device: index })
}

/// Sends `send[q]` (contiguous rows on this rank's device, `None`: nothing) to rank `q` and
/// receives `recv[q]` rows of `width` values of `dtype` from every rank `q`, into one new
/// tensor on `device`, rows in rank order (`None` when nothing arrives), all in one NCCL group.
/// The communication stream waits for CubeCL's stream first (the rows are written, the new
/// tensor's memory free) and CubeCL's stream waits for the group before its next kernel; no
/// host synchronisation. Every rank calls it with the matching counts.
pub(crate) fn rank_transfer(
    c: &RankNccl,
    send: Vec<Option<CubeTensor<CudaRuntime>>>,
    recv: &[usize],
    width: usize,
    dtype: burn::tensor::DType,
    device: &CudaDevice,
) -> Result<Option<CubeTensor<CudaRuntime>>, Unavailable> {
    if device.index != c.device {
        return Err(Unavailable(format!(
            "rows on device {} for the communicator of device {}",
            device.index, c.device
        )));
    }
    let total: usize = recv.iter().sum();
    let mut compute: Option<dsys::CUstream> = None;
    let mut note = |stream: dsys::CUstream| -> Result<(), Unavailable> {
        match compute {
            None => compute = Some(stream),
            Some(seen) if seen == stream => {}
            Some(_) => return Err(Unavailable("work on one device ordered on two CubeCL streams".into())),
        }
        Ok(())
    };
    let dst = match total {
        0 => None,
        _ => {
            let client = CudaRuntime::client(device);
            let shape = burn::tensor::Shape::new([total, width]);
            Some(empty_device_contiguous_dtype::<CudaRuntime>(client, device.clone(), shape, dtype))
        }
    };
    let mut moves = Vec::new(); // (peer, send?, pointer, bytes)
    for (q, t) in send.iter().enumerate() {
        if let Some(t) = t {
            if t.device.index != c.device || t.dtype != dtype || t.shape().dims::<2>()[1] != width {
                return Err(Unavailable("rows to send on another device, or of another dtype or width".into()));
            }
            let (ptr, bytes, stream) = resource(t)?;
            note(stream)?;
            if bytes > 0 {
                moves.push((q, true, ptr, bytes));
            }
        }
    }
    if let Some(dst) = &dst {
        let (base, _, stream) = resource(dst)?;
        note(stream)?;
        let mut offset = 0u64;
        for (q, &rows) in recv.iter().enumerate() {
            let bytes = rows * width * dtype.size();
            if bytes > 0 {
                moves.push((q, false, base + offset, bytes));
                offset += bytes as u64;
            }
        }
    }
    let Some(compute) = compute.filter(|_| !moves.is_empty()) else {
        return Ok(dst);
    };
    // SAFETY: the compute stream lives in the device's primary context; the pointers are live
    // CubeCL buffers of `bytes` bytes (a received piece at its offset in `dst`), kept alive by
    // `send` and `dst` until the compute stream waits for the group.
    unsafe {
        c.ordered(compute, || {
            nccl::group_start().map_err(|e| err("ncclGroupStart", &e))?;
            let mut failed = None;
            for &(q, sends, ptr, bytes) in &moves {
                let r = match sends {
                    true => nccl::send(
                        ptr as *const std::ffi::c_void,
                        bytes,
                        nsys::ncclDataType_t::ncclUint8,
                        q as i32,
                        c.comm,
                        c.stream as nsys::cudaStream_t,
                    ),
                    false => nccl::recv(
                        ptr as *mut std::ffi::c_void,
                        bytes,
                        nsys::ncclDataType_t::ncclUint8,
                        q as i32,
                        c.comm,
                        c.stream as nsys::cudaStream_t,
                    ),
                };
                if let Err(e) = r {
                    failed = Some(err("ncclSend / ncclRecv", &e));
                    break;
                }
            }
            // the group is closed even after a failed call
            let closed = nccl::group_end().map_err(|e| err("ncclGroupEnd", &e)).map(|_| ());
            failed.map_or(closed, Err)
        })?;
    }
    // the sent tensors may go now: later work on their memory waits for the group
    drop(send);
    Ok(dst)
}

/// Every rank's `x` (`[rows, width]`, contiguous, on this rank's device; the same shape and
/// dtype on every rank) stacked in rank order into one new `[world * rows, width]` tensor
/// (`ncclAllGather`), ordered against CubeCL's stream as [`rank_transfer`] is.
pub(crate) fn rank_all_gather(
    c: &RankNccl,
    x: CubeTensor<CudaRuntime>,
    world: usize,
) -> Result<CubeTensor<CudaRuntime>, Unavailable> {
    if x.device.index != c.device {
        return Err(Unavailable(format!(
            "a tensor on device {} for the communicator of device {}",
            x.device.index, c.device
        )));
    }
    let [rows, width] = x.shape().dims::<2>();
    let client = CudaRuntime::client(&x.device);
    let shape = burn::tensor::Shape::new([world * rows, width]);
    let dst = empty_device_contiguous_dtype::<CudaRuntime>(client, x.device.clone(), shape, x.dtype);
    if rows * width == 0 {
        return Ok(dst);
    }
    let (src, bytes, stream) = resource(&x)?;
    let (out, _, out_stream) = resource(&dst)?;
    if out_stream != stream {
        return Err(Unavailable("work on one device ordered on two CubeCL streams".into()));
    }
    // SAFETY: the compute stream lives in the device's primary context; `src` holds `bytes`
    // bytes and `out` `world * bytes`, both live CubeCL buffers kept until the compute stream
    // waits.
    unsafe {
        c.ordered(stream, || {
            nccl::all_gather(
                src as *const std::ffi::c_void,
                out as *mut std::ffi::c_void,
                bytes,
                nsys::ncclDataType_t::ncclUint8,
                c.comm,
                c.stream as nsys::cudaStream_t,
            )
            .map(|_| ())
            .map_err(|e| err("ncclAllGather", &e))
        })?;
    }
    drop(x);
    Ok(dst)
}
