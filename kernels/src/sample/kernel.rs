//! ES-SpMM on the GPU: sampling happens inside the kernel (no preprocessing), each row keeps
//! at most `S` edges (Bucket window or FastRand stride from a per-row seeded offset) and the mean
//! is normalised by the sampled count. The work per row is bounded by `S`, so hub rows need no
//! splitting. `edge_scale` recomputes the same sample per edge for the backward.

use crate::device::{cube_count, lanes_for, vector_width};
use crate::sample::{SampleSpec, Sampling};
use crate::spmm::Reduce;
use cubecl::prelude::*;

#[cube]
fn gcd_u32(a: u32, b: u32) -> u32 {
    let mut x = a;
    let mut y = b;
    while y != 0 {
        let t = x % y;
        x = y;
        y = t;
    }
    x
}

#[cube]
fn row_hash(seed: u32, row: u32) -> u32 {
    let mut h = seed ^ (row * 0x9E37_79B9u32);
    h ^= h >> 16;
    h *= 0x85EB_CA6Bu32;
    h ^= h >> 13;
    h *= 0xC2B2_AE35u32;
    h ^= h >> 16;
    h
}

/// `(offset, stride)` of a row of `d > width` edges.
#[cube]
fn row_sampler(seed: u32, row: u32, d: u32, #[comptime] fastrand: bool) -> (u32, u32) {
    let mut off = 0u32;
    if seed != 0 {
        off = row_hash(seed, row) % d;
    }
    let mut stride = 1u32;
    if comptime!(fastrand) {
        let mut p = 577u32;
        while gcd_u32(p, d) != 1 {
            p += 1;
        }
        stride = p % d;
    }
    (off, stride)
}

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn sampled_spmm_rows<F: Float, N: Size>(
    row_ptr: &Array<i32>,
    col_idx: &Array<i32>,
    weights: &Array<F>,
    x: &Tensor<Vector<F, N>>,
    out: &mut Tensor<Vector<F, N>>,
    n_rows: usize,
    heads: usize,
    width: u32,
    seed: u32,
    #[comptime] fastrand: bool,
    #[comptime] mean: bool,
    #[comptime] has_w: bool,
    #[define(F)] _dtype: StorageType,
) {
    let row = CUBE_POS * CUBE_DIM_Y as usize + UNIT_POS_Y as usize;
    if row >= n_rows {
        terminate!();
    }
    let start = u32::cast_from(row_ptr[row]);
    let d = u32::cast_from(row_ptr[row + 1]) - start;
    let n_vec = out.shape(1) / N::value();
    let x_rs = x.stride(0) / N::value();
    let o_rs = out.stride(0) / N::value();
    let vph = n_vec / heads;
    let kept = u32::min(d, width);
    let sampled = d > width;
    let (off, stride) = row_sampler(seed, row as u32, u32::max(d, 1), fastrand);
    let mut scale = f32::new(1.0);
    if comptime!(mean) {
        scale = f32::new(1.0) / f32::cast_from(u32::max(kept, 1));
    }
    let mut v = UNIT_POS_X as usize;
    while v < n_vec {
        let h = v / vph;
        let mut acc = Vector::<f32, N>::new(0.0);
        for t in 0..kept {
            let mut p = t;
            if sampled {
                if comptime!(fastrand) {
                    p = (t * stride + off) % d;
                } else {
                    p = (off + t) % d;
                }
            }
            let e = (start + p) as usize;
            let j = usize::cast_from(col_idx[e]);
            let mut m = Vector::<f32, N>::cast_from(x[j * x_rs + v]);
            if comptime!(has_w) {
                m *= Vector::new(f32::cast_from(weights[e * heads + h]));
            }
            acc += m;
        }
        out[row * o_rs + v] = Vector::cast_from(acc * Vector::new(scale));
        v += CUBE_DIM_X as usize;
    }
}

#[cube(launch_unchecked)]
fn sample_scale_rows<F: Float>(
    row_ptr: &Array<i32>,
    out: &mut Array<F>,
    n_rows: usize,
    width: u32,
    seed: u32,
    #[comptime] fastrand: bool,
    #[comptime] mean: bool,
    #[define(F)] _dtype: StorageType,
) {
    let row = ABSOLUTE_POS;
    if row >= n_rows {
        terminate!();
    }
    let start = u32::cast_from(row_ptr[row]);
    let d = u32::cast_from(row_ptr[row + 1]) - start;
    let kept = u32::min(d, width);
    let (off, stride) = row_sampler(seed, row as u32, u32::max(d, 1), fastrand);
    let mut scale = f32::new(1.0);
    if comptime!(mean) {
        scale = f32::new(1.0) / f32::cast_from(u32::max(kept, 1));
    }
    for t in 0..kept {
        let mut p = t;
        if d > width {
            if comptime!(fastrand) {
                p = (t * stride + off) % d;
            } else {
                p = (off + t) % d;
            }
        }
        out[(start + p) as usize] = F::cast_from(scale);
    }
}

/// Fused sampled SpMM into `out` (`[n_rows, f]`); every row is written.
#[allow(clippy::too_many_arguments)]
pub fn launch_sampled_spmm<R: Runtime>(
    client: &ComputeClient<R>,
    n_rows: usize,
    row_ptr: TensorBinding<R>,
    col_idx: TensorBinding<R>,
    weights: Option<TensorBinding<R>>,
    heads: usize,
    x: TensorBinding<R>,
    out: TensorBinding<R>,
    spec: SampleSpec,
    reduce: Reduce,
    dtype: StorageType,
    config: &crate::config::SampleConfig,
) {
    let f = out.shape[1];
    if n_rows == 0 || f == 0 {
        return;
    }
    let heads = heads.max(1);
    let vec = vector_width(client, dtype.size(), f / heads, &[&x, &out]);
    let lanes = lanes_for(f / vec, config.max_lanes.resolve(|| 32) as usize);
    let slots = (256 / lanes).max(1);
    let has_w = weights.is_some();
    let w = weights.unwrap_or_else(|| crate::device::alloc_array::<R>(client, 1, dtype.size()));
    unsafe {
        sampled_spmm_rows::launch_unchecked::<R>(
            client,
            cube_count(client, n_rows.div_ceil(slots as usize)),
            CubeDim::new_2d(lanes, slots),
            vec,
            row_ptr.into_array_arg(),
            col_idx.into_array_arg(),
            w.into_array_arg(),
            x.into_tensor_arg(),
            out.into_tensor_arg(),
            n_rows,
            heads,
            spec.width.min(u32::MAX as usize) as u32,
            spec.seed,
            spec.mode == Sampling::FastRand,
            reduce == Reduce::Mean,
            has_w,
            dtype,
        );
    }
}

/// Writes the per-edge scale of the sample into `out` (`[nnz]`, zero-initialised by the caller).
pub fn launch_sample_scale<R: Runtime>(
    client: &ComputeClient<R>,
    n_rows: usize,
    row_ptr: TensorBinding<R>,
    out: TensorBinding<R>,
    spec: SampleSpec,
    reduce: Reduce,
    dtype: StorageType,
) {
    if n_rows == 0 {
        return;
    }
    let threads = 256u32;
    unsafe {
        sample_scale_rows::launch_unchecked::<R>(
            client,
            cube_count(client, n_rows.div_ceil(threads as usize)),
            CubeDim::new_1d(threads),
            row_ptr.into_array_arg(),
            out.into_array_arg(),
            n_rows,
            spec.width.min(u32::MAX as usize) as u32,
            spec.seed,
            spec.mode == Sampling::FastRand,
            reduce == Reduce::Mean,
            dtype,
        );
    }
}
