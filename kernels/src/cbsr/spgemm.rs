//! CBSR SpGEMM forward (`out[i] = sum_e w[e] * scatter(cbsr[j])`): one edge group per plane; the
//! plane is split into sub-warps of `lk` lanes (one per CBSR entry), each sub-warp owning a
//! `dim`-float shared buffer and taking every `subs`-th edge of the group; a plane barrier after
//! each step keeps writes of different edges apart, so no atomics are needed; the sub-buffers are
//! added in a fixed order and written back coalesced. Split rows go through staging slots and a
//! second pass (deterministic), or, as a measured option, atomics. Also the SpGEMM's edge-weight
//! gradient.

use super::matrix::{cbsr_col, plane_mode, sync_plane_mode, sync_slot, CbsrDev};
use crate::device::{alloc_array, cube_count, lanes_for, CsrDev};
use crate::error::KernelError;
use crate::reduce::segment_sum;
use crate::spmm::kernel::launch_finish_sum;
use cubecl::prelude::*;

/// Edges each sub-warp of the SpGEMM loads ahead of its additions (one step's worth of
/// independent gathers in flight; the additions stay in edge order).
pub const SPGEMM_UNROLL: u32 = 4;

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn spgemm_groups<F: Float>(
    group_ptr: &Array<i32>,
    group_row: &Array<i32>,
    group_slot: &Array<i32>,
    col_idx: &Array<i32>,
    weights: &Array<F>,
    values: &Array<F>,
    idx: &Array<u32>,
    out: &mut Tensor<F>,
    out_atomic: &mut Tensor<Atomic<f32>>,
    stage: &mut Array<f32>,
    n_groups: usize,
    #[comptime] k: usize,
    #[comptime] dim: usize,
    #[comptime] lk: u32,
    #[comptime] slots: u32,
    #[comptime] plane: bool,
    #[comptime] packed: bool,
    #[comptime] has_w: bool,
    #[comptime] atomic: bool,
    #[comptime] unroll: u32,
    #[define(F)] _dtype: StorageType,
) {
    let subs = comptime!(32 / lk);
    let mut buf = SharedMemory::<f32>::new(comptime!((slots * subs) as usize * dim));
    let g = CUBE_POS * slots as usize + UNIT_POS_Y as usize;
    let mut start = 0usize;
    let mut end = 0usize;
    let mut row = 0usize;
    let mut slot = 0i32;
    if g < n_groups {
        start = usize::cast_from(group_ptr[g]);
        end = usize::cast_from(group_ptr[g + 1]);
        row = usize::cast_from(group_row[g]);
        slot = group_slot[g];
    }
    let sub = (UNIT_POS_X / lk) as usize;
    let lane = (UNIT_POS_X % lk) as usize;
    let region = UNIT_POS_Y as usize * comptime!(subs as usize * dim);
    let mine = region + sub * dim;
    let mut c = UNIT_POS_X as usize;
    while c < comptime!(subs as usize * dim) {
        buf[region + c] = f32::new(0.0);
        c += 32;
    }
    sync_slot(plane);
    // `unroll` edges per sub-warp and step: their columns and values are loaded first (the loads
    // of all of them in flight together), then added one edge at a time with a barrier between,
    // in the order of the single-edge loop (the same sums, bit for bit)
    let per_lane = comptime!(k.div_ceil(lk as usize));
    let held = comptime!(unroll as usize * per_lane);
    let mut base = start;
    while base < end {
        let mut cols = Array::<u32>::new(held);
        let mut vals = Array::<f32>::new(held);
        #[unroll]
        for q in 0..unroll {
            let e = base + sub + q as usize * subs as usize;
            let mut j = 0usize;
            let mut w = f32::new(1.0);
            if e < end {
                j = usize::cast_from(col_idx[e]);
                if comptime!(has_w) {
                    w = f32::cast_from(weights[e]);
                }
            }
            #[unroll]
            for r in 0..per_lane {
                let t = lane + r * lk as usize;
                let at = q as usize * per_lane + r;
                cols[at] = 0u32;
                vals[at] = f32::new(0.0);
                if e < end && t < k {
                    cols[at] = u32::cast_from(cbsr_col(idx, j, t, k, packed));
                    vals[at] = w * f32::cast_from(values[j * k + t]);
                }
            }
        }
        #[unroll]
        for q in 0..unroll {
            let e = base + sub + q as usize * subs as usize;
            #[unroll]
            for r in 0..per_lane {
                let t = lane + r * lk as usize;
                let at = q as usize * per_lane + r;
                if e < end && t < k {
                    let col = cols[at] as usize;
                    buf[mine + col] += vals[at];
                }
            }
            sync_slot(plane);
        }
        base += comptime!(unroll as usize * subs as usize);
    }
    if g < n_groups {
        let o_rs = out.stride(0);
        let a_rs = out_atomic.stride(0);
        let mut c = UNIT_POS_X as usize;
        while c < dim {
            let mut s = f32::new(0.0);
            #[unroll]
            for q in 0..subs {
                s += buf[region + q as usize * dim + c];
            }
            if comptime!(atomic) {
                out_atomic[row * a_rs + c].fetch_add(s);
            } else if slot < 0 {
                out[row * o_rs + c] = F::cast_from(s);
            } else {
                stage[usize::cast_from(slot) * dim + c] = s;
            }
            c += 32;
        }
    }
}

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn spgemm_grad_w_groups<F: Float>(
    group_ptr: &Array<i32>,
    group_row: &Array<i32>,
    col_idx: &Array<i32>,
    dy: &Tensor<F>,
    values: &Array<F>,
    idx: &Array<u32>,
    out: &mut Array<F>,
    n_groups: usize,
    #[comptime] k: usize,
    #[comptime] lk: u32,
    #[comptime] slots: u32,
    #[comptime] plane: bool,
    #[comptime] packed: bool,
    #[define(F)] _dtype: StorageType,
) {
    let subs = comptime!(32 / lk);
    let mut red = SharedMemory::<f32>::new(comptime!(if plane { 1usize } else { (32 * slots) as usize }));
    let g = CUBE_POS * slots as usize + UNIT_POS_Y as usize;
    let mut start = 0usize;
    let mut end = 0usize;
    let mut i = 0usize;
    if g < n_groups {
        start = usize::cast_from(group_ptr[g]);
        end = usize::cast_from(group_ptr[g + 1]);
        i = usize::cast_from(group_row[g]);
    }
    let sub = (UNIT_POS_X / lk) as usize;
    let lane = (UNIT_POS_X % lk) as usize;
    let d_rs = dy.stride(0);
    let mut base = start;
    while base < end {
        let e = base + sub;
        let mut p = f32::new(0.0);
        if e < end {
            let j = usize::cast_from(col_idx[e]);
            let mut t = lane;
            while t < k {
                let col = cbsr_col(idx, j, t, k, packed);
                p += f32::cast_from(dy[i * d_rs + col]) * f32::cast_from(values[j * k + t]);
                t += lk as usize;
            }
        }
        let total = segment_sum(p, &mut red, lk, plane);
        if e < end && lane == 0 {
            out[e] = F::cast_from(total);
        }
        base += subs as usize;
    }
}

