//! The conformance suite, as a library function so that `cargo test` runs it on NdArray and
//! wgpu, and `train-app selftest` on any device (compiled with the `testing` feature).
//!
//! For every operation and a grid of hard cases (random graphs with empty rows, a hub row of
//! 10,000 edges, self-loops, duplicates, rectangular shapes; widths that are not multiples of
//! any vector or block size; `k = 1` and `k = dim`; tied values) it checks
//! - the forward output of the backend under test against the CPU reference (f64);
//! - the gradients of every input, under `Autodiff`, against the f64 CPU backend
//!   (`Autodiff<NdArray<f64>>`), whose own gradients [`finite_difference_checks`] verifies
//!   against central finite differences.
//!
//! [`testgen`] generates one `#[test]` per [`OpKind`] and configuration (and plane use on a
//! device) from it.

use crate::backend::{SparseGnnAutodiffBackend, SparseGnnBackend};
use crate::data::Csr;
use crate::graph::{Graph, GraphOptions, KernelPolicy};
use crate::ops;
use crate::ops::primitive::{PoolLayout, PoolSpec, Reduce, SampleSpec, Sampling};
use crate::random::{random_csr, random_tied_values, random_values, RandomGraphSpec};
use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{DType, FloatDType, Int, Tensor, TensorData};
use sparse_gnn_kernels::cbsr::reference as cbsr_ref;
use sparse_gnn_kernels::config::{Choice, KernelConfig};
use sparse_gnn_kernels::maxk::reference as maxk_ref;
use sparse_gnn_kernels::pool::reference as pool_ref;
use sparse_gnn_kernels::sample::reference as sample_ref;
use sparse_gnn_kernels::sddmm::reference as sddmm_ref;
use sparse_gnn_kernels::softmax::reference as softmax_ref;
use sparse_gnn_kernels::spmm::reference::{self as spmm_ref, EdgeWeights};
use std::fmt::Write as _;

pub mod testgen;

/// The f64 CPU backend every gradient is compared with.
pub type RefBackend = Autodiff<NdArray<f64, i64>>;

/// An operation under test, with its configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Op {
    /// SpMM; `heads = 0` means no edge weights.
    Spmm { reduce: Reduce, heads: usize },
    /// SDDMM with `heads` heads.
    Sddmm { heads: usize },
    /// Edge softmax with `heads` heads.
    EdgeSoftmax { heads: usize },
    /// ES-SpMM.
    Sampled { spec: SampleSpec, reduce: Reduce, weighted: bool },
    /// MaxK values (and indices).
    Maxk { k: usize },
    /// MaxK then dense (scatter / gather path).
    MaxkDense { k: usize },
    /// k-max-pooling values (and indices).
    Maxpool { spec: PoolSpec },
    /// MaxK then CBSR SpGEMM (gradients through SSpMM).
    CbsrSpgemm { k: usize, weighted: bool },
}

impl Op {
    fn name(&self) -> &'static str {
        match self {
            Op::Spmm { .. } => "spmm",
            Op::Sddmm { .. } => "sddmm",
            Op::EdgeSoftmax { .. } => "edge_softmax",
            Op::Sampled { .. } => "sampled_spmm",
            Op::Maxk { .. } => "maxk",
            Op::MaxkDense { .. } => "maxk_dense",
            Op::Maxpool { .. } => "maxpool",
            Op::CbsrSpgemm { .. } => "cbsr_spgemm",
        }
    }

    /// The kind of the operation (one generated test each).
    pub fn kind(&self) -> OpKind {
        match self {
            Op::Spmm { reduce: Reduce::Sum, .. } => OpKind::SpmmSum,
            Op::Spmm { reduce: Reduce::Mean, .. } => OpKind::SpmmMean,
            Op::Spmm { reduce: Reduce::Max, .. } => OpKind::SpmmMax,
            Op::Sddmm { .. } => OpKind::Sddmm,
            Op::EdgeSoftmax { .. } => OpKind::EdgeSoftmax,
            Op::Sampled { .. } => OpKind::SampledSpmm,
            Op::Maxk { .. } => OpKind::Maxk,
            Op::MaxkDense { .. } => OpKind::MaxkDense,
            Op::Maxpool { .. } => OpKind::Maxpool,
            Op::CbsrSpgemm { .. } => OpKind::CbsrSpgemm,
        }
    }
}

/// The operations of the suite as the generated tests divide them: SpMM by reduction, every
/// other operation whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OpKind {
    /// SpMM sum, unweighted and weighted (one or more heads).
    SpmmSum,
    /// SpMM mean.
    SpmmMean,
    /// SpMM max (and its argmax backward).
    SpmmMax,
    /// SDDMM.
    Sddmm,
    /// Edge softmax.
    EdgeSoftmax,
    /// ES-SpMM (every sampling mode and reduction).
    SampledSpmm,
    /// MaxK values and indices.
    Maxk,
    /// MaxK then dense (scatter / gather).
    MaxkDense,
    /// k-max-pooling values and indices.
    Maxpool,
    /// MaxK then CBSR SpGEMM (gradients through SSpMM).
    CbsrSpgemm,
}

impl OpKind {
    /// Every kind.
    pub const ALL: [OpKind; 10] = [
        OpKind::SpmmSum,
        OpKind::SpmmMean,
        OpKind::SpmmMax,
        OpKind::Sddmm,
        OpKind::EdgeSoftmax,
        OpKind::SampledSpmm,
        OpKind::Maxk,
        OpKind::MaxkDense,
        OpKind::Maxpool,
        OpKind::CbsrSpgemm,
    ];

    /// The name of the kind's generated tests (`spmm_sum`, `sddmm`, ...).
    pub fn name(self) -> &'static str {
        match self {
            OpKind::SpmmSum => "spmm_sum",
            OpKind::SpmmMean => "spmm_mean",
            OpKind::SpmmMax => "spmm_max",
            OpKind::Sddmm => "sddmm",
            OpKind::EdgeSoftmax => "edge_softmax",
            OpKind::SampledSpmm => "sampled_spmm",
            OpKind::Maxk => "maxk",
            OpKind::MaxkDense => "maxk_dense",
            OpKind::Maxpool => "maxpool",
            OpKind::CbsrSpgemm => "cbsr_spgemm",
        }
    }

    /// The kind named `name` (see [`OpKind::name`]).
    pub fn from_name(name: &str) -> Option<OpKind> {
        OpKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// Host inputs of a case (f32-representable values stored in f64).
#[derive(Clone, Debug)]
pub struct Inputs {
    /// `[n_cols, f]` (the aggregated features; `[n_rows, f]` for selections).
    pub x: Vec<f64>,
    /// `[n_rows, f]` (SDDMM's left operand) or `[nnz, heads]` scores (edge softmax).
    pub y: Vec<f64>,
    /// `[nnz, heads]` edge weights.
    pub w: Option<Vec<f64>>,
    /// Feature width.
    pub f: usize,
}

/// One checked case.
#[derive(Clone, Debug)]
pub struct CaseResult {
    /// Operation.
    pub op: String,
    /// Case description.
    pub case: String,
    /// What was compared (`forward`, `grad x`, ...).
    pub check: String,
    /// Normwise error: `max |a - b| / max(max |b|, 1)`.
    pub error: f64,
    /// Passed?
    pub passed: bool,
    /// Why it was skipped, if it was.
    pub skipped: Option<String>,
}

/// The results of a run.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Backend name.
    pub backend: String,
    /// Every check.
    pub results: Vec<CaseResult>,
}

