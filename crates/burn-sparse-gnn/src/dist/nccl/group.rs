//! Grouped transfers among the devices of one process: run at once ([`transfer`]) or started
//! and finished later ([`start`], [`Pending`]), as one NCCL group or peer-to-peer copies
//! ([`super::peer`], [`crate::dist::transfer::DeviceLinks`]).

use super::comm::{available, err, init, resource, wait_for, Unavailable, BROKEN, COMMS, GROUPS};
use super::peer;
use crate::dist::transfer::{device_links, DeviceLinks};
use burn::tensor::TensorMetadata;
use burn_cubecl::ops::numeric::empty_device_contiguous_dtype;
use burn_cubecl::tensor::CubeTensor;
use cubecl::cuda::{CudaDevice, CudaRuntime};
use cubecl::Runtime;
use cudarc::driver::{result as drv, sys as dsys};
use cudarc::nccl::{result as nccl, sys as nsys};
use std::collections::HashMap;
use std::sync::atomic::Ordering;

/// Moves every `(tensor, device)` of `pieces` to its device (contiguous tensors), all at once
/// ([`start`]), and makes the compute streams wait for it. A piece already on its device is
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
/// one dtype and width) into one new tensor on the group's device, rows in order: one NCCL
/// group, or peer-to-peer copies (see [`super::peer`]) where
/// [`crate::dist::transfer::DeviceLinks::PeerCopies`] is set and the GPUs can reach each
/// other's memory. The copy or communication streams first wait for the compute streams of
/// their devices (the pieces are written, the new tensors' memory free); the compute streams wait for the
/// group only when the returned [`Pending`] runs.
pub(crate) fn start(
    groups: Vec<(Vec<CubeTensor<CudaRuntime>>, CudaDevice)>,
) -> Result<(Vec<CubeTensor<CudaRuntime>>, Pending), Unavailable> {
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
    if device_links() == DeviceLinks::PeerCopies {
        // SAFETY: the pointers are live CubeCL buffers, kept alive by `keep` and `out` until the
        // compute streams wait for the copies; every stream lives in its primary context.
        match unsafe { peer::copy(&devices, &compute, &moves) } {
            Ok(waits) => return Ok((out, Pending { waits, keep })),
            Err(e) => {
                static LOGGED: std::sync::Once = std::sync::Once::new();
                LOGGED
                    .call_once(|| log::warn!("peer-to-peer copies unavailable ({}): the rows move through NCCL", e.0));
            }
        }
    }
    if !available() {
        return Err(Unavailable("libnccl.so not found".into()));
    }
    if BROKEN.load(Ordering::Relaxed) {
        return Err(Unavailable("NCCL could not be set up earlier in this process".into()));
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
