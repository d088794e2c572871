//! SpMM sum / mean with the feature rows of the hot columns in shared memory.
//!
//! On the graphs GNNs train on, the f32 SpMM of `kernel.rs` is bound by L2: every edge gathers
//! one feature row (a 128-byte line per feature tile) and the L1 cache keeps almost none of
//! them (3 % of the gathered sectors hit it on the reddit-scale R-MAT graph, H200, ncu). A few
//! hundred columns receive a tenth of the edges there, though. This kernel loads the current
//! feature tile of the hot columns ([`crate::csr::HotColumns`]) into shared memory once per
//! cube, together with the bitmap that says which columns are hot, and serves their gathers from
//! there; every other gather goes to global memory as before.
//!
//! The cubes are large (the shared memory holds up to ~200 KB and is loaded once per cube), so
//! each cube covers a block of many groups. Where the device has plane operations, each plane
//! takes the next groups of its block from a shared counter (dynamic balance: group lengths
//! range from 1 to the group width); elsewhere the slots take the groups of the block
//! round-robin. Either way every group is computed the same way as in `kernel.rs` (edges in
//! order, `unroll` gathers summed per step), so the results are identical and deterministic:
//! which slot computes a group does not change how it is computed.

use crate::device::CsrDev;
use cubecl::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

static LAUNCHES: AtomicUsize = AtomicUsize::new(0);

/// How many hot-column SpMM launches this process has made (lets tests check that the
/// shared-memory path, not the plain kernel, ran).
pub fn hub_launches() -> usize {
    LAUNCHES.load(Ordering::Relaxed)
}

/// Device bindings of a [`crate::csr::HotColumns`] table.
#[derive(Clone)]
pub struct HubDev<R: Runtime> {
    /// `[words]` bitmap.
    pub bits: TensorBinding<R>,
    /// `[words]` prefix counts.
    pub rank: TensorBinding<R>,
    /// `[len]` hot columns, ascending.
    pub cols: TensorBinding<R>,
    /// Hot columns.
    pub len: usize,
    /// Bitmap words (`ceil(n_cols / 32)`).
    pub words: usize,
}

