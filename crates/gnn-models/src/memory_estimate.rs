//! How much device memory full-graph training of a [`GnnModelConfig`] needs: an estimate from
//! the graph's size, the model and the precision, counted per component, so that a run that
//! will not fit can be refused before it starts.
//!
//! The count follows what a training epoch holds at its peak (the end of the forward pass and
//! the start of the backward pass):
//!
//! - **graph**: the CSR and its transpose (row pointers, column ids, the edge permutation),
//!   the edge groups of both directions, the degree norms, and, where the f32 SpMM splits off
//!   its hot columns, the cold edges' columns a second time;
//! - **node data**: the input features (f32), labels and loss weights;
//! - **parameters**: weights, their gradients and Adam's two moments (f32);
//! - **saved activations**: per convolution what autodiff keeps for the backward pass: the
//!   one-bit ReLU / dropout masks, the linear maps' inputs (f32, or a half copy in mixed
//!   precision), the aggregated rows where the backward reads them (not for a GraphSAGE mean /
//!   sum layer on dense rows that need a gradient, whose backward starts from `A^T dy`), MaxK's
//!   CBSR values and column ids, GAT's per-edge scores;
//! - **working set**: the tensors alive at the peak besides the saved ones: the current layer's
//!   output and the gradient flowing back (two `[n, hidden]` f32 tensors), a half copy in
//!   mixed precision, and the larger of two sets that are never alive together: the logits
//!   with their softmax and gradient, and the f32 staging rows a sparse kernel holds for rows
//!   split over several edge groups while it runs.
//!
//! Measured against the live-tensor peak of `train-app bench-train` on CUDA (GraphSAGE 4x256,
//! R-MAT graphs); `docs/PERFORMANCE.md` lists the comparison.

use crate::activation::Nonlinearity;
use crate::conv::EstimateLayer;
use crate::model::GnnModelConfig;
use crate::precision::Precision;
use serde::Serialize;

/// The size of a graph and its node data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphSize {
    /// Nodes.
    pub nodes: usize,
    /// Edges (CSR entries, self-loops included).
    pub edges: usize,
    /// Input feature width.
    pub features: usize,
    /// Whether the f32 SpMM keeps a hot-column split of the graph (a second copy of the cold
    /// edges' columns per direction); `Graph::shape()` tells after upload.
    pub hot_split: bool,
    /// Staging slots of the sparse kernels' split rows, in the direction and at the group
    /// width that have most (`GraphOptions::staging_slots` tells from the CSR; 0 where no
    /// row spans several edge groups). Each is an f32 row of the hidden width while a kernel
    /// runs: on graphs of thousands of edges per node they reach gigabytes.
    pub staging_slots: usize,
}

/// Estimated device bytes of training, per component (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MemoryEstimate {
    pub graph: u64,
    pub node_data: u64,
    pub parameters: u64,
    pub saved_activations: u64,
    pub working_set: u64,
    pub total: u64,
}

impl std::fmt::Display for MemoryEstimate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let g = |b: u64| b as f64 / (1u64 << 30) as f64;
        write!(
            f,
            "{:.2} GiB (graph {:.2}, node data {:.2}, parameters and optimizer {:.2}, saved activations {:.2}, \
             working set {:.2})",
            g(self.total),
            g(self.graph),
            g(self.node_data),
            g(self.parameters),
            g(self.saved_activations),
            g(self.working_set)
        )
    }
}

/// Bytes of the graph structure on the device.
pub fn graph_bytes(nodes: usize, edges: usize, hot_split: bool) -> u64 {
    let (n, e) = (nodes as u64, edges as u64);
    // per direction: row pointer, column ids; the transpose's edge permutation; edge groups
    // (pointer, row, slot per group: about one group per row plus one per 32 edges); six
    // degree vectors
    let per_direction = 4 * (n + 1) + 4 * e + 12 * (n + e / 32);
    let hot = if hot_split { 2 * 4 * e } else { 0 };
    2 * per_direction + 4 * e + 6 * 4 * n + hot
}