impl Report {
    /// Whether every check that ran passed.
    pub fn passed(&self) -> bool {
        self.results.iter().all(|r| r.passed || r.skipped.is_some())
    }
    /// Checks that failed.
    pub fn failures(&self) -> Vec<&CaseResult> {
        self.results.iter().filter(|r| !r.passed && r.skipped.is_none()).collect()
    }
    /// A pass / fail table, one line per check, and a summary line.
    pub fn table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "{:<14} {:<46} {:<10} {:>10}  status", "op", "case", "check", "error");
        for r in &self.results {
            let status = match (&r.skipped, r.passed) {
                (Some(why), _) => format!("skipped: {why}"),
                (None, true) => "ok".into(),
                (None, false) => "FAIL".into(),
            };
            let _ = writeln!(s, "{:<14} {:<46} {:<10} {:>10.2e}  {status}", r.op, r.case, r.check, r.error);
        }
        let fails = self.failures().len();
        let _ = writeln!(
            s,
            "{}: {} checks, {} failed, {} skipped",
            self.backend,
            self.results.len(),
            fails,
            self.results.iter().filter(|r| r.skipped.is_some()).count()
        );
        s
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct ConformanceConfig {
    /// Seed of the graphs and values.
    pub seed: u64,
    /// Edges of the hub row of the square graph.
    pub hub_degree: usize,
    /// Feature widths of the aggregation cases.
    pub widths: Vec<usize>,
    /// Tolerance of the normwise error.
    pub tolerance: f64,
    /// Edge-group width of the device graphs (small values exercise split rows).
    pub group_width: usize,
    /// Only run the cases whose op name contains this string (the cases are numbered, and
    /// seeded, after this selection).
    pub filter: Option<String>,
    /// Only run the cases of this kind, with the seeds they have without it (the cases are
    /// numbered before this selection, so each check is the one the whole run makes).
    pub only: Option<OpKind>,
    /// Kernel choices (e.g. the atomic SpGEMM / SSpMM variants).
    pub policy: KernelPolicy,
    /// Storage type of the op inputs (`None`: the backend's float type). With f16 / bf16 the
    /// inputs are rounded to that type first, so the reference sees the same values.
    pub dtype: Option<FloatDType>,
    /// Split the device graphs by their `h` most-read columns whatever their size (the
    /// two-pass SpMM sum / mean, [`GraphOptions::hot_cols`]); `None`: the default options,
    /// under which the small test graphs are not split.
    pub hot_cols: Option<usize>,
    /// Launch configuration of the kernels under test (e.g. the shared-memory fallbacks of the
    /// plane operations, [`KernelConfig::shared_memory_only`]).
    pub kernels: KernelConfig,
}

impl ConformanceConfig {
    /// The options of the device graphs under test.
    pub fn graph_options(&self) -> GraphOptions {
        let base = GraphOptions {
            policy: self.policy,
            kernels: self.kernels,
            // the small test graphs are never split unless asked
            hot_cols: Choice::Forced(0),
            // the index arrays of the test graphs go up in several pieces, a last one shorter
            upload_piece: 4_093,
            ..GraphOptions::default().with_group_width(self.group_width)
        };
        match self.hot_cols {
            Some(h) => GraphOptions { hot_cols: Choice::Forced(h), cold_group_width: self.group_width, ..base },
            None => base,
        }
    }
}

impl Default for ConformanceConfig {
    fn default() -> Self {
        Self {
            seed: 7,
            hub_degree: 10_000,
            widths: vec![1, 7, 33, 64],
            tolerance: 1e-4,
            group_width: 256,
            filter: None,
            only: None,
            policy: KernelPolicy::default(),
            dtype: None,
            hot_cols: None,
            kernels: KernelConfig::default(),
        }
    }
}

/// Normwise error between `a` (tested) and `b` (reference); infinite on length mismatch or NaN.
pub fn normwise_error(a: &[f64], b: &[f64]) -> f64 {
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    let scale = b.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    let mut err = 0.0f64;
    for (x, y) in a.iter().zip(b) {
        let d = (x - y).abs();
        if d.is_nan() {
            return f64::INFINITY;
        }
        err = err.max(d);
    }
    err / scale
}

