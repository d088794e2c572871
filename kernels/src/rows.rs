//! Per-row scaled half copies of a node matrix, as mixed precision saves the inputs of its
//! linear layers: `scale[i] = max(max_j |x[i, j]|, 1e-30)` and `half[i, j] = x[i, j] / scale[i]`
//! rounded to f16 / bf16 (no overflow whatever the magnitudes), and back:
//! `x'[i, j] = half[i, j] * scale[i]`. One pass each, where the composed tensor ops take five
//! (abs, row max, clamp, divide, cast) and two (cast, multiply). The arithmetic is the same
//! (an f32 division and one rounding cast), so the results equal the composed ops'.

use crate::device::{cube_count, has_plane_ops, lanes_for, plane_size, vector_width};
use crate::reduce::segment_max;
use cubecl::prelude::*;

/// Smallest row scale (rows of zeros get this one).
pub const MIN_SCALE: f32 = 1e-30;

#[cube(launch_unchecked)]
fn rows_to_half<F: Float, H: Float, N: Size>(
    x: &Tensor<Vector<F, N>>,
    half: &mut Tensor<Vector<H, N>>,
    scale: &mut Array<F>,
    n_rows: usize,
    #[comptime] lanes: u32,
    #[comptime] plane: bool,
    #[define(F, H)] _dtypes: [StorageType; 2],
) {
    let mut smem = SharedMemory::<f32>::new(comptime!(if plane { 1usize } else { 256usize }));
    let row = CUBE_POS * CUBE_DIM_Y as usize + UNIT_POS_Y as usize;
    // rows past the end still take part in the reductions (uniform control flow)
    let valid = row < n_rows;
    let n_vec = half.shape(1) / N::value();
    let x_rs = x.stride(0) / N::value();
    let h_rs = half.stride(0) / N::value();
    let mut m = 0.0f32;
    if valid {
        let mut v = UNIT_POS_X as usize;
        while v < n_vec {
            let a = Vector::<f32, N>::cast_from(x[row * x_rs + v]);
            #[unroll]
            for k in 0..N::value() {
                m = f32::max(m, f32::abs(a[k]));
            }
            v += lanes as usize;
        }
    }
    let s = f32::max(segment_max(m, &mut smem, lanes, plane), MIN_SCALE);
    if valid {
        let mut v = UNIT_POS_X as usize;
        while v < n_vec {
            let a = Vector::<f32, N>::cast_from(x[row * x_rs + v]);
            half[row * h_rs + v] = Vector::cast_from(a / Vector::new(s));
            v += lanes as usize;
        }
        if UNIT_POS_X == 0 {
            scale[row] = F::cast_from(s);
        }
    }
}

#[cube(launch_unchecked)]
fn rows_from_half<F: Float, H: Float, N: Size>(
    half: &Tensor<Vector<H, N>>,
    scale: &Array<F>,
    out: &mut Tensor<Vector<F, N>>,
    n_vec: usize,
    len: usize,
    #[define(F, H)] _dtypes: [StorageType; 2],
) {
    // one vector per thread over the whole matrix (not a row per group of lanes): every lane
    // busy whatever the width, and as many loads in flight as a plain element-wise pass
    let p = ABSOLUTE_POS;
    if p >= len {
        terminate!();
    }
    let row = p / n_vec;
    let v = p - row * n_vec;
    let h_rs = half.stride(0) / N::value();
    let o_rs = out.stride(0) / N::value();
    let s = Vector::<f32, N>::new(f32::cast_from(scale[row]));
    let a = Vector::<f32, N>::cast_from(half[row * h_rs + v]);
    out[row * o_rs + v] = Vector::cast_from(a * s);
}

/// Launch shape of a row kernel over `[n, f]` matrices (`mats`) with elements of `elem` bytes:
/// vector width, lanes per row and the cube grid, or `None` when there is nothing to do.
fn row_launch<R: Runtime>(
    client: &ComputeClient<R>,
    n: usize,
    f: usize,
    elem: usize,
    mats: &[&TensorBinding<R>],
) -> Option<(usize, u32, CubeCount, CubeDim)> {
    if n == 0 || f == 0 {
        return None;
    }
    let vec = vector_width(client, elem, f, mats);
    let lanes = lanes_for(f / vec, 32);
    let rows = (256 / lanes).max(1);
    Some((vec, lanes, cube_count(client, n.div_ceil(rows as usize)), CubeDim::new_2d(lanes, rows)))
}

