//! CBSR kernels of MaxK-GNN, trained end to end:
//! - SpGEMM forward (`out[i] = sum_e w[e] * scatter(cbsr[j])`): one edge group per plane; the
//!   plane is split into sub-warps of `lk` lanes (one per CBSR entry), each sub-warp owning a
//!   `dim`-float shared buffer and taking every `subs`-th edge of the group; a plane barrier
//!   after each step keeps writes of different edges apart, so no atomics are needed; the
//!   sub-buffers are added in a fixed order and written back coalesced. Split rows go through
//!   staging slots and a second pass (deterministic), or, as a measured option, atomics.
//! - SSpMM backward (`dvalues[j, t] = sum_{e=(i,j)} w[e] * dy[i, idx[j, t]]`): a deterministic
//!   gather over the transpose (edge groups of the CSC, registers, second pass for split
//!   columns), or MaxK-GNN's outer product (dy row staged in shared memory, coalesced atomic
//!   adds into the CBSR values).
//! - edge-weight gradient, scatter to dense, gather from dense, index packing.

use crate::config::PlaneUse;
use crate::device::{alloc_array, cube_count, has_plane_ops, lanes_for, plane_size, CsrDev};
use crate::error::KernelError;
use crate::reduce::segment_sum;
use crate::spmm::kernel::launch_finish_sum;
use cubecl::prelude::*;

/// A CBSR matrix on the device.
#[derive(Clone)]
pub struct CbsrDev<R: Runtime> {
    /// `[n * k]` values.
    pub values: TensorBinding<R>,
    /// `[n * k]` u32 column ids, or `[n * ceil(k / 4)]` packed words.
    pub indices: TensorBinding<R>,
    /// Rows.
    pub n: usize,
    /// Entries per row.
    pub k: usize,
    /// Dense width.
    pub dim: usize,
    /// Packed indices.
    pub packed: bool,
}

/// Column of entry `t` of row `row`.
#[cube]
pub fn cbsr_col(idx: &Array<u32>, row: usize, t: usize, #[comptime] k: usize, #[comptime] packed: bool) -> usize {
    if comptime!(packed) {
        let words = comptime!(k.div_ceil(4));
        let w = idx[row * words + t / 4];
        ((w >> (8 * (t % 4) as u32)) & 0xffu32) as usize
    } else {
        idx[row * k + t] as usize
    }
}

#[cube]
fn sync_slot(#[comptime] plane: bool) {
    if comptime!(plane) {
        sync_plane();
    } else {
        sync_cube();
    }
}

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
    let mut base = start;
    while base < end {
        let e = base + sub;
        if e < end {
            let j = usize::cast_from(col_idx[e]);
            let mut w = f32::new(1.0);
            if comptime!(has_w) {
                w = f32::cast_from(weights[e]);
            }
            let mut t = lane;
            while t < k {
                let col = cbsr_col(idx, j, t, k, packed);
                buf[mine + col] += w * f32::cast_from(values[j * k + t]);
                t += lk as usize;
            }
        }
        sync_slot(plane);
        base += subs as usize;
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
    let mut e = start + sub;
    while e < end {
        let j = usize::cast_from(col_idx[e]);
        let mut w = f32::new(1.0);
        if comptime!(has_w) {
            w = f32::cast_from(weights[e]);
        }
        let mut t = lane;
        while t < k {
            let col = cbsr_col(idx, j, t, k, packed);
            out[j * o_rs + t].fetch_add(w * row_buf[region + col]);
            t += lk as usize;
        }
        e += subs as usize;
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

#[cube(launch_unchecked)]
fn cbsr_scatter<F: Float>(
    values: &Array<F>,
    idx: &Array<u32>,
    out: &mut Tensor<F>,
    n: usize,
    #[comptime] k: usize,
    #[comptime] packed: bool,
    #[define(F)] _dtype: StorageType,
) {
    let p = ABSOLUTE_POS;
    if p >= n * k {
        terminate!();
    }
    let row = p / k;
    let t = p % k;
    out[row * out.stride(0) + cbsr_col(idx, row, t, k, packed)] = values[p];
}

#[cube(launch_unchecked)]
fn cbsr_gather_kernel<F: Float>(
    x: &Tensor<F>,
    idx: &Array<u32>,
    out: &mut Array<F>,
    n: usize,
    #[comptime] k: usize,
    #[comptime] packed: bool,
    #[define(F)] _dtype: StorageType,
) {
    let p = ABSOLUTE_POS;
    if p >= n * k {
        terminate!();
    }
    let row = p / k;
    let t = p % k;
    out[p] = x[row * x.stride(0) + cbsr_col(idx, row, t, k, packed)];
}

#[cube(launch_unchecked)]
fn cbsr_unpack(idx: &Array<u32>, out: &mut Array<u32>, n: usize, #[comptime] k: usize) {
    let p = ABSOLUTE_POS;
    if p >= n * k {
        terminate!();
    }
    out[p] = cbsr_col(idx, p / k, p % k, k, true) as u32;
}

#[cube(launch_unchecked)]
fn cbsr_pack(idx: &Array<u32>, out: &mut Array<u32>, n: usize, #[comptime] k: usize) {
    let words = comptime!(k.div_ceil(4));
    let p = ABSOLUTE_POS;
    if p >= n * words {
        terminate!();
    }
    let row = p / words;
    let wd = p % words;
    let mut word = 0u32;
    #[unroll]
    for b in 0..4usize {
        let t = wd * 4 + b;
        if t < k {
            word |= idx[row * k + t] << (8 * b as u32);
        }
    }
    out[p] = word;
}

fn plane_mode<R: Runtime>(client: &ComputeClient<R>, planes: PlaneUse) -> bool {
    has_plane_ops(client, planes) && plane_size(client) == 32
}

fn sync_plane_mode<R: Runtime>(client: &ComputeClient<R>, planes: PlaneUse) -> bool {
    plane_mode(client, planes) && client.properties().features.plane.contains(cubecl::features::Plane::Sync)
}

fn elementwise_count<R: Runtime>(client: &ComputeClient<R>, total: usize) -> (CubeCount, CubeDim) {
    let threads = 256u32;
    (cube_count(client, total.div_ceil(threads as usize)), CubeDim::new_1d(threads))
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
                dtype,
            );
        }
    }
    if !atomic {
        launch_finish_sum::<R>(client, csr, out, stage, dtype);
    }
    Ok(())
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
                dtype,
            );
        }
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

