//! GAT's attention coefficients on the device: one cube per row (forward, and the backward's row
//! pass) or per column (the backward's column pass, over the transpose), lanes striding over
//! the edges, reductions by plane shuffles or shared memory (see [`crate::reduce`]). Scores are
//! recomputed from the `[nodes, heads]` inputs wherever they are needed, so no `[edges, heads]`
//! tensor other than the coefficients exists. Accumulation is in f32 for every storage type.

use crate::device::{cube_count, has_plane_ops, plane_size};
use crate::reduce::{segment_max, segment_sum};
use cubecl::prelude::*;

#[cube]
fn leaky(x: f32, slope: f32) -> f32 {
    select(x > 0.0, x, x * slope)
}

#[cube]
fn leaky_grad(x: f32, slope: f32) -> f32 {
    select(x > 0.0, f32::new(1.0), slope)
}

/// Forward: the coefficients `alpha` of each row's edges.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn gat_attention_rows<F: Float>(
    row_ptr: &Array<i32>,
    col_idx: &Array<i32>,
    s_dst: &Array<F>,
    s_src: &Array<F>,
    alpha: &mut Array<F>,
    n_rows: usize,
    heads: usize,
    slope: f32,
    #[comptime] plane: bool,
    #[comptime] lanes: u32,
    #[define(F)] _dtype: StorageType,
) {
    let row = CUBE_POS;
    if row >= n_rows {
        terminate!(); // uniform: the whole cube shares the row
    }
    let mut smem = SharedMemory::<f32>::new(comptime!(if plane { 1usize } else { lanes as usize }));
    let start = usize::cast_from(row_ptr[row]);
    let end = usize::cast_from(row_ptr[row + 1]);
    let lane = UNIT_POS_X as usize;
    for h in 0..heads {
        let sd = f32::cast_from(s_dst[row * heads + h]);
        let mut m = f32::min_value();
        let mut e = start + lane;
        while e < end {
            let j = usize::cast_from(col_idx[e]);
            m = f32::max(m, leaky(sd + f32::cast_from(s_src[j * heads + h]), slope));
            e += lanes as usize;
        }
        let m = segment_max(m, &mut smem, lanes, plane);
        let mut z = f32::new(0.0);
        let mut e = start + lane;
        while e < end {
            let j = usize::cast_from(col_idx[e]);
            z += f32::exp(leaky(sd + f32::cast_from(s_src[j * heads + h]), slope) - m);
            e += lanes as usize;
        }
        let z = segment_sum(z, &mut smem, lanes, plane);
        let inv = f32::new(1.0) / z;
        let mut e = start + lane;
        while e < end {
            let j = usize::cast_from(col_idx[e]);
            let s = leaky(sd + f32::cast_from(s_src[j * heads + h]), slope);
            alpha[e * heads + h] = F::cast_from(f32::exp(s - m) * inv);
            e += lanes as usize;
        }
    }
}

/// The backward's row pass: from `alpha` and `d_alpha`, each row's
/// `dot = sum alpha * d_alpha` into `dots` and `d_s_dst = sum_e alpha (d_alpha - dot) leaky'`.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn gat_attention_rows_grad<F: Float>(
    row_ptr: &Array<i32>,
    col_idx: &Array<i32>,
    s_dst: &Array<F>,
    s_src: &Array<F>,
    alpha: &Array<F>,
    d_alpha: &Array<F>,
    d_s_dst: &mut Array<F>,
    dots: &mut Array<f32>,
    n_rows: usize,
    heads: usize,
    slope: f32,
    #[comptime] plane: bool,
    #[comptime] lanes: u32,
    #[define(F)] _dtype: StorageType,
) {
    let row = CUBE_POS;
    if row >= n_rows {
        terminate!();
    }
    let mut smem = SharedMemory::<f32>::new(comptime!(if plane { 1usize } else { lanes as usize }));
    let start = usize::cast_from(row_ptr[row]);
    let end = usize::cast_from(row_ptr[row + 1]);
    let lane = UNIT_POS_X as usize;
    for h in 0..heads {
        let sd = f32::cast_from(s_dst[row * heads + h]);
        let mut dot = f32::new(0.0);
        let mut e = start + lane;
        while e < end {
            let k = e * heads + h;
            dot += f32::cast_from(alpha[k]) * f32::cast_from(d_alpha[k]);
            e += lanes as usize;
        }
        let dot = segment_sum(dot, &mut smem, lanes, plane);
        let mut acc = f32::new(0.0);
        let mut e = start + lane;
        while e < end {
            let k = e * heads + h;
            let j = usize::cast_from(col_idx[e]);
            let pre = sd + f32::cast_from(s_src[j * heads + h]);
            acc += f32::cast_from(alpha[k]) * (f32::cast_from(d_alpha[k]) - dot) * leaky_grad(pre, slope);
            e += lanes as usize;
        }
        let acc = segment_sum(acc, &mut smem, lanes, plane);
        if lane == 0 {
            d_s_dst[row * heads + h] = F::cast_from(acc);
            dots[row * heads + h] = dot;
        }
    }
}

