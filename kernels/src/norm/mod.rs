//! Batch normalisation of the rows of `[n, c]` node states, in four kernels: the columns' batch
//! statistics (mean, biased variance and `1 / sqrt(var + eps)`, two passes over the column so
//! that the variance does not lose its digits to the mean), the normalisation with the affine
//! map, and for the backward pass the columns' sums of `dy` and `dy * x_hat` and the input's
//! gradient
//! `dx = gamma / std * (dy - sum(dy) / n - x_hat * sum(dy * x_hat) / n)`.
//! Burn's `BatchNorm` composes about twenty tensor ops forward and as many backward; at the
//! small batches of graph classification each launch costs more than its arithmetic.
//!
//! All arithmetic is in f32 whatever the states' type; the statistics and the affine
//! parameters are f32 arrays of `c` entries. The running statistics' update is in
//! `running.rs`.

mod running;

pub use running::launch_running_stats;

use crate::device::cube_count;
use cubecl::prelude::*;

/// Columns per cube of the column kernels (consecutive threads read consecutive columns; the
/// kernels spell the 32 out).
const COLS: u32 = 32;
/// Row lanes per cube of the column kernels (spelt out as 8 in the kernels).
const ROWS: u32 = 8;
/// Threads per cube of the element-wise kernels.
const THREADS: u32 = 256;

/// The sum over the row lanes of one column's partial value (all threads call it; every
/// thread gets the column's total).
#[cube]
fn column_total(value: f32, smem: &mut SharedMemory<f32>) -> f32 {
    let x = UNIT_POS_X;
    smem[(UNIT_POS_Y * 32u32 + x) as usize] = value;
    sync_cube();
    if UNIT_POS_Y == 0 {
        let mut t = 0.0f32;
        let mut k = 0u32;
        while k < 8u32 {
            t += smem[(k * 32u32 + x) as usize];
            k += 1u32;
        }
        smem[(256u32 + x) as usize] = t;
    }
    sync_cube();
    let t = smem[(256u32 + x) as usize];
    // the slots are written again only after every thread has read its total
    sync_cube();
    t
}

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn column_stats<F: Float>(
    x: &Tensor<F>,
    mean: &mut Array<f32>,
    invstd: &mut Array<f32>,
    var: &mut Array<f32>,
    n: usize,
    eps: f32,
    #[define(F)] _dtype: StorageType,
) {
    let mut smem = SharedMemory::<f32>::new(288usize);
    let col = CUBE_POS * 32usize + UNIT_POS_X as usize;
    let c = x.shape(1);
    // columns past the end still take part in the reductions (uniform control flow)
    let valid = col < c;
    let rs = x.stride(0);
    let count = f32::cast_from(n);
    let mut s = 0.0f32;
    if valid {
        let mut i = UNIT_POS_Y as usize;
        while i < n {
            s += f32::cast_from(x[i * rs + col]);
            i += 8usize;
        }
    }
    let m = column_total(s, &mut smem) / count;
    let mut q = 0.0f32;
    if valid {
        let mut i = UNIT_POS_Y as usize;
        while i < n {
            let d = f32::cast_from(x[i * rs + col]) - m;
            q += d * d;
            i += 8usize;
        }
    }
    let v = column_total(q, &mut smem) / count;
    if valid && UNIT_POS_Y == 0 {
        mean[col] = m;
        var[col] = v;
        invstd[col] = 1.0f32 / f32::sqrt(v + eps);
    }
}

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn normalize<F: Float>(
    x: &Tensor<F>,
    mean: &Array<f32>,
    invstd: &Array<f32>,
    gamma: &Array<f32>,
    beta: &Array<f32>,
    y: &mut Tensor<F>,
    c: usize,
    len: usize,
    #[define(F)] _dtype: StorageType,
) {
    let p = ABSOLUTE_POS;
    if p >= len {
        terminate!();
    }
    let row = p / c;
    let j = p - row * c;
    let v = (f32::cast_from(x[row * x.stride(0) + j]) - mean[j]) * invstd[j] * gamma[j] + beta[j];
    y[row * y.stride(0) + j] = F::cast_from(v);
}

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn column_grad_sums<F: Float>(
    x: &Tensor<F>,
    dy: &Tensor<F>,
    mean: &Array<f32>,
    invstd: &Array<f32>,
    sum_dy: &mut Array<f32>,
    sum_dy_xhat: &mut Array<f32>,
    n: usize,
    #[define(F)] _dtype: StorageType,
) {
    let mut smem = SharedMemory::<f32>::new(288usize);
    let col = CUBE_POS * 32usize + UNIT_POS_X as usize;
    let c = x.shape(1);
    let valid = col < c;
    let xs = x.stride(0);
    let ds = dy.stride(0);
    let mut a = 0.0f32;
    let mut b = 0.0f32;
    if valid {
        let m = mean[col];
        let r = invstd[col];
        let mut i = UNIT_POS_Y as usize;
        while i < n {
            let g = f32::cast_from(dy[i * ds + col]);
            a += g;
            b += g * (f32::cast_from(x[i * xs + col]) - m) * r;
            i += 8usize;
        }
    }
    let a = column_total(a, &mut smem);
    let b = column_total(b, &mut smem);
    if valid && UNIT_POS_Y == 0 {
        sum_dy[col] = a;
        sum_dy_xhat[col] = b;
    }
}

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn input_grad<F: Float>(
    x: &Tensor<F>,
    dy: &Tensor<F>,
    mean: &Array<f32>,
    invstd: &Array<f32>,
    gamma: &Array<f32>,
    sum_dy: &Array<f32>,
    sum_dy_xhat: &Array<f32>,
    dx: &mut Tensor<F>,
    c: usize,
    len: usize,
    count: f32,
    #[define(F)] _dtype: StorageType,
) {
    let p = ABSOLUTE_POS;
    if p >= len {
        terminate!();
    }
    let row = p / c;
    let j = p - row * c;
    let r = invstd[j];
    let xhat = (f32::cast_from(x[row * x.stride(0) + j]) - mean[j]) * r;
    let g = f32::cast_from(dy[row * dy.stride(0) + j]);
    let v = gamma[j] * r * (g - sum_dy[j] / count - xhat * sum_dy_xhat[j] / count);
    dx[row * dx.stride(0) + j] = F::cast_from(v);
}

