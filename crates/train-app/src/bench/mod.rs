//! `bench`: kernel timings on a given or generated graph, checked against the CPU reference
//! first, written as JSON lines in the results format of `bench/README.md`.
//!
//! By concern: [`timing`] (the timed loops and the CPU reference checks), [`kernels`] (the
//! sparse kernels: SpMM, SSpMM, MaxK, sampling, pooling) and [`matmul`] (the dense products).

mod kernels;
mod launch;
mod matmul;
mod timing;

pub use timing::host;

use crate::backend::Job;
use crate::error::{AppError, Result};
use burn::tensor::backend::AutodiffBackend;
use burn_sparse_gnn::{Csr, GraphOptions, SparseGnnAutodiffBackend};
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;

use timing::Stats;

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
    /// Training epochs: the median time the host took to queue an epoch's work (until the
    /// step returned, before the devices were synchronised), ms. Close to `median_ms` when the
    /// host, not the device, bounds the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_ms: Option<f64>,
    /// Training epochs on a partitioned graph: parts, cut edges, halo rows, bytes exchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub partition: Option<serde_json::Value>,
    /// Training epochs: the device memory estimate of the run (`gnn_models::memory_estimate`), to compare
    /// with `peak_in_use_bytes`; over parts, that of the device that needs the most
    /// (`partitioned::estimate_per_device`), to compare with the largest of the partition's
    /// `reserved_bytes_per_device`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub estimate: Option<gnn_models::memory_estimate::MemoryEstimate>,
    /// The task of a training-epoch record (`link`; absent: node classification).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Graphs per batch of a graph-classification epoch record; seed nodes per batch of a
    /// mini-batch record.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub batch_size: Option<usize>,
    /// `minibatch` for the records of mini-batch training (`sample`: one batch's blocks on the
    /// device; `batch`: one batch assembled, blocks as device graphs and features; `train_epoch`:
    /// one pass over the training nodes); absent for full-graph records.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub training: Option<String>,
    /// Mini-batch: the fan-outs, hop 1 first.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fanouts: Option<Vec<usize>>,
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
            host_ms: None,
            partition: None,
            estimate: None,
            task: None,
            batch_size: None,
            training: None,
            fanouts: None,
        }
    }

    fn wants(&self, op: &str) -> bool {
        self.ops.iter().any(|o| o == op || o == "all")
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
        if self.wants("launch") {
            self.run_launch::<B>(&device, backend, &mut emit)?;
        }
        Ok(all)
    }
}