/// Number of parameters of the model.
pub fn parameter_count(cfg: &GnnModelConfig) -> u64 {
    let (d, h, c) = (cfg.d_in as u64, cfg.hidden as u64, cfg.classes as u64);
    let lin = |a: u64, b: u64| a * b + b;
    let mut total = 0;
    let layers = cfg.layers as u64;
    let dims: Vec<(u64, u64)> = (0..layers)
        .map(|l| if cfg.linear_io { (h, h) } else { (if l == 0 { d } else { h }, if l + 1 == layers { c } else { h }) })
        .collect();
    if cfg.linear_io {
        total += lin(d, h) + lin(h, c);
    }
    let opts = cfg.conv_options();
    for (a, b) in dims {
        total += cfg.conv.parameter_count(&opts, a, b);
    }
    total
}

/// The estimate for training `cfg` on a graph of `size` (see the module docs).
pub fn estimate_training(size: &GraphSize, cfg: &GnnModelConfig) -> MemoryEstimate {
    let n = size.nodes as u64;
    let e = size.edges as u64;
    let h = cfg.hidden as u64;
    let half = cfg.precision.half().is_some();
    // bytes per element of a saved linear input (a row-scaled half copy in mixed precision)
    let saved = if half { 2 } else { 4 };
    let dropout = if cfg.dropout > 0.0 { 1 } else { 0 };
    // one bit per entry, in u32 words (`burn_sparse_gnn::dropout`)
    let mask = |w: u64| w.div_ceil(32) * 4;
    let graph = graph_bytes(size.nodes, size.edges, size.hot_split && !half);
    let node_data = n * size.features as u64 * 4 + n * 4 * 3;
    let parameters = parameter_count(cfg) * 4 * 4;
    let mut per_node = 0u64;
    let mut per_edge = 0u64;
    for l in 0..cfg.layers {
        let classic_first = !cfg.linear_io && l == 0;
        let width_in = if classic_first { size.features as u64 } else { h };
        // the state the convolution reads: its ReLU + dropout mask (one pass, one bit per
        // entry), and the dense input a linear map keeps
        let state = match (classic_first, cfg.nonlin) {
            // the classic stack's first convolution reads the features, already resident
            (true, _) => 0,
            (false, Nonlinearity::Relu) => mask(h) + saved * h,
            (false, Nonlinearity::Maxpool { .. }) => h + dropout * mask(h) + saved * h,
            // CBSR values and column ids (packed to bytes up to width 256) and their dropout
            // mask; the dense copy a root / self term reads
            (false, Nonlinearity::Maxk { k }) => {
                let k = k as u64;
                4 * k + if h <= 256 { k.div_ceil(4) * 4 } else { 4 * k } + dropout * mask(k) + saved * h
            }
        };
        let last = !cfg.linear_io && l + 1 == cfg.layers;
        let width_out = if last { cfg.classes as u64 } else { h };
        let dense_in = classic_first || cfg.nonlin == Nonlinearity::Relu;
        let layer = EstimateLayer { width_in, width_out, hidden: h, saved, half, dense_in, classic_first };
        let conv = cfg.conv.saved_bytes(&cfg.conv_options(), &layer);
        per_edge += conv.per_edge;
        let conv = conv.per_node;
        per_node += state + conv;
    }
    if cfg.norm == crate::NormKind::LayerNorm {
        per_node += cfg.layers as u64 * 4 * h;
    }
    let saved_activations = n * per_node + e * per_edge + if cfg.linear_io { n * saved * h } else { 0 };
    let classes = cfg.classes as u64;
    let staged_rows = cfg.conv.staged_rows(&cfg.conv_options());
    let staging = staged_rows * 4 * size.staging_slots as u64 * h;
    // the logits, their softmax and gradient live from the loss to the output layer's
    // backward, before any convolution's backward kernel runs and after the forward ones: the
    // larger of the two is at the peak
    let working_set = n * (2 * 4 * h + if half { 2 * h } else { 0 }) + (n * 3 * 4 * classes).max(staging);
    let total = graph + node_data + parameters + saved_activations + working_set;
    MemoryEstimate { graph, node_data, parameters, saved_activations, working_set, total }
}

