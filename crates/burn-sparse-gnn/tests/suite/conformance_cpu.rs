//! The conformance suite on the CPU backend (f32 NdArray under autodiff), one test per operation
//! kind and configuration, and the finite-difference gradient checks of the f64 CPU backend every
//! other backend is compared with.

use burn::backend::Autodiff;
use burn_sparse_gnn::conformance::ConformanceConfig;
use burn_sparse_gnn::Cpu;

burn_sparse_gnn::testgen_conformance! {
    backend: Autodiff<Cpu>,
    device: Default::default(),
    configs: {
        defaults: ConformanceConfig::default() => [
            spmm_sum, spmm_mean, spmm_max, sddmm, edge_softmax, sampled_spmm, maxk, maxk_dense, maxpool, cbsr_spgemm,
        ],
        // tiny edge groups: every row of more than 3 edges is split (exercises split-row paths)
        small_groups: ConformanceConfig {
            group_width: 3,
            hub_degree: 2_000,
            widths: vec![5],
            ..Default::default()
        } => [
            spmm_sum, spmm_mean, spmm_max, sddmm, edge_softmax, sampled_spmm, maxk, maxk_dense, maxpool, cbsr_spgemm,
        ],
    },
}

burn_sparse_gnn::testgen_finite_differences! {
    config: ConformanceConfig { hub_degree: 1_500, widths: vec![1, 7, 33], ..Default::default() },
    coords_per_input: 12,
    ops: [spmm_sum, spmm_mean, spmm_max, sddmm, edge_softmax, sampled_spmm, maxk, maxk_dense, maxpool, cbsr_spgemm],
}
