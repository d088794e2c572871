//! Grouped transfers on the GPUs' copy engines: each piece is one peer-to-peer copy
//! (`cuMemcpyPeerAsync`) on a copy stream of its source GPU, over NVLink or PCIe.
//!
//! NCCL's send / receive moves the rows through its own kernels and staging buffers: they take
//! multiprocessors from the kernels the transfer should run under, and on two H200s a dense
//! exchange moved about 150 GB/s each way. A copy engine needs no multiprocessor and writes
//! straight into the received tensor.
//!
//! The GPUs of a list first get access to each other's memory, once per list: CubeCL allocates
//! from each device's memory pool (`cuMemAllocAsync`; access through `cuMemPoolSetAccess`) and,
//! where that fails, with `cuMemAlloc` (access through `cuCtxEnablePeerAccess`). A list whose
//! GPUs cannot all reach each other's memory (`cuDeviceCanAccessPeer`) is refused, and the
//! caller goes through NCCL.

use super::comm::{err, Unavailable};
use cudarc::driver::{result as drv, sys as dsys};
use std::collections::HashMap;
use std::sync::Mutex;

/// A list of GPUs that reach each other's memory: their primary contexts and a copy stream each.
pub(super) struct Peers {
    ctxs: Vec<dsys::CUcontext>,
    streams: Vec<dsys::CUstream>,
}

// SAFETY: plain driver handles that any thread may use; all use goes through the `PEERS` mutex.
unsafe impl Send for Peers {}

/// Per list of devices its peers, or why they cannot copy to each other (not tried again).
static PEERS: Mutex<Option<HashMap<Vec<usize>, Result<Peers, String>>>> = Mutex::new(None);

fn setup(devices: &[usize]) -> Result<Peers, Unavailable> {
    let mut devs = Vec::with_capacity(devices.len());
    let mut ctxs = Vec::with_capacity(devices.len());
    let mut streams = Vec::with_capacity(devices.len());
    for &d in devices {
        let dev = drv::device::get(d as i32).map_err(|e| err("device", &e))?;
        // SAFETY: `dev` is a valid device; CubeCL runs on the same primary context.
        let ctx = unsafe { drv::primary_ctx::retain(dev) }.map_err(|e| err("primary context", &e))?;
        unsafe { drv::ctx::set_current(ctx) }.map_err(|e| err("context", &e))?;
        streams.push(drv::stream::create(drv::stream::StreamKind::NonBlocking).map_err(|e| err("stream", &e))?);
        devs.push(dev);
        ctxs.push(ctx);
    }
    for (i, &a) in devs.iter().enumerate() {
        for (j, &b) in devs.iter().enumerate() {
            let mut can = 0;
            // SAFETY: both are valid devices; `can` is written by the call.
            unsafe { dsys::cuDeviceCanAccessPeer(&mut can, a, b) }.result().map_err(|e| err("peer query", &e))?;
            if i != j && can == 0 {
                return Err(Unavailable(format!("GPU {} cannot reach GPU {}'s memory", devices[i], devices[j])));
            }
        }
    }
    for (owner, &dev) in devs.iter().enumerate() {
        // SAFETY: `dev` is valid; the pool is the one `cuMemAllocAsync` on it allocates from.
        let pool = unsafe { drv::device::get_mem_pool(dev) }.map_err(|e| err("memory pool", &e))?;
        let descs: Vec<dsys::CUmemAccessDesc> = devices
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != owner)
            .map(|(_, &d)| dsys::CUmemAccessDesc {
                location: dsys::CUmemLocation {
                    type_: dsys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                    id: d as i32,
                },
                flags: dsys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
            })
            .collect();
        // SAFETY: `descs` holds `descs.len()` access descriptors of valid devices.
        unsafe { dsys::cuMemPoolSetAccess(pool, descs.as_ptr(), descs.len()) }
            .result()
            .map_err(|e| err("memory pool access", &e))?;
    }
    for (i, &ctx) in ctxs.iter().enumerate() {
        for (j, &peer) in ctxs.iter().enumerate() {
            if i == j {
                continue;
            }
            // SAFETY: both are live primary contexts; `ctx` is made current first.
            let r = unsafe { drv::ctx::set_current(ctx).and_then(|_| dsys::cuCtxEnablePeerAccess(peer, 0).result()) };
            match r {
                Ok(()) => {}
                Err(e) if e.0 == dsys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => {}
                Err(e) => return Err(err("peer access", &e)),
            }
        }
    }
    Ok(Peers { ctxs, streams })
}

