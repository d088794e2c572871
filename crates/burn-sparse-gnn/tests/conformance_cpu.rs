//! The conformance suite on the CPU backend (f32 NdArray under autodiff) and the
//! finite-difference gradient checks of the f64 CPU backend every other backend is compared with.

use burn::backend::Autodiff;
use burn_sparse_gnn::conformance::{finite_difference_checks, run, ConformanceConfig};
use burn_sparse_gnn::Cpu;

#[test]
fn conformance_suite_passes_on_ndarray() {
    let report = run::<Autodiff<Cpu>>(&Default::default(), &ConformanceConfig::default());
    println!("{}", report.table());
    assert!(report.results.len() > 100, "the suite ran its cases");
    assert!(report.passed(), "failures: {:#?}", report.failures());
}

#[test]
fn conformance_with_small_groups_passes() {
    // tiny edge groups: every row of more than 3 edges is split (exercises split-row paths)
    let cfg = ConformanceConfig { group_width: 3, hub_degree: 2_000, widths: vec![5], ..Default::default() };
    let report = run::<Autodiff<Cpu>>(&Default::default(), &cfg);
    assert!(report.passed(), "failures: {:#?}", report.failures());
}

#[test]
fn gradients_match_finite_differences_in_f64() {
    let cfg = ConformanceConfig { hub_degree: 1_500, widths: vec![1, 7, 33], ..Default::default() };
    let report = finite_difference_checks(&cfg, 12);
    println!("{}", report.table());
    let ops: std::collections::BTreeSet<&str> = report.results.iter().map(|r| r.op.as_str()).collect();
    for op in ["spmm", "sddmm", "edge_softmax", "sampled_spmm", "maxk", "maxk_dense", "maxpool", "cbsr_spgemm"] {
        assert!(ops.contains(op), "{op} was checked");
    }
    let checks: std::collections::BTreeSet<&str> = report.results.iter().map(|r| r.check.as_str()).collect();
    for c in ["fd x", "fd w", "fd a", "fd scores"] {
        assert!(checks.contains(c), "{c} was checked");
    }
    assert!(report.passed(), "failures: {:#?}", report.failures());
}