/// The largest sampled batch of mini-batch training: the sources of its first block (every
/// node a batch reads) and the edges of all its blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchSize {
    /// Nodes of the batch's largest block (its first block's sources).
    pub nodes: usize,
    /// Edges of all its blocks.
    pub edges: usize,
    /// Batches alive at once (the one training and those built ahead).
    pub in_flight: usize,
}

impl BatchSize {
    /// The bound for `seeds` seeds and the fan-outs `fanouts` (hop 1 first) on a graph of
    /// `nodes` nodes: each hop multiplies the frontier by its fan-out, capped at the nodes.
    pub fn bound(seeds: usize, fanouts: &[usize], nodes: usize, in_flight: usize) -> Self {
        let (mut frontier, mut all, mut edges) = (seeds as u64, seeds as u64, 0u64);
        for &f in fanouts {
            let e = frontier.saturating_mul(f as u64 + 1);
            edges = edges.saturating_add(e);
            frontier = e.min(nodes as u64);
            all = all.saturating_add(frontier).min(nodes as u64);
        }
        Self { nodes: all as usize, edges: edges as usize, in_flight: in_flight.max(1) }
    }
}

/// The estimate for mini-batch training of `cfg` on a graph of `size`
/// (`burn_sparse_gnn::ops::neighbors`, gnn-train's `minibatch`): the whole graph's structure
/// twice (the sampler's and the chunks of layer-wise inference) with the sampler's three node
/// vectors; the features only where they stay on the device (`features_on_device`); the
/// parameters; a training step on a graph of the batch's size ([`estimate_training`]'s saved
/// activations and working set at `batch.nodes` nodes and `batch.edges` edges) and the inputs
/// of the batches in flight; the two `[nodes, width]` outputs layer-wise inference holds.
pub fn estimate_minibatch(
    size: &GraphSize,
    cfg: &GnnModelConfig,
    batch: &BatchSize,
    features_on_device: bool,
) -> MemoryEstimate {
    let n = size.nodes as u64;
    let graph = 2 * graph_bytes(size.nodes, size.edges, false) + 3 * 4 * n;
    let node_data = if features_on_device { n * size.features as u64 * 4 } else { 0 } + n * 4 * 3;
    let parameters = parameter_count(cfg) * 4 * 4;
    let step_size = GraphSize {
        nodes: batch.nodes,
        edges: batch.edges,
        features: size.features,
        hot_split: false,
        staging_slots: 0,
    };
    let step = estimate_training(&step_size, cfg);
    let inputs = batch.in_flight as u64
        * (graph_bytes(batch.nodes, batch.edges, false) + batch.nodes as u64 * size.features as u64 * 4);
    let width = cfg.hidden.max(cfg.classes).max(if cfg.linear_io { cfg.hidden } else { 0 }) as u64;
    let inference = 2 * n * width * 4;
    let saved_activations = step.saved_activations;
    let working_set = step.working_set.max(inference) + inputs;
    let total = graph + node_data + parameters + saved_activations + working_set;
    MemoryEstimate { graph, node_data, parameters, saved_activations, working_set, total }
}

