//! MaxK selection on the GPU: each row is staged in shared memory as order-preserving u32 keys
//! (the IEEE total order), the key of the `k`-th largest entry is found exactly by a radix
//! select (four rounds of 8 bits: a 256-bin shared-memory histogram of the keys that share the
//! prefix found so far, a lane scan to find the bin where the count crosses `k`), then the kept
//! entries (all keys above the threshold, plus the first ties in column order) are compacted in
//! ascending column order with lane scans. Output: CBSR values and indices, the indices
//! packed four u8 to a u32 when `dim <= 256`.

use crate::config::{KernelConfig, MaxkSelect};
use crate::device::{cube_count, has_plane_ops, plane_size};
use crate::error::KernelError;
use crate::reduce::{segment_exclusive_sum_u32, segment_sum_u32};
use cubecl::prelude::*;

/// Order-preserving key of an f32 (see `reference::ordered_key_f32`).
#[cube]
pub fn ordered_key(v: f32) -> u32 {
    let bits = u32::reinterpret(v);
    let mut key = bits | 0x8000_0000u32;
    if bits >= 0x8000_0000u32 {
        key = bits ^ 0xFFFF_FFFFu32;
    }
    key
}

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn maxk_select<F: Float>(
    x: &Tensor<F>,
    values: &mut Array<F>,
    indices: &mut Array<u32>,
    n: usize,
    #[comptime] dim: usize,
    #[comptime] k: usize,
    #[comptime] lanes: u32,
    #[comptime] rows: u32,
    #[comptime] plane: bool,
    #[comptime] packed: bool,
    #[define(F)] _dtype: StorageType,
) {
    let mut keys = SharedMemory::<u32>::new(comptime!(dim * rows as usize));
    let hist = SharedMemory::<Atomic<u32>>::new(comptime!(256 * rows as usize));
    let mut picked = SharedMemory::<u32>::new(comptime!(k * rows as usize));
    let mut red = SharedMemory::<u32>::new(comptime!(if plane { 1usize } else { (lanes * rows) as usize }));
    let mut bcast = SharedMemory::<u32>::new(comptime!(2 * rows as usize));
    let slot = UNIT_POS_Y as usize;
    let row = CUBE_POS * rows as usize + slot;
    let valid = row < n;
    let lane = UNIT_POS_X as usize;
    let kbase = slot * dim;
    let hbase = slot * 256;
    let x_rs = x.stride(0);
    let bins_per_lane = comptime!(256 / lanes as usize);

    let mut c = lane;
    while c < dim {
        let mut key = 0u32;
        if valid {
            key = ordered_key(f32::cast_from(x[row * x_rs + c]));
        }
        keys[kbase + c] = key;
        c += lanes as usize;
    }

    // radix select, 8 bits per round from the top: the threshold is the key of the k-th
    // largest entry; `above` counts the keys known to be larger than the current prefix range
    let mut prefix = 0u32;
    let mut above = 0u32;
    #[unroll]
    for r in 0..4u32 {
        let shift = comptime!(24 - 8 * r);
        let mut b = lane;
        while b < 256 {
            hist[hbase + b].store(0u32);
            b += lanes as usize;
        }
        sync_cube();
        let mut c = lane;
        while c < dim {
            let key = keys[kbase + c];
            let mut in_range = true;
            if comptime!(r > 0) {
                in_range = (key >> comptime!(shift + 8)) == (prefix >> comptime!(shift + 8));
            }
            if in_range {
                hist[hbase + ((key >> shift) & 255u32) as usize].fetch_add(1u32);
            }
            c += lanes as usize;
        }
        sync_cube();
        // lane l owns bins [l * bpl, (l + 1) * bpl); count of the bins above a lane's range
        let mut s = 0u32;
        #[unroll]
        for q in 0..bins_per_lane {
            s += hist[hbase + lane * bins_per_lane + q].load();
        }
        let before = segment_exclusive_sum_u32(s, &mut red, lanes, plane);
        let total = segment_sum_u32(s, &mut red, lanes, plane);
        let suffix = total - before - s;
        let need = k as u32 - above;
        if suffix < need && need <= suffix + s {
            let mut acc = suffix;
            let mut found = false;
            #[unroll]
            for q in 0..bins_per_lane {
                let bin = lane * bins_per_lane + comptime!(bins_per_lane - 1 - q);
                let cnt = hist[hbase + bin].load();
                if !found && acc + cnt >= need {
                    found = true;
                    bcast[slot * 2] = bin as u32;
                    bcast[slot * 2 + 1] = above + acc;
                }
                acc += cnt;
            }
        }
        sync_cube();
        prefix |= bcast[slot * 2] << shift;
        above = bcast[slot * 2 + 1];
        sync_cube();
    }
    let thr = prefix;
    maxk_write::<F>(x, values, indices, &keys, &mut picked, &mut red, thr, row, valid, dim, k, lanes, plane, packed);
}