fn column_launch<R: Runtime>(client: &ComputeClient<R>, c: usize) -> (CubeCount, CubeDim) {
    (cube_count(client, c.div_ceil(COLS as usize)), CubeDim::new_2d(COLS, ROWS))
}

fn element_launch<R: Runtime>(client: &ComputeClient<R>, len: usize) -> (CubeCount, CubeDim) {
    (cube_count(client, len.div_ceil(THREADS as usize)), CubeDim::new_1d(THREADS))
}

/// Writes the columns' batch mean, `1 / sqrt(var + eps)` and biased variance of `x` (`[n, c]`,
/// `n >= 1`, dtype `dtype`) into `mean`, `invstd` and `var` (`[c]` f32 each).
pub fn launch_stats<R: Runtime>(
    client: &ComputeClient<R>,
    x: TensorBinding<R>,
    stats: [TensorBinding<R>; 3],
    eps: f32,
    dtype: StorageType,
) {
    let (n, c) = (x.shape[0], x.shape[1]);
    if n == 0 || c == 0 {
        return;
    }
    let [mean, invstd, var] = stats;
    let (count, dim) = column_launch(client, c);
    unsafe {
        column_stats::launch_unchecked::<R>(
            client,
            count,
            dim,
            x.into_tensor_arg(),
            mean.into_array_arg(),
            invstd.into_array_arg(),
            var.into_array_arg(),
            n,
            eps,
            dtype,
        );
    }
}

/// Writes `y = (x - mean) * invstd * gamma + beta` (per column; `x` and `y` `[n, c]` of dtype
/// `dtype`, the rest `[c]` f32).
pub fn launch_normalize<R: Runtime>(
    client: &ComputeClient<R>,
    x: TensorBinding<R>,
    columns: [TensorBinding<R>; 4],
    y: TensorBinding<R>,
    dtype: StorageType,
) {
    let (n, c) = (x.shape[0], x.shape[1]);
    let len = n * c;
    if len == 0 {
        return;
    }
    let [mean, invstd, gamma, beta] = columns;
    let (count, dim) = element_launch(client, len);
    unsafe {
        normalize::launch_unchecked::<R>(
            client,
            count,
            dim,
            x.into_tensor_arg(),
            mean.into_array_arg(),
            invstd.into_array_arg(),
            gamma.into_array_arg(),
            beta.into_array_arg(),
            y.into_tensor_arg(),
            c,
            len,
            dtype,
        );
    }
}