/// The value of column `j`'s feature vector `v` (tile-local vector `lv`): from shared memory
/// when the column is hot.
#[cube]
#[allow(clippy::too_many_arguments, unused_assignments)]
fn gather<F: Float, N: Size>(
    j: usize,
    v: usize,
    lv: usize,
    x: &Tensor<Vector<F, N>>,
    x_rs: usize,
    bits: &SharedMemory<u32>,
    rank: &SharedMemory<u32>,
    hub: &SharedMemory<Vector<F, N>>,
    #[comptime] tile_vecs: usize,
) -> Vector<f32, N> {
    let word = bits[j / 32];
    let bit = 1u32 << u32::cast_from(j % 32);
    let mut m = Vector::<f32, N>::new(0.0);
    if (word & bit) != 0 {
        let s = usize::cast_from(rank[j / 32] + u32::count_ones(word & (bit - 1)));
        m = Vector::cast_from(hub[s * tile_vecs + lv]);
    } else {
        m = Vector::cast_from(x[j * x_rs + v]);
    }
    m
}

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn spmm_hub<F: Float, N: Size>(
    group_ptr: &Array<i32>,
    group_row: &Array<i32>,
    group_slot: &Array<i32>,
    row_ptr: &Array<i32>,
    col_idx: &Array<i32>,
    weights: &Array<F>,
    hub_bits: &Array<u32>,
    hub_rank: &Array<u32>,
    hub_cols: &Array<u32>,
    x: &Tensor<Vector<F, N>>,
    out: &mut Tensor<Vector<F, N>>,
    stage: &mut Array<Vector<f32, N>>,
    n_groups: usize,
    heads: usize,
    cubes_per_tile: usize,
    block: usize,
    #[comptime] words: usize,
    #[comptime] hot: usize,
    #[comptime] tile_vecs: usize,
    #[comptime] mean: bool,
    #[comptime] has_w: bool,
    #[comptime] dynamic: bool,
    #[comptime] unroll: u32,
    #[define(F)] _dtype: StorageType,
) {
    let mut bits = SharedMemory::<u32>::new(words);
    let mut rank = SharedMemory::<u32>::new(words);
    let mut hub = SharedMemory::<Vector<F, N>>::new(comptime!(hot * tile_vecs));
    let counter = SharedMemory::<Atomic<u32>>::new(1usize);

    let tile = CUBE_POS / cubes_per_tile;
    let n_vec = out.shape(1) / N::value();
    if tile * tile_vecs >= n_vec {
        // a padding cube of the launch grid (uniform across the cube)
        terminate!();
    }
    let g_first = (CUBE_POS % cubes_per_tile) * block;
    let g_last = usize::min(g_first + block, n_groups);
    let x_rs = x.stride(0) / N::value();
    let o_rs = out.stride(0) / N::value();
    let vec_per_head = n_vec / heads;
    let v_first = tile * tile_vecs;
    let v_end = usize::min(v_first + tile_vecs, n_vec);
    let threads = CUBE_DIM as usize;

    // the bitmap, its ranks and this tile of the hot columns' feature rows
    let mut i = UNIT_POS as usize;
    while i < words {
        bits[i] = hub_bits[i];
        rank[i] = hub_rank[i];
        i += threads;
    }
    let mut i = UNIT_POS as usize;
    while i < comptime!(hot * tile_vecs) {
        let lv = i % tile_vecs;
        if v_first + lv < n_vec {
            let c = usize::cast_from(hub_cols[i / tile_vecs]);
            hub[i] = x[c * x_rs + v_first + lv];
        }
        i += threads;
    }
    if UNIT_POS == 0 {
        counter[0].store(0u32);
    }
    sync_cube();

    let slots = CUBE_DIM_Y as usize;
    let block_len = g_last - usize::min(g_first, g_last);
    // static: slot y takes groups y, y + slots, ...; dynamic: each plane takes the next
    // `per_plane` groups from the counter and its slots one each
    let mut next = UNIT_POS_Y as usize;
    let mut running = true;
    while running {
        let mut local = next;
        if comptime!(dynamic) {
            let mut base = 0u32;
            if UNIT_POS_PLANE == 0 {
                base = counter[0].fetch_add(PLANE_DIM / CUBE_DIM_X);
            }
            base = plane_broadcast(base, 0u32);
            local = usize::cast_from(base) + (UNIT_POS_PLANE / CUBE_DIM_X) as usize;
            running = usize::cast_from(base) < block_len;
        } else {
            running = local < block_len;
            next += slots;
        }
        if running && local < block_len {
            let g = g_first + local;
            let start = usize::cast_from(group_ptr[g]);
            let end = usize::cast_from(group_ptr[g + 1]);
            let row = usize::cast_from(group_row[g]);
            let slot = group_slot[g];
            let mut v = v_first + UNIT_POS_X as usize;
            while v < v_end {
                let lv = v - v_first;
                let h = v / vec_per_head;
                let mut acc = Vector::<f32, N>::new(0.0);
                let mut e0 = start;
                while e0 + comptime!(unroll as usize) <= end {
                    let mut ms = Array::<Vector<f32, N>>::new(comptime!(unroll as usize));
                    #[unroll]
                    for q in 0..unroll {
                        let j = usize::cast_from(col_idx[e0 + q as usize]);
                        ms[q as usize] = gather::<F, N>(j, v, lv, x, x_rs, &bits, &rank, &hub, tile_vecs);
                    }
                    let mut part = Vector::<f32, N>::new(0.0);
                    #[unroll]
                    for q in 0..unroll {
                        let mut m = ms[q as usize];
                        if comptime!(has_w) {
                            m *= Vector::new(f32::cast_from(weights[(e0 + q as usize) * heads + h]));
                        }
                        part += m;
                    }
                    acc += part;
                    e0 += comptime!(unroll as usize);
                }
                for e in e0..end {
                    let j = usize::cast_from(col_idx[e]);
                    let mut m = gather::<F, N>(j, v, lv, x, x_rs, &bits, &rank, &hub, tile_vecs);
                    if comptime!(has_w) {
                        m *= Vector::new(f32::cast_from(weights[e * heads + h]));
                    }
                    acc += m;
                }
                if comptime!(mean) {
                    let deg = usize::cast_from(row_ptr[row + 1]) - usize::cast_from(row_ptr[row]);
                    acc *= Vector::new(f32::new(1.0) / f32::cast_from(deg));
                }
                if slot < 0 {
                    out[row * o_rs + v] = Vector::cast_from(acc);
                } else {
                    stage[usize::cast_from(slot) * n_vec + v] = acc;
                }
                v += CUBE_DIM_X as usize;
            }
        }
    }
}

