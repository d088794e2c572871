//! Weighted softmax cross-entropy of logits rows in two passes: the forward pass writes each
//! row's log-sum-exp and its term `w[i] * (lse[i] - x[i, y[i]])` (the negative log-probability
//! of the row's label, weighted); the backward pass writes
//! `dx[i, c] = dt[i] * w[i] * (exp(x[i, c] - lse[i]) - [c == y[i]])` over the logits in place.
//! Burn's composed ops (log-softmax as a max, a subtraction, an exponential, a sum, a logarithm
//! and a subtraction, then a gather and a product; their backward as many again) keep three
//! `[n, c]` temporaries for the backward pass; these keep two floats per row.
//!
//! All arithmetic is in f32 whatever the logits' type; a label outside `0..c` reads column 0
//! (labels are checked where they are loaded).
//!
//! The binary cross-entropy with logits of link prediction's scores is one pass each way too:
//! the forward pass writes `w * (y * softplus(-s) + (1 - y) * softplus(s))` per score, the
//! backward pass `dt * w * (sigmoid(s) - y)` over the scores. Composed, the softplus alone is five
//! tensor ops forward and as many backward over every pair.

use crate::device::{cube_count, has_plane_ops, lanes_for, per_entry, plane_size};
use crate::reduce::{segment_max, segment_sum};
use cubecl::prelude::*;

/// The column of a label: the label where it is in `0..c`, else 0.
#[cube]
fn label_of(label: i32, c: usize) -> usize {
    let mut y = 0usize;
    if label >= 0 {
        let l = usize::cast_from(label);
        if l < c {
            y = l;
        }
    }
    y
}

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn cross_entropy_rows<F: Float>(
    x: &Tensor<F>,
    labels: &Array<i32>,
    weight: &Array<f32>,
    lse: &mut Array<f32>,
    terms: &mut Array<f32>,
    n_rows: usize,
    #[comptime] lanes: u32,
    #[comptime] plane: bool,
    #[define(F)] _dtype: StorageType,
) {
    let mut smem = SharedMemory::<f32>::new(comptime!(if plane { 1usize } else { 256usize }));
    let row = CUBE_POS * CUBE_DIM_Y as usize + UNIT_POS_Y as usize;
    // rows past the end still take part in the reductions (uniform control flow)
    let valid = row < n_rows;
    let c = x.shape(1);
    let rs = x.stride(0);
    let mut m = f32::min_value();
    if valid {
        let mut j = UNIT_POS_X as usize;
        while j < c {
            m = f32::max(m, f32::cast_from(x[row * rs + j]));
            j += lanes as usize;
        }
    }
    let m = segment_max(m, &mut smem, lanes, plane);
    let mut s = 0.0f32;
    if valid {
        let mut j = UNIT_POS_X as usize;
        while j < c {
            s += f32::exp(f32::cast_from(x[row * rs + j]) - m);
            j += lanes as usize;
        }
    }
    let s = segment_sum(s, &mut smem, lanes, plane);
    if valid && UNIT_POS_X == 0 {
        let l = m + f32::ln(s);
        let y = label_of(labels[row], c);
        lse[row] = l;
        terms[row] = weight[row] * (l - f32::cast_from(x[row * rs + y]));
    }
}

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn cross_entropy_grad<F: Float>(
    x: &mut Tensor<F>,
    labels: &Array<i32>,
    weight: &Array<f32>,
    lse: &Array<f32>,
    dterms: &Array<f32>,
    c: usize,
    len: usize,
    #[define(F)] _dtype: StorageType,
) {
    // one entry per thread (the row's scalars are shared through the cache): every lane busy
    // whatever the class count, where a row per group of lanes left most of them idle or
    // waiting on the row's loads
    let p = ABSOLUTE_POS;
    if p >= len {
        terminate!();
    }
    let row = p / c;
    let j = p - row * c;
    let at = row * x.stride(0) + j;
    let g = dterms[row] * weight[row];
    let y = label_of(labels[row], c);
    let mut q = f32::exp(f32::cast_from(x[at]) - lse[row]);
    if j == y {
        q -= 1.0;
    }
    x[at] = F::cast_from(g * q);
}