/// Compaction of the kept entries of one row in ascending column order, and the writes
/// (shared by both selection kernels): `keys` holds the row's keys at `kbase`.
#[cube]
#[allow(clippy::too_many_arguments)]
fn maxk_write<F: Float>(
    x: &Tensor<F>,
    values: &mut Array<F>,
    indices: &mut Array<u32>,
    keys: &SharedMemory<u32>,
    picked: &mut SharedMemory<u32>,
    red: &mut SharedMemory<u32>,
    thr: u32,
    row: usize,
    valid: bool,
    #[comptime] dim: usize,
    #[comptime] k: usize,
    #[comptime] lanes: u32,
    #[comptime] plane: bool,
    #[comptime] packed: bool,
) {
    let slot = UNIT_POS_Y as usize;
    let lane = UNIT_POS_X as usize;
    let kbase = slot * dim;
    let x_rs = x.stride(0);
    let chunk = comptime!(dim.div_ceil(lanes as usize));
    let lo = lane * chunk;
    let hi = usize::min(lo + chunk, dim);
    let mut n_gt = 0u32;
    let mut n_eq = 0u32;
    let mut c = lo;
    while c < hi {
        let key = keys[kbase + c];
        if key > thr {
            n_gt += 1;
        } else if key == thr {
            n_eq += 1;
        }
        c += 1;
    }
    let total_gt = segment_sum_u32(n_gt, red, lanes, plane);
    let need = k as u32 - total_gt;
    let eq_before = segment_exclusive_sum_u32(n_eq, red, lanes, plane);
    let mut eq_take = 0u32;
    if need > eq_before {
        eq_take = u32::min(need - eq_before, n_eq);
    }
    let pos = segment_exclusive_sum_u32(n_gt + eq_take, red, lanes, plane);
    let mut p = pos;
    let mut eq_seen = 0u32;
    let mut c = lo;
    while c < hi {
        let key = keys[kbase + c];
        let mut take = key > thr;
        if key == thr {
            take = eq_seen < eq_take;
            eq_seen += 1;
        }
        if take {
            picked[slot * k + p as usize] = c as u32;
            p += 1;
        }
        c += 1;
    }
    sync_cube();
    if valid {
        let mut t = lane;
        while t < k {
            let col = picked[slot * k + t];
            values[row * k + t] = x[row * x_rs + col as usize];
            t += lanes as usize;
        }
        if comptime!(packed) {
            let words = comptime!(k.div_ceil(4));
            let mut wd = lane;
            while wd < words {
                let mut word = 0u32;
                #[unroll]
                for b in 0..4usize {
                    let t = wd * 4 + b;
                    if t < k {
                        word |= picked[slot * k + t] << (8 * b as u32);
                    }
                }
                indices[row * words + wd] = word;
                wd += lanes as usize;
            }
        } else {
            let mut t = lane;
            while t < k {
                indices[row * k + t] = picked[slot * k + t];
                t += lanes as usize;
            }
        }
    }
}