/// What an evaluation on one backend produced.
#[derive(Clone, Debug)]
pub struct Evaluation {
    /// Forward output, flattened.
    pub out: Vec<f64>,
    /// Column ids of a selection (MaxK / pooling).
    pub indices: Option<Vec<i64>>,
    /// `(input name, gradient)` of the loss `sum(out * r)`.
    pub grads: Vec<(&'static str, Vec<f64>)>,
}

/// A float tensor in the backend's own float type (not the device default, which is shared by
/// every backend on the same device, e.g. NdArray f32 and f64).
fn tensor<B: Backend, const D: usize>(v: &[f64], shape: [usize; D], dev: &B::Device) -> Tensor<B, D> {
    let dtype = <B::FloatElem as burn::tensor::Element>::dtype();
    Tensor::from_data(TensorData::new(v.to_vec(), shape).convert_dtype(dtype), (dev, dtype))
}

fn host<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f64> {
    t.into_data().convert::<f64>().into_vec::<f64>().expect("f64 data")
}

fn host_int<B: Backend, const D: usize>(t: Tensor<B, D, Int>) -> Vec<i64> {
    t.into_data().convert::<i64>().into_vec::<i64>().expect("i64 data")
}

fn upstream(n: usize, seed: u64) -> Vec<f64> {
    random_values(n, seed ^ 0x5eed)
}

/// Runs `op` on backend `B` under autodiff: the output and the gradients of `sum(out * r)`
/// for a fixed random `r`.
pub fn evaluate<B: SparseGnnAutodiffBackend>(
    dev: &B::Device,
    adj: &Csr,
    gopts: GraphOptions,
    op: &Op,
    inp: &Inputs,
    seed: u64,
    dtype: Option<FloatDType>,
) -> Evaluation {
    let g = Graph::<B>::new(adj, dev, gopts);
    // op inputs in the storage type (the cast is differentiable: gradients reach the leaves)
    let down = |t: Tensor<B, 2>| match dtype {
        Some(d) => t.cast(d),
        None => t,
    };
    let up = |t: Tensor<B, 2>| match dtype {
        Some(_) => t.cast(<B::FloatElem as burn::tensor::Element>::dtype()),
        None => t,
    };
    let (nr, nc, nnz, f) = (adj.n_rows(), adj.n_cols(), adj.nnz(), inp.f);
    let x = tensor::<B, 2>(
        &inp.x,
        [if matches!(op, Op::Maxk { .. } | Op::MaxkDense { .. } | Op::Maxpool { .. }) { nr } else { nc }, f],
        dev,
    )
    .require_grad();
    let w = inp.w.as_ref().map(|w| {
        let h = w.len() / nnz.max(1);
        tensor::<B, 2>(w, [nnz, h.max(1)], dev).require_grad()
    });
    let mut indices = None;
    let mut extra: Vec<(&'static str, Tensor<B, 2>)> = Vec::new();
    let out: Tensor<B, 2> = match *op {
        Op::Spmm { reduce, .. } => {
            up(ops::try_spmm(&g, w.clone().map(down), down(x.clone()), reduce).expect("valid case"))
        }
        Op::Sddmm { heads } => {
            let a = tensor::<B, 2>(&inp.y, [nr, f], dev).require_grad();
            extra.push(("a", a.clone()));
            up(ops::try_sddmm(&g, down(a), down(x.clone()), heads).expect("valid case"))
        }
        Op::EdgeSoftmax { heads } => {
            let s = tensor::<B, 2>(&inp.y, [nnz, heads], dev).require_grad();
            extra.push(("scores", s.clone()));
            up(ops::try_edge_softmax(&g, down(s)).expect("valid case"))
        }
        Op::Sampled { spec, reduce, .. } => {
            up(ops::try_sampled_spmm(&g, w.clone().map(down), down(x.clone()), spec, reduce).expect("valid case"))
        }
        Op::Maxk { k } => {
            let c = ops::try_maxk_with(down(x.clone()), k, g.kernel_config()).expect("valid case");
            indices = Some(host_int(c.indices()));
            up(c.values())
        }
        Op::MaxkDense { k } => {
            up(ops::try_maxk_with(down(x.clone()), k, g.kernel_config()).expect("valid case").to_dense())
        }
        Op::Maxpool { spec } => {
            let c = ops::try_maxpool(down(x.clone()), spec).expect("valid case");
            indices = Some(host_int(c.indices()));
            up(c.values())
        }
        Op::CbsrSpgemm { k, .. } => {
            let c = ops::try_maxk_with(down(x.clone()), k, g.kernel_config()).expect("valid case");
            let w1 = w.clone().map(|w| down(w).reshape([nnz]));
            up(ops::try_cbsr_spgemm(&g, w1, &c).expect("valid case"))
        }
    };
    let r_host = upstream(out.dims()[0] * out.dims()[1], seed);
    let r = tensor::<B, 2>(&r_host, out.dims(), dev);
    let out_host = host(out.clone());
    let grads = (out * r).sum().backward();
    let mut gl = Vec::new();
    let uses_x = !matches!(op, Op::EdgeSoftmax { .. });
    if uses_x {
        if let Some(gx) = x.grad(&grads) {
            gl.push(("x", host(gx)));
        }
    }
    for (name, t) in extra {
        if let Some(gt) = t.grad(&grads) {
            gl.push((name, host(gt)));
        }
    }
    if let Some(w) = w {
        if let Some(gw) = w.grad(&grads) {
            gl.push(("w", host(gw)));
        }
    }
    Evaluation { out: out_host, indices, grads: gl }
}

/// The CPU reference of the forward output (and selection indices).
pub fn reference_forward(adj: &Csr, op: &Op, inp: &Inputs) -> (Vec<f64>, Option<Vec<i64>>) {
    let csr = adj.as_ref();
    let f = inp.f;
    let ew = |heads: usize| inp.w.as_ref().map(|w| EdgeWeights { values: w, heads: heads.max(1) });
    let idx64 = |v: Vec<u32>| v.into_iter().map(|c| c as i64).collect::<Vec<_>>();
    match *op {
        Op::Spmm { reduce, heads } => (spmm_ref::spmm(&csr, ew(heads), &inp.x, f, reduce).0, None),
        Op::Sddmm { heads } => (sddmm_ref::sddmm(&csr, &inp.y, &inp.x, f, heads), None),
        Op::EdgeSoftmax { heads } => (softmax_ref::edge_softmax(&csr, &inp.y, heads), None),
        Op::Sampled { spec, reduce, .. } => (sample_ref::sampled_spmm(&csr, ew(1), &inp.x, f, &spec, reduce), None),
        Op::Maxk { k } => {
            let (v, i) = maxk_ref::maxk(&inp.x, adj.n_rows(), f, k);
            (v, Some(idx64(i)))
        }
        Op::MaxkDense { k } => {
            let (v, i) = maxk_ref::maxk(&inp.x, adj.n_rows(), f, k);
            (cbsr_ref::to_dense(&v, &i, adj.n_rows(), k, f), None)
        }
        Op::Maxpool { spec } => {
            let (v, i) = pool_ref::maxpool(&inp.x, adj.n_rows(), f, &spec);
            (v, Some(idx64(i)))
        }
        Op::CbsrSpgemm { k, .. } => {
            let (v, i) = maxk_ref::maxk(&inp.x, adj.n_cols(), f, k);
            (cbsr_ref::spgemm(&csr, inp.w.as_deref(), &v, &i, k, f), None)
        }
    }
}

/// A named test graph.
#[derive(Clone, Debug)]
pub struct TestGraph {
    /// Description.
    pub name: String,
    /// Structure.
    pub adj: Csr,
}

/// The graphs of the suite: a square graph with a hub row, and a rectangular one whose hub row
/// is split into several edge groups.
pub fn test_graphs(cfg: &ConformanceConfig) -> Vec<TestGraph> {
    let square = RandomGraphSpec { hub_degree: cfg.hub_degree, seed: cfg.seed, ..Default::default() };
    let rect = RandomGraphSpec {
        n_rows: 97,
        n_cols: 211,
        avg_degree: 5,
        hub_degree: 700,
        empty_fraction: 0.15,
        self_loops: false,
        duplicates: true,
        seed: cfg.seed + 1,
    };
    vec![
        TestGraph { name: format!("sq{}+hub{}", square.n_rows, cfg.hub_degree), adj: random_csr(&square) },
        TestGraph { name: "rect97x211+hub700".into(), adj: random_csr(&rect) },
    ]
}

/// The list of cases: `(graph index, op, width, tied values?)`.
pub fn cases(cfg: &ConformanceConfig) -> Vec<(usize, Op, usize, bool)> {
    let mut v = Vec::new();
    for gi in 0..2 {
        for &f in &cfg.widths {
            for reduce in [Reduce::Sum, Reduce::Mean, Reduce::Max] {
                v.push((gi, Op::Spmm { reduce, heads: 0 }, f, false));
                v.push((gi, Op::Spmm { reduce, heads: 1 }, f, false));
            }
            v.push((gi, Op::Sddmm { heads: 1 }, f, false));
        }
        // multi-head weights and SDDMM
        v.push((gi, Op::Spmm { reduce: Reduce::Sum, heads: 4 }, 64, false));
        v.push((gi, Op::Spmm { reduce: Reduce::Max, heads: 3 }, 33, false));
        v.push((gi, Op::Sddmm { heads: 4 }, 64, false));
        v.push((gi, Op::Sddmm { heads: 3 }, 33, false));
        v.push((gi, Op::EdgeSoftmax { heads: 1 }, 1, false));
        v.push((gi, Op::EdgeSoftmax { heads: 3 }, 3, false));
        for (width, mode, seed) in [
            (1, Sampling::Bucket, 0),
            (16, Sampling::FastRand, 0),
            (16, Sampling::FastRand, 9),
            (64, Sampling::Bucket, 3),
        ] {
            for reduce in [Reduce::Sum, Reduce::Mean] {
                let spec = SampleSpec { width, mode, seed };
                v.push((gi, Op::Sampled { spec, reduce, weighted: false }, 33, false));
            }
        }
        v.push((
            gi,
            Op::Sampled {
                spec: SampleSpec { width: 8, mode: Sampling::FastRand, seed: 5 },
                reduce: Reduce::Mean,
                weighted: true,
            },
            7,
            false,
        ));
        for (k, dim) in [(8, 64), (32, 256), (1, 37), (37, 37), (16, 130)] {
            v.push((gi, Op::CbsrSpgemm { k, weighted: false }, dim, false));
        }
        v.push((gi, Op::CbsrSpgemm { k: 5, weighted: true }, 33, false));
    }
    for (k, dim) in [(1, 5), (5, 5), (3, 37), (32, 256), (64, 256), (8, 300), (300, 300)] {
        v.push((0, Op::Maxk { k }, dim, false));
        v.push((0, Op::Maxk { k }, dim, true));
    }
    v.push((0, Op::MaxkDense { k: 7 }, 33, false));
    v.push((0, Op::MaxkDense { k: 16 }, 64, true));
    for spec in [
        PoolSpec { windows: 4, layout: PoolLayout::OneD, channels: 1 },
        PoolSpec { windows: 5, layout: PoolLayout::OneD, channels: 2 },
        PoolSpec { windows: 16, layout: PoolLayout::TwoD, channels: 1 },
        PoolSpec { windows: 64, layout: PoolLayout::TwoD, channels: 3 },
    ] {
        let dim = if spec.layout == PoolLayout::TwoD { 256 } else { 37 };
        v.push((0, Op::Maxpool { spec }, dim, false));
        v.push((0, Op::Maxpool { spec }, dim, true));
    }
    if let Some(filter) = &cfg.filter {
        v.retain(|(_, op, _, _)| op.name().contains(filter.as_str()));
    }
    v
}

/// Rounds every input value to the storage type (so that the reference sees what the device
/// stores).
pub fn round_inputs(inp: &mut Inputs, dtype: Option<FloatDType>) {
    let round = |v: &mut f64| {
        *v = match dtype {
            Some(FloatDType::F16) => half::f16::from_f64(*v).to_f64(),
            Some(FloatDType::BF16) => half::bf16::from_f64(*v).to_f64(),
            _ => *v,
        }
    };
    inp.x.iter_mut().for_each(round);
    inp.y.iter_mut().for_each(round);
    if let Some(w) = inp.w.as_mut() {
        w.iter_mut().for_each(round);
    }
}

/// Random inputs of a case.
pub fn inputs(adj: &Csr, op: &Op, f: usize, tied: bool, seed: u64) -> Inputs {
    let vals = |n: usize, s: u64| {
        if tied {
            random_tied_values(n, s)
        } else {
            random_values(n, s)
        }
    };
    let (nr, nc, nnz) = (adj.n_rows(), adj.n_cols(), adj.nnz());
    let rows_x = match op {
        Op::Maxk { .. } | Op::MaxkDense { .. } | Op::Maxpool { .. } => nr,
        _ => nc,
    };
    let x = vals(rows_x * f, seed);
    let y = match op {
        Op::Sddmm { .. } => vals(nr * f, seed + 1),
        Op::EdgeSoftmax { heads } => random_values(nnz * heads, seed + 1).into_iter().map(|v| 8.0 * v).collect(),
        _ => Vec::new(),
    };
    let heads = match op {
        Op::Spmm { heads, .. } => *heads,
        Op::Sampled { weighted: true, .. } | Op::CbsrSpgemm { weighted: true, .. } => 1,
        _ => 0,
    };
    let w = (heads > 0).then(|| random_values(nnz * heads, seed + 2));
    Inputs { x, y, w, f }
}

fn describe(g: &TestGraph, op: &Op, f: usize, tied: bool) -> String {
    let detail = match op {
        Op::Spmm { reduce, heads } => format!("{reduce:?} w{heads}"),
        Op::Sddmm { heads } | Op::EdgeSoftmax { heads } => format!("heads {heads}"),
        Op::Sampled { spec, reduce, weighted } => {
            format!("{:?} S{} seed{} {reduce:?}{}", spec.mode, spec.width, spec.seed, if *weighted { " w" } else { "" })
        }
        Op::Maxk { k } | Op::MaxkDense { k } => format!("k{k}"),
        Op::Maxpool { spec } => {
            format!("{:?} win{} ch{}", spec.layout, spec.windows, spec.channels)
        }
        Op::CbsrSpgemm { k, weighted } => format!("k{k}{}", if *weighted { " w" } else { "" }),
    };
    let gname = if matches!(op, Op::Maxk { .. } | Op::MaxkDense { .. } | Op::Maxpool { .. }) {
        "rows301"
    } else {
        g.name.as_str()
    };
    format!("{gname} f{f} {detail}{}", if tied { " ties" } else { "" })
}

/// Runs the suite on backend `B` (its inner backend runs the kernels; autodiff the backward).
pub fn run<B: SparseGnnAutodiffBackend>(dev: &B::Device, cfg: &ConformanceConfig) -> Report {
    run_with::<B>(dev, cfg, |_| None)
}

/// [`run`] with a hook that may skip a case (returns the reason), e.g. for a missing dtype.
pub fn run_with<B: SparseGnnAutodiffBackend>(
    dev: &B::Device,
    cfg: &ConformanceConfig,
    skip: impl Fn(&Op) -> Option<String>,
) -> Report {
    let graphs = test_graphs(cfg);
    let ref_dev = Default::default();
    let gopts = cfg.graph_options();
    let mut report = Report { backend: <B as Backend>::name(dev), results: Vec::new() };
    let missing_dtype = cfg.dtype.and_then(|d| {
        let dt: DType = d.into();
        (!B::supports_dtype(dev, dt)).then(|| format!("{dt:?} is not supported by this device"))
    });
    for (ci, (gi, op, f, tied)) in cases(cfg).into_iter().enumerate() {
        if cfg.only.is_some_and(|kind| op.kind() != kind) {
            continue;
        }
        let g = &graphs[gi];
        let case = describe(g, &op, f, tied);
        let seed = cfg.seed.wrapping_mul(1000).wrapping_add(ci as u64);
        if let Some(why) = missing_dtype.clone().or_else(|| skip(&op)) {
            report.results.push(CaseResult {
                op: op.name().into(),
                case,
                check: "-".into(),
                error: 0.0,
                passed: false,
                skipped: Some(why),
            });
            continue;
        }
        let mut inp = inputs(&g.adj, &op, f, tied, seed);
        round_inputs(&mut inp, cfg.dtype);
        let got = evaluate::<B>(dev, &g.adj, gopts, &op, &inp, seed, cfg.dtype);
        let (want, want_idx) = reference_forward(&g.adj, &op, &inp);
        let mut push = |check: String, error: f64, passed: bool| {
            report.results.push(CaseResult {
                op: op.name().into(),
                case: case.clone(),
                check,
                error,
                passed,
                skipped: None,
            });
        };
        let e = normwise_error(&got.out, &want);
        push("forward".into(), e, e <= cfg.tolerance);
        if let Some(wi) = want_idx {
            let same = got.indices.as_ref() == Some(&wi);
            push("indices".into(), if same { 0.0 } else { 1.0 }, same);
        }
        let reference = evaluate::<RefBackend>(&ref_dev, &g.adj, gopts, &op, &inp, seed, None);
        let names: Vec<&str> = reference.grads.iter().map(|g| g.0).collect();
        for (name, want_g) in &reference.grads {
            let got_g = got.grads.iter().find(|g| g.0 == *name).map(|g| g.1.as_slice()).unwrap_or(&[]);
            let e = normwise_error(got_g, want_g);
            push(format!("grad {name}"), e, e <= cfg.tolerance);
        }
        if got.grads.len() != names.len() {
            push("grad set".into(), 1.0, false);
        }
    }
    report
}

/// Central finite differences of `sum(out * r)` against the autodiff gradients of the f64 CPU
/// backend, on a sample of coordinates of every input of every differentiable case.
pub fn finite_difference_checks(cfg: &ConformanceConfig, coords_per_input: usize) -> Report {
    let graphs = test_graphs(cfg);
    let dev = Default::default();
    let gopts = cfg.graph_options();
    let mut report = Report { backend: "finite differences (NdArray f64)".into(), results: Vec::new() };
    let eps = 1e-6;
    for (ci, (gi, op, f, tied)) in cases(cfg).into_iter().enumerate() {
        if tied {
            continue; // ties make max / top-k non-differentiable
        }
        if cfg.only.is_some_and(|kind| op.kind() != kind) {
            continue;
        }
        let g = &graphs[gi];
        let seed = cfg.seed.wrapping_mul(1000).wrapping_add(ci as u64);
        let inp = inputs(&g.adj, &op, f, false, seed);
        let base = evaluate::<RefBackend>(&dev, &g.adj, gopts, &op, &inp, seed, None);
        let r = upstream(base.out.len(), seed);
        let loss = |inp: &Inputs| -> f64 {
            let e = evaluate_forward(&dev, &g.adj, gopts, &op, inp);
            e.iter().zip(&r).map(|(a, b)| a * b).sum()
        };
        for (name, grad) in &base.grads {
            let mut errs = 0.0f64;
            let scale = grad.iter().fold(1e-3f64, |m, v| m.max(v.abs()));
            let n = grad.len();
            // deterministic coordinate sample spread over the input, plus its extremes
            let coords: Vec<usize> = (0..coords_per_input)
                .map(|t| (t * 7919 + ci * 31) % n.max(1))
                .chain([0, n.saturating_sub(1)])
                .collect();
            for &c in &coords {
                let mut plus = inp.clone();
                let mut minus = inp.clone();
                *slot(&mut plus, name, c) += eps;
                *slot(&mut minus, name, c) -= eps;
                let fd = (loss(&plus) - loss(&minus)) / (2.0 * eps);
                errs = errs.max((fd - grad[c]).abs() / scale);
            }
            report.results.push(CaseResult {
                op: op.name().into(),
                case: describe(g, &op, f, false),
                check: format!("fd {name}"),
                error: errs,
                passed: errs <= 1e-5,
                skipped: None,
            });
        }
    }
    report
}

/// The input value a gradient named `name` refers to.
fn slot<'a>(inp: &'a mut Inputs, name: &str, c: usize) -> &'a mut f64 {
    match name {
        "x" => &mut inp.x[c],
        "a" | "scores" => &mut inp.y[c],
        _ => &mut inp.w.as_mut().expect("weighted case")[c],
    }
}

