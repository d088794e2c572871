//! Second pass of the hot-column SpMM sum / mean ([`crate::csr::HotSplit`]).
//!
//! On the reddit-scale R-MAT graph the f32 SpMM of `kernel.rs` is bound by L2 throughput
//! (92.6 % of peak on the H200, ncu): every edge gathers a 128-byte line per feature tile, and
//! L1 keeps almost none of them because the gathers of rarely read columns stream through it.
//! The 1,024 most-read columns receive 9.8 % of the edges there. The split moves their edges
//! out of the main kernel's CSR, which then runs on the cold edges alone, and this kernel adds
//! the hot edges: each cube copies one feature tile of the hot columns' rows into shared
//! memory and sums, for every row of its block, the hot edges of the row from there
//! (`out[row] += sum`, scaled by `1 / degree` for the mean, the full degree of the row).
//!
//! Each cube owns a block of rows with about the same number of hot edges (found by a binary
//! search over the hot row pointer) and walks the feature tiles one after the other. Within a
//! tile, where the device has plane operations, each plane takes the next row of the block from
//! a shared counter (a row of 1,000 hot edges then does not hold up the cube) and works on it
//! whole: it loads a rank per lane, the next batch while the current one is summed, and its
//! slots split the batch and combine their sums by a fixed butterfly. Elsewhere each slot takes
//! rows round-robin and sums them alone, in edge order. Either way the order of the additions
//! of a row does not depend on the schedule, so the results are deterministic.

use crate::config::{HotConfig, KernelConfig};
use crate::device::{cube_count, has_plane_ops, lanes_for, plane_size};
use cubecl::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

static LAUNCHES: AtomicUsize = AtomicUsize::new(0);

/// How many hot-column passes this process has launched (lets tests check that the split, not
/// the single kernel, ran).
pub fn hot_launches() -> usize {
    LAUNCHES.load(Ordering::Relaxed)
}

pub use crate::device::HotDev;

/// Shape of a hot-column launch on a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HotShape {
    /// Vectors per feature tile.
    pub tile_vecs: usize,
    /// Lanes per slot.
    pub lanes: u32,
    /// Slots per cube.
    pub slots: u32,
    /// Cubes (row blocks).
    pub blocks: usize,
}

/// The launch shape (from `cfg`) for `hot` columns of `n_vec` vectors of `vec` elements of `elem` bytes, or
/// `None` when the shared memory cannot hold one vector of every hot column.
pub fn hot_shape<R: Runtime>(
    client: &ComputeClient<R>,
    cfg: &HotConfig,
    hot: usize,
    hot_edges: usize,
    n_vec: usize,
    vec: usize,
    elem: usize,
) -> Option<HotShape> {
    let props = client.properties();
    let smem = props.hardware.max_shared_memory_size.saturating_sub(256);
    let fit = smem / (hot.max(1) * vec * elem);
    if fit == 0 || n_vec == 0 {
        return None;
    }
    // a 128-byte row per tile (8 lanes of 16 bytes) unless fewer vectors fit or exist
    let want = cfg.tile_bytes.resolve(|| 128) / (vec * elem);
    let tile_vecs = (1usize << (usize::BITS - 1 - fit.leading_zeros())).min(want.max(1)).min(n_vec);
    let lanes = lanes_for(tile_vecs, 32);
    let max_threads = props.hardware.max_units_per_cube as usize;
    let threads = (cfg.threads.resolve(|| 1024) as usize).min(max_threads).max(lanes as usize);
    let slots = (threads as u32 / lanes).max(1);
    let per_sm = (smem / (hot * tile_vecs * vec * elem)).clamp(1, 4);
    let sms = props.hardware.num_streaming_multiprocessors.unwrap_or(32) as usize;
    let by_edges = hot_edges.div_ceil(256).max(1);
    let blocks = cfg.blocks.resolve(|| sms * per_sm).clamp(1, by_edges);
    Some(HotShape { tile_vecs, lanes, slots, blocks })
}