/// Writes the scaled half copy of `x` (`[n, f]`, dtype `x_dtype`) into `half` (`[n, f]`, dtype
/// `half_dtype`) and the row scales into `scale` (`[n]`, dtype `x_dtype`).
pub fn launch_rows_to_half<R: Runtime>(
    client: &ComputeClient<R>,
    x: TensorBinding<R>,
    half: TensorBinding<R>,
    scale: TensorBinding<R>,
    x_dtype: StorageType,
    half_dtype: StorageType,
    planes: crate::config::PlaneUse,
) {
    let n = half.shape[0];
    let Some((vec, lanes, count, dim)) = row_launch(client, n, half.shape[1], half_dtype.size(), &[&x, &half]) else {
        return;
    };
    let plane = has_plane_ops(client, planes) && plane_size(client) >= lanes;
    unsafe {
        rows_to_half::launch_unchecked::<R>(
            client,
            count,
            dim,
            vec,
            x.into_tensor_arg(),
            half.into_tensor_arg(),
            scale.into_array_arg(),
            n,
            lanes,
            plane,
            [x_dtype, half_dtype],
        );
    }
}

#[cube(launch_unchecked)]
fn inverse_degrees<H: Float>(
    row_ptr: &Array<i32>,
    inv: &mut Array<H>,
    n_rows: usize,
    #[define(H)] _dtype: StorageType,
) {
    let row = ABSOLUTE_POS;
    if row >= n_rows {
        terminate!();
    }
    // offsets are u32 in the bits of an i32 (the difference wraps like theirs)
    let deg = u32::cast_from(row_ptr[row + 1]) - u32::cast_from(row_ptr[row]);
    let d = f32::cast_from(u32::max(deg, 1u32));
    // rounded to the output type, as the composed ops round the factor
    inv[row] = H::cast_from(1.0f32 / d);
}

/// Writes `x[i] / max(deg(i), 1)` into `out` (`[n, f]`, dtype `out_dtype`), the degrees taken
/// from `row_ptr` (`[n + 1]`, u32 offsets in i32 bits): the mean's chain rule as one pass over
/// the rows ([`launch_rows_from_half`]) after a pass over the `n` degrees (one division per
/// row, not per entry), with no degree tensor. The factor `1 / deg` is an f32 division rounded
/// once to `out_dtype`, the product is taken in f32 and rounded once (the arithmetic of the
/// composed ops).
pub fn launch_rows_inv_degree<R: Runtime>(
    client: &ComputeClient<R>,
    x: TensorBinding<R>,
    row_ptr: TensorBinding<R>,
    out: TensorBinding<R>,
    x_dtype: StorageType,
    out_dtype: StorageType,
) {
    let (n, f) = (out.shape[0], out.shape[1]);
    if n == 0 || f == 0 {
        return;
    }
    let inv = crate::device::alloc_array::<R>(client, n, out_dtype.size());
    let threads = 256u32;
    unsafe {
        inverse_degrees::launch_unchecked::<R>(
            client,
            cube_count(client, n.div_ceil(threads as usize)),
            CubeDim::new_1d(threads),
            row_ptr.into_array_arg(),
            inv.clone().into_array_arg(),
            n,
            out_dtype,
        );
    }
    launch_rows_from_half(client, x, inv, out, out_dtype, x_dtype);
}

/// Writes `half * scale` (row scales) into `out` (`[n, f]`, dtype `out_dtype`, the dtype of
/// `scale` too).
pub fn launch_rows_from_half<R: Runtime>(
    client: &ComputeClient<R>,
    half: TensorBinding<R>,
    scale: TensorBinding<R>,
    out: TensorBinding<R>,
    out_dtype: StorageType,
    half_dtype: StorageType,
) {
    let (n, f) = (out.shape[0], out.shape[1]);
    if n == 0 || f == 0 {
        return;
    }
    let vec = vector_width(client, half_dtype.size(), f, &[&half, &out]);
    let n_vec = f / vec;
    let len = n * n_vec;
    let threads = 256u32;
    unsafe {
        rows_from_half::launch_unchecked::<R>(
            client,
            cube_count(client, len.div_ceil(threads as usize)),
            CubeDim::new_1d(threads),
            vec,
            half.into_tensor_arg(),
            scale.into_array_arg(),
            out.into_tensor_arg(),
            n_vec,
            len,
            [out_dtype, half_dtype],
        );
    }
}

