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

mod attention_checks;
mod backend_checks;
mod cases;
mod config;
mod evaluate;
mod finite_difference;
mod link_checks;
mod measure;
mod neighbor_checks;
mod norm_checks;
mod op;
mod optim_checks;
mod report;
mod runner;
mod tensors;
pub mod testgen;
mod training_checks;

pub use attention_checks::{
    gat_attention_bound, gat_attention_checks, GAT_ATTENTION_BOUND_BF16, GAT_ATTENTION_BOUND_F16,
    GAT_ATTENTION_BOUND_F32,
};
pub use backend_checks::{
    add_rows_checks, from_host_checks, half_rows_checks, inv_degree_checks, mixed_rows_checks, packed_graph_checks,
};
pub use cases::{cases, inputs, round_inputs, test_graphs, Inputs, TestGraph};
pub use config::ConformanceConfig;
pub use evaluate::{evaluate, reference_forward, Evaluation, RefBackend};
pub use finite_difference::finite_difference_checks;
pub use link_checks::{link_checks, pair_rows_checks};
pub use measure::normwise_error;
pub use neighbor_checks::{
    block_checks, block_norm_checks, block_structure_checks, neighbor_checks, neighbor_uniformity,
    NEIGHBOR_CHI_SQUARE_BOUND,
};
pub use norm_checks::norm_checks;
pub use op::{Op, OpKind};
pub use optim_checks::{adam_checks, fused_adam_checks};
pub use report::{CaseResult, Report};
pub use runner::{run, run_with};
pub use training_checks::{binary_cross_entropy_checks, cross_entropy_checks, relu_dropout_checks};