/// Forward output only, on the f64 CPU backend (no autodiff bookkeeping).
fn evaluate_forward(
    dev: &burn::tensor::Device<RefBackend>,
    adj: &Csr,
    gopts: GraphOptions,
    op: &Op,
    inp: &Inputs,
) -> Vec<f64> {
    type Inner = <RefBackend as AutodiffBackend>::InnerBackend;
    let g = Graph::<Inner>::new(adj, dev, gopts);
    let (nr, nc, nnz, f) = (adj.n_rows(), adj.n_cols(), adj.nnz(), inp.f);
    let sel = matches!(op, Op::Maxk { .. } | Op::MaxkDense { .. } | Op::Maxpool { .. });
    let x = tensor::<Inner, 2>(&inp.x, [if sel { nr } else { nc }, f], dev);
    let w = inp.w.as_ref().map(|w| tensor::<Inner, 2>(w, [nnz, (w.len() / nnz.max(1)).max(1)], dev));
    let out = match *op {
        Op::Spmm { reduce, .. } => ops::try_spmm(&g, w, x, reduce).expect("valid"),
        Op::Sddmm { heads } => ops::try_sddmm(&g, tensor::<Inner, 2>(&inp.y, [nr, f], dev), x, heads).expect("valid"),
        Op::EdgeSoftmax { heads } => {
            ops::try_edge_softmax(&g, tensor::<Inner, 2>(&inp.y, [nnz, heads], dev)).expect("valid")
        }
        Op::Sampled { spec, reduce, .. } => ops::try_sampled_spmm(&g, w, x, spec, reduce).expect("valid"),
        Op::Maxk { k } => ops::maxk(x, k).values(),
        Op::MaxkDense { k } => ops::maxk(x, k).to_dense(),
        Op::Maxpool { spec } => ops::maxpool(x, spec).values(),
        Op::CbsrSpgemm { k, .. } => {
            let c = ops::maxk(x, k);
            ops::try_cbsr_spgemm(&g, w.map(|w| w.reshape([nnz])), &c).expect("valid")
        }
    };
    host(out)
}