/// Copies every move `(source rank, destination rank, source pointer, destination pointer,
/// bytes)` among `devices` (ranks index it) on the source's copy stream, ordered after the work
/// queued so far on every compute stream of `compute` (the pieces are written, the received
/// tensors' memory free). Returns, per compute stream, the events it must wait for before it
/// reads a received tensor or reuses a sent one's memory: `(context, event, stream)`.
///
/// # Safety
/// The pointers must be live device buffers of at least `bytes` bytes, kept alive until the
/// returned waits ran; every compute stream lives in its device's primary context.
#[allow(clippy::type_complexity)]
pub(super) unsafe fn copy(
    devices: &[usize],
    compute: &[Option<dsys::CUstream>],
    moves: &[(usize, usize, u64, u64, usize)],
) -> Result<Vec<(dsys::CUcontext, dsys::CUevent, dsys::CUstream)>, Unavailable> {
    let mut guard = PEERS.lock().map_err(|_| Unavailable("peer table poisoned".into()))?;
    let table = guard.get_or_insert_with(HashMap::new);
    let peers = table.entry(devices.to_vec()).or_insert_with(|| setup(devices).map_err(|e| e.0));
    let peers = peers.as_ref().map_err(|e| Unavailable(e.clone()))?;
    let event = |ctx: dsys::CUcontext, stream: dsys::CUstream| -> Result<dsys::CUevent, Unavailable> {
        drv::ctx::set_current(ctx).map_err(|e| err("context", &e))?;
        let ev = drv::event::create(dsys::CUevent_flags::CU_EVENT_DISABLE_TIMING).map_err(|e| err("event", &e))?;
        drv::event::record(ev, stream).map_err(|e| err("event record", &e))?;
        Ok(ev)
    };
    let sources: Vec<bool> = (0..devices.len()).map(|s| moves.iter().any(|m| m.0 == s)).collect();
    // every copy stream that sends waits for every compute stream of the group
    let mut before = Vec::new();
    for (i, s) in compute.iter().enumerate() {
        if let Some(s) = s {
            before.push((peers.ctxs[i], event(peers.ctxs[i], *s)?));
        }
    }
    let mut result = Ok(());
    for (s, sends) in sources.iter().enumerate() {
        if !sends {
            continue;
        }
        drv::ctx::set_current(peers.ctxs[s]).map_err(|e| err("context", &e))?;
        for &(_, ev) in &before {
            if let Err(e) =
                drv::stream::wait_event(peers.streams[s], ev, dsys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT)
            {
                result = Err(err("stream wait", &e));
            }
        }
    }
    for (ctx, ev) in before {
        let _ = drv::ctx::set_current(ctx);
        let _ = drv::event::destroy(ev);
    }
    result?;
    // what was queued must finish before the caller drops these buffers (an error from here on)
    let drain = |e: Unavailable| {
        for (i, st) in peers.streams.iter().enumerate() {
            if sources[i] && drv::ctx::set_current(peers.ctxs[i]).is_ok() {
                let _ = drv::stream::synchronize(*st);
            }
        }
        e
    };
    for &(s, r, src, dst, bytes) in moves {
        drv::ctx::set_current(peers.ctxs[s]).map_err(|e| drain(err("context", &e)))?;
        drv::memcpy_peer_async(peers.ctxs[r], dst, peers.ctxs[s], src, bytes, peers.streams[s])
            .map_err(|e| drain(err("cuMemcpyPeerAsync", &e)))?;
    }
    // every compute stream of the group waits for every copy stream that sent
    let mut waits = Vec::new();
    for (s, sends) in sources.iter().enumerate() {
        if !sends {
            continue;
        }
        for (i, c) in compute.iter().enumerate() {
            if let Some(c) = c {
                match event(peers.ctxs[s], peers.streams[s]) {
                    Ok(ev) => waits.push((peers.ctxs[i], ev, *c)),
                    Err(e) => {
                        for (_, ev, _) in waits {
                            let _ = drv::event::destroy(ev);
                        }
                        return Err(drain(e));
                    }
                }
            }
        }
    }
    crate::dist::transfer::count_peer_copy_group();
    Ok(waits)
}
