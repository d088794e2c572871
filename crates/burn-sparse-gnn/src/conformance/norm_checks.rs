//! Batch normalisation on a backend against the CPU reference of the kernels crate.

use super::measure::normwise_error;
use crate::backend::SparseGnnBackend;
use crate::random::random_values;
use burn::tensor::{Tensor, TensorData, TensorPrimitive};
use sparse_gnn_kernels::norm as kernel;

fn host<B: SparseGnnBackend, const D: usize>(t: burn::tensor::ops::FloatTensor<B>) -> Vec<f64> {
    Tensor::<B, D>::from_primitive(TensorPrimitive::Float(t))
        .into_data()
        .convert::<f64>()
        .into_vec()
        .unwrap_or_default()
}

/// `batch_norm_stats`, `batch_norm_apply` and `batch_norm_grad` of `B` against the reference on
/// `[n, c]` states of 1 x 1, 7 x 5, 1,031 x 33 and 3,000 x 64 (columns 31 units off zero, one
/// constant column: variance 0), and `batch_norm_running` (the running statistics' update) on 1,
/// 33 and 300 columns. Returns `(case, normwise error)`, the largest over `y`, `dx`, `dgamma`
/// and `dbeta` (the means and variances for the update); all at f32 rounding level: the kernels'
/// two passes per column stay near 1e-6 on wgpu, Burn's composed ops on the CPU reach 1.6e-5 at
/// 3,000 rows (the input gradient's cancellations).
pub fn norm_checks<B: SparseGnnBackend>(device: &B::Device) -> Vec<(String, Option<f64>)> {
    let mut out = Vec::new();
    let eps = 1e-5;
    for (n, c) in [(1usize, 1usize), (7, 5), (1_031, 33), (3_000, 64)] {
        let mut x = random_values(n * c, 71 + n as u64);
        for (k, v) in x.iter_mut().enumerate() {
            *v = if k % c == c / 2 && c > 1 { 2.5 } else { *v * 3.0 + 31.0 * ((k % c) as f64 / c as f64 - 0.5) };
        }
        let x: Vec<f64> = x.iter().map(|&v| v as f32 as f64).collect();
        let dy: Vec<f64> = random_values(n * c, 72 + n as u64).iter().map(|&v| v as f32 as f64).collect();
        let gamma: Vec<f64> = random_values(c, 73).iter().map(|&v| (1.0 + v) as f32 as f64).collect();
        let beta: Vec<f64> = random_values(c, 74).iter().map(|&v| v as f32 as f64).collect();
        let (y, dx, dgamma, dbeta) = kernel::reference(&x, c, &gamma, &beta, &dy, eps);
        let dev2 = |v: &[f64]| {
            let v: Vec<f32> = v.iter().map(|&a| a as f32).collect();
            Tensor::<B, 2>::from_data(TensorData::new(v, [n, c]), device).into_primitive().tensor()
        };
        let dev1 = |v: &[f64]| {
            let v: Vec<f32> = v.iter().map(|&a| a as f32).collect();
            Tensor::<B, 1>::from_data(TensorData::new(v, [c]), device).into_primitive().tensor()
        };
        let (mean, invstd, _) = B::batch_norm_stats(dev2(&x), eps);
        let got_y = B::batch_norm_apply(dev2(&x), mean.clone(), invstd.clone(), dev1(&gamma), dev1(&beta));
        let (got_dx, got_dgamma, got_dbeta) = B::batch_norm_grad(dev2(&x), dev2(&dy), mean, invstd, dev1(&gamma));
        let err = [
            normwise_error(&host::<B, 2>(got_y), &y),
            normwise_error(&host::<B, 2>(got_dx), &dx),
            normwise_error(&host::<B, 1>(got_dgamma), &dgamma),
            normwise_error(&host::<B, 1>(got_dbeta), &dbeta),
        ]
        .into_iter()
        .fold(0.0, f64::max);
        out.push((format!("batch norm, {n} x {c}"), Some(err)));
    }
    // the running statistics' update, momentum 0.1 (Burn's default) and 1
    for (c, momentum) in [(1usize, 0.1), (33, 0.1), (300, 1.0)] {
        let vals = |seed: u64, scale: f64| -> Vec<f64> {
            random_values(c, seed).iter().map(|&v| (v * scale) as f32 as f64).collect()
        };
        let [old_mean, old_var, mean, var] = [vals(81, 5.0), vals(82, 2.0), vals(83, 5.0), vals(84, 2.0)];
        let dev1 = |v: &[f64]| {
            let v: Vec<f32> = v.iter().map(|&a| a as f32).collect();
            Tensor::<B, 1>::from_data(TensorData::new(v, [c]), device).into_primitive().tensor()
        };
        let blend = |old: &[f64], new: &[f64]| -> Vec<f64> {
            old.iter().zip(new).map(|(o, n)| o * (1.0 - momentum) + n * momentum).collect()
        };
        let (got_mean, got_var) =
            B::batch_norm_running(dev1(&old_mean), dev1(&old_var), dev1(&mean), dev1(&var), momentum);
        let err = normwise_error(&host::<B, 1>(got_mean), &blend(&old_mean, &mean))
            .max(normwise_error(&host::<B, 1>(got_var), &blend(&old_var, &var)));
        out.push((format!("running statistics, {c} columns, momentum {momentum}"), Some(err)));
    }
    out
}