/// The largest difference between two float tensors of the same device read back as f32 (at
/// least `f64::MIN_POSITIVE` wherever two entries differ, so any difference shows), or
/// infinity when their sizes differ or they are empty: the measure of the checks whose
/// arithmetic must be the same.
fn exact_difference<B: Backend>(
    got: burn::tensor::ops::FloatTensor<B>,
    want: burn::tensor::ops::FloatTensor<B>,
) -> f64 {
    use burn::tensor::TensorPrimitive;
    let host = |t: burn::tensor::ops::FloatTensor<B>| {
        let t = Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(t)).cast(FloatDType::F32);
        t.into_data().convert::<f64>().into_vec::<f64>().unwrap_or_default()
    };
    let (p, q) = (host(got), host(want));
    if p.len() != q.len() || p.is_empty() {
        return f64::INFINITY;
    }
    p.iter().zip(&q).map(|(a, b)| if a == b { 0.0 } else { (a - b).abs().max(f64::MIN_POSITIVE) }).fold(0.0, f64::max)
}

/// Mixed precision's half copies of the linear inputs: the backend's `rows_to_half` /
/// `rows_from_half` against the composed tensor ops (their default implementation) on the same
/// device, on random rows with a row of zeros, one beyond the f16 range (x 1e6) and one of tiny
/// values (x 1e-20), at each width of `widths`.
/// Returns `(case, largest difference)` per case, `None` where the device lacks the half type;
/// the arithmetic is the same, so every difference must be 0.
pub fn half_rows_checks<B: SparseGnnBackend>(
    device: &B::Device,
    halves: &[FloatDType],
    widths: &[usize],
    config: &KernelConfig,
) -> Vec<(String, Option<f64>)> {
    let mut out = Vec::new();
    for &half in halves {
        for &f in widths {
            let what = format!("half rows {half:?}, width {f}");
            if !B::supports_dtype(device, DType::from(half)) {
                out.push((what, None));
                continue;
            }
            let n = 1_031;
            let mut xv: Vec<f32> = random_values(n * f, 21 + f as u64).into_iter().map(|v| v as f32).collect();
            xv[..f].iter_mut().for_each(|v| *v = 0.0);
            xv[f..2 * f].iter_mut().for_each(|v| *v *= 1e6);
            xv[2 * f..3 * f].iter_mut().for_each(|v| *v *= 1e-20);
            let x = Tensor::<B, 2>::from_data(TensorData::new(xv, [n, f]), device).into_primitive().tensor();
            let (h1, s1) = B::rows_to_half(x.clone(), half, config);
            let (h0, s0) = crate::ops::rows::half_rows::<B>(x, half);
            let b1 = B::rows_from_half(h1.clone(), s1.clone(), FloatDType::F32);
            let b0 = crate::ops::rows::unscale_rows::<B>(h0.clone(), s0.clone(), FloatDType::F32);
            let diff = exact_difference::<B>;
            let d = diff(h1, h0).max(diff(s1, s0)).max(diff(b1, b0));
            out.push((what, Some(d)));
        }
    }
    out
}

