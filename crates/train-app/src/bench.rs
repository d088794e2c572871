//! `bench`: kernel timings on a given or generated graph, checked against the CPU reference
//! first, written as JSON lines in the results format of `bench/README.md`.

use crate::backend::Job;
use crate::error::{AppError, Result};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Tensor, TensorData};
use burn_sparse_gnn::dense::DenseOps;
use burn_sparse_gnn::kernels::maxk::reference as maxk_ref;
use burn_sparse_gnn::kernels::sample::reference as sample_ref;
use burn_sparse_gnn::{
    ops, Csr, Graph, GraphOptions, KernelPolicy, PoolLayout, PoolSpec, Reduce, SampleSpec, Sampling,
    SparseGnnAutodiffBackend, SparseGnnBackend, SspmmStrategy,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

/// One result line (the project's results format, plus a few descriptive fields).
#[derive(Clone, Debug, Serialize)]
pub struct Record {
    pub op: String,
    #[serde(rename = "impl")]
    pub implementation: String,
    pub graph: String,
    pub nodes: usize,
    pub edges: usize,
    pub width: usize,
    pub k: Option<usize>,
    pub dtype: String,
    pub model: Option<String>,
    pub nonlin: Option<String>,
    pub median_ms: f64,
    pub runs: usize,
    pub peak_bytes: Option<u64>,
    pub commit: String,
    pub device: String,
    /// Kernel variant (e.g. `gather`, `outer-atomic`, `bucket`).
    pub variant: Option<String>,
    /// Minimum and 90th percentile of the runs.
    pub min_ms: f64,
    pub p90_ms: f64,
    /// Bytes the kernel moves under its traffic model (see `bench/README.md`) and the rate.
    pub bytes: Option<u64>,
    pub gbps: Option<f64>,
    /// Normwise error of the checked rows against the CPU reference.
    pub check_error: Option<f64>,
    /// ES-SpMM: fraction of the edges kept.
    pub kept_fraction: Option<f64>,
    /// The launch shape in short (`gw=… hot=… pools=…`); `shape` holds all of it.
    pub tuning: String,
    /// Training epochs: the largest device memory in use by live tensors after an epoch (the
    /// measure comparable to `torch.cuda.max_memory_allocated`); `peak_bytes` is the reserved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_in_use_bytes: Option<u64>,
    /// Training epochs on CUDA: the largest device memory in use as the driver reports it
    /// (`total - free`, sampled with `peak_in_use_bytes`) less what was in use before the run's
    /// graph and model were set up: every pool and driver cache of the run, and the libraries'
    /// handles and workspaces created during it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_peak_bytes: Option<u64>,
    /// SpMM: how much of the graph's traffic its most-read columns take (what the hot-column
    /// split heuristic reads).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hot_stats: Option<burn_sparse_gnn::kernels::csr::HotStats>,
    /// The launch shape that ran: the graph's resolved options, the kernel configuration
    /// (`auto` or forced fields) and, for the SpMM, the resolved feature tile and whether the
    /// hot-column split ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<Shape>,
    /// Training epochs on a partitioned graph: the number of devices (absent: one).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub devices: Option<usize>,
    /// Training epochs on a partitioned graph: parts, cut edges, halo rows, bytes exchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<serde_json::Value>,
    /// Training epochs: the device memory estimate of the run (`gnn_models::memory`), to compare
    /// with `peak_in_use_bytes`; over parts, that of the device that needs the most
    /// (`partitioned::estimate_per_device`), to compare with the largest of the partition's
    /// `reserved_bytes_per_device`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate: Option<gnn_models::memory::MemoryEstimate>,
}

/// The launch shape of a record (see [`Record::shape`]).
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct Shape {
    /// What the graph's options resolved to.
    pub graph: Option<ResolvedGraph>,
    /// The kernel configuration as given (fields `auto` or forced).
    pub kernels: burn_sparse_gnn::KernelConfig,
    /// SpMM: features per tile of the single pass (resolved), if it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spmm_tile_features: Option<usize>,
    /// SpMM: whether the hot-column split ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hot_split: Option<bool>,
    /// Device memory pools (`exact` or `pooled`).
    pub pools: String,
}

/// [`burn_sparse_gnn::GraphShape`] in a record.
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct ResolvedGraph {
    pub group_width: usize,
    pub cbsr_group_width: usize,
    pub hot_cols: usize,
    pub hot_cols_transpose: usize,
    pub cold_group_width: usize,
}

impl From<burn_sparse_gnn::GraphShape> for ResolvedGraph {
    fn from(s: burn_sparse_gnn::GraphShape) -> Self {
        Self {
            group_width: s.group_width,
            cbsr_group_width: s.cbsr_group_width,
            hot_cols: s.hot_cols,
            hot_cols_transpose: s.hot_cols_transpose,
            cold_group_width: s.cold_group_width,
        }
    }
}

/// Name of the device memory pool mode of this process.
pub fn pools_name() -> String {
    match burn_sparse_gnn::memory::pool_mode() {
        burn_sparse_gnn::memory::PoolMode::Exact => "exact",
        burn_sparse_gnn::memory::PoolMode::Pooled => "pooled",
    }
    .into()
}

/// The vector width (elements) the kernels read `width` features of `elem` bytes with on a
/// device of 16-byte loads (CUDA, wgpu): the widest power of two up to 16 bytes dividing it.
pub fn vector_elems(width: usize, elem: usize) -> usize {
    let mut v = (16 / elem.max(1)).max(1);
    while v > 1 && width % v != 0 {
        v /= 2;
    }
    v
}

/// A short human-readable form of a shape (`gw=64 hot=0 pools=exact`, plus the forced
/// kernel fields).
pub fn tuning_string(shape: &Shape) -> String {
    let mut t = String::new();
    if let Some(g) = &shape.graph {
        t.push_str(&format!("gw={} hot={} ", g.group_width, g.hot_cols));
    }
    if let Some(tile) = shape.spmm_tile_features {
        t.push_str(&format!("tile={tile} "));
    }
    if shape.kernels != burn_sparse_gnn::KernelConfig::default() {
        t.push_str(&format!("kernels={} ", serde_json::to_string(&shape.kernels).unwrap_or_default()));
    }
    t.push_str(&format!("pools={}", shape.pools));
    t
}

/// The git commit the binary was built from.
pub fn commit() -> String {
    option_env!("SGNN_GIT_COMMIT").unwrap_or("unknown").to_string()
}

/// What to benchmark.
#[derive(Clone, Debug)]
pub struct Bench {
    pub graph_name: String,
    pub adj: Csr,
    pub ops: Vec<String>,
    pub widths: Vec<usize>,
    pub ks: Vec<usize>,
    pub samples: Vec<usize>,
    pub runs: usize,
    pub warmup: usize,
    pub out: Option<PathBuf>,
    /// Options of the device graph (group widths, hot-column split, kernel configuration).
    pub options: GraphOptions,
    pub device_name: Option<String>,
    /// Storage types of the SpMM timings (`f32`, `f16`, `bf16`).
    pub dtypes: Vec<String>,
}

struct Stats {
    median: f64,
    min: f64,
    p90: f64,
}

impl Stats {
    /// The figures of a sample of `calls` calls as the figures of one call.
    fn per_call(self, calls: usize) -> Stats {
        let c = calls.max(1) as f64;
        Stats { median: self.median / c, min: self.min / c, p90: self.p90 / c }
    }
}

fn time<B: Backend, T>(device: &B::Device, warmup: usize, runs: usize, mut f: impl FnMut() -> T) -> Stats {
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
fn time_batched<B: Backend, T>(
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
fn check_rows(adj: &Csr, count: usize) -> Vec<usize> {
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

fn rel_err(got: &[f64], want: &[f64]) -> f64 {
    burn_sparse_gnn::conformance::normwise_error(got, want)
}

fn random_matrix<B: Backend>(n: usize, f: usize, seed: u64, device: &B::Device) -> (Tensor<B, 2>, Vec<f32>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let v: Vec<f32> = (0..n * f).map(|_| rng.random::<f32>() * 2.0 - 1.0).collect();
    let t = Tensor::from_data(TensorData::new(v.clone(), [n, f]), (device, burn::tensor::DType::F32));
    (t, v)
}

impl Bench {
    fn record(&self, op: &str, width: usize, k: Option<usize>, s: &Stats, device: &str) -> Record {
        Record {
            op: op.into(),
            implementation: "ours".into(),
            graph: self.graph_name.clone(),
            nodes: self.adj.n_rows(),
            edges: self.adj.nnz(),
            width,
            k,
            dtype: "f32".into(),
            model: None,
            nonlin: None,
            median_ms: s.median,
            runs: self.runs,
            peak_bytes: None,
            commit: commit(),
            device: device.into(),
            variant: None,
            min_ms: s.min,
            p90_ms: s.p90,
            bytes: None,
            gbps: None,
            check_error: None,
            kept_fraction: None,
            tuning: String::new(),
            peak_in_use_bytes: None,
            device_peak_bytes: None,
            hot_stats: None,
            shape: None,
            devices: None,
            partition: None,
            estimate: None,
        }
    }

    fn wants(&self, op: &str) -> bool {
        self.ops.iter().any(|o| o == op || o == "all")
    }

    fn run_inner<B: SparseGnnBackend>(
        &self,
        device: &B::Device,
        backend: &str,
        emit: &mut dyn FnMut(Record) -> Result<()>,
    ) -> Result<()> {
        let dev_name = self.device_name.clone().unwrap_or_else(|| backend.to_string());
        let csr = self.adj.as_ref();
        let (n, m, nnz) = (self.adj.n_rows(), self.adj.n_cols(), self.adj.nnz());
        let setup = Instant::now();
        let g = Graph::<B>::new(&self.adj, device, self.options);
        let graph_shape = g.shape();
        let base_shape = Shape {
            graph: Some(graph_shape.into()),
            kernels: self.options.kernels,
            spmm_tile_features: None,
            hot_split: None,
            pools: pools_name(),
        };
        let mut emit = |mut r: Record| {
            if r.shape.is_none() {
                r.shape = Some(base_shape.clone());
            }
            r.tuning = tuning_string(r.shape.as_ref().expect("set above"));
            emit(r)
        };
        eprintln!(
            "graph {}: {n} nodes, {nnz} edges, device setup {:.2} s",
            self.graph_name,
            setup.elapsed().as_secs_f64()
        );
        if let Some(h) = &g.prim().csr.hot {
            eprintln!(
                "hot-column split: {} columns receive {} edges ({:.1} %)",
                h.len,
                h.nnz,
                100.0 * h.nnz as f64 / nnz.max(1) as f64
            );
        }
        let hot_stats =
            burn_sparse_gnn::kernels::csr::HotStats::new(&csr, burn_sparse_gnn::kernels::heuristics::HOT_COLS);
        eprintln!(
            "top {} columns: {} edges ({:.1} %), {:.1} per row with any",
            hot_stats.hot_cols,
            hot_stats.hot_edges,
            100.0 * hot_stats.share(),
            hot_stats.hot_per_row()
        );
        let rows = check_rows(&self.adj, 200);
        let csr_bytes = (n as u64 + 1) * 4 + nnz as u64 * 4;
        let mut full_ms = std::collections::HashMap::new();

        for &w in &self.widths {
            let (x, xh) = random_matrix::<B>(m, w, 11 + w as u64, device);
            if self.wants("spmm") {
                for dname in &self.dtypes {
                    let dt = match dname.as_str() {
                        "f16" => Some(burn::tensor::FloatDType::F16),
                        "bf16" => Some(burn::tensor::FloatDType::BF16),
                        _ => None,
                    };
                    if let Some(d) = dt {
                        if !B::supports_dtype(device, d.into()) {
                            eprintln!("skipped: spmm {dname}: not supported by this device");
                            continue;
                        }
                    }
                    let elem = if dt.is_some() { 2u64 } else { 4 };
                    let xd = match dt {
                        Some(d) => x.clone().cast(d),
                        None => x.clone(),
                    };
                    // the reference reads the stored (rounded) values
                    let xs = host(xd.clone().cast(burn::tensor::FloatDType::F32));
                    let out = host(ops::spmm(&g, xd.clone(), Reduce::Sum).cast(burn::tensor::FloatDType::F32));
                    let mut got = Vec::new();
                    let mut want = Vec::new();
                    for &i in &rows {
                        let mut acc = vec![0.0f64; w];
                        for e in csr.row(i) {
                            let j = csr.col_idx[e] as usize;
                            for c in 0..w {
                                acc[c] += xs[j * w + c];
                            }
                        }
                        want.extend(acc);
                        got.extend_from_slice(&out[i * w..(i + 1) * w]);
                    }
                    let err = rel_err(&got, &want);
                    let hot_before = burn_sparse_gnn::kernels::spmm::hot::hot_launches();
                    let s = time::<B, _>(device, self.warmup, self.runs, || ops::spmm(&g, xd.clone(), Reduce::Sum));
                    let split_ran = burn_sparse_gnn::kernels::spmm::hot::hot_launches() > hot_before;
                    if dt.is_none() {
                        full_ms.insert(w, s.median);
                    }
                    let bytes = csr_bytes + (nnz as u64 + n as u64) * w as u64 * elem;
                    let mut r = self.record("spmm", w, None, &s, &dev_name);
                    r.dtype = dname.clone();
                    r.variant = Some(if split_ran { "sum, hot split" } else { "sum" }.into());
                    r.hot_stats = Some(hot_stats);
                    let tile = (!split_ran).then(|| {
                        let elem = elem as usize;
                        self.options.kernels.spmm.tile_features.resolve(|| {
                            burn_sparse_gnn::kernels::heuristics::spmm_tile_features(m, w, elem, vector_elems(w, elem))
                        })
                    });
                    r.shape =
                        Some(Shape { spmm_tile_features: tile, hot_split: Some(split_ran), ..base_shape.clone() });
                    r.bytes = Some(bytes);
                    r.gbps = Some(bytes as f64 / s.median / 1e6);
                    r.check_error = Some(err);
                    emit(r)?;
                }
            }
            if self.wants("sddmm") {
                let (a, _) = random_matrix::<B>(n, w, 5 + w as u64, device);
                let s = time::<B, _>(device, self.warmup, self.runs, || ops::sddmm(&g, a.clone(), x.clone()));
                let bytes = csr_bytes + nnz as u64 * (w as u64 * 4 + 4) + n as u64 * w as u64 * 4;
                let mut r = self.record("sddmm", w, None, &s, &dev_name);
                r.bytes = Some(bytes);
                r.gbps = Some(bytes as f64 / s.median / 1e6);
                emit(r)?;
            }
            if self.wants("sampled") {
                for &sw in &self.samples {
                    for mode in [Sampling::Bucket, Sampling::FastRand] {
                        let spec = SampleSpec { width: sw, mode, seed: 0 };
                        let out = host(ops::sampled_spmm(&g, x.clone(), spec, Reduce::Sum));
                        let scale = sample_ref::edge_scale(&csr, &spec, Reduce::Sum);
                        let kept: f64 = scale.iter().filter(|&&v| v > 0.0).count() as f64;
                        let mut got = Vec::new();
                        let mut want = Vec::new();
                        for &i in &rows {
                            let mut acc = vec![0.0f64; w];
                            for e in csr.row(i) {
                                if scale[e] > 0.0 {
                                    let j = csr.col_idx[e] as usize;
                                    for c in 0..w {
                                        acc[c] += xh[j * w + c] as f64;
                                    }
                                }
                            }
                            want.extend(acc);
                            got.extend_from_slice(&out[i * w..(i + 1) * w]);
                        }
                        let s = time::<B, _>(device, self.warmup, self.runs, || {
                            ops::sampled_spmm(&g, x.clone(), spec, Reduce::Sum)
                        });
                        let mut r = self.record("spmm_sampled", w, None, &s, &dev_name);
                        r.variant = Some(format!("{:?}-S{sw}", mode).to_lowercase());
                        r.check_error = Some(rel_err(&got, &want));
                        r.kept_fraction = Some(kept / nnz.max(1) as f64);
                        let bytes = csr_bytes + (kept as u64 + n as u64) * w as u64 * 4;
                        r.bytes = Some(bytes);
                        r.gbps = Some(bytes as f64 / s.median / 1e6);
                        emit(r)?;
                    }
                }
            }
        }
        if let Some(ms) = full_ms.values().next() {
            eprintln!("(spmm full reference time {ms:.3} ms)");
        }

        let dim = 256usize;
        let needs_cbsr = ["maxk", "cbsr_spgemm", "cbsr_sspmm", "maxpool"].iter().any(|o| self.wants(o));
        if needs_cbsr {
            let (h, hh) = random_matrix::<B>(m.max(n), dim, 99, device);
            let h = h.slice([0..m, 0..dim]);
            for &k in &self.ks {
                if self.wants("maxk") {
                    let c = ops::maxk(h.clone(), k);
                    let idx: Vec<f64> = host(c.indices().float());
                    let mut err = 0.0f64;
                    for &i in rows.iter().filter(|&&i| i < m) {
                        let row: Vec<f64> = hh[i * dim..(i + 1) * dim].iter().map(|&v| v as f64).collect();
                        let (_, want) = maxk_ref::maxk(&row, 1, dim, k);
                        let got: Vec<u32> = idx[i * k..(i + 1) * k].iter().map(|&v| v as u32).collect();
                        if got != want {
                            err = 1.0;
                        }
                    }
                    let s = time::<B, _>(device, self.warmup, self.runs, || ops::maxk(h.clone(), k));
                    let mut r = self.record("maxk", dim, Some(k), &s, &dev_name);
                    let bytes = m as u64 * (dim as u64 * 4 + k as u64 * 5);
                    r.bytes = Some(bytes);
                    r.gbps = Some(bytes as f64 / s.median / 1e6);
                    r.check_error = Some(err);
                    emit(r)?;
                }
                let c = ops::maxk(h.clone(), k);
                if self.wants("cbsr_spgemm") {
                    let out = host(ops::cbsr_spgemm(&g, &c));
                    let vals = host(c.values());
                    let idx: Vec<u32> = host(c.indices().float()).into_iter().map(|v| v as u32).collect();
                    let mut got = Vec::new();
                    let mut want = Vec::new();
                    for &i in &rows {
                        let mut acc = vec![0.0f64; dim];
                        for e in csr.row(i) {
                            let j = csr.col_idx[e] as usize;
                            for t in 0..k {
                                acc[idx[j * k + t] as usize] += vals[j * k + t];
                            }
                        }
                        want.extend(acc);
                        got.extend_from_slice(&out[i * dim..(i + 1) * dim]);
                    }
                    let s = time::<B, _>(device, self.warmup, self.runs, || ops::cbsr_spgemm(&g, &c));
                    let mut r = self.record("cbsr_spgemm", dim, Some(k), &s, &dev_name);
                    let bytes = csr_bytes + nnz as u64 * k as u64 * 5 + n as u64 * dim as u64 * 4;
                    r.bytes = Some(bytes);
                    r.gbps = Some(bytes as f64 / s.median / 1e6);
                    r.check_error = Some(rel_err(&got, &want));
                    emit(r)?;
                }
                if self.wants("cbsr_sspmm") {
                    let (dy, dyh) = random_matrix::<B>(n, dim, 123, device);
                    let idx: Vec<u32> = host(c.indices().float()).into_iter().map(|v| v as u32).collect();
                    // reference of a few columns
                    let cols: Vec<usize> = rows.iter().copied().filter(|&j| j < m).collect();
                    let t = burn_sparse_gnn::kernels::csr::transpose(&csr);
                    let mut want = Vec::new();
                    for &j in &cols {
                        let mut acc = vec![0.0f64; k];
                        for q in t.row_ptr[j]..t.row_ptr[j + 1] {
                            let i = t.col_idx[q] as usize;
                            for tt in 0..k {
                                acc[tt] += dyh[i * dim + idx[j * k + tt] as usize] as f64;
                            }
                        }
                        want.extend(acc);
                    }
                    for strategy in [SspmmStrategy::Gather, SspmmStrategy::OuterAtomic] {
                        let opts = GraphOptions {
                            policy: KernelPolicy { sspmm: strategy, spgemm_atomic: false },
                            ..self.options
                        };
                        let gs = Graph::<B>::new(&self.adj, device, opts);
                        let run = |gs: &Graph<B>| {
                            B::cbsr_sspmm(gs.prim(), None, dy.clone().into_primitive().tensor(), c.prim())
                        };
                        let out = host(Tensor::<B, 2>::from_primitive(burn::tensor::TensorPrimitive::Float(run(&gs))));
                        let got: Vec<f64> = cols.iter().flat_map(|&j| out[j * k..(j + 1) * k].to_vec()).collect();
                        let s = time::<B, _>(device, self.warmup, self.runs, || run(&gs));
                        let mut r = self.record("cbsr_sspmm", dim, Some(k), &s, &dev_name);
                        r.variant = Some(match strategy {
                            SspmmStrategy::Gather => "gather".into(),
                            SspmmStrategy::OuterAtomic => "outer-atomic".into(),
                        });
                        let bytes = csr_bytes + nnz as u64 * k as u64 * 5 + n as u64 * dim as u64 * 4;
                        r.bytes = Some(bytes);
                        r.gbps = Some(bytes as f64 / s.median / 1e6);
                        r.check_error = Some(rel_err(&got, &want));
                        emit(r)?;
                    }
                }
            }
            if self.wants("maxpool") {
                for (layout, windows) in [(PoolLayout::OneD, 64usize), (PoolLayout::TwoD, 64)] {
                    let spec = PoolSpec { windows, layout, channels: 1 };
                    let s = time::<B, _>(device, self.warmup, self.runs, || ops::maxpool(h.clone(), spec));
                    let mut r = self.record("maxpool", dim, Some(windows), &s, &dev_name);
                    r.variant = Some(format!("{layout:?}").to_lowercase());
                    emit(r)?;
                }
            }
        }
        Ok(())
    }
}

/// Products per timing sample of `--ops matmul` (see [`time_batched`]).
const MATMUL_BATCH: usize = 10;

impl Bench {
    /// Dense products of a GNN's linear layers over all nodes ([`SparseGnnBackend::dense_product`]:
    /// cuBLAS on CUDA): forward `x w`, the input gradient `dy w^T` and the weight gradient
    /// `x^T dy`, in exact f32 and TF32 on f32 inputs and with f16 / bf16 inputs (f32
    /// accumulation; the output in the half type, and in f32 as the layers use it), each checked
    /// against an f64 product on sampled rows and timed over [`MATMUL_BATCH`] calls per sample;
    /// and a whole linear layer's forward + backward through autodiff (`ops::linear`) in each
    /// precision.
    fn run_matmul<B: SparseGnnAutodiffBackend>(
        &self,
        device: &B::Device,
        backend: &str,
        emit: &mut dyn FnMut(Record) -> Result<()>,
    ) -> Result<()> {
        use burn::tensor::FloatDType;
        use burn_sparse_gnn::dense::{LinearPrecision, ProductMath};
        type I<B> = <B as AutodiffBackend>::InnerBackend;
        let dev_name = self.device_name.clone().unwrap_or_else(|| backend.to_string());
        let n = self.adj.n_rows();
        let modes: [(&str, ProductMath, Option<FloatDType>); 4] = [
            ("f32", ProductMath::F32, None),
            ("tf32", ProductMath::Tf32, None),
            ("f16", ProductMath::F32, Some(FloatDType::F16)),
            ("bf16", ProductMath::F32, Some(FloatDType::BF16)),
        ];
        for (d_in, d_out) in [(256usize, 256usize), (602, 256), (256, 41)] {
            let (x, _) = random_matrix::<I<B>>(n, d_in, 1, device);
            let (w, _) = random_matrix::<I<B>>(d_in, d_out, 2, device);
            let (dy, _) = random_matrix::<I<B>>(n, d_out, 3, device);
            let flops = 2.0 * n as f64 * d_in as f64 * d_out as f64;
            let rows: Vec<usize> = (0..64).map(|i| i * n / 64).collect();
            for (name, math, half) in modes {
                if let Some(h) = half {
                    if !I::<B>::supports_dtype(device, h.into()) {
                        eprintln!("skipped: matmul {name}: not supported by this device");
                        continue;
                    }
                }
                let cast = |t: &Tensor<I<B>, 2>| match half {
                    Some(h) => t.clone().cast(h),
                    None => t.clone(),
                };
                let (xc, wc, dyc) = (cast(&x), cast(&w), cast(&dy));
                // `half_out` (half inputs): the product in their type, as torch.matmul returns
                // it; otherwise the f32 output the layers use ("-f32" variants for half inputs)
                let product = |a: &Tensor<I<B>, 2>, b: &Tensor<I<B>, 2>, ta: bool, tb: bool, half_out: bool| {
                    let (a, b) = (a.clone().into_primitive().tensor(), b.clone().into_primitive().tensor());
                    let p = if half_out {
                        I::<B>::dense_product_half(a, b, ta, tb)
                    } else {
                        I::<B>::dense_product(a, b, ta, tb, math)
                    };
                    Tensor::<I<B>, 2>::from_primitive(burn::tensor::TensorPrimitive::Float(p))
                };
                // the forward product against f64 on sampled rows of the stored (rounded) inputs
                let xs = host(xc.clone().cast(FloatDType::F32));
                let ws = host(wc.clone().cast(FloatDType::F32));
                let want: Vec<f64> = rows
                    .iter()
                    .flat_map(|&r| (0..d_out).map(move |c| (r, c)))
                    .map(|(r, c)| (0..d_in).map(|t| xs[r * d_in + t] * ws[t * d_out + c]).sum::<f64>())
                    .collect();
                let fwd_error = |half_out: bool| {
                    let y = host(product(&xc, &wc, false, false, half_out).cast(FloatDType::F32));
                    let got: Vec<f64> = rows
                        .iter()
                        .flat_map(|&r| (0..d_out).map(move |c| (r, c)))
                        .map(|(r, c)| y[r * d_out + c])
                        .collect();
                    rel_err(&got, &want)
                };
                let outputs: &[&str] = if half.is_some() { &["", "-f32"] } else { &[""] };
                for out in outputs {
                    for (variant, ta, tb) in [("fwd", false, false), ("dgrad", false, true), ("wgrad", true, false)] {
                        let (a, b) = match variant {
                            "fwd" => (&xc, &wc),
                            "dgrad" => (&dyc, &wc),
                            _ => (&xc, &dyc),
                        };
                        let half_out = half.is_some() && out.is_empty();
                        let s = time_batched::<I<B>, _>(device, self.warmup, self.runs, MATMUL_BATCH, || {
                            product(a, b, ta, tb, half_out)
                        });
                        let mut r = self.record("matmul", d_out, Some(d_in), &s, &dev_name);
                        r.dtype = name.into();
                        r.variant = Some(format!("{variant}{out}"));
                        r.gbps = Some(flops / s.median / 1e9);
                        r.check_error = (variant == "fwd").then(|| fwd_error(half_out));
                        emit(r)?;
                    }
                }
            }
            // a whole layer (forward, backward of the input and the weight) through autodiff
            let xa = Tensor::<B, 2>::from_inner(x.clone()).require_grad();
            let dya = Tensor::<B, 2>::from_inner(dy.clone());
            let precisions = [
                ("f32", LinearPrecision::F32),
                ("tf32", LinearPrecision::Tf32),
                ("f16", LinearPrecision::Half(FloatDType::F16)),
                ("bf16", LinearPrecision::Half(FloatDType::BF16)),
            ];
            for (name, p) in precisions {
                if let LinearPrecision::Half(h) = p {
                    if !I::<B>::supports_dtype(device, h.into()) {
                        continue;
                    }
                }
                let s = time::<I<B>, _>(device, self.warmup, self.runs, || {
                    let wa = Tensor::<B, 2>::from_inner(w.clone()).require_grad();
                    let y = burn_sparse_gnn::ops::linear(xa.clone(), wa.clone(), None, p);
                    let grads = (y * dya.clone()).sum().backward();
                    (wa.grad(&grads).map(|g| g.sum()), xa.grad(&grads).map(|g| g.sum()))
                });
                let mut r = self.record("matmul", d_out, Some(d_in), &s, &dev_name);
                r.dtype = name.into();
                r.variant = Some("layer-fwd-bwd".into());
                r.gbps = Some(3.0 * flops / s.median / 1e9);
                emit(r)?;
            }
        }
        Ok(())
    }
}

impl Job for Bench {
    type Output = Vec<Record>;

    fn run<B: SparseGnnAutodiffBackend>(self, device: B::Device, backend: &str) -> Result<Vec<Record>> {
        let mut file = match &self.out {
            Some(p) => {
                Some(std::fs::OpenOptions::new().create(true).append(true).open(p).map_err(|e| AppError::io(p, e))?)
            }
            None => None,
        };
        let mut all = Vec::new();
        let out_path = self.out.clone();
        let mut emit = |r: Record| -> Result<()> {
            let line = serde_json::to_string(&r).expect("record serialises");
            println!("{line}");
            if let (Some(f), Some(p)) = (file.as_mut(), out_path.as_ref()) {
                writeln!(f, "{line}").map_err(|e| AppError::io(p, e))?;
            }
            all.push(r);
            Ok(())
        };
        self.run_inner::<<B as AutodiffBackend>::InnerBackend>(&device, backend, &mut emit)?;
        if self.wants("matmul") {
            self.run_matmul::<B>(&device, backend, &mut emit)?;
        }
        Ok(all)
    }
}
