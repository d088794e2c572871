//! What a conformance run covers ([`ConformanceConfig`]).

use super::op::OpKind;
use crate::graph::{GraphOptions, KernelPolicy};
use burn::tensor::FloatDType;
use sparse_gnn_kernels::config::{Choice, KernelConfig};

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