/// The backward pass from `dy` (`[n, c]`, dtype `dtype`, like `x`): writes the columns' sums of
/// `dy` and of `dy * x_hat` into `sums` (`[c]` f32 each: the gradients of `beta` and `gamma`),
/// then `dx` (`[n, c]`, dtype `dtype`) from them, `mean`, `invstd` and `gamma`.
#[allow(clippy::too_many_arguments)]
pub fn launch_grad<R: Runtime>(
    client: &ComputeClient<R>,
    x: TensorBinding<R>,
    dy: TensorBinding<R>,
    columns: [TensorBinding<R>; 3],
    sums: [TensorBinding<R>; 2],
    dx: TensorBinding<R>,
    dtype: StorageType,
) {
    let (n, c) = (x.shape[0], x.shape[1]);
    if n == 0 || c == 0 {
        return;
    }
    let [mean, invstd, gamma] = columns;
    let [sum_dy, sum_dy_xhat] = sums;
    let (count, dim) = column_launch(client, c);
    unsafe {
        column_grad_sums::launch_unchecked::<R>(
            client,
            count,
            dim,
            x.clone().into_tensor_arg(),
            dy.clone().into_tensor_arg(),
            mean.clone().into_array_arg(),
            invstd.clone().into_array_arg(),
            sum_dy.clone().into_array_arg(),
            sum_dy_xhat.clone().into_array_arg(),
            n,
            dtype,
        );
    }
    let len = n * c;
    let (count, dim) = element_launch(client, len);
    unsafe {
        input_grad::launch_unchecked::<R>(
            client,
            count,
            dim,
            x.into_tensor_arg(),
            dy.into_tensor_arg(),
            mean.into_array_arg(),
            invstd.into_array_arg(),
            gamma.into_array_arg(),
            sum_dy.into_array_arg(),
            sum_dy_xhat.into_array_arg(),
            dx.into_tensor_arg(),
            c,
            len,
            n as f32,
            dtype,
        );
    }
}

/// CPU reference (f64) of the statistics: the columns' means and biased variances of
/// row-major `[n, c]` states, each summed in row order.
pub fn reference_stats(x: &[f64], c: usize) -> (Vec<f64>, Vec<f64>) {
    let n = (x.len() / c.max(1)).max(1) as f64;
    let mut mean = vec![0.0; c];
    for row in x.chunks_exact(c.max(1)) {
        mean.iter_mut().zip(row).for_each(|(m, v)| *m += v);
    }
    mean.iter_mut().for_each(|m| *m /= n);
    let mut var = vec![0.0; c];
    for row in x.chunks_exact(c.max(1)) {
        var.iter_mut().zip(row.iter().zip(&mean)).for_each(|(s, (v, m))| *s += (v - m) * (v - m));
    }
    var.iter_mut().for_each(|s| *s /= n);
    (mean, var)
}

/// CPU reference (f64) of the backward pass with the batch's own statistics (`mean`, and
/// `invstd = 1 / sqrt(var + eps)`): `(dx, dgamma, dbeta)` with `dbeta = sum dy`,
/// `dgamma = sum dy * xhat` (row order) and
/// `dx = (dy - dbeta / n - xhat * dgamma / n) * invstd * gamma`.
pub fn reference_grad(
    x: &[f64],
    dy: &[f64],
    mean: &[f64],
    invstd: &[f64],
    gamma: &[f64],
    c: usize,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let n = (x.len() / c.max(1)).max(1) as f64;
    let (mut dgamma, mut dbeta) = (vec![0.0; c], vec![0.0; c]);
    for (xr, dr) in x.chunks_exact(c.max(1)).zip(dy.chunks_exact(c.max(1))) {
        for j in 0..c {
            dbeta[j] += dr[j];
            dgamma[j] += dr[j] * (xr[j] - mean[j]) * invstd[j];
        }
    }
    let mut dx = vec![0.0; x.len()];
    for ((o, xr), dr) in dx.chunks_exact_mut(c.max(1)).zip(x.chunks_exact(c.max(1))).zip(dy.chunks_exact(c.max(1))) {
        for j in 0..c {
            let xhat = (xr[j] - mean[j]) * invstd[j];
            o[j] = (dr[j] - dbeta[j] / n - xhat * dgamma[j] / n) * invstd[j] * gamma[j];
        }
    }
    (dx, dgamma, dbeta)
}