/// Lanes per row and the cube grid for `n` rows of `c` columns.
fn launch_shape<R: Runtime>(client: &ComputeClient<R>, n: usize, c: usize) -> (u32, CubeCount, CubeDim) {
    let lanes = lanes_for(c, 32);
    let rows = (256 / lanes).max(1);
    (lanes, cube_count(client, n.div_ceil(rows as usize)), CubeDim::new_2d(lanes, rows))
}

/// Writes each row's log-sum-exp into `lse` and its weighted term into `terms` (both `[n]`
/// f32) for the logits `x` (`[n, c]`, dtype `dtype`), `labels` (`[n]` i32) and `weight` (`[n]`
/// f32).
#[allow(clippy::too_many_arguments)]
pub fn launch_cross_entropy<R: Runtime>(
    client: &ComputeClient<R>,
    x: TensorBinding<R>,
    labels: TensorBinding<R>,
    weight: TensorBinding<R>,
    lse: TensorBinding<R>,
    terms: TensorBinding<R>,
    dtype: StorageType,
    planes: crate::config::PlaneUse,
) {
    let (n, c) = (x.shape[0], x.shape[1]);
    if n == 0 || c == 0 {
        return;
    }
    let (lanes, count, dim) = launch_shape(client, n, c);
    let plane = has_plane_ops(client, planes) && plane_size(client) >= lanes;
    unsafe {
        cross_entropy_rows::launch_unchecked::<R>(
            client,
            count,
            dim,
            x.into_tensor_arg(),
            labels.into_array_arg(),
            weight.into_array_arg(),
            lse.into_array_arg(),
            terms.into_array_arg(),
            n,
            lanes,
            plane,
            dtype,
        );
    }
}

/// Overwrites the logits `x` (`[n, c]`, dtype `dtype`) with their gradient from the terms'
/// gradient `dterms` (`[n]` f32), with `labels`, `weight` and the forward pass's `lse`.
pub fn launch_cross_entropy_grad<R: Runtime>(
    client: &ComputeClient<R>,
    x: TensorBinding<R>,
    labels: TensorBinding<R>,
    weight: TensorBinding<R>,
    lse: TensorBinding<R>,
    dterms: TensorBinding<R>,
    dtype: StorageType,
) {
    let (n, c) = (x.shape[0], x.shape[1]);
    if n == 0 || c == 0 {
        return;
    }
    let len = n * c;
    let threads = 256u32;
    unsafe {
        cross_entropy_grad::launch_unchecked::<R>(
            client,
            cube_count(client, len.div_ceil(threads as usize)),
            CubeDim::new_1d(threads),
            x.into_tensor_arg(),
            labels.into_array_arg(),
            weight.into_array_arg(),
            lse.into_array_arg(),
            dterms.into_array_arg(),
            c,
            len,
            dtype,
        );
    }
}

/// CPU reference (f64) of both passes on row-major `[n, c]` logits: the terms, and the logits'
/// gradient from `dterms`.
pub fn reference(x: &[f64], c: usize, labels: &[i64], weight: &[f64], dterms: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let n = labels.len();
    let mut terms = vec![0.0; n];
    let mut dx = vec![0.0; n * c];
    for i in 0..n {
        let row = &x[i * c..(i + 1) * c];
        let m = row.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let lse = m + row.iter().map(|v| (v - m).exp()).sum::<f64>().ln();
        let y = labels[i] as usize;
        terms[i] = weight[i] * (lse - row[y]);
        for (j, v) in row.iter().enumerate() {
            let hit = if j == y { 1.0 } else { 0.0 };
            dx[i * c + j] = dterms[i] * weight[i] * ((v - lse).exp() - hit);
        }
    }
    (terms, dx)
}

/// `log(1 + exp(v))` without overflow.
#[cube]
fn softplus(v: f32) -> f32 {
    f32::max(v, 0.0) + f32::log1p(f32::exp(-f32::abs(v)))
}

/// Entry `i` of an array of one entry per score or of one entry for all of them.
#[cube]
fn entry(a: &Array<f32>, i: usize) -> f32 {
    let mut k = i;
    if a.len() == 1 {
        k = 0;
    }
    a[k]
}

