//! CBSR SSpMM backward (`dvalues[j, t] = sum_{e=(i,j)} w[e] * dy[i, idx[j, t]]`): a deterministic
//! gather over the transpose (edge groups of the CSC, registers, second pass for split columns),
//! or MaxK-GNN's outer product (dy row staged in shared memory, coalesced atomic adds into the
//! CBSR values).

use super::matrix::{cbsr_col, plane_mode, sync_plane_mode, sync_slot, CbsrDev};
use crate::device::{alloc_array, cube_count, lanes_for, CsrDev};
use crate::error::KernelError;
use crate::spmm::kernel::launch_finish_sum;
use cubecl::prelude::*;

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn sspmm_gather_groups<F: Float>(
    group_ptr: &Array<i32>,
    group_row: &Array<i32>,
    group_slot: &Array<i32>,
    t_col: &Array<i32>,
    perm: &Array<i32>,
    weights: &Array<F>,
    dy: &Tensor<F>,
    idx: &Array<u32>,
    out: &mut Array<F>,
    stage: &mut Array<f32>,
    n_groups: usize,
    #[comptime] k: usize,
    #[comptime] lk: u32,
    #[comptime] slots: u32,
    #[comptime] plane: bool,
    #[comptime] packed: bool,
    #[comptime] has_w: bool,
    #[define(F)] _dtype: StorageType,
) {
    let subs = comptime!(32 / lk);
    let mut red = SharedMemory::<f32>::new(comptime!(if plane { 1usize } else { (32 * slots) as usize }));
    let g = CUBE_POS * slots as usize + UNIT_POS_Y as usize;
    let mut start = 0usize;
    let mut end = 0usize;
    let mut j = 0usize;
    let mut slot = 0i32;
    if g < n_groups {
        start = usize::cast_from(group_ptr[g]);
        end = usize::cast_from(group_ptr[g + 1]);
        j = usize::cast_from(group_row[g]);
        slot = group_slot[g];
    }
    let sub = (UNIT_POS_X / lk) as usize;
    let lane = (UNIT_POS_X % lk) as usize;
    let d_rs = dy.stride(0);
    let mut t0 = 0usize;
    while t0 < k {
        let t = t0 + lane;
        let mut col = 0usize;
        if t < k && g < n_groups {
            col = cbsr_col(idx, j, t, k, packed);
        }
        let mut acc = f32::new(0.0);
        let mut e = start + sub;
        while e < end {
            if t < k {
                let i = usize::cast_from(t_col[e]);
                let mut w = f32::new(1.0);
                if comptime!(has_w) {
                    w = f32::cast_from(weights[usize::cast_from(perm[e])]);
                }
                acc += w * f32::cast_from(dy[i * d_rs + col]);
            }
            e += subs as usize;
        }
        // add the sub-warps' partials (lanes t, t + lk, ...) in a fixed order
        let mut total = acc;
        if comptime!(subs > 1) {
            if comptime!(plane) {
                // butterfly over the sub-warps (lanes t, t + lk, ...); a literal-initialised
                // counter (a comptime-initialised one cannot be mutated in a kernel)
                let mut q = 1u32;
                while q < subs {
                    total += plane_shuffle_xor(total, q * lk);
                    q *= 2;
                }
            } else {
                let u = UNIT_POS as usize;
                red[u] = acc;
                sync_cube();
                let first = u - sub * lk as usize;
                total = red[first];
                #[unroll]
                for q in 1..subs {
                    total += red[first + (q * lk) as usize];
                }
                sync_cube();
            }
        }
        if g < n_groups && sub == 0 && t < k {
            if slot < 0 {
                out[j * k + t] = F::cast_from(total);
            } else {
                stage[usize::cast_from(slot) * k + t] = total;
            }
        }
        t0 += lk as usize;
    }
}