/// Shared memory bytes of one SpGEMM plane.
pub fn spgemm_smem_per_slot(k: usize, dim: usize) -> usize {
    let lk = lanes_for(k, 32) as usize;
    4 * (32 / lk) * dim
}

/// Launches the CBSR SpGEMM into `out` (`[n_rows, dim]`; zero-initialised by the caller when
/// `atomic`). Fails (nothing launched) when one plane's buffers do not fit shared memory.
#[allow(clippy::too_many_arguments)]
pub fn launch_spgemm<R: Runtime>(
    client: &ComputeClient<R>,
    csr: &CsrDev<R>,
    weights: Option<TensorBinding<R>>,
    c: &CbsrDev<R>,
    out: TensorBinding<R>,
    atomic: bool,
    dtype: StorageType,
) -> Result<(), KernelError> {
    let smem = client.properties().hardware.max_shared_memory_size;
    let per_slot = spgemm_smem_per_slot(c.k, c.dim);
    if per_slot > smem {
        return Err(KernelError::SharedMemory { op: "cbsr spgemm", needed: per_slot, available: smem });
    }
    let plane = sync_plane_mode(client, csr.config.planes);
    let slots = if plane { ((smem / 2) / per_slot).clamp(1, 8) as u32 } else { 1 };
    let lk = lanes_for(c.k, 32);
    let has_w = weights.is_some();
    let w = weights.unwrap_or_else(|| alloc_array::<R>(client, 1, dtype.size()));
    let stage = alloc_array::<R>(client, if atomic { 1 } else { csr.n_slots * c.dim }, 4);
    let dummy_out = crate::device::alloc_matrix::<R>(client, 1, 1, dtype.size());
    let dummy_atomic = crate::device::alloc_matrix::<R>(client, 1, 1, 4);
    let (o, oa) = if atomic { (dummy_out, out.clone()) } else { (out.clone(), dummy_atomic) };
    if csr.n_groups > 0 {
        unsafe {
            spgemm_groups::launch_unchecked::<R>(
                client,
                cube_count(client, csr.n_groups.div_ceil(slots as usize)),
                CubeDim::new_2d(32, slots),
                csr.group_ptr.clone().into_array_arg(),
                csr.group_row.clone().into_array_arg(),
                csr.group_slot.clone().into_array_arg(),
                csr.col_idx.clone().into_array_arg(),
                w.into_array_arg(),
                c.values.clone().into_array_arg(),
                c.indices.clone().into_array_arg(),
                o.into_tensor_arg(),
                oa.into_tensor_arg(),
                stage.clone().into_array_arg(),
                csr.n_groups,
                c.k,
                c.dim,
                lk,
                slots,
                plane,
                c.packed,
                has_w,
                atomic,
                SPGEMM_UNROLL,
                dtype,
            );
        }
    }
    if !atomic {
        launch_finish_sum::<R>(client, csr, out, stage, dtype);
    }
    Ok(())
}

/// Launches the edge-weight gradient of the SpGEMM into `out` (`[nnz]`).
pub fn launch_spgemm_grad_w<R: Runtime>(
    client: &ComputeClient<R>,
    csr: &CsrDev<R>,
    dy: TensorBinding<R>,
    c: &CbsrDev<R>,
    out: TensorBinding<R>,
    dtype: StorageType,
) {
    if csr.n_groups == 0 {
        return;
    }
    let plane = plane_mode(client, csr.config.planes);
    let slots = if plane { 4u32 } else { 1 };
    let lk = lanes_for(c.k, 32);
    unsafe {
        spgemm_grad_w_groups::launch_unchecked::<R>(
            client,
            cube_count(client, csr.n_groups.div_ceil(slots as usize)),
            CubeDim::new_2d(32, slots),
            csr.group_ptr.clone().into_array_arg(),
            csr.group_row.clone().into_array_arg(),
            csr.col_idx.clone().into_array_arg(),
            dy.into_tensor_arg(),
            c.values.clone().into_array_arg(),
            c.indices.clone().into_array_arg(),
            out.into_array_arg(),
            csr.n_groups,
            c.k,
            lk,
            slots,
            plane,
            c.packed,
            dtype,
        );
    }
}