/// The mean's gradient scaling ([`SparseGnnBackend::inv_degree_rows`]) against its composed ops
/// (the default implementation) on the same device: `n` = 1,031 rows of
/// random values with degrees 0 (empty rows), 1, small, 3 and a hub of 100,000, and a row
/// pointer past 2^31 (offsets are u32 in i32 bits), into f32 and into each half type of
/// `halves`, at each width of `widths`. Returns `(case, largest difference)`, `None` where the
/// device lacks the output dtype; the arithmetic is the same, so every difference must be 0.
pub fn inv_degree_checks<B: SparseGnnBackend>(
    device: &B::Device,
    halves: &[FloatDType],
    widths: &[usize],
) -> Vec<(String, Option<f64>)> {
    let n = 1_031usize;
    let degree = |i: usize| -> i64 {
        match i % 7 {
            0 | 4 => 0,
            1 => 1,
            2 => 3,
            _ if i == 500 => 100_000,
            _ => (i % 13) as i64 + 2,
        }
    };
    let mut offsets = vec![0i64; n + 1];
    for i in 0..n {
        offsets[i + 1] = offsets[i] + degree(i);
    }
    let mut out = Vec::new();
    for (base, what_base) in [(0i64, ""), ((1i64 << 31) - 50_000, ", offsets past 2^31")] {
        // u32 offsets in the bits of an i32, as the graph uploads them
        let rp: Vec<i32> = offsets.iter().map(|&o| (o + base) as u32 as i32).collect();
        for dtype in std::iter::once(FloatDType::F32).chain(halves.iter().copied()) {
            for &f in widths {
                let what = format!("1 / degree rows into {dtype:?}, width {f}{what_base}");
                if !B::supports_dtype(device, DType::from(dtype)) {
                    out.push((what, None));
                    continue;
                }
                let xv: Vec<f32> = random_values(n * f, 31 + f as u64).into_iter().map(|v| v as f32 * 100.0).collect();
                let x = Tensor::<B, 2>::from_data(TensorData::new(xv, [n, f]), device).into_primitive().tensor();
                let row_ptr =
                    Tensor::<B, 1, Int>::from_data(TensorData::new(rp.clone(), [n + 1]), (device, DType::I32))
                        .into_primitive();
                let got = B::inv_degree_rows(row_ptr.clone(), x.clone(), dtype);
                let want = crate::ops::rows::inv_degree_rows_composed::<B>(row_ptr, x, dtype);
                out.push((what, Some(exact_difference::<B>(got, want))));
            }
        }
    }
    out
}

