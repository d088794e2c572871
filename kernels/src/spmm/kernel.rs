//! GE-SpMM on edge groups. One "slot" of `CUBE_DIM_X` lanes handles one edge group (at most
//! `W` edges of one row); each lane owns whole feature vectors (`N` features per load) and walks
//! the group's edges, so no cross-lane reduction is needed; rows of a small width share a warp
//! (`CUBE_DIM_Y` slots per cube). A group that covers its whole row writes the output; groups of
//! split rows write an f32 partial (already scaled by `1 / deg` for the mean: HalfGNN's
//! discretized reduction) to a staging slot, and a second pass combines the slots of every split
//! row in group order and writes the empty rows: deterministic, no atomics.

use crate::device::{cube_count, lanes_for, vector_width, CsrDev};
use crate::spmm::hot::{hot_shape, launch_spmm_hot};
use crate::spmm::Reduce;
use cubecl::prelude::*;

/// Reduction codes (comptime).
pub const SUM: u32 = 0;
/// Mean.
pub const MEAN: u32 = 1;
/// Max with argmax.
pub const MAX: u32 = 2;

fn code(r: Reduce) -> u32 {
    match r {
        Reduce::Sum => SUM,
        Reduce::Mean => MEAN,
        Reduce::Max => MAX,
    }
}

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn spmm_groups<F: Float, N: Size>(
    group_ptr: &Array<i32>,
    group_row: &Array<i32>,
    group_slot: &Array<i32>,
    row_ptr: &Array<i32>,
    col_idx: &Array<i32>,
    perm: &Array<i32>,
    weights: &Array<F>,
    x: &Tensor<Vector<F, N>>,
    mask: &Tensor<Vector<i32, N>>,
    out: &mut Tensor<Vector<F, N>>,
    arg_out: &mut Tensor<Vector<i32, N>>,
    stage: &mut Array<Vector<f32, N>>,
    stage_arg: &mut Array<Vector<i32, N>>,
    n_groups: usize,
    heads: usize,
    blocks: usize,
    tile_vecs: usize,
    first_tile: usize,
    stage_vecs: usize,
    #[comptime] reduce: u32,
    #[comptime] has_w: bool,
    #[comptime] masked: bool,
    #[comptime] unroll: u32,
    #[define(F)] _dtype: StorageType,
) {
    // cubes are tile-major: every group block of feature tile 0, then of tile 1, ... so the
    // gathered slice of `x` stays resident in L2 while a tile is processed; a launch covers the
    // tiles from `first_tile` on, and its staging rows hold `stage_vecs` vectors from the first
    // vector of `first_tile`
    let tile = first_tile + CUBE_POS / blocks;
    let v_base = first_tile * tile_vecs;
    let g = (CUBE_POS % blocks) * CUBE_DIM_Y as usize + UNIT_POS_Y as usize;
    if g >= n_groups {
        terminate!();
    }
    let start = usize::cast_from(group_ptr[g]);
    let end = usize::cast_from(group_ptr[g + 1]);
    let row = usize::cast_from(group_row[g]);
    let slot = group_slot[g];
    let n_vec = out.shape(1) / N::value();
    let x_rs = x.stride(0) / N::value();
    let m_rs = mask.stride(0) / N::value();
    let o_rs = out.stride(0) / N::value();
    let vec_per_head = n_vec / heads;
    let deg = usize::cast_from(row_ptr[row + 1]) - usize::cast_from(row_ptr[row]);
    let inv_deg = f32::new(1.0) / f32::cast_from(deg);
    let v_end = usize::min((tile + 1) * tile_vecs, n_vec);

    let mut v = tile * tile_vecs + UNIT_POS_X as usize;
    while v < v_end {
        let h = v / vec_per_head;
        if comptime!(reduce == MAX) {
            let mut best = Vector::<f32, N>::new(f32::min_value());
            let mut arg = Vector::<i32, N>::new(-1);
            for e in start..end {
                let j = usize::cast_from(col_idx[e]);
                let mut m = Vector::<f32, N>::cast_from(x[j * x_rs + v]);
                if comptime!(has_w) {
                    m *= Vector::new(f32::cast_from(weights[e * heads + h]));
                }
                let better = m.greater_than(best) | arg.equal(Vector::new(-1));
                best = select_many(better, m, best);
                arg = select_many(better, Vector::new(e as i32), arg);
            }
            if slot < 0 {
                out[row * o_rs + v] = Vector::cast_from(best);
                arg_out[row * o_rs + v] = arg;
            } else {
                let s = usize::cast_from(slot) * stage_vecs + (v - v_base);
                stage[s] = best;
                stage_arg[s] = arg;
            }
        } else {
            let mut acc = Vector::<f32, N>::new(0.0);
            let mut e0 = start;
            if comptime!(!masked) {
                // `unroll` independent gathers in flight per lane
                while e0 + comptime!(unroll as usize) <= end {
                    let mut js = Array::<u32>::new(comptime!(unroll as usize));
                    #[unroll]
                    for q in 0..unroll {
                        js[q as usize] = u32::cast_from(col_idx[e0 + q as usize]);
                    }
                    let mut part = Vector::<f32, N>::new(0.0);
                    #[unroll]
                    for q in 0..unroll {
                        let mut m = Vector::<f32, N>::cast_from(x[js[q as usize] as usize * x_rs + v]);
                        if comptime!(has_w) {
                            m *= Vector::new(f32::cast_from(weights[(e0 + q as usize) * heads + h]));
                        }
                        part += m;
                    }
                    acc += part;
                    e0 += comptime!(unroll as usize);
                }
            }
            for e in e0..end {
                let j = usize::cast_from(col_idx[e]);
                let mut m = Vector::<f32, N>::cast_from(x[j * x_rs + v]);
                if comptime!(masked) {
                    // gradient of a max-reduce: only where the original edge won
                    let eo = perm[e];
                    let hit = mask[j * m_rs + v].equal(Vector::new(eo));
                    m = select_many(hit, m, Vector::new(0.0));
                    if comptime!(has_w) {
                        m *= Vector::new(f32::cast_from(weights[usize::cast_from(eo) * heads + h]));
                    }
                } else if comptime!(has_w) {
                    m *= Vector::new(f32::cast_from(weights[e * heads + h]));
                }
                acc += m;
            }
            if comptime!(reduce == MEAN) {
                acc *= Vector::new(inv_deg);
            }
            if slot < 0 {
                out[row * o_rs + v] = Vector::cast_from(acc);
            } else {
                stage[usize::cast_from(slot) * stage_vecs + (v - v_base)] = acc;
            }
        }
        v += CUBE_DIM_X as usize;
    }
}

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn spmm_finish<F: Float, N: Size>(
    finish_rows: &Array<i32>,
    finish_ptr: &Array<i32>,
    out: &mut Tensor<Vector<F, N>>,
    arg_out: &mut Tensor<Vector<i32, N>>,
    stage: &Array<Vector<f32, N>>,
    stage_arg: &Array<Vector<i32, N>>,
    n_finish: usize,
    v_base: usize,
    v_end: usize,
    stage_vecs: usize,
    #[comptime] reduce: u32,
    #[define(F)] _dtype: StorageType,
) {
    let s = CUBE_POS * CUBE_DIM_Y as usize + UNIT_POS_Y as usize;
    if s >= n_finish {
        terminate!();
    }
    let row = usize::cast_from(finish_rows[s]);
    let a = usize::cast_from(finish_ptr[s]);
    let b = usize::cast_from(finish_ptr[s + 1]);
    let o_rs = out.stride(0) / N::value();
    let mut v = v_base + UNIT_POS_X as usize;
    while v < v_end {
        let sv = v - v_base;
        if comptime!(reduce == MAX) {
            let mut best = Vector::<f32, N>::new(0.0);
            let mut arg = Vector::<i32, N>::new(-1);
            for t in a..b {
                let m = stage[t * stage_vecs + sv];
                let ma = stage_arg[t * stage_vecs + sv];
                let better = (m.greater_than(best) | arg.equal(Vector::new(-1))) & ma.not_equal(Vector::new(-1));
                best = select_many(better, m, best);
                arg = select_many(better, ma, arg);
            }
            out[row * o_rs + v] = Vector::cast_from(best);
            arg_out[row * o_rs + v] = arg;
        } else {
            // four slots loaded ahead, added in slot order (the sums do not depend on it)
            let mut acc = Vector::<f32, N>::new(0.0);
            let mut t = a;
            while t + 4 <= b {
                let s0 = stage[t * stage_vecs + sv];
                let s1 = stage[(t + 1) * stage_vecs + sv];
                let s2 = stage[(t + 2) * stage_vecs + sv];
                let s3 = stage[(t + 3) * stage_vecs + sv];
                acc += s0;
                acc += s1;
                acc += s2;
                acc += s3;
                t += 4;
            }
            while t < b {
                acc += stage[t * stage_vecs + sv];
                t += 1;
            }
            out[row * o_rs + v] = Vector::cast_from(acc);
        }
        v += CUBE_DIM_X as usize;
    }
}