/// MaxK for rows of at most `32 * 16` entries: each lane keeps its keys (columns
/// `lane + 32 q`) in registers and the threshold key is found by a bisection over the key bits
/// (at most 32 steps, each one compare per key and one lane reduction, no shared-memory
/// traffic), which ends as soon as a candidate has exactly `k` keys at or above it.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn maxk_select_regs<F: Float>(
    x: &Tensor<F>,
    values: &mut Array<F>,
    indices: &mut Array<u32>,
    n: usize,
    #[comptime] dim: usize,
    #[comptime] k: usize,
    #[comptime] rows: u32,
    #[comptime] plane: bool,
    #[comptime] packed: bool,
    #[define(F)] _dtype: StorageType,
) {
    let lanes = comptime!(32u32);
    let kpl = comptime!(dim.div_ceil(32));
    let mut keys = SharedMemory::<u32>::new(comptime!(dim * rows as usize));
    let mut picked = SharedMemory::<u32>::new(comptime!(k * rows as usize));
    let mut red = SharedMemory::<u32>::new(comptime!(if plane { 1usize } else { (32 * rows) as usize }));
    let slot = UNIT_POS_Y as usize;
    let row = CUBE_POS * rows as usize + slot;
    let valid = row < n;
    let lane = UNIT_POS_X as usize;
    let kbase = slot * dim;
    let x_rs = x.stride(0);
    let mut kr = Array::<u32>::new(kpl);
    #[unroll]
    for q in 0..kpl {
        let c = lane + q * 32;
        let mut key = 0u32;
        if valid && c < dim {
            key = ordered_key(f32::cast_from(x[row * x_rs + c]));
        }
        kr[q] = key;
        if c < dim {
            keys[kbase + c] = key;
        }
    }
    // invariant: at least k keys are >= thr. A candidate with exactly k keys at or above it
    // separates the k-th from the (k+1)-th key: thr = cand - 1 then makes `key > thr` the
    // exact selection (no ties to break) and the search ends early; with plane reductions the
    // loop stops there (the row's warp is uniform), with shared-memory reductions every row of
    // the cube keeps stepping (no-op) to keep the barriers uniform
    let mut thr = 0u32;
    let mut bit = 31u32;
    let mut done = false;
    let mut more = true;
    while more {
        let cand = thr | (1u32 << bit);
        let mut cnt = 0u32;
        #[unroll]
        for q in 0..kpl {
            if kr[q] >= cand {
                cnt += 1;
            }
        }
        let total = segment_sum_u32(cnt, &mut red, lanes, plane);
        if !done {
            if total == k as u32 {
                thr = cand - 1;
                done = true;
            } else if total > k as u32 {
                thr = cand;
            }
        }
        let mut stop = bit == 0;
        if comptime!(plane) {
            stop = stop || done;
        }
        if stop {
            more = false;
        } else {
            bit -= 1;
        }
    }
    sync_cube();
    maxk_write::<F>(x, values, indices, &keys, &mut picked, &mut red, thr, row, valid, dim, k, lanes, plane, packed);
}

/// Shared memory (bytes) one row of MaxK selection needs.
pub fn maxk_smem_per_row(dim: usize, k: usize, lanes: usize) -> usize {
    4 * (dim + 256 + k + lanes + 2)
}

/// Launches MaxK on `x` (`[n, dim]`): `values` `[n * k]` (dtype of `x`), `indices` `[n * k]`
/// u32 or `[n * ceil(k / 4)]` packed words. Fails (nothing launched) when one row does not fit
/// the device's shared memory; the caller then uses another path.
#[allow(clippy::too_many_arguments)]
pub fn launch_maxk<R: Runtime>(
    client: &ComputeClient<R>,
    x: TensorBinding<R>,
    values: TensorBinding<R>,
    indices: TensorBinding<R>,
    k: usize,
    packed: bool,
    dtype: StorageType,
    config: &KernelConfig,
) -> Result<(), KernelError> {
    let (n, dim) = (x.shape[0], x.shape[1]);
    let plane = has_plane_ops(client, config.planes) && plane_size(client) == 32;
    let lanes = 32u32;
    let smem = client.properties().hardware.max_shared_memory_size;
    let per_row = maxk_smem_per_row(dim, k, lanes as usize);
    if per_row > smem {
        return Err(KernelError::SharedMemory { op: "maxk", needed: per_row, available: smem });
    }
    if n == 0 {
        return Ok(());
    }
    // several rows per cube when they fit (budget: a quarter of the shared memory)
    let rows = ((smem / 4) / per_row).clamp(1, 8) as u32;
    let count = cube_count(client, n.div_ceil(rows as usize));
    if dim <= 512 && config.maxk == MaxkSelect::Auto {
        unsafe {
            maxk_select_regs::launch_unchecked::<R>(
                client,
                count,
                CubeDim::new_2d(lanes, rows),
                x.into_tensor_arg(),
                values.into_array_arg(),
                indices.into_array_arg(),
                n,
                dim,
                k,
                rows,
                plane,
                packed,
                dtype,
            );
        }
        return Ok(());
    }
    unsafe {
        maxk_select::launch_unchecked::<R>(
            client,
            count,
            CubeDim::new_2d(lanes, rows),
            x.into_tensor_arg(),
            values.into_array_arg(),
            indices.into_array_arg(),
            n,
            dim,
            k,
            lanes,
            rows,
            plane,
            packed,
            dtype,
        );
    }
    Ok(())
}
