//! The cases of the suite: the test graphs, the list of cases and the inputs of every case.

use super::config::ConformanceConfig;
use super::op::Op;
use crate::graph::csr::Csr;
use crate::ops::primitive::{PoolLayout, PoolSpec, Reduce, SampleSpec, Sampling};
use crate::random::{random_csr, random_tied_values, random_values, RandomGraphSpec};
use burn::tensor::FloatDType;

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

/// A short text of a case for reports.
pub(super) fn describe(g: &TestGraph, op: &Op, f: usize, tied: bool) -> String {
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
