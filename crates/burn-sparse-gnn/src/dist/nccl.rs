//! Grouped transfers between the GPUs of one process through NCCL (the halo exchange of a
//! partitioned graph, forward and backward).
//!
//! Burn's `to_device` moves one tensor at a time, and each move waits for the previous one: on
//! two GPUs the two directions of an exchange take turns on the link. Here all transfers of one
//! call are one NCCL group (`ncclGroupStart`, a send and a receive per tensor, `ncclGroupEnd`),
//! so both directions of every link run at once. NCCL is loaded at run time (`cudarc`, dynamic
//! loading, as cuBLAS is); where `libnccl.so` cannot be found the caller moves the tensors one
//! by one instead.
//!
//! Ordering against CubeCL's work, with no host synchronisation: every device in the call gets
//! a communication stream of our own. It first waits for the CUDA stream CubeCL orders the
//! caller's work on (reported with each buffer by the patched `cubecl-cuda` in `vendor/`), so a
//! send reads its tensor after the kernels that wrote it and a receive writes memory only after
//! the kernels that used it before ran. After the group, each device's compute stream waits for
//! its communication stream: a received tensor is read, and a sent tensor's memory reused, only
//! after the transfer.
//!
//! One communicator set per list of devices (`ncclCommInitAll`), created on the first transfer
//! among them and kept for the process.

use burn::tensor::TensorMetadata;
use burn_cubecl::ops::numeric::empty_device_contiguous_dtype;
use burn_cubecl::tensor::CubeTensor;
use cubecl::cuda::{CudaDevice, CudaRuntime};
use cubecl::Runtime;
use cudarc::driver::{result as drv, sys as dsys};
use cudarc::nccl::{result as nccl, sys as nsys};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// Why a grouped transfer could not run (the caller moves the tensors one by one).
#[derive(Debug)]
pub(crate) struct Unavailable(pub String);

static GROUPS: AtomicUsize = AtomicUsize::new(0);

/// Set when NCCL could not be set up once: later exchanges move their tensors one by one
/// without trying again.
static BROKEN: AtomicBool = AtomicBool::new(false);

/// How many grouped NCCL transfers this process ran.
pub fn grouped_transfers() -> usize {
    GROUPS.load(Ordering::Relaxed)
}

/// Whether libnccl can be loaded on this machine (checked once).
pub fn available() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only probes whether the shared library opens.
    *PRESENT.get_or_init(|| unsafe { nsys::is_culib_present() })
}

/// The communicators of one list of devices (rank `i` on `devices[i]`) and a communication
/// stream per device, in its primary context.
struct Comms {
    devices: Vec<usize>,
    comms: Vec<nsys::ncclComm_t>,
    streams: Vec<dsys::CUstream>,
    ctxs: Vec<dsys::CUcontext>,
}

// SAFETY: the handles are plain pointers to driver and NCCL objects that any thread may use;
// all use goes through the `COMMS` mutex.
unsafe impl Send for Comms {}

static COMMS: Mutex<Option<HashMap<Vec<usize>, Comms>>> = Mutex::new(None);

fn err(what: &str, e: &dyn std::fmt::Debug) -> Unavailable {
    Unavailable(format!("{what}: {e:?}"))
}

fn init(devices: &[usize]) -> Result<Comms, Unavailable> {
    let mut ctxs = Vec::with_capacity(devices.len());
    let mut streams = Vec::with_capacity(devices.len());
    for &d in devices {
        let dev = drv::device::get(d as i32).map_err(|e| err("device", &e))?;
        // SAFETY: `dev` is a valid device; CubeCL runs on the same primary context.
        let ctx = unsafe { drv::primary_ctx::retain(dev) }.map_err(|e| err("primary context", &e))?;
        unsafe { drv::ctx::set_current(ctx) }.map_err(|e| err("context", &e))?;
        streams.push(drv::stream::create(drv::stream::StreamKind::NonBlocking).map_err(|e| err("stream", &e))?);
        ctxs.push(ctx);
    }
    let list: Vec<i32> = devices.iter().map(|&d| d as i32).collect();
    let mut comms = vec![std::ptr::null_mut(); devices.len()];
    // SAFETY: `comms` has one slot per listed device.
    unsafe { nccl::comm_init_all(comms.as_mut_ptr(), list.len() as i32, list.as_ptr()) }
        .map_err(|e| err("ncclCommInitAll", &e))?;
    Ok(Comms { devices: devices.to_vec(), comms, streams, ctxs })
}

/// Makes `waiter` wait for the work queued on `on` so far (both in context `ctx`).
///
/// # Safety
/// Both streams must live in `ctx`.
unsafe fn wait_for(ctx: dsys::CUcontext, on: dsys::CUstream, waiter: dsys::CUstream) -> Result<(), Unavailable> {
    drv::ctx::set_current(ctx).map_err(|e| err("context", &e))?;
    let event = drv::event::create(dsys::CUevent_flags::CU_EVENT_DISABLE_TIMING).map_err(|e| err("event", &e))?;
    drv::event::record(event, on).map_err(|e| err("event record", &e))?;
    drv::stream::wait_event(waiter, event, dsys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT)
        .map_err(|e| err("stream wait", &e))?;
    // released by the driver once the wait is done
    drv::event::destroy(event).map_err(|e| err("event destroy", &e))
}

