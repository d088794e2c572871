//! Running the suite on a backend ([`run`], [`run_with`]).

use super::cases::{cases, describe, inputs, round_inputs, test_graphs};
use super::config::ConformanceConfig;
use super::evaluate::{evaluate, reference_forward, RefBackend};
use super::measure::normwise_error;
use super::op::Op;
use super::report::{CaseResult, Report};
use crate::backend::SparseGnnAutodiffBackend;
use burn::tensor::backend::Backend;
use burn::tensor::DType;

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