/// Whether `precision` keeps half copies (for callers that print what to change).
pub fn is_mixed(precision: Precision) -> bool {
    precision.half().is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conv::ConvKind;

    fn sage(precision: Precision) -> GnnModelConfig {
        GnnModelConfig::new(ConvKind::Sage, 602, 256, 41).with_layers(4).with_precision(precision)
    }

    #[test]
    fn mixed_precision_and_narrower_models_need_less() {
        let size = GraphSize { nodes: 232_965, edges: 114_615_892, features: 602, hot_split: true, staging_slots: 0 };
        let f32 = estimate_training(&size, &sage(Precision::F32));
        let mixed = estimate_training(&size, &sage(Precision::MixedF16));
        assert!(mixed.total < f32.total, "{mixed} vs {f32}");
        assert!(mixed.graph < f32.graph, "mixed precision keeps no hot-column split");
        let mut narrow_cfg = sage(Precision::F32);
        narrow_cfg.hidden = 64;
        let narrow = estimate_training(&size, &narrow_cfg);
        assert!(narrow.saved_activations * 3 < f32.saved_activations);
        let sum = f32.graph + f32.node_data + f32.parameters + f32.saved_activations + f32.working_set;
        assert_eq!(f32.total, sum);
    }

    #[test]
    fn staging_rows_of_split_rows_are_in_the_working_set() {
        let size = GraphSize { nodes: 1_000, edges: 2_000_000, features: 100, hot_split: false, staging_slots: 0 };
        let split = GraphSize { staging_slots: 7_900, ..size };
        let few = GraphSize { staging_slots: 100, ..size };
        for precision in [Precision::F32, Precision::MixedF16] {
            let cfg = GnnModelConfig::new(ConvKind::Sage, 100, 256, 47).with_layers(4).with_precision(precision);
            let plain = estimate_training(&size, &cfg);
            // one f32 row of the hidden width per slot in place of the logits' three f32 rows
            // per node, which are never alive at the same time
            let staged = estimate_training(&split, &cfg);
            assert_eq!(staged.working_set - plain.working_set, 7_900 * 4 * 256 - 1_000 * 3 * 4 * 47, "{precision:?}");
            assert_eq!(staged.total - plain.total, staged.working_set - plain.working_set, "{precision:?}");
            // fewer staging bytes than the logits' change nothing
            assert_eq!(estimate_training(&few, &cfg), plain, "{precision:?}");
        }
    }

    #[test]
    fn square_sage_layers_on_relu_keep_no_aggregate() {
        let size = GraphSize { nodes: 1_000, edges: 50_000, features: 100, hot_split: false, staging_slots: 0 };
        for (precision, bytes) in [(Precision::F32, 4u64), (Precision::MixedF16, 2)] {
            let cfg = GnnModelConfig::new(ConvKind::Sage, 100, 256, 47)
                .with_layers(4)
                .with_precision(precision)
                .with_linear_io(true)
                .with_dropout(0.5);
            let est = estimate_training(&size, &cfg);
            // per convolution its ReLU / dropout mask and its saved input; the output map's input
            let per_node = 4 * (256 / 32 * 4 + bytes * 256) + bytes * 256;
            assert_eq!(est.saved_activations, 1_000 * per_node, "{precision:?}");
            // MaxK input is aggregated by the CBSR SpGEMM, whose output the map keeps
            let maxk = estimate_training(&size, &cfg.clone().with_nonlin(Nonlinearity::Maxk { k: 32 }));
            assert!(maxk.saved_activations > 1_000 * 4 * bytes * 256, "{precision:?}");
        }
    }

    #[test]
    fn minibatch_estimate_holds_the_batch_not_the_graph_activations() {
        let size =
            GraphSize { nodes: 20_000_000, edges: 200_000_000, features: 1_024, hot_split: false, staging_slots: 0 };
        let mut cfg = sage(Precision::F32);
        cfg.d_in = 1_024;
        let batch = BatchSize::bound(1_024, &[15, 10, 5], size.nodes, 3);
        // 1,024 seeds, then 16x, 11x, 6x their frontier (a self edge per row)
        assert_eq!(batch.nodes, 1_024 * (1 + 16 + 16 * 11 + 16 * 11 * 6));
        let full = estimate_training(&size, &cfg);
        let host = estimate_minibatch(&size, &cfg, &batch, false);
        let device = estimate_minibatch(&size, &cfg, &batch, true);
        assert_eq!(device.node_data - host.node_data, 20_000_000 * 1_024 * 4);
        assert!(host.total * 3 < full.total, "{host} vs {full}");
        assert_eq!(
            host.total,
            host.graph + host.node_data + host.parameters + host.saved_activations + host.working_set
        );
        // a small graph caps the frontier at its nodes
        assert_eq!(BatchSize::bound(1_024, &[15, 10], 5_000, 1).nodes, 5_000);
    }

    #[test]
    fn parameters_of_a_sage_model() {
        // lin_in 602x256+256, 4 x (2 x 256x256 + 256), lin_out 256x41+41
        let want = 602 * 256 + 256 + 4 * (2 * 256 * 256 + 256) + 256 * 41 + 41;
        assert_eq!(parameter_count(&sage(Precision::F32)), want as u64);
    }
}