/// Scatters the CBSR values into `out` (`[n, dim]`, zero-initialised by the caller).
pub fn launch_scatter<R: Runtime>(
    client: &ComputeClient<R>,
    c: &CbsrDev<R>,
    out: TensorBinding<R>,
    dtype: StorageType,
) {
    if c.n * c.k == 0 {
        return;
    }
    let (count, dim) = elementwise_count(client, c.n * c.k);
    unsafe {
        cbsr_scatter::launch_unchecked::<R>(
            client,
            count,
            dim,
            c.values.clone().into_array_arg(),
            c.indices.clone().into_array_arg(),
            out.into_tensor_arg(),
            c.n,
            c.k,
            c.packed,
            dtype,
        );
    }
}

/// Gathers `x` (`[n, dim]`) at the CBSR pattern into `out` (`[n * k]`).
pub fn launch_gather<R: Runtime>(
    client: &ComputeClient<R>,
    x: TensorBinding<R>,
    c: &CbsrDev<R>,
    out: TensorBinding<R>,
    dtype: StorageType,
) {
    if c.n * c.k == 0 {
        return;
    }
    let (count, dim) = elementwise_count(client, c.n * c.k);
    unsafe {
        cbsr_gather_kernel::launch_unchecked::<R>(
            client,
            count,
            dim,
            x.into_tensor_arg(),
            c.indices.clone().into_array_arg(),
            out.into_array_arg(),
            c.n,
            c.k,
            c.packed,
            dtype,
        );
    }
}

/// Unpacks packed indices into `out` (`[n * k]` u32).
pub fn launch_unpack<R: Runtime>(client: &ComputeClient<R>, c: &CbsrDev<R>, out: TensorBinding<R>) {
    if c.n * c.k == 0 {
        return;
    }
    let (count, dim) = elementwise_count(client, c.n * c.k);
    unsafe {
        cbsr_unpack::launch_unchecked::<R>(
            client,
            count,
            dim,
            c.indices.clone().into_array_arg(),
            out.into_array_arg(),
            c.n,
            c.k,
        );
    }
}

/// Packs `[n * k]` u32 indices (each < 256) into `out` (`[n * ceil(k / 4)]`).
pub fn launch_pack<R: Runtime>(
    client: &ComputeClient<R>,
    idx: TensorBinding<R>,
    n: usize,
    k: usize,
    out: TensorBinding<R>,
) {
    let words = k.div_ceil(4);
    if n * words == 0 {
        return;
    }
    let (count, dim) = elementwise_count(client, n * words);
    unsafe {
        cbsr_pack::launch_unchecked::<R>(client, count, dim, idx.into_array_arg(), out.into_array_arg(), n, k);
    }
}