/// Adds the hot edges of `row` (feature vector `v`, tile-local `lv`) to `out`.
#[cube]
#[allow(clippy::too_many_arguments)]
fn hot_row<F: Float, N: Size>(
    row: usize,
    v: usize,
    lv: usize,
    row_ptr: &Array<i32>,
    hot_ptr: &Array<i32>,
    hot_rank: &Array<i32>,
    cache: &SharedMemory<Vector<F, N>>,
    out: &mut Tensor<Vector<F, N>>,
    o_rs: usize,
    #[comptime] tile_vecs: usize,
    #[comptime] mean: bool,
    #[comptime] unroll: u32,
) {
    let start = usize::cast_from(hot_ptr[row]);
    let end = usize::cast_from(hot_ptr[row + 1]);
    if start < end {
        let mut acc = Vector::<f32, N>::new(0.0);
        let mut e0 = start;
        while e0 + comptime!(unroll as usize) <= end {
            let mut rs = Array::<u32>::new(comptime!(unroll as usize));
            #[unroll]
            for q in 0..unroll {
                rs[q as usize] = u32::cast_from(hot_rank[e0 + q as usize]);
            }
            let mut part = Vector::<f32, N>::new(0.0);
            #[unroll]
            for q in 0..unroll {
                part += Vector::<f32, N>::cast_from(cache[rs[q as usize] as usize * tile_vecs + lv]);
            }
            acc += part;
            e0 += comptime!(unroll as usize);
        }
        for e in e0..end {
            acc += Vector::<f32, N>::cast_from(cache[usize::cast_from(hot_rank[e]) * tile_vecs + lv]);
        }
        if comptime!(mean) {
            let deg = usize::cast_from(row_ptr[row + 1]) - usize::cast_from(row_ptr[row]);
            acc *= Vector::new(f32::new(1.0) / f32::cast_from(deg));
        }
        let o = row * o_rs + v;
        out[o] = Vector::cast_from(Vector::<f32, N>::cast_from(out[o]) + acc);
    }
}

/// Adds the hot edges of `row` to `out` with the whole plane on the row: the plane loads
/// `plane_dim` ranks at a time (one per lane, the next batch while the current one is summed),
/// its `plane_dim / lanes` slots take the batch's edges in turn and sum them from shared memory,
/// and the slots' sums are combined by a fixed butterfly, so the result does not depend on the
/// schedule.
/// Every plane operation runs on the whole plane (the loop bounds are the plane's row).
#[cube]
#[allow(clippy::too_many_arguments)]
fn hot_row_plane<F: Float, N: Size>(
    row: usize,
    v: usize,
    lv: usize,
    live: bool,
    row_ptr: &Array<i32>,
    hot_ptr: &Array<i32>,
    hot_rank: &Array<i32>,
    cache: &SharedMemory<Vector<F, N>>,
    out: &mut Tensor<Vector<F, N>>,
    o_rs: usize,
    #[comptime] tile_vecs: usize,
    #[comptime] lanes: u32,
    #[comptime] plane_dim: u32,
    #[comptime] mean: bool,
) {
    let lane = usize::cast_from(UNIT_POS % plane_dim);
    let sub = lane / comptime!(lanes as usize);
    let subs = comptime!((plane_dim / lanes) as usize);
    let start = usize::cast_from(hot_ptr[row]);
    let end = usize::cast_from(hot_ptr[row + 1]);
    let o = row * o_rs + v;
    let writer = sub == 0 && live;
    let mut prev = Vector::<f32, N>::new(0.0);
    if writer {
        // read early: the load overlaps the sum
        prev = Vector::<f32, N>::cast_from(out[o]);
    }
    // each lane holds the rank of one edge of the batch
    let mut cur = 0i32;
    if start + lane < end {
        cur = hot_rank[start + lane];
    }
    let mut acc = Vector::<f32, N>::new(0.0);
    let mut e0 = start;
    while e0 < end {
        let nb = e0 + comptime!(plane_dim as usize);
        let mut nxt = 0i32;
        if nb + lane < end {
            nxt = hot_rank[nb + lane];
        }
        // edge `q * subs + sub` of the batch goes to slot `sub`: a short batch ends early for
        // the whole plane (the step condition is the plane's)
        let rem = end - e0;
        #[unroll]
        for q in 0..lanes {
            if q as usize * subs < rem {
                let src = q as usize * subs + sub;
                let r = usize::cast_from(plane_shuffle(cur, u32::cast_from(src)));
                if src < rem && live {
                    acc += Vector::<f32, N>::cast_from(cache[r * tile_vecs + lv]);
                }
            }
        }
        cur = nxt;
        e0 = nb;
    }
    #[unroll]
    for b in 0..comptime!((plane_dim / lanes).trailing_zeros()) {
        acc += plane_shuffle_xor(acc, lanes << b);
    }
    if writer && start < end {
        if comptime!(mean) {
            let deg = usize::cast_from(row_ptr[row + 1]) - usize::cast_from(row_ptr[row]);
            acc *= Vector::new(f32::new(1.0) / f32::cast_from(deg));
        }
        out[o] = Vector::cast_from(prev + acc);
    }
}