/// CPU reference (f64) on row-major `[n, c]` states: `(y, dx, dgamma, dbeta)` for the affine
/// parameters `gamma`, `beta` and the output gradient `dy` ([`reference_stats`], then
/// [`reference_grad`]).
pub fn reference(
    x: &[f64],
    c: usize,
    gamma: &[f64],
    beta: &[f64],
    dy: &[f64],
    eps: f64,
) -> (Vec<f64>, Vec<f64>, Vec<f64>, Vec<f64>) {
    let (mean, var) = reference_stats(x, c);
    let invstd: Vec<f64> = var.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
    let mut y = vec![0.0; x.len()];
    for (o, xr) in y.chunks_exact_mut(c.max(1)).zip(x.chunks_exact(c.max(1))) {
        for j in 0..c {
            o[j] = (xr[j] - mean[j]) * invstd[j] * gamma[j] + beta[j];
        }
    }
    let (dx, dgamma, dbeta) = reference_grad(x, dy, &mean, &invstd, gamma, c);
    (y, dx, dgamma, dbeta)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The pieces against values worked by hand and a central difference.
    #[test]
    fn stats_and_gradient_match_the_definitions() {
        // two columns, three rows
        let x = [1.0, 10.0, 3.0, 14.0, 5.0, 12.0];
        let (mean, var) = reference_stats(&x, 2);
        assert_eq!(mean, vec![3.0, 12.0]);
        assert!((var[0] - 8.0 / 3.0).abs() < 1e-12 && (var[1] - 8.0 / 3.0).abs() < 1e-12, "{var:?}");
        let invstd: Vec<f64> = var.iter().map(|v| 1.0 / v.sqrt()).collect();
        let dy = [1.0, 0.0, 0.0, 0.0, 0.0, 0.0];
        let gamma = [2.0, 1.0];
        let (dx, dgamma, dbeta) = reference_grad(&x, &dy, &mean, &invstd, &gamma, 2);
        assert_eq!(dbeta, vec![1.0, 0.0]);
        assert!((dgamma[0] - (1.0 - 3.0) * invstd[0]).abs() < 1e-12);
        // finite differences of sum(dy * y) in x[0]
        let f = |x0: f64| {
            let xs = [x0, 3.0, 5.0];
            let m = xs.iter().sum::<f64>() / 3.0;
            let v = xs.iter().map(|a| (a - m) * (a - m)).sum::<f64>() / 3.0;
            (x0 - m) / v.sqrt() * 2.0
        };
        let h = 1e-6;
        let want = (f(1.0 + h) - f(1.0 - h)) / (2.0 * h);
        assert!((dx[0] - want).abs() < 1e-6, "{} vs {want}", dx[0]);
        assert_eq!(dx[1], 0.0);
    }

    /// The reference's input gradient against central differences of `sum(y * dy)`.
    #[test]
    fn reference_gradient_matches_finite_differences() {
        let (n, c) = (5usize, 3usize);
        let x: Vec<f64> = (0..n * c).map(|k| ((k * 37 % 11) as f64 - 5.0) * 0.3).collect();
        let dy: Vec<f64> = (0..n * c).map(|k| ((k * 13 % 7) as f64 - 3.0) * 0.5).collect();
        let (gamma, beta) = (vec![1.5, -0.5, 2.0], vec![0.1, 0.2, -0.3]);
        let (_, dx, dgamma, dbeta) = reference(&x, c, &gamma, &beta, &dy, 1e-5);
        let loss = |x: &[f64], g: &[f64], b: &[f64]| {
            let (y, ..) = reference(x, c, g, b, &dy, 1e-5);
            y.iter().zip(&dy).map(|(a, b)| a * b).sum::<f64>()
        };
        let h = 1e-6;
        for k in 0..n * c {
            let (mut a, mut b) = (x.clone(), x.clone());
            a[k] += h;
            b[k] -= h;
            let fd = (loss(&a, &gamma, &beta) - loss(&b, &gamma, &beta)) / (2.0 * h);
            assert!((fd - dx[k]).abs() < 1e-6, "dx[{k}]: {fd} against {}", dx[k]);
        }
        for j in 0..c {
            let (mut a, mut b) = (gamma.clone(), gamma.clone());
            a[j] += h;
            b[j] -= h;
            let fd = (loss(&x, &a, &beta) - loss(&x, &b, &beta)) / (2.0 * h);
            assert!((fd - dgamma[j]).abs() < 1e-6, "dgamma[{j}]");
            let (mut a, mut b) = (beta.clone(), beta.clone());
            a[j] += h;
            b[j] -= h;
            let fd = (loss(&x, &gamma, &a) - loss(&x, &gamma, &b)) / (2.0 * h);
            assert!((fd - dbeta[j]).abs() < 1e-6, "dbeta[{j}]");
        }
    }
}