/// The backward's column pass over the transpose: for column `j`, the sum over its edges `e`
/// (rows `i`) of `alpha (d_alpha - dot_i) leaky'`, in the transpose's (deterministic) order.
#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn gat_attention_cols<F: Float>(
    t_ptr: &Array<i32>,
    t_rows: &Array<i32>,
    t_perm: &Array<i32>,
    s_dst: &Array<F>,
    s_src: &Array<F>,
    alpha: &Array<F>,
    d_alpha: &Array<F>,
    dots: &Array<f32>,
    d_s_src: &mut Array<F>,
    n_cols: usize,
    heads: usize,
    slope: f32,
    #[comptime] plane: bool,
    #[comptime] lanes: u32,
    #[define(F)] _dtype: StorageType,
) {
    let col = CUBE_POS;
    if col >= n_cols {
        terminate!();
    }
    let mut smem = SharedMemory::<f32>::new(comptime!(if plane { 1usize } else { lanes as usize }));
    let start = usize::cast_from(t_ptr[col]);
    let end = usize::cast_from(t_ptr[col + 1]);
    let lane = UNIT_POS_X as usize;
    for h in 0..heads {
        let ss = f32::cast_from(s_src[col * heads + h]);
        let mut acc = f32::new(0.0);
        let mut t = start + lane;
        while t < end {
            let e = usize::cast_from(t_perm[t]);
            let i = usize::cast_from(t_rows[t]);
            let k = e * heads + h;
            let pre = f32::cast_from(s_dst[i * heads + h]) + ss;
            acc +=
                f32::cast_from(alpha[k]) * (f32::cast_from(d_alpha[k]) - dots[i * heads + h]) * leaky_grad(pre, slope);
            t += lanes as usize;
        }
        let acc = segment_sum(acc, &mut smem, lanes, plane);
        if lane == 0 {
            d_s_src[col * heads + h] = F::cast_from(acc);
        }
    }
}

/// The rows of a CSR on the device, for [`launch_gat_attention`].
pub struct RowsDev<R: Runtime> {
    /// Number of rows.
    pub n_rows: usize,
    /// `n_rows + 1` offsets (i32).
    pub row_ptr: TensorBinding<R>,
    /// Column of each edge (i32).
    pub col_idx: TensorBinding<R>,
}

/// `alpha` (`[nnz * heads]`) from `s_dst` (`[n_rows * heads]`) and `s_src` (`[n_cols * heads]`).
#[allow(clippy::too_many_arguments)]
pub fn launch_gat_attention<R: Runtime>(
    client: &ComputeClient<R>,
    csr: RowsDev<R>,
    s_dst: TensorBinding<R>,
    s_src: TensorBinding<R>,
    alpha: TensorBinding<R>,
    heads: usize,
    slope: f32,
    dtype: StorageType,
    planes: crate::config::PlaneUse,
) {
    if csr.n_rows == 0 {
        return;
    }
    let plane = has_plane_ops(client, planes) && plane_size(client) == 32;
    let lanes = 32u32;
    unsafe {
        gat_attention_rows::launch_unchecked::<R>(
            client,
            cube_count(client, csr.n_rows),
            CubeDim::new_1d(lanes),
            csr.row_ptr.into_array_arg(),
            csr.col_idx.into_array_arg(),
            s_dst.into_array_arg(),
            s_src.into_array_arg(),
            alpha.into_array_arg(),
            csr.n_rows,
            heads.max(1),
            slope,
            plane,
            lanes,
            dtype,
        );
    }
}

/// What the backward of [`launch_gat_attention`] reads: the forward's inputs and output and the
/// output's gradient.
pub struct GatAttentionGradIn<R: Runtime> {
    /// `[n_rows * heads]`.
    pub s_dst: TensorBinding<R>,
    /// `[n_cols * heads]`.
    pub s_src: TensorBinding<R>,
    /// `[nnz * heads]`, the forward's output.
    pub alpha: TensorBinding<R>,
    /// `[nnz * heads]`.
    pub d_alpha: TensorBinding<R>,
}

/// The backward: `d_s_dst` by rows, then `d_s_src` by columns over the transpose (`t`, its rows
/// being the graph's columns, `t_perm` the CSR edge of each transpose entry); `dots` is an f32
/// scratch of `[n_rows * heads]`.
#[allow(clippy::too_many_arguments)]
pub fn launch_gat_attention_grad<R: Runtime>(
    client: &ComputeClient<R>,
    csr: RowsDev<R>,
    t: RowsDev<R>,
    t_perm: TensorBinding<R>,
    input: GatAttentionGradIn<R>,
    dots: TensorBinding<R>,
    d_s_dst: TensorBinding<R>,
    d_s_src: TensorBinding<R>,
    heads: usize,
    slope: f32,
    dtype: StorageType,
    planes: crate::config::PlaneUse,
) {
    let plane = has_plane_ops(client, planes) && plane_size(client) == 32;
    let lanes = 32u32;
    let heads = heads.max(1);
    if csr.n_rows > 0 {
        unsafe {
            gat_attention_rows_grad::launch_unchecked::<R>(
                client,
                cube_count(client, csr.n_rows),
                CubeDim::new_1d(lanes),
                csr.row_ptr.into_array_arg(),
                csr.col_idx.into_array_arg(),
                input.s_dst.clone().into_array_arg(),
                input.s_src.clone().into_array_arg(),
                input.alpha.clone().into_array_arg(),
                input.d_alpha.clone().into_array_arg(),
                d_s_dst.into_array_arg(),
                dots.clone().into_array_arg(),
                csr.n_rows,
                heads,
                slope,
                plane,
                lanes,
                dtype,
            );
        }
    }
    if t.n_rows > 0 {
        unsafe {
            gat_attention_cols::launch_unchecked::<R>(
                client,
                cube_count(client, t.n_rows),
                CubeDim::new_1d(lanes),
                t.row_ptr.into_array_arg(),
                t.col_idx.into_array_arg(),
                t_perm.into_array_arg(),
                input.s_dst.into_array_arg(),
                input.s_src.into_array_arg(),
                input.alpha.into_array_arg(),
                input.d_alpha.into_array_arg(),
                dots.into_array_arg(),
                d_s_src.into_array_arg(),
                t.n_rows,
                heads,
                slope,
                plane,
                lanes,
                dtype,
            );
        }
    }
}