/// First row `r` in `0..=n` with `ptr[r] >= target` (`ptr` non-decreasing, `n + 1` entries).
#[cube]
fn lower_bound(ptr: &Array<i32>, n: usize, target: usize) -> usize {
    let mut lo = 0usize;
    let mut hi = n;
    while lo < hi {
        let mid = (lo + hi) / 2;
        if usize::cast_from(ptr[mid]) < target {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn spmm_hot<F: Float, N: Size>(
    row_ptr: &Array<i32>,
    hot_ptr: &Array<i32>,
    hot_rank: &Array<i32>,
    hot_cols: &Array<i32>,
    x: &Tensor<Vector<F, N>>,
    out: &mut Tensor<Vector<F, N>>,
    n_rows: usize,
    n_blocks: usize,
    #[comptime] hot: usize,
    #[comptime] tile_vecs: usize,
    #[comptime] mean: bool,
    #[comptime] dynamic: bool,
    #[comptime] lanes: u32,
    #[comptime] plane_dim: u32,
    #[comptime] unroll: u32,
    #[define(F)] _dtype: StorageType,
) {
    let mut cache = SharedMemory::<Vector<F, N>>::new(comptime!(hot * tile_vecs));
    let counter = SharedMemory::<Atomic<u32>>::new(1usize);
    let b = CUBE_POS;
    if b >= n_blocks {
        // a padding cube of the launch grid (uniform across the cube)
        terminate!();
    }
    let n_vec = out.shape(1) / N::value();
    let x_rs = x.stride(0) / N::value();
    let o_rs = out.stride(0) / N::value();
    // rows whose first hot edge falls in this block's share of the hot edges
    let total = usize::cast_from(hot_ptr[n_rows]);
    let per = total / n_blocks;
    let extra = total % n_blocks;
    let lo = per * b + usize::min(b, extra);
    let mut hi = lo + per;
    if b < extra {
        hi += 1;
    }
    let r0 = lower_bound(hot_ptr, n_rows, lo);
    let r1 = lower_bound(hot_ptr, n_rows, hi);
    let block_rows = r1 - r0;
    let lv = UNIT_POS_X as usize;
    let slots = CUBE_DIM_Y as usize;
    let threads = CUBE_DIM as usize;
    let n_tiles = n_vec.div_ceil(tile_vecs);

    for tile in 0..n_tiles {
        let v0 = tile * tile_vecs;
        // this tile of every hot column's feature row
        // (four loads in flight per thread, then their stores)
        let mut i = UNIT_POS as usize;
        while i + 3 * threads < comptime!(hot * tile_vecs) {
            let mut vals = Array::<Vector<F, N>>::new(4usize);
            #[unroll]
            for q in 0..4u32 {
                let k = i + q as usize * threads;
                let c = k % tile_vecs;
                if v0 + c < n_vec {
                    vals[q as usize] = x[usize::cast_from(hot_cols[k / tile_vecs]) * x_rs + v0 + c];
                }
            }
            #[unroll]
            for q in 0..4u32 {
                cache[i + q as usize * threads] = vals[q as usize];
            }
            i += 4 * threads;
        }
        while i < comptime!(hot * tile_vecs) {
            let c = i % tile_vecs;
            if v0 + c < n_vec {
                cache[i] = x[usize::cast_from(hot_cols[i / tile_vecs]) * x_rs + v0 + c];
            }
            i += threads;
        }
        if comptime!(dynamic) {
            if UNIT_POS == 0 {
                counter[0].store(0u32);
            }
        }
        sync_cube();
        let v = v0 + lv;
        let live = lv < tile_vecs && v < n_vec;
        if comptime!(dynamic) {
            // a plane per row: lane 0 draws the next row of the block, the plane shares it
            let mut running = true;
            while running {
                let mut mine = 0u32;
                if UNIT_POS % plane_dim == 0 {
                    mine = counter[0].fetch_add(1u32);
                }
                let k = plane_broadcast(mine, 0u32) as usize;
                if k < block_rows {
                    hot_row_plane::<F, N>(
                        r0 + k,
                        v,
                        lv,
                        live,
                        row_ptr,
                        hot_ptr,
                        hot_rank,
                        &cache,
                        out,
                        o_rs,
                        tile_vecs,
                        lanes,
                        plane_dim,
                        mean,
                    );
                } else {
                    running = false;
                }
            }
        } else {
            let mut k = UNIT_POS_Y as usize;
            while k < block_rows {
                if live {
                    hot_row::<F, N>(
                        r0 + k,
                        v,
                        lv,
                        row_ptr,
                        hot_ptr,
                        hot_rank,
                        &cache,
                        out,
                        o_rs,
                        tile_vecs,
                        mean,
                        unroll,
                    );
                }
                k += slots;
            }
        }
        sync_cube();
    }
}

/// Adds the hot edges of `hot` to `out` (`[n_rows, f]`, already holding the cold pass's result):
/// `out[i] += sum over the hot edges of row i of x[col]`, times `1 / degree(i)` for the mean
/// (`row_ptr`: the full structure's). `shape` comes from [`hot_shape`].
#[allow(clippy::too_many_arguments)]
pub fn launch_spmm_hot<R: Runtime>(
    client: &ComputeClient<R>,
    hot: &HotDev<R>,
    row_ptr: &TensorBinding<R>,
    n_rows: usize,
    x: TensorBinding<R>,
    out: TensorBinding<R>,
    mean: bool,
    shape: HotShape,
    vec: usize,
    dtype: StorageType,
    config: &KernelConfig,
) {
    if hot.nnz == 0 || n_rows == 0 {
        return;
    }
    LAUNCHES.fetch_add(1, Ordering::Relaxed);
    let plane_dim = plane_size(client).max(1);
    // the dynamic schedule needs whole planes of whole slots
    let dynamic = has_plane_ops(client, config.planes)
        && (shape.lanes * shape.slots) % plane_dim == 0
        && plane_dim % shape.lanes == 0;
    unsafe {
        spmm_hot::launch_unchecked::<R>(
            client,
            cube_count(client, shape.blocks),
            CubeDim::new_2d(shape.lanes, shape.slots),
            vec,
            row_ptr.clone().into_array_arg(),
            hot.hot_ptr.clone().into_array_arg(),
            hot.hot_rank.clone().into_array_arg(),
            hot.cols.clone().into_array_arg(),
            x.into_tensor_arg(),
            out.into_tensor_arg(),
            n_rows,
            shape.blocks,
            hot.len,
            shape.tile_vecs,
            mean,
            dynamic,
            shape.lanes,
            plane_dim,
            config.hot.unroll.resolve(|| 4).clamp(1, 16),
            dtype,
        );
    }
}