/// Edges each sub-warp of the outer-product SSpMM loads ahead of its atomic additions.
pub const SSPMM_OUTER_UNROLL: u32 = 4;

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn sspmm_outer_groups<F: Float>(
    group_ptr: &Array<i32>,
    group_row: &Array<i32>,
    col_idx: &Array<i32>,
    weights: &Array<F>,
    dy: &Tensor<F>,
    idx: &Array<u32>,
    out: &mut Tensor<Atomic<f32>>,
    n_groups: usize,
    #[comptime] k: usize,
    #[comptime] dim: usize,
    #[comptime] lk: u32,
    #[comptime] slots: u32,
    #[comptime] plane: bool,
    #[comptime] packed: bool,
    #[comptime] has_w: bool,
    #[comptime] unroll: u32,
    #[define(F)] _dtype: StorageType,
) {
    let subs = comptime!(32 / lk);
    let mut row_buf = SharedMemory::<f32>::new(comptime!(slots as usize * dim));
    let g = CUBE_POS * slots as usize + UNIT_POS_Y as usize;
    let mut start = 0usize;
    let mut end = 0usize;
    let mut i = 0usize;
    if g < n_groups {
        start = usize::cast_from(group_ptr[g]);
        end = usize::cast_from(group_ptr[g + 1]);
        i = usize::cast_from(group_row[g]);
    }
    let region = UNIT_POS_Y as usize * dim;
    let d_rs = dy.stride(0);
    let mut c = UNIT_POS_X as usize;
    while c < dim {
        let mut v = f32::new(0.0);
        if g < n_groups {
            v = f32::cast_from(dy[i * d_rs + c]);
        }
        row_buf[region + c] = v;
        c += 32;
    }
    sync_slot(plane);
    let sub = (UNIT_POS_X / lk) as usize;
    let lane = (UNIT_POS_X % lk) as usize;
    // the output may be row-pitched (CUDA pads 2-D allocations): index by its row stride
    let o_rs = out.stride(0);
    // `unroll` edges per sub-warp and step: their columns, then their CBSR columns, are loaded
    // before the atomic additions, so the loads of all of them are in flight together
    let per_lane = comptime!(k.div_ceil(lk as usize));
    let held = comptime!(unroll as usize * per_lane);
    let mut e0 = start + sub;
    while e0 < end {
        let mut js = Array::<u32>::new(comptime!(unroll as usize));
        let mut ws = Array::<f32>::new(comptime!(unroll as usize));
        #[unroll]
        for q in 0..unroll {
            let e = e0 + q as usize * subs as usize;
            js[q as usize] = 0u32;
            ws[q as usize] = f32::new(1.0);
            if e < end {
                js[q as usize] = u32::cast_from(col_idx[e]);
                if comptime!(has_w) {
                    ws[q as usize] = f32::cast_from(weights[e]);
                }
            }
        }
        let mut cols = Array::<u32>::new(held);
        #[unroll]
        for q in 0..unroll {
            let e = e0 + q as usize * subs as usize;
            #[unroll]
            for r in 0..per_lane {
                let t = lane + r * lk as usize;
                let at = q as usize * per_lane + r;
                cols[at] = 0u32;
                if e < end && t < k {
                    cols[at] = u32::cast_from(cbsr_col(idx, js[q as usize] as usize, t, k, packed));
                }
            }
        }
        #[unroll]
        for q in 0..unroll {
            let e = e0 + q as usize * subs as usize;
            let j = js[q as usize] as usize;
            #[unroll]
            for r in 0..per_lane {
                let t = lane + r * lk as usize;
                if e < end && t < k {
                    let col = cols[q as usize * per_lane + r] as usize;
                    out[j * o_rs + t].fetch_add(ws[q as usize] * row_buf[region + col]);
                }
            }
        }
        e0 += comptime!(unroll as usize * subs as usize);
    }
}