/// A contiguous buffer's device pointer, its size in bytes and the stream CubeCL orders work on
/// it on.
fn resource(t: &CubeTensor<CudaRuntime>) -> Result<(u64, usize, dsys::CUstream), Unavailable> {
    let res = t.client.get_resource(t.handle.clone()).map_err(|e| err("resource", &e))?;
    let stream = res.resource().stream;
    if stream == 0 {
        return Err(Unavailable("no CubeCL stream reported".into()));
    }
    let bytes = t.shape().num_elements() * t.dtype.size();
    Ok((res.resource().ptr, bytes, stream as dsys::CUstream))
}

/// Moves every `(tensor, device)` of `pieces` to its device (contiguous tensors), all in one
/// NCCL group, and makes the compute streams wait for it. A piece already on its device is
/// returned as it is.
pub(crate) fn transfer(
    pieces: Vec<(CubeTensor<CudaRuntime>, CudaDevice)>,
) -> Result<Vec<CubeTensor<CudaRuntime>>, Unavailable> {
    let mut out: Vec<Option<CubeTensor<CudaRuntime>>> = Vec::with_capacity(pieces.len());
    let mut groups = Vec::new();
    for (t, d) in pieces {
        if t.device.index == d.index {
            out.push(Some(t));
        } else {
            out.push(None);
            groups.push((vec![t], d));
        }
    }
    let (moved, pending) = start(groups)?;
    pending.wait()?;
    let mut moved = moved.into_iter();
    Ok(out.into_iter().map(|t| t.or_else(|| moved.next()).expect("one moved tensor per piece")).collect())
}

/// A started group: the compute streams still to make wait for it (an event recorded on the
/// communication stream of their device right after the group), and the sent tensors, kept
/// until then.
pub(crate) struct Pending {
    waits: Vec<(dsys::CUcontext, dsys::CUevent, dsys::CUstream)>,
    keep: Vec<CubeTensor<CudaRuntime>>,
}

// SAFETY: plain driver handles, used once by whichever thread runs the wait.
unsafe impl Send for Pending {}

impl Pending {
    /// Makes every compute stream of the group wait for it (queued, no host synchronisation);
    /// then the sent tensors may be dropped: later work on their memory runs after the group.
    pub(crate) fn wait(mut self) -> Result<(), Unavailable> {
        let mut result = Ok(());
        for (ctx, event, stream) in std::mem::take(&mut self.waits) {
            // SAFETY: the event and stream live in `ctx`; the event was recorded after the group
            let r = unsafe {
                drv::ctx::set_current(ctx)
                    .map_err(|e| err("context", &e))
                    .and_then(|_| {
                        drv::stream::wait_event(stream, event, dsys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT)
                            .map_err(|e| err("stream wait", &e))
                    })
                    .and_then(|_| drv::event::destroy(event).map_err(|e| err("event destroy", &e)))
            };
            if let Err(e) = r {
                // the order is lost: wait on the host so no buffer is reused early
                unsafe {
                    let _ = drv::ctx::set_current(ctx);
                    let _ = drv::event::synchronize(event);
                }
                result = Err(e);
            }
        }
        drop(std::mem::take(&mut self.keep));
        result
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if !self.waits.is_empty() {
            let me = Pending { waits: std::mem::take(&mut self.waits), keep: std::mem::take(&mut self.keep) };
            if let Err(e) = me.wait() {
                log::error!("waiting for a grouped transfer: {}", e.0);
            }
        }
    }
}