/// The halo gradients' scatter-add ([`SparseGnnBackend::add_rows`]) against the CPU reference
/// of the kernels crate and against the composed ops (its default implementation) on the same
/// device: random rows of `n` = 1,031 with `m` distinct target rows in shuffled order (one, a
/// third of the rows with the first and the last, all of them), each into a base that
/// other tensors share (added into a copy, which must leave the shared base unchanged) and
/// into one nothing else holds (added in place), in each of `dtypes` at each width of
/// `widths`. Returns `(case, largest difference)`, `None` where the device lacks the dtype.
/// The values are multiples of 1/64 in [-4, 4], so every sum is exact in each dtype and every
/// difference must be 0.
pub fn add_rows_checks<B: SparseGnnBackend>(
    device: &B::Device,
    dtypes: &[FloatDType],
    widths: &[usize],
) -> Vec<(String, Option<f64>)> {
    use burn::tensor::TensorPrimitive;
    let n = 1_031usize;
    let mut out = Vec::new();
    let host =
        |t: Tensor<B, 2>| t.cast(FloatDType::F32).into_data().convert::<f32>().into_vec::<f32>().unwrap_or_default();
    let diff = |p: &[f32], q: &[f32]| {
        if p.len() != q.len() {
            return f64::INFINITY;
        }
        p.iter()
            .zip(q)
            .map(|(a, b)| if a == b { 0.0 } else { f64::from((a - b).abs()).max(f64::MIN_POSITIVE) })
            .fold(0.0, f64::max)
    };
    for &dtype in dtypes {
        for &f in widths {
            for m in [1usize, n / 3, n] {
                let what = format!("add rows {dtype:?}, width {f}, {m} of {n} rows");
                if !B::supports_dtype(device, DType::from(dtype)) {
                    out.push((what, None));
                    continue;
                }
                // distinct rows in a shuffled order: a stride coprime to n, with row 0 and row n - 1
                let mut rows: Vec<u32> = (0..n as u32).map(|i| (i * 389 + 17) % n as u32).take(m).collect();
                if m >= 2 && !rows.contains(&0) {
                    rows[0] = 0;
                }
                if m >= 3 && !rows.contains(&(n as u32 - 1)) {
                    rows[1] = n as u32 - 1;
                }
                let idx = match crate::ops::rows::RowIndex::<B>::new(&rows, n, device) {
                    Ok(i) => i,
                    Err(_) => {
                        out.push((what, Some(f64::INFINITY)));
                        continue;
                    }
                };
                let make = |len: usize, seed: u64| {
                    // multiples of 1/64 in [-4, 4]: every value and every sum is exact in f16 too
                    let v: Vec<f32> =
                        random_values(len * f, seed).into_iter().map(|v| (v * 256.0).round() as f32 / 64.0).collect();
                    Tensor::<B, 2>::from_data(TensorData::new(v, [len, f]), device).cast(dtype)
                };
                let base = make(n, 5 + f as u64);
                let values = make(m, 6 + f as u64);
                let (base_host, values_host) = (host(base.clone()), host(values.clone()));
                let mut expected = base_host.clone();
                let ids: Vec<i32> = rows.iter().map(|&r| r as i32).collect();
                sparse_gnn_kernels::rows::reference_add_rows(&mut expected, &ids, &values_host, f);
                let expected = host(Tensor::<B, 2>::from_data(TensorData::new(expected, [n, f]), device).cast(dtype));
                let prim = |t: Tensor<B, 2>| t.into_primitive().tensor();
                let (i, inv) = (idx.indices().into_primitive(), idx.inverse().into_primitive());
                let composed = crate::ops::rows::gather_back::<B>(prim(values.clone()), inv.clone());
                let composed =
                    host(Tensor::from_primitive(TensorPrimitive::Float(B::float_add(prim(base.clone()), composed))));
                // `base` is shared (the clone above): the sum goes to a copy
                let shared = B::add_rows(prim(base.clone()), prim(values.clone()), i.clone(), inv.clone());
                let shared = host(Tensor::from_primitive(TensorPrimitive::Float(shared)));
                let untouched = diff(&host(base), &base_host);
                // a base nothing else holds: added in place where the backend can
                let own = make(n, 5 + f as u64);
                let in_place =
                    host(Tensor::from_primitive(TensorPrimitive::Float(B::add_rows(prim(own), prim(values), i, inv))));
                let d = diff(&shared, &expected)
                    .max(diff(&in_place, &expected))
                    .max(diff(&composed, &expected))
                    .max(untouched);
                out.push((what, Some(d)));
            }
        }
    }
    out
}

/// Rows uploaded from host bytes ([`SparseGnnBackend::float_from_host`], the multi-process
/// exchange's upload), read back: for each of `dtypes` and each width of `widths`, 1,031 rows,
/// then 1 row and 0 rows (a staging buffer that grew, then reused), then 2,063 rows (grown
/// again). Returns `(case, bytes that differ)`, `None` where the device lacks the dtype; a
/// tensor of another shape or dtype counts every byte. Every count must be 0.
pub fn from_host_checks<B: SparseGnnBackend>(
    device: &B::Device,
    dtypes: &[FloatDType],
    widths: &[usize],
) -> Vec<(String, Option<f64>)> {
    use burn::tensor::TensorPrimitive;
    let mut out = Vec::new();
    for &dtype in dtypes {
        for &f in widths {
            for rows in [1_031usize, 1, 0, 2_063] {
                let what = format!("rows from host bytes {dtype:?}, {rows} x {f}");
                if !B::supports_dtype(device, DType::from(dtype)) {
                    out.push((what, None));
                    continue;
                }
                let v: Vec<f32> =
                    random_values(rows * f, 11 + (rows * f) as u64).into_iter().map(|v| v as f32).collect();
                // converted on the host: no device kernel on an empty tensor
                let data = TensorData::new(v, [rows, f]).convert_dtype(DType::from(dtype));
                let got = B::float_from_host(data.as_bytes(), [rows, f], data.dtype, device);
                let got = Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(got));
                let differ = match got.dims() == [rows, f] && got.dtype() == data.dtype {
                    true if rows == 0 => 0,
                    true => match got.try_into_data() {
                        Ok(back) if back.as_bytes().len() == data.as_bytes().len() => {
                            back.as_bytes().iter().zip(data.as_bytes()).filter(|(a, b)| a != b).count()
                        }
                        _ => data.as_bytes().len().max(1),
                    },
                    false => data.as_bytes().len().max(1),
                };
                out.push((what, Some(differ as f64)));
            }
        }
    }
    out
}