/// Launches the deterministic SSpMM gather over the transpose `csc` (edge permutation `perm`):
/// `out` `[n_cols_of_forward * k]` = gradient of the CBSR values of pattern `c`.
#[allow(clippy::too_many_arguments)]
pub fn launch_sspmm_gather<R: Runtime>(
    client: &ComputeClient<R>,
    csc: &CsrDev<R>,
    perm: TensorBinding<R>,
    weights: Option<TensorBinding<R>>,
    dy: TensorBinding<R>,
    c: &CbsrDev<R>,
    out: TensorBinding<R>,
    dtype: StorageType,
) {
    let plane = plane_mode(client, csc.config.planes);
    let slots = if plane { 4u32 } else { 1 };
    let lk = lanes_for(c.k, 32);
    let has_w = weights.is_some();
    let w = weights.unwrap_or_else(|| alloc_array::<R>(client, 1, dtype.size()));
    let stage = alloc_array::<R>(client, csc.n_slots * c.k, 4);
    if csc.n_groups > 0 {
        unsafe {
            sspmm_gather_groups::launch_unchecked::<R>(
                client,
                cube_count(client, csc.n_groups.div_ceil(slots as usize)),
                CubeDim::new_2d(32, slots),
                csc.group_ptr.clone().into_array_arg(),
                csc.group_row.clone().into_array_arg(),
                csc.group_slot.clone().into_array_arg(),
                csc.col_idx.clone().into_array_arg(),
                perm.into_array_arg(),
                w.into_array_arg(),
                dy.into_tensor_arg(),
                c.indices.clone().into_array_arg(),
                out.clone().into_array_arg(),
                stage.clone().into_array_arg(),
                csc.n_groups,
                c.k,
                lk,
                slots,
                plane,
                c.packed,
                has_w,
                dtype,
            );
        }
    }
    let out2d = TensorBinding { shape: [c.n, c.k].into(), strides: [c.k, 1].into(), ..out };
    launch_finish_sum::<R>(client, csc, out2d, stage, dtype);
}

/// Launches MaxK-GNN's outer-product SSpMM over the forward `csr`, accumulating with f32
/// atomics into `out` (`[n_cols, k]` f32, any row pitch, zero-initialised by the caller). Fails
/// (nothing launched) when the dy row does not fit shared memory.
pub fn launch_sspmm_outer<R: Runtime>(
    client: &ComputeClient<R>,
    csr: &CsrDev<R>,
    weights: Option<TensorBinding<R>>,
    dy: TensorBinding<R>,
    c: &CbsrDev<R>,
    out: TensorBinding<R>,
    dtype: StorageType,
) -> Result<(), KernelError> {
    let smem = client.properties().hardware.max_shared_memory_size;
    if 4 * c.dim > smem {
        return Err(KernelError::SharedMemory { op: "cbsr sspmm (outer product)", needed: 4 * c.dim, available: smem });
    }
    let plane = sync_plane_mode(client, csr.config.planes);
    let slots = if plane { ((smem / 2) / (4 * c.dim)).clamp(1, 8) as u32 } else { 1 };
    let lk = lanes_for(c.k, 32);
    let has_w = weights.is_some();
    let w = weights.unwrap_or_else(|| alloc_array::<R>(client, 1, dtype.size()));
    if csr.n_groups > 0 {
        unsafe {
            sspmm_outer_groups::launch_unchecked::<R>(
                client,
                cube_count(client, csr.n_groups.div_ceil(slots as usize)),
                CubeDim::new_2d(32, slots),
                csr.group_ptr.clone().into_array_arg(),
                csr.group_row.clone().into_array_arg(),
                csr.col_idx.clone().into_array_arg(),
                w.into_array_arg(),
                dy.into_tensor_arg(),
                c.indices.clone().into_array_arg(),
                out.into_tensor_arg(),
                csr.n_groups,
                c.k,
                c.dim,
                lk,
                slots,
                plane,
                c.packed,
                has_w,
                SSPMM_OUTER_UNROLL,
                dtype,
            );
        }
    }
    Ok(())
}
