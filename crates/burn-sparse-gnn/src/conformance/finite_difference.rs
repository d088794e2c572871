//! The f64 CPU backend's own gradients against central finite differences
//! ([`finite_difference_checks`]).

use super::cases::{cases, describe, inputs, test_graphs, Inputs};
use super::config::ConformanceConfig;
use super::evaluate::{evaluate, evaluate_forward, RefBackend};
use super::report::{CaseResult, Report};
use super::tensors::upstream;

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