#[cube(launch_unchecked)]
fn binary_cross_entropy_terms<F: Float>(
    s: &Array<F>,
    labels: &Array<f32>,
    weight: &Array<f32>,
    terms: &mut Array<f32>,
    len: usize,
    #[define(F)] _dtype: StorageType,
) {
    let i = ABSOLUTE_POS;
    if i >= len {
        terminate!();
    }
    let v = f32::cast_from(s[i]);
    let y = entry(labels, i);
    terms[i] = entry(weight, i) * (y * softplus(-v) + (1.0 - y) * softplus(v));
}

#[cube(launch_unchecked)]
fn binary_cross_entropy_grad<F: Float>(
    s: &mut Array<F>,
    labels: &Array<f32>,
    weight: &Array<f32>,
    dterms: &Array<f32>,
    len: usize,
    #[define(F)] _dtype: StorageType,
) {
    let i = ABSOLUTE_POS;
    if i >= len {
        terminate!();
    }
    let v = f32::cast_from(s[i]);
    let sigmoid = 1.0 / (1.0 + f32::exp(-v));
    s[i] = F::cast_from(dterms[i] * entry(weight, i) * (sigmoid - entry(labels, i)));
}

/// Writes the binary cross-entropy with logits of the scores `s` (`[p]`, dtype `dtype`) into
/// `terms` (`[p]` f32): `w * softplus(-s)` where the label is 1, `w * softplus(s)` where it is 0
/// (`y * softplus(-s) + (1 - y) * softplus(s)` for labels in between). `labels` and `weight`
/// (f32) hold one entry per score or one for all.
pub fn launch_binary_cross_entropy<R: Runtime>(
    client: &ComputeClient<R>,
    s: TensorBinding<R>,
    labels: TensorBinding<R>,
    weight: TensorBinding<R>,
    terms: TensorBinding<R>,
    dtype: StorageType,
) {
    let len = s.shape[0];
    let Some((count, dim)) = per_entry(client, len) else {
        return;
    };
    unsafe {
        binary_cross_entropy_terms::launch_unchecked::<R>(
            client,
            count,
            dim,
            s.into_array_arg(),
            labels.into_array_arg(),
            weight.into_array_arg(),
            terms.into_array_arg(),
            len,
            dtype,
        );
    }
}

/// Overwrites the scores `s` (`[p]`, dtype `dtype`) with their gradient from the terms'
/// gradient `dterms` (`[p]` f32): `dterms * w * (sigmoid(s) - y)`.
pub fn launch_binary_cross_entropy_grad<R: Runtime>(
    client: &ComputeClient<R>,
    s: TensorBinding<R>,
    labels: TensorBinding<R>,
    weight: TensorBinding<R>,
    dterms: TensorBinding<R>,
    dtype: StorageType,
) {
    let len = s.shape[0];
    let Some((count, dim)) = per_entry(client, len) else {
        return;
    };
    unsafe {
        binary_cross_entropy_grad::launch_unchecked::<R>(
            client,
            count,
            dim,
            s.into_array_arg(),
            labels.into_array_arg(),
            weight.into_array_arg(),
            dterms.into_array_arg(),
            len,
            dtype,
        );
    }
}

/// CPU reference (f64) of the binary cross-entropy with logits: the terms of the scores `s`
/// and the scores' gradient from `dterms` (`labels` and `weight`: one entry per score or one
/// for all).
pub fn binary_reference(s: &[f64], labels: &[f64], weight: &[f64], dterms: &[f64]) -> (Vec<f64>, Vec<f64>) {
    let at = |a: &[f64], i: usize| if a.len() == 1 { a[0] } else { a[i] };
    let softplus = |v: f64| v.max(0.0) + (-v.abs()).exp().ln_1p();
    let terms = s
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let y = at(labels, i);
            at(weight, i) * (y * softplus(-v) + (1.0 - y) * softplus(v))
        })
        .collect();
    let ds = s
        .iter()
        .enumerate()
        .map(|(i, &v)| dterms[i] * at(weight, i) * (1.0 / (1.0 + (-v).exp()) - at(labels, i)))
        .collect();
    (terms, ds)
}
