//! Timed loops (median, minimum and 90th percentile of the runs) and the helpers that check
//! a result against the CPU reference.

use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use burn_sparse_gnn::Csr;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::time::Instant;

pub(super) struct Stats {
    pub(super) median: f64,
    pub(super) min: f64,
    pub(super) p90: f64,
}

impl Stats {
    /// The figures of a sample of `calls` calls as the figures of one call.
    pub(super) fn per_call(self, calls: usize) -> Stats {
        let c = calls.max(1) as f64;
        Stats { median: self.median / c, min: self.min / c, p90: self.p90 / c }
    }
}

pub(super) fn time<B: Backend, T>(device: &B::Device, warmup: usize, runs: usize, mut f: impl FnMut() -> T) -> Stats {
    for _ in 0..warmup {
        let out = f();
        B::sync(device).expect("device sync");
        drop(out);
    }
    let mut t = Vec::with_capacity(runs);
    for _ in 0..runs {
        B::sync(device).expect("device sync");
        let start = Instant::now();
        let out = f();
        B::sync(device).expect("device sync");
        t.push(start.elapsed().as_secs_f64() * 1e3);
        drop(out);
    }
    t.sort_by(|a, b| a.total_cmp(b));
    let q = |p: f64| t[((t.len() - 1) as f64 * p).round() as usize];
    Stats { median: q(0.5), min: t[0], p90: q(0.9) }
}

/// Median, min and 90th percentile of one call of `f` in ms, each sample the mean over `batch`
/// calls queued back to back between two device synchronisations: the device time of an op
/// of a fraction of a millisecond, without a host round trip per call in it (what the dense
/// products are timed with, as the peer script times cuBLAS).
pub(super) fn time_batched<B: Backend, T>(
    device: &B::Device,
    warmup: usize,
    runs: usize,
    batch: usize,
    mut f: impl FnMut() -> T,
) -> Stats {
    let batch = batch.max(1);
    time::<B, _>(device, warmup, runs, || {
        for _ in 0..batch - 1 {
            drop(f());
        }
        f()
    })
    .per_call(batch)
}

/// A tensor's values as f64 on the host.
pub fn host<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f64> {
    t.into_data().convert::<f64>().into_vec::<f64>().expect("f64")
}

/// Rows to check against the reference: the longest row, an empty one if any, and a spread.
pub(super) fn check_rows(adj: &Csr, count: usize) -> Vec<usize> {
    let deg = adj.row_degrees();
    let n = adj.n_rows();
    let mut rows: Vec<usize> = (0..count).map(|i| i * n / count.max(1)).collect();
    if let Some((hub, _)) = deg.iter().enumerate().max_by_key(|(_, d)| **d) {
        rows.push(hub);
    }
    if let Some(e) = deg.iter().position(|&d| d == 0) {
        rows.push(e);
    }
    rows.sort_unstable();
    rows.dedup();
    rows
}

pub(super) fn rel_err(got: &[f64], want: &[f64]) -> f64 {
    burn_sparse_gnn::conformance::normwise_error(got, want)
}

pub(super) fn random_matrix<B: Backend>(n: usize, f: usize, seed: u64, device: &B::Device) -> (Tensor<B, 2>, Vec<f32>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let v: Vec<f32> = (0..n * f).map(|_| rng.random::<f32>() * 2.0 - 1.0).collect();
    let t = Tensor::from_data(TensorData::new(v.clone(), [n, f]), (device, burn::tensor::DType::F32));
    (t, v)
}