/// The gradient-of-max mode of [`launch_spmm`]: `csr` is the transpose, `perm` its edge
/// permutation, `mask` the forward argmax (`[n_cols_of_csr, f]`, rows indexed like `x`).
pub struct MaxGradMask<R: Runtime> {
    /// Transposed edge -> original edge id.
    pub perm: TensorBinding<R>,
    /// Forward argmax.
    pub argmax: TensorBinding<R>,
}

/// Launches `out = reduce_{e in row} w[e] * x[col e]`. `x` is `[n_cols, f]`, `out` `[n_rows, f]`
/// (pre-allocated, any row pitch), `argmax` `[n_rows, f]` i32 (max only, same strides as
/// `out`), `weights` `[nnz * heads]` contiguous. Every row of `out` is written. With
/// `grad_mask`, computes the max-reduce gradient over the transpose instead (sum of the
/// messages whose original edge is the argmax; weights indexed by original edge id). An
/// unweighted f32 sum or mean of a width that is a multiple of 4 over a structure with a
/// hot-column split (`csr.hot`) runs as two passes (cold edges, then the hot columns from
/// shared memory) where the device's shared memory holds the hot columns; the result then
/// adds the two partial sums (deterministic, but a different order of additions than the
/// single pass). Returns the bytes of f32 staging rows the launch allocated for the split rows
/// (freed when it returns; in use while the kernels run).
#[allow(clippy::too_many_arguments)]
pub fn launch_spmm<R: Runtime>(
    client: &ComputeClient<R>,
    csr: &CsrDev<R>,
    weights: Option<TensorBinding<R>>,
    heads: usize,
    x: TensorBinding<R>,
    out: TensorBinding<R>,
    argmax: Option<TensorBinding<R>>,
    reduce: Reduce,
    grad_mask: Option<MaxGradMask<R>>,
    dtype: StorageType,
) -> u64 {
    let f = out.shape[1];
    if f == 0 || csr.n_rows == 0 {
        return 0;
    }
    let elem = dtype.size();
    let mut mats = vec![&x, &out];
    if let Some(m) = grad_mask.as_ref() {
        mats.push(&m.argmax);
    }
    let vec = vector_width(client, elem, f / heads.max(1), &mats);
    let n_vec = f / vec;
    // unweighted f32 sum / mean in 16-byte vectors over a split structure: the cold edges
    // through this kernel, then the hot columns' edges from shared memory (`hot.rs`), where the
    // split was measured faster (see `heuristics::HOT_MIN_WIDTH`)
    if let (Some(hot), None, None, false) =
        (csr.hot.as_ref(), weights.as_ref(), grad_mask.as_ref(), reduce == Reduce::Max)
    {
        let min_width =
            csr.config.hot.min_width.resolve(|| if hot.forced { vec } else { crate::heuristics::HOT_MIN_WIDTH });
        if elem == 4 && vec == 4 && f >= min_width {
            if let Some(shape) = hot_shape(client, &csr.config.hot, hot.len, hot.nnz, n_vec, vec, elem) {
                let staged =
                    launch_spmm(client, &hot.cold, None, heads, x.clone(), out.clone(), None, reduce, None, dtype);
                launch_spmm_hot(
                    client,
                    hot,
                    &csr.row_ptr,
                    csr.n_rows,
                    x,
                    out,
                    reduce == Reduce::Mean,
                    shape,
                    vec,
                    dtype,
                    &csr.config,
                );
                return staged;
            }
        }
    }
    let cfg = &csr.config.spmm;
    let tile_features = cfg.tile_features.resolve(|| crate::heuristics::spmm_tile_features(csr.n_cols, f, elem, vec));
    let mut tile_vecs = (tile_features / vec).clamp(1, n_vec);
    // the staging rows of the split rows are indexed in 32-bit vectors: where all features
    // would not fit, the tiles run in passes of `pass_tiles` tiles over one reused staging
    let stage_limit = stage_limit(cfg, csr.n_slots);
    // at least 1 vector: the limit holds one per slot
    if let Some(per_slot) = stage_limit.checked_div(csr.n_slots) {
        tile_vecs = tile_vecs.min(per_slot);
    }
    let n_tiles = n_vec.div_ceil(tile_vecs);
    let pass_tiles =
        if csr.n_slots == 0 { n_tiles } else { (stage_limit / (csr.n_slots * tile_vecs)).clamp(1, n_tiles) };
    let stage_vecs = pass_tiles * tile_vecs;
    let lanes = lanes_for(tile_vecs, cfg.max_lanes.resolve(|| 32) as usize);
    let slots_per_cube = (cfg.threads.resolve(|| 256) / lanes).max(1);
    let cube_dim = CubeDim::new_2d(lanes, slots_per_cube);
    let is_max = reduce == Reduce::Max;
    let has_w = weights.is_some();
    let dummy = |len: usize, size: usize| crate::device::alloc_array::<R>(client, len, size);
    let w = weights.unwrap_or_else(|| dummy(1, elem));
    let arg = argmax.unwrap_or_else(|| crate::device::alloc_matrix::<R>(client, 1, vec, 4));
    // staging holds whole vectors: at least one vector even when unused
    let stage_len = (csr.n_slots * stage_vecs * vec).max(vec);
    let stage_arg_len = if is_max { stage_len } else { vec };
    let stage = dummy(stage_len, 4);
    let stage_arg = dummy(stage_arg_len, 4);
    let r = code(reduce);
    let masked = grad_mask.is_some();
    let (perm, mask) = match grad_mask {
        Some(m) => (m.perm, m.argmax),
        None => (dummy(1, 4), crate::device::alloc_matrix::<R>(client, 1, vec, 4)),
    };
    let unroll = cfg.unroll.resolve(|| 4).clamp(1, 16);
    let mut first_tile = 0;
    while first_tile < n_tiles {
        let tiles = pass_tiles.min(n_tiles - first_tile);
        if csr.n_groups > 0 {
            let blocks = csr.n_groups.div_ceil(slots_per_cube as usize);
            let count = cube_count(client, blocks * tiles);
            unsafe {
                spmm_groups::launch_unchecked::<R>(
                    client,
                    count,
                    cube_dim,
                    vec,
                    csr.group_ptr.clone().into_array_arg(),
                    csr.group_row.clone().into_array_arg(),
                    csr.group_slot.clone().into_array_arg(),
                    csr.row_ptr.clone().into_array_arg(),
                    csr.col_idx.clone().into_array_arg(),
                    perm.clone().into_array_arg(),
                    w.clone().into_array_arg(),
                    x.clone().into_tensor_arg(),
                    mask.clone().into_tensor_arg(),
                    out.clone().into_tensor_arg(),
                    arg.clone().into_tensor_arg(),
                    stage.clone().into_array_arg(),
                    stage_arg.clone().into_array_arg(),
                    csr.n_groups,
                    heads.max(1),
                    blocks,
                    tile_vecs,
                    first_tile,
                    stage_vecs,
                    r,
                    has_w,
                    masked,
                    unroll,
                    dtype,
                );
            }
        }
        if csr.n_finish > 0 {
            let v_base = first_tile * tile_vecs;
            let v_end = ((first_tile + tiles) * tile_vecs).min(n_vec);
            // the finish walks the pass's whole staging row (all its tiles), so its lanes span
            // those vectors (up to 64, one each at width 256 in f32) rather than one tile's
            let finish_lanes = lanes_for(v_end - v_base, 64);
            let finish_rows = (256 / finish_lanes).max(1);
            let count = cube_count(client, csr.n_finish.div_ceil(finish_rows as usize));
            unsafe {
                spmm_finish::launch_unchecked::<R>(
                    client,
                    count,
                    CubeDim::new_2d(finish_lanes, finish_rows),
                    vec,
                    csr.finish_rows.clone().into_array_arg(),
                    csr.finish_ptr.clone().into_array_arg(),
                    out.clone().into_tensor_arg(),
                    arg.clone().into_tensor_arg(),
                    stage.clone().into_array_arg(),
                    stage_arg.clone().into_array_arg(),
                    csr.n_finish,
                    v_base,
                    v_end,
                    stage_vecs,
                    r,
                    dtype,
                );
            }
        }
        first_tile += tiles;
    }
    4 * (stage_len + stage_arg_len) as u64
}

