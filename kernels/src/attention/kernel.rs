//! GAT's attention coefficients on the device: one cube per row (forward, and the backward's row
//! pass) or per column (the backward's column pass, over the transpose). A cube's lanes cover
//! `per` edges times every head (`per = max(1, 32 / heads)`), so a lane keeps one head, and the
//! lanes of one edge read its heads' contiguous entries together; per-head totals are reduced in
//! shared memory (the same code on every device). Scores are recomputed from the `[nodes, heads]`
//! inputs wherever they are needed, so no `[edges, heads]` tensor other than the coefficients
//! exists. Accumulation is in f32 for every storage type.

use crate::device::cube_count;
use cubecl::prelude::*;

/// The most heads a launch takes (one lane per head in a cube).
pub const MAX_HEADS: usize = 1024;

#[cube]
fn leaky(x: f32, slope: f32) -> f32 {
    select(x > 0.0, x, x * slope)
}

#[cube]
fn leaky_grad(x: f32, slope: f32) -> f32 {
    select(x > 0.0, f32::new(1.0), slope)
}

/// The total (`max` false) or maximum (`max` true) of `value` over the lanes of one head (lanes
/// `h, h + heads, ...` of the `per * heads`); every lane gets its head's result.
#[cube]
fn head_reduce(
    value: f32,
    smem: &mut SharedMemory<f32>,
    #[comptime] heads: u32,
    #[comptime] per: u32,
    #[comptime] max: bool,
) -> f32 {
    let lane = UNIT_POS_X as usize;
    smem[lane] = value;
    sync_cube();
    if lane < heads as usize {
        let mut acc = smem[lane];
        #[unroll]
        for t in 1..per {
            let v = smem[lane + (t * heads) as usize];
            if comptime!(max) {
                acc = f32::max(acc, v);
            } else {
                acc += v;
            }
        }
        smem[lane] = acc;
    }
    sync_cube();
    let total = smem[lane % heads as usize];
    sync_cube();
    total
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
    slope: f32,
    #[comptime] heads: u32,
    #[comptime] per: u32,
    #[define(F)] _dtype: StorageType,
) {
    let row = CUBE_POS;
    if row >= n_rows {
        terminate!(); // uniform: the whole cube shares the row
    }
    let mut smem = SharedMemory::<f32>::new(comptime!((per * heads) as usize));
    let nh = heads as usize;
    let lane = UNIT_POS_X as usize;
    let h = lane % nh;
    let slot = lane / nh;
    let start = usize::cast_from(row_ptr[row]);
    let end = usize::cast_from(row_ptr[row + 1]);
    let sd = f32::cast_from(s_dst[row * nh + h]);
    let mut m = f32::min_value();
    let mut e = start + slot;
    while e < end {
        let j = usize::cast_from(col_idx[e]);
        m = f32::max(m, leaky(sd + f32::cast_from(s_src[j * nh + h]), slope));
        e += per as usize;
    }
    let m = head_reduce(m, &mut smem, heads, per, true);
    let mut z = f32::new(0.0);
    let mut e = start + slot;
    while e < end {
        let j = usize::cast_from(col_idx[e]);
        z += f32::exp(leaky(sd + f32::cast_from(s_src[j * nh + h]), slope) - m);
        e += per as usize;
    }
    let z = head_reduce(z, &mut smem, heads, per, false);
    let inv = f32::new(1.0) / z;
    let mut e = start + slot;
    while e < end {
        let j = usize::cast_from(col_idx[e]);
        let s = leaky(sd + f32::cast_from(s_src[j * nh + h]), slope);
        alpha[e * nh + h] = F::cast_from(f32::exp(s - m) * inv);
        e += per as usize;
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
    slope: f32,
    #[comptime] heads: u32,
    #[comptime] per: u32,
    #[define(F)] _dtype: StorageType,
) {
    let row = CUBE_POS;
    if row >= n_rows {
        terminate!();
    }
    let mut smem = SharedMemory::<f32>::new(comptime!((per * heads) as usize));
    let nh = heads as usize;
    let lane = UNIT_POS_X as usize;
    let h = lane % nh;
    let slot = lane / nh;
    let start = usize::cast_from(row_ptr[row]);
    let end = usize::cast_from(row_ptr[row + 1]);
    let sd = f32::cast_from(s_dst[row * nh + h]);
    let mut dot = f32::new(0.0);
    let mut e = start + slot;
    while e < end {
        let k = e * nh + h;
        dot += f32::cast_from(alpha[k]) * f32::cast_from(d_alpha[k]);
        e += per as usize;
    }
    let dot = head_reduce(dot, &mut smem, heads, per, false);
    let mut acc = f32::new(0.0);
    let mut e = start + slot;
    while e < end {
        let k = e * nh + h;
        let j = usize::cast_from(col_idx[e]);
        let pre = sd + f32::cast_from(s_src[j * nh + h]);
        acc += f32::cast_from(alpha[k]) * (f32::cast_from(d_alpha[k]) - dot) * leaky_grad(pre, slope);
        e += per as usize;
    }
    let acc = head_reduce(acc, &mut smem, heads, per, false);
    if lane < nh {
        d_s_dst[row * nh + lane] = F::cast_from(acc);
        dots[row * nh + lane] = dot;
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
    slope: f32,
    #[comptime] heads: u32,
    #[comptime] per: u32,
    #[define(F)] _dtype: StorageType,
) {
    let col = CUBE_POS;
    if col >= n_cols {
        terminate!();
    }
    let mut smem = SharedMemory::<f32>::new(comptime!((per * heads) as usize));
    let nh = heads as usize;
    let lane = UNIT_POS_X as usize;
    let h = lane % nh;
    let slot = lane / nh;
    let start = usize::cast_from(t_ptr[col]);
    let end = usize::cast_from(t_ptr[col + 1]);
    let ss = f32::cast_from(s_src[col * nh + h]);
    let mut acc = f32::new(0.0);
    let mut t = start + slot;
    while t < end {
        let e = usize::cast_from(t_perm[t]);
        let i = usize::cast_from(t_rows[t]);
        let k = e * nh + h;
        let pre = f32::cast_from(s_dst[i * nh + h]) + ss;
        acc += f32::cast_from(alpha[k]) * (f32::cast_from(d_alpha[k]) - dots[i * nh + h]) * leaky_grad(pre, slope);
        t += per as usize;
    }
    let acc = head_reduce(acc, &mut smem, heads, per, false);
    if lane < nh {
        d_s_src[col * nh + lane] = F::cast_from(acc);
    }
}

/// Edges per cube step and lanes per cube for `heads` heads.
fn shape(heads: usize) -> (u32, u32) {
    let heads = heads.clamp(1, MAX_HEADS) as u32;
    let per = (32 / heads).max(1);
    (heads, per)
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

/// `alpha` (`[nnz * heads]`) from `s_dst` (`[n_rows * heads]`) and `s_src` (`[n_cols * heads]`);
/// `heads` at most [`MAX_HEADS`] (callers check).
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
) {
    if csr.n_rows == 0 {
        return;
    }
    let (heads, per) = shape(heads);
    unsafe {
        gat_attention_rows::launch_unchecked::<R>(
            client,
            cube_count(client, csr.n_rows),
            CubeDim::new_1d(per * heads),
            csr.row_ptr.into_array_arg(),
            csr.col_idx.into_array_arg(),
            s_dst.into_array_arg(),
            s_src.into_array_arg(),
            alpha.into_array_arg(),
            csr.n_rows,
            slope,
            heads,
            per,
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
) {
    let (heads, per) = shape(heads);
    if csr.n_rows > 0 {
        unsafe {
            gat_attention_rows_grad::launch_unchecked::<R>(
                client,
                cube_count(client, csr.n_rows),
                CubeDim::new_1d(per * heads),
                csr.row_ptr.into_array_arg(),
                csr.col_idx.into_array_arg(),
                input.s_dst.clone().into_array_arg(),
                input.s_src.clone().into_array_arg(),
                input.alpha.clone().into_array_arg(),
                input.d_alpha.clone().into_array_arg(),
                d_s_dst.into_array_arg(),
                dots.clone().into_array_arg(),
                csr.n_rows,
                slope,
                heads,
                per,
                dtype,
            );
        }
    }
    if t.n_rows > 0 {
        unsafe {
            gat_attention_cols::launch_unchecked::<R>(
                client,
                cube_count(client, t.n_rows),
                CubeDim::new_1d(per * heads),
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
                slope,
                heads,
                per,
                dtype,
            );
        }
    }
}