/// The weighted cross-entropy ([`crate::ops::loss::cross_entropy_rows`]) under autodiff on `B`
/// against the f64 CPU reference of the kernels crate: the terms and the logits' gradient for
/// `n` = 1,031 random rows (one of equal logits, one shifted by 1e3 so that a naive softmax
/// overflows, labels at the first and the last class, every fifth weight 0) at each class count
/// of `classes`, with the plane choice of `config`. Returns `(case, normwise error)`.
pub fn cross_entropy_checks<B: SparseGnnAutodiffBackend>(
    device: &B::Device,
    classes: &[usize],
    config: &KernelConfig,
) -> Vec<(String, f64)> {
    let n = 1_031usize;
    let mut out = Vec::new();
    for &c in classes {
        let mut x = random_values(n * c, 31 + c as u64).into_iter().map(|v| 4.0 * v).collect::<Vec<f64>>();
        x[..c].iter_mut().for_each(|v| *v = 0.5);
        x[c..2 * c].iter_mut().for_each(|v| *v += 1e3);
        let labels: Vec<i64> = (0..n).map(|i| ((i * 7 + i / 3) % c) as i64).collect();
        let mut labels = labels;
        labels[1] = 0;
        labels[2] = c as i64 - 1;
        let weight: Vec<f64> = random_values(n, 41 + c as u64)
            .into_iter()
            .enumerate()
            .map(|(i, v)| if i % 5 == 0 { 0.0 } else { v.abs() })
            .collect();
        let dterms = upstream(n, 51 + c as u64);
        // round the inputs to f32 first, so that both sides see the same values
        let x: Vec<f64> = x.iter().map(|&v| v as f32 as f64).collect();
        let weight: Vec<f64> = weight.iter().map(|&v| v as f32 as f64).collect();
        let dterms: Vec<f64> = dterms.iter().map(|&v| v as f32 as f64).collect();
        let (terms_ref, dx_ref) = sparse_gnn_kernels::loss::reference(&x, c, &labels, &weight, &dterms);

        let xt = tensor::<B, 2>(&x, [n, c], device).require_grad();
        let labels_t = Tensor::<B, 1, Int>::from_data(TensorData::new(labels.clone(), [n]), device);
        let w = tensor::<B, 1>(&weight, [n], device);
        let r = tensor::<B, 1>(&dterms, [n], device);
        let what = format!("cross-entropy, {c} classes");
        // the logits held here (the gradient goes to a copy), then logits nothing else holds
        // (an op's output: the gradient goes over them)
        for (how, logits) in [("held", xt.clone()), ("in place", xt.clone().mul_scalar(1.0))] {
            match crate::ops::loss::cross_entropy_rows(logits, labels_t.clone(), w.clone(), config) {
                Ok(terms) => {
                    let grads = (terms.clone() * r.clone()).sum().backward();
                    let dx = xt.grad(&grads).map(|g| host(g)).unwrap_or_default();
                    out.push((format!("{what}, {how}: terms"), normwise_error(&host(terms.inner()), &terms_ref)));
                    out.push((format!("{what}, {how}: logits' gradient"), normwise_error(&dx, &dx_ref)));
                }
                Err(e) => out.push((format!("{what}: {e}"), f64::INFINITY)),
            }
        }
    }
    out
}

/// ReLU + dropout ([`crate::dropout`]) under autodiff on `B` against the CPU reference of the
/// kernels crate: the output and the input gradient for random rows (some entries exactly 0),
/// with and without ReLU, drop probabilities 0, 0.5 and 0.9, row ids given (a permutation with
/// an offset) or not, at each width of `widths`. Returns `(case, largest difference)`; the
/// arithmetic is the same (one f32 product per entry), so every difference must be 0.
pub fn relu_dropout_checks<B: SparseGnnAutodiffBackend>(device: &B::Device, widths: &[usize]) -> Vec<(String, f64)> {
    use crate::ops::dropout::{relu_dropout, DropoutSeed};
    use sparse_gnn_kernels::dropout::{keep_scale, reference, reference_grad, ReluDropout};
    let mut out = Vec::new();
    let n = 517;
    // two arbitrary draws of the dropout seed (not 1/pi)
    #[allow(clippy::approx_constant)]
    let seed = [0.318_f32, 0.777];
    for &d in widths {
        let mut xv: Vec<f32> = random_values(n * d, 91 + d as u64).into_iter().map(|v| v as f32).collect();
        xv.iter_mut().step_by(7).for_each(|v| *v = 0.0);
        let dyv: Vec<f32> = random_values(n * d, 191 + d as u64).into_iter().map(|v| v as f32).collect();
        let ids: Vec<i64> = (0..n as i64).rev().map(|r| r + 1_000_000).collect();
        for relu in [true, false] {
            for prob in [0.0, 0.5, 0.9] {
                for with_rows in [false, true] {
                    if !relu && prob == 0.0 || (prob == 0.0 && with_rows) {
                        continue;
                    }
                    let what = format!(
                        "{}dropout {prob}, width {d}{}",
                        if relu { "relu + " } else { "" },
                        if with_rows { ", global row ids" } else { "" }
                    );
                    let x = Tensor::<B, 2>::from_data(TensorData::new(xv.clone(), [n, d]), device).require_grad();
                    let dy = Tensor::<B, 2>::from_data(TensorData::new(dyv.clone(), [n, d]), device);
                    let rows = Tensor::<B, 1, Int>::from_data(TensorData::new(ids.clone(), [n]), device);
                    let s = DropoutSeed::<B>::from_floats(seed, device);
                    let y = match relu_dropout(x.clone(), relu, prob, Some(&s), with_rows.then_some(&rows)) {
                        Ok(y) => y,
                        Err(_) => {
                            out.push((what, f64::INFINITY));
                            continue;
                        }
                    };
                    let grads = (y.clone() * dy).sum().backward();
                    let got_y = y.into_data().convert::<f32>().into_vec::<f32>().unwrap_or_default();
                    let got_dx = x
                        .grad(&grads)
                        .map(|g| g.into_data().convert::<f32>().into_vec::<f32>().unwrap_or_default())
                        .unwrap_or_default();
                    let spec = ReluDropout { relu, prob };
                    let (want_y, mask) = reference(&xv, n, d, with_rows.then_some(&ids[..]), seed, spec);
                    let want_dx = reference_grad(&dyv, &mask, n, d, keep_scale(prob));
                    let diff = |p: &[f32], q: &[f32]| {
                        if p.len() != q.len() {
                            return f64::INFINITY;
                        }
                        p.iter().zip(q).map(|(a, b)| (f64::from(*a) - f64::from(*b)).abs()).fold(0.0, f64::max)
                    };
                    out.push((what, diff(&got_y, &want_y).max(diff(&got_dx, &want_dx))));
                }
            }
        }
    }
    out
}