/// Most staging vectors one SpMM pass holds: `cfg.stage_vectors`, by default the 32-bit index
/// range of the kernels, and at least one vector per staging slot.
fn stage_limit(cfg: &crate::config::SpmmConfig, n_slots: usize) -> usize {
    cfg.stage_vectors.resolve(|| u32::MAX as usize).max(n_slots).max(1)
}

/// Second pass of a deterministic split-row reduction: `out[row] = sum of the f32 staging slots
/// of the row` for every finish row of `csr` (0 for empty rows). `out` is `[n_rows, f]`,
/// `stage` `[n_slots * f]` f32.
pub fn launch_finish_sum<R: Runtime>(
    client: &ComputeClient<R>,
    csr: &CsrDev<R>,
    out: TensorBinding<R>,
    stage: TensorBinding<R>,
    dtype: StorageType,
) {
    let f = out.shape[1];
    if csr.n_finish == 0 || f == 0 {
        return;
    }
    let vec = vector_width(client, dtype.size(), f, &[&out]);
    let lanes = lanes_for(f / vec, 32);
    let slots = (256 / lanes).max(1);
    let arg = crate::device::alloc_matrix::<R>(client, 1, vec, 4);
    let stage_arg = crate::device::alloc_array::<R>(client, vec, 4);
    unsafe {
        spmm_finish::launch_unchecked::<R>(
            client,
            cube_count(client, csr.n_finish.div_ceil(slots as usize)),
            CubeDim::new_2d(lanes, slots),
            vec,
            csr.finish_rows.clone().into_array_arg(),
            csr.finish_ptr.clone().into_array_arg(),
            out.into_tensor_arg(),
            arg.into_tensor_arg(),
            stage.into_array_arg(),
            stage_arg.into_array_arg(),
            csr.n_finish,
            0,
            f / vec,
            f / vec,
            SUM,
            dtype,
        );
    }
}
