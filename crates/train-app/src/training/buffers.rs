//! The largest tensors a run holds on one device, checked before it starts against the largest
//! buffer the device can bind (`burn_sparse_gnn::ops::device::check_buffers`; wgpu adapters
//! limit it, to 128 MiB on Mesa's lavapipe). A tensor above the limit would not fail the run:
//! CubeCL's wgpu server refuses it in its own thread, or binds it in part, and training goes on
//! with wrong values.

use super::TrainConfig;
use crate::error::{AppError, Result};
use burn_sparse_gnn::ops::device::check_buffers;
use burn_sparse_gnn::SparseGnnBackend;

/// Sizes of a run's graph, as far as its largest tensors go.
#[derive(Clone, Copy, Debug)]
pub struct RunShape {
    pub nodes: usize,
    /// Edges of the graph the convolutions read (with self-loops where the model adds them).
    pub edges: usize,
    pub features: usize,
    /// Width of the model's output (classes, or the embedding of link prediction).
    pub outputs: usize,
    /// Link prediction: the training pairs the decoder scores at once.
    pub pairs: Option<usize>,
}

/// The largest tensors a full-graph run of `cfg` on `shape` holds on one device, with what
/// each holds: the features and outputs in f32, a hidden state in the storage precision, the
/// column indices of the graph, GAT's per-edge scores, and the MLP decoder's gathered pair rows
/// (f32).
pub fn largest_tensors(cfg: &TrainConfig, shape: &RunShape) -> Vec<(String, u64)> {
    let n = shape.nodes as u64;
    let hidden_bytes = if cfg.precision.half().is_some() { 2 } else { 4 };
    let mut v = vec![
        features_tensor(shape),
        (format!("a hidden state ([{}, {}])", shape.nodes, cfg.hidden), n * cfg.hidden as u64 * hidden_bytes),
        (format!("the model's output ([{}, {}] f32)", shape.nodes, shape.outputs), n * shape.outputs as u64 * 4),
        (format!("the graph's column indices ({} edges)", shape.edges), shape.edges as u64 * 4),
    ];
    if cfg.model == gnn_models::ConvKind::Gat {
        let heads = cfg.heads.max(1) as u64;
        v.push((format!("GAT's edge scores ([{}, {heads}] f32)", shape.edges), shape.edges as u64 * heads * 4));
    }
    if let (Some(pairs), gnn_train::link::Decoder::Mlp) = (shape.pairs, cfg.decoder) {
        v.push((
            format!("the MLP decoder's pair rows ([{pairs}, {}] f32)", cfg.embedding),
            pairs as u64 * cfg.embedding as u64 * 4,
        ));
    }
    v
}

/// The node features of `shape` in f32, with what they are.
pub fn features_tensor(shape: &RunShape) -> (String, u64) {
    let bytes = shape.nodes as u64 * shape.features as u64 * 4;
    (format!("the node features ([{}, {}] f32)", shape.nodes, shape.features), bytes)
}

/// Refuses a run of `cfg` on `shape` that would hold a tensor larger than one buffer of
/// `device` (only devices that limit buffers below their memory: wgpu).
pub fn check_run_buffers<B: SparseGnnBackend>(cfg: &TrainConfig, shape: &RunShape, device: &B::Device) -> Result<()> {
    let tensors = largest_tensors(cfg, shape);
    let list: Vec<(&str, u64)> = tensors.iter().map(|(w, b)| (w.as_str(), *b)).collect();
    check_buffers::<B>(device, &list).map_err(|e| {
        AppError::Config(format!(
            "{e}: the run cannot compute on it. Use the cuda or cpu backend, or a smaller graph or width"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pair_rows_count_for_the_mlp_decoder_only() {
        let mut cfg = TrainConfig { hidden: 256, embedding: 64, ..Default::default() };
        let shape = RunShape { nodes: 50_000, edges: 1_000_000, features: 64, outputs: 64, pairs: Some(850_000) };
        let largest = |cfg: &TrainConfig| largest_tensors(cfg, &shape).into_iter().map(|(_, b)| b).max().unwrap();
        assert_eq!(largest(&cfg), 50_000 * 256 * 4);
        cfg.decoder = gnn_train::link::Decoder::Mlp;
        assert_eq!(largest(&cfg), 850_000 * 64 * 4);
        // a CPU device has no limit
        assert!(check_run_buffers::<burn_sparse_gnn::Cpu>(&cfg, &shape, &Default::default()).is_ok());
    }
}