#[cube(launch_unchecked)]
fn add_rows<F: Float, V: Float, N: Size>(
    target: &mut Tensor<Vector<F, N>>,
    rows: &Array<i32>,
    values: &Tensor<Vector<V, N>>,
    n_rows: usize,
    #[define(F, V)] _dtypes: [StorageType; 2],
) {
    let i = CUBE_POS * CUBE_DIM_Y as usize + UNIT_POS_Y as usize;
    if i >= n_rows {
        terminate!();
    }
    let r = usize::cast_from(rows[i]);
    let n_vec = values.shape(1) / N::value();
    let t_rs = target.stride(0) / N::value();
    let v_rs = values.stride(0) / N::value();
    let mut v = UNIT_POS_X as usize;
    while v < n_vec {
        let t = r * t_rs + v;
        target[t] = target[t] + Vector::<F, N>::cast_from(values[i * v_rs + v]);
        v += CUBE_DIM_X as usize;
    }
}

/// Adds row `i` of `values` (`[m, f]`, dtype `values_dtype`) to row `rows[i]` of `target`
/// (`[n, f]`, dtype `dtype`) in place, for every `i`, each value converted to `dtype` (f16 rows
/// into f32 ones without a cast pass): the scatter-add of a halo exchange's returned gradients
/// into the sender's. `rows` (`[m]`, i32) must be distinct and below `n` (they are not
/// checked here): each target row is then written by one lane only, so the result is
/// deterministic without atomics.
pub fn launch_add_rows<R: Runtime>(
    client: &ComputeClient<R>,
    target: TensorBinding<R>,
    rows: TensorBinding<R>,
    values: TensorBinding<R>,
    dtype: StorageType,
    values_dtype: StorageType,
) {
    let m = values.shape[0];
    let elem = dtype.size().min(values_dtype.size());
    let Some((vec, _, count, dim)) = row_launch(client, m, values.shape[1], elem, &[&target, &values]) else {
        return;
    };
    unsafe {
        add_rows::launch_unchecked::<R>(
            client,
            count,
            dim,
            vec,
            target.into_tensor_arg(),
            rows.into_array_arg(),
            values.into_tensor_arg(),
            m,
            [dtype, values_dtype],
        );
    }
}

#[cube(launch_unchecked)]
fn take_rows<F: Float, G: Float, N: Size>(
    x: &Tensor<Vector<F, N>>,
    rows: &Array<i32>,
    out: &mut Tensor<Vector<G, N>>,
    n_vec: usize,
    len: usize,
    #[define(F, G)] _dtypes: [StorageType; 2],
) {
    // one vector per thread over the whole output, as in `rows_from_half`
    let p = ABSOLUTE_POS;
    if p >= len {
        terminate!();
    }
    let i = p / n_vec;
    let v = p - i * n_vec;
    let r = usize::cast_from(rows[i]);
    let x_rs = x.stride(0) / N::value();
    let o_rs = out.stride(0) / N::value();
    out[i * o_rs + v] = Vector::cast_from(x[r * x_rs + v]);
}

/// Writes row `rows[i]` of `x` (`[n, f]`, dtype `x_dtype`) into row `i` of `out` (`[m, f]`,
/// dtype `out_dtype`), converted: the rows a halo exchange sends, gathered in the type they
/// travel in (f32 rows sent as f16 in one pass). `rows` (`[m]`, i32) must be below `n` (not
/// checked here).
pub fn launch_take_rows<R: Runtime>(
    client: &ComputeClient<R>,
    x: TensorBinding<R>,
    rows: TensorBinding<R>,
    out: TensorBinding<R>,
    x_dtype: StorageType,
    out_dtype: StorageType,
) {
    let (m, f) = (out.shape[0], out.shape[1]);
    if m == 0 || f == 0 {
        return;
    }
    let vec = vector_width(client, x_dtype.size().min(out_dtype.size()), f, &[&x, &out]);
    let n_vec = f / vec;
    let len = m * n_vec;
    let threads = 256u32;
    unsafe {
        take_rows::launch_unchecked::<R>(
            client,
            cube_count(client, len.div_ceil(threads as usize)),
            CubeDim::new_1d(threads),
            vec,
            x.into_tensor_arg(),
            rows.into_array_arg(),
            out.into_tensor_arg(),
            n_vec,
            len,
            [x_dtype, out_dtype],
        );
    }
}

/// CPU reference of [`launch_take_rows`] on row-major slices (f32).
pub fn reference_take_rows(x: &[f32], rows: &[i32], f: usize) -> Vec<f32> {
    rows.iter().flat_map(|&r| x[r as usize * f..(r as usize + 1) * f].iter().copied()).collect()
}

/// CPU reference of [`launch_add_rows`] on row-major `[n, f]` / `[m, f]` slices.
pub fn reference_add_rows(target: &mut [f32], rows: &[i32], values: &[f32], f: usize) {
    for (i, &r) in rows.iter().enumerate() {
        let r = r as usize;
        for (t, v) in target[r * f..(r + 1) * f].iter_mut().zip(&values[i * f..(i + 1) * f]) {
            *t += v;
        }
    }
}
