//! The communicators of the devices of one process (one set per list of devices, created on
//! first use and kept), NCCL's presence, and the count of grouped transfers.

use burn::tensor::TensorMetadata;
use burn_cubecl::tensor::CubeTensor;
use cubecl::cuda::CudaRuntime;
use cudarc::driver::{result as drv, sys as dsys};
use cudarc::nccl::{result as nccl, sys as nsys};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// Why a grouped transfer could not run (the caller moves the tensors one by one).
#[derive(Debug)]
pub(crate) struct Unavailable(pub String);

pub(super) static GROUPS: AtomicUsize = AtomicUsize::new(0);

/// Set when NCCL could not be set up once: later exchanges move their tensors one by one
/// without trying again.
pub(super) static BROKEN: AtomicBool = AtomicBool::new(false);

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
pub(super) struct Comms {
    pub(super) devices: Vec<usize>,
    pub(super) comms: Vec<nsys::ncclComm_t>,
    pub(super) streams: Vec<dsys::CUstream>,
    pub(super) ctxs: Vec<dsys::CUcontext>,
}

// SAFETY: the handles are plain pointers to driver and NCCL objects that any thread may use;
// all use goes through the `COMMS` mutex.
unsafe impl Send for Comms {}

pub(super) static COMMS: Mutex<Option<HashMap<Vec<usize>, Comms>>> = Mutex::new(None);

pub(super) fn err(what: &str, e: &dyn std::fmt::Debug) -> Unavailable {
    Unavailable(format!("{what}: {e:?}"))
}

/// CUDA device `d` and its primary context (the one CubeCL runs on), made current.
pub(super) fn primary_context(d: usize) -> Result<(dsys::CUdevice, dsys::CUcontext), Unavailable> {
    let dev = drv::device::get(d as i32).map_err(|e| err("device", &e))?;
    // SAFETY: `dev` is a valid device; CubeCL runs on the same primary context.
    let ctx = unsafe { drv::primary_ctx::retain(dev) }.map_err(|e| err("primary context", &e))?;
    unsafe { drv::ctx::set_current(ctx) }.map_err(|e| err("context", &e))?;
    Ok((dev, ctx))
}

/// A new non-blocking stream in the current context.
pub(super) fn new_stream() -> Result<dsys::CUstream, Unavailable> {
    drv::stream::create(drv::stream::StreamKind::NonBlocking).map_err(|e| err("stream", &e))
}

pub(super) fn init(devices: &[usize]) -> Result<Comms, Unavailable> {
    let mut ctxs = Vec::with_capacity(devices.len());
    let mut streams = Vec::with_capacity(devices.len());
    for &d in devices {
        let (_, ctx) = primary_context(d)?;
        streams.push(new_stream()?);
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
pub(super) unsafe fn wait_for(
    ctx: dsys::CUcontext,
    on: dsys::CUstream,
    waiter: dsys::CUstream,
) -> Result<(), Unavailable> {
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
pub(super) fn resource(t: &CubeTensor<CudaRuntime>) -> Result<(u64, usize, dsys::CUstream), Unavailable> {
    let res = t.client.get_resource(t.handle.clone()).map_err(|e| err("resource", &e))?;
    let stream = res.resource().stream;
    if stream == 0 {
        return Err(Unavailable("no CubeCL stream reported".into()));
    }
    let bytes = t.shape().num_elements() * t.dtype.size();
    Ok((res.resource().ptr, bytes, stream as dsys::CUstream))
}