/// Starts moving, per group, its pieces (contiguous tensors on other devices than the group's,
/// one dtype and width) into one new tensor on the group's device, rows in order, all in one
/// NCCL group. The communication streams first wait for the compute streams of their devices
/// (the pieces are written, the new tensors' memory free); the compute streams wait for the
/// group only when the returned [`Pending`] runs.
pub(crate) fn start(
    groups: Vec<(Vec<CubeTensor<CudaRuntime>>, CudaDevice)>,
) -> Result<(Vec<CubeTensor<CudaRuntime>>, Pending), Unavailable> {
    if !available() {
        return Err(Unavailable("libnccl.so not found".into()));
    }
    if BROKEN.load(Ordering::Relaxed) {
        return Err(Unavailable("NCCL could not be set up earlier in this process".into()));
    }
    let mut devices: Vec<usize> =
        groups.iter().flat_map(|(ps, d)| ps.iter().map(|t| t.device.index).chain([d.index])).collect();
    devices.sort_unstable();
    devices.dedup();
    let rank = |d: usize| devices.iter().position(|&x| x == d).expect("listed above");
    // the received tensors, and per piece (source rank, destination rank, pointers, bytes)
    let mut out = Vec::with_capacity(groups.len());
    let mut moves = Vec::new();
    let mut compute: Vec<Option<dsys::CUstream>> = vec![None; devices.len()];
    let mut note = |slot: usize, stream: dsys::CUstream| -> Result<(), Unavailable> {
        match compute[slot] {
            None => compute[slot] = Some(stream),
            Some(seen) if seen == stream => {}
            Some(_) => return Err(Unavailable("work on one device ordered on two CubeCL streams".into())),
        }
        Ok(())
    };
    for (pieces, d) in &groups {
        let Some(first) = pieces.first() else {
            return Err(Unavailable("a group of no pieces".into()));
        };
        let width: usize = first.shape().dims::<2>()[1];
        let rows: usize = pieces.iter().map(|t| t.shape()[0]).sum();
        let shape = burn::tensor::Shape::new([rows, width]);
        let client = CudaRuntime::client(d);
        let dst = empty_device_contiguous_dtype::<CudaRuntime>(client, d.clone(), shape, first.dtype);
        let (dst_ptr, _, dst_stream) = resource(&dst)?;
        let r = rank(d.index);
        note(r, dst_stream)?;
        let mut offset = 0u64;
        for t in pieces {
            if t.device.index == d.index || t.dtype != first.dtype || t.shape().dims::<2>()[1] != width {
                return Err(Unavailable("a piece on its group's device, or of another dtype or width".into()));
            }
            let (src_ptr, bytes, src_stream) = resource(t)?;
            let s = rank(t.device.index);
            note(s, src_stream)?;
            moves.push((s, r, src_ptr, dst_ptr + offset, bytes));
            offset += bytes as u64;
        }
        out.push(dst);
    }
    let keep: Vec<CubeTensor<CudaRuntime>> = groups.into_iter().flat_map(|(ps, _)| ps).collect();
    if moves.is_empty() {
        return Ok((out, Pending { waits: Vec::new(), keep }));
    }
    let mut guard = COMMS.lock().map_err(|_| Unavailable("communicator table poisoned".into()))?;
    let table = guard.get_or_insert_with(HashMap::new);
    if !table.contains_key(&devices) {
        let c = init(&devices).inspect_err(|_| BROKEN.store(true, Ordering::Relaxed))?;
        table.insert(devices.clone(), c);
    }
    let c = table.get(&devices).expect("inserted above");
    debug_assert_eq!(c.devices, devices);
    // SAFETY: every stream lives in its device's primary context; the pointers are live CubeCL
    // buffers of `bytes` bytes (a received piece at its offset in its group's tensor), kept
    // alive by `keep` and `out` until the compute streams wait for the transfers.
    unsafe {
        for (i, s) in compute.iter().enumerate() {
            if let Some(s) = s {
                wait_for(c.ctxs[i], *s, c.streams[i])?;
            }
        }
        nccl::group_start().map_err(|e| err("ncclGroupStart", &e))?;
        let mut failed = None;
        for &(s, r, src, dst, bytes) in &moves {
            let sent = nccl::send(
                src as *const std::ffi::c_void,
                bytes,
                nsys::ncclDataType_t::ncclUint8,
                r as i32,
                c.comms[s],
                c.streams[s] as nsys::cudaStream_t,
            );
            let received = nccl::recv(
                dst as *mut std::ffi::c_void,
                bytes,
                nsys::ncclDataType_t::ncclUint8,
                s as i32,
                c.comms[r],
                c.streams[r] as nsys::cudaStream_t,
            );
            if let Err(e) = sent.and(received) {
                failed = Some(err("ncclSend / ncclRecv", &e));
                break;
            }
        }
        // the group is closed even after a failed call, so NCCL's state stays usable
        let mut result = nccl::group_end().map_err(|e| err("ncclGroupEnd", &e)).map(|_| ());
        if let Some(e) = failed {
            result = Err(e);
        }
        let mut waits = Vec::new();
        if result.is_ok() {
            for (i, s) in compute.iter().enumerate() {
                if let Some(s) = s {
                    let ev = drv::ctx::set_current(c.ctxs[i])
                        .map_err(|e| err("context", &e))
                        .and_then(|_| {
                            drv::event::create(dsys::CUevent_flags::CU_EVENT_DISABLE_TIMING)
                                .map_err(|e| err("event", &e))
                        })
                        .and_then(|ev| {
                            drv::event::record(ev, c.streams[i]).map(|_| ev).map_err(|e| err("event record", &e))
                        });
                    match ev {
                        Ok(ev) => waits.push((c.ctxs[i], ev, *s)),
                        Err(e) => {
                            result = Err(e);
                            break;
                        }
                    }
                }
            }
        }
        if let Err(e) = result {
            // whatever the group queued must finish before the caller drops (or sends again)
            // these buffers: wait for the communication streams on the host
            for (i, s) in c.streams.iter().enumerate() {
                if drv::ctx::set_current(c.ctxs[i]).is_ok() {
                    let _ = drv::stream::synchronize(*s);
                }
            }
            for (ctx, ev, _) in waits {
                let _ = drv::ctx::set_current(ctx);
                let _ = drv::event::destroy(ev);
            }
            BROKEN.store(true, Ordering::Relaxed);
            return Err(e);
        }
        GROUPS.fetch_add(1, Ordering::Relaxed);
        Ok((out, Pending { waits, keep }))
    }
}

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

// ---- one rank of a run of several processes ----------------------------------------------

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