/// Shape of a hot-column launch, or `None` when the device cannot hold the table.
pub struct HubShape {
    /// Lanes per slot.
    pub lanes: u32,
    /// Slots per cube.
    pub slots: u32,
    /// Groups per cube.
    pub block: usize,
    /// Shared memory in bytes.
    pub shared_bytes: usize,
}

/// The shape of a hot-column launch for `tile_vecs` vectors of `vec` elements of `elem` bytes
/// per tile: `None` if the table does not fit the device's shared memory or the cube size.
pub fn hub_shape<R: Runtime>(
    client: &ComputeClient<R>,
    hub: &HubDev<R>,
    lanes: u32,
    tile_vecs: usize,
    vec: usize,
    elem: usize,
) -> Option<HubShape> {
    let props = client.properties();
    let shared_bytes = 8 * hub.words + hub.len * tile_vecs * vec * elem + 16;
    if hub.len == 0 || shared_bytes > props.hardware.max_shared_memory_size {
        return None;
    }
    let max_units = props.hardware.max_units_per_cube as usize;
    let threads = crate::device::tuning("SGNN_HUB_THREADS", 1024).min(max_units).max(lanes as usize);
    let slots = (threads as u32 / lanes).max(1);
    let per_slot = crate::device::tuning("SGNN_HUB_GROUPS_PER_SLOT", 16).max(1);
    Some(HubShape { lanes, slots, block: slots as usize * per_slot, shared_bytes })
}

/// Launches the hot-column SpMM (sum or mean, optional edge weights) over every group of `csr`:
/// whole rows are written to `out`, split rows to `stage` (the caller runs the second pass).
#[allow(clippy::too_many_arguments)]
pub fn launch_spmm_hub<R: Runtime>(
    client: &ComputeClient<R>,
    csr: &CsrDev<R>,
    hub: &HubDev<R>,
    shape: &HubShape,
    weights: TensorBinding<R>,
    has_w: bool,
    heads: usize,
    x: TensorBinding<R>,
    out: TensorBinding<R>,
    stage: TensorBinding<R>,
    mean: bool,
    vec: usize,
    tile_vecs: usize,
    n_tiles: usize,
    unroll: u32,
    dtype: StorageType,
) {
    LAUNCHES.fetch_add(1, Ordering::Relaxed);
    let cubes_per_tile = csr.n_groups.div_ceil(shape.block);
    let dynamic = crate::device::has_plane_ops(client)
        && crate::device::plane_size(client) % shape.lanes == 0
        && std::env::var_os("SGNN_NO_PLANE").is_none();
    unsafe {
        spmm_hub::launch_unchecked::<R>(
            client,
            crate::device::cube_count(client, cubes_per_tile * n_tiles),
            CubeDim::new_2d(shape.lanes, shape.slots),
            vec,
            csr.group_ptr.clone().into_array_arg(),
            csr.group_row.clone().into_array_arg(),
            csr.group_slot.clone().into_array_arg(),
            csr.row_ptr.clone().into_array_arg(),
            csr.col_idx.clone().into_array_arg(),
            weights.into_array_arg(),
            hub.bits.clone().into_array_arg(),
            hub.rank.clone().into_array_arg(),
            hub.cols.clone().into_array_arg(),
            x.into_tensor_arg(),
            out.into_tensor_arg(),
            stage.into_array_arg(),
            csr.n_groups,
            heads.max(1),
            cubes_per_tile,
            shape.block,
            hub.words,
            hub.len,
            tile_vecs,
            mean,
            has_w,
            dynamic,
            unroll,
            dtype,
        );
    }
}
