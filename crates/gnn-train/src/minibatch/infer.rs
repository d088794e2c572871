//! Layer-wise inference: every node's output one layer at a time, in row chunks that bound the
//! device memory, with every neighbour (no sampling), as PyG's and DGL's examples infer on large
//! graphs.

use super::blocks::{BlockRules, HostBlock};
use super::features::NodeFeatures;
use crate::error::TrainError;
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};
use burn_sparse_gnn::{Csr, Graph, SparseGnnBackend};
use gnn_models::GnnModel;

/// One chunk of rows as a full-neighbour block.
#[derive(Clone, Debug)]
struct Chunk<B: Backend> {
    graph: Graph<B>,
    /// Global ids of the block's sources (host and device).
    src: Vec<u32>,
    src_device: Tensor<B, 1, Int>,
}

/// The whole graph cut into chunks of consecutive rows, each the block of its rows with every
/// neighbour, built once and reused by every inference pass.
#[derive(Clone, Debug)]
pub struct LayerwisePlan<B: Backend> {
    chunks: Vec<Chunk<B>>,
    nodes: usize,
}

impl<B: SparseGnnBackend> LayerwisePlan<B> {
    /// The chunks of `chunk_rows` rows of `adj` (the last one shorter) under `rules`.
    ///
    /// Errors when `chunk_rows` is 0 or a block cannot be built.
    pub fn new(adj: &Csr, rules: &BlockRules, chunk_rows: usize, device: &B::Device) -> Result<Self, TrainError> {
        if chunk_rows == 0 {
            return Err(TrainError::Data("the inference chunk must hold at least one row".into()));
        }
        let n = adj.n_rows();
        let mut mark = vec![u32::MAX; adj.n_cols()];
        let mut chunks = Vec::with_capacity(n.div_ceil(chunk_rows));
        for start in (0..n).step_by(chunk_rows) {
            let block = HostBlock::full(adj, start..(start + chunk_rows).min(n), &mut mark);
            let src = block.src.clone();
            let ids: Vec<i64> = src.iter().map(|&s| s as i64).collect();
            let src_device = burn_sparse_gnn::upload_int(TensorData::new(ids, [src.len()]), device);
            chunks.push(Chunk { graph: rules.graph::<B>(block, false, device)?, src, src_device });
        }
        Ok(Self { chunks, nodes: n })
    }

    /// Nodes (rows) covered.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// Chunks.
    pub fn chunks(&self) -> usize {
        self.chunks.len()
    }
}

/// The logits `[nodes, classes]` of every node of `plan`'s graph: convolution by convolution
/// over the plan's chunks, each layer's output for all nodes kept on the device until the next
/// layer has read it; the first layer gathers its chunks' input rows from `features` (on the
/// host or the device). Equal to [`GnnModel::forward`] on the whole graph up to the order of
/// the sums. Run it on an inference backend (no dropout).
///
/// Errors when the features do not have one row per node.
pub fn layerwise_logits<B: SparseGnnBackend>(
    model: &GnnModel<B>,
    plan: &LayerwisePlan<B>,
    features: &NodeFeatures<B>,
) -> Result<Tensor<B, 2>, TrainError> {
    let device = match plan.chunks.first() {
        Some(c) => c.graph.device(),
        None => return Err(TrainError::Data("layer-wise inference on a graph without nodes".into())),
    };
    let mut h: Option<Tensor<B, 2>> = None;
    for l in 0..model.num_layers() {
        let mut outs = Vec::with_capacity(plan.chunks.len());
        for c in &plan.chunks {
            let input = match &h {
                None => model.input(features.rows(&c.src, Some(c.src_device.clone()), &device)?),
                Some(prev) => prev.clone().select(0, c.src_device.clone()),
            };
            let a = model.activate(l, input, c.graph.kernel_config(), None, None);
            outs.push(model.convolve(l, &c.graph, &a));
        }
        h = Some(if outs.len() == 1 { outs.remove(0) } else { Tensor::cat(outs, 0) });
    }
    let h = h.ok_or_else(|| TrainError::Data("a model without convolutions".into()))?;
    Ok(model.output(h))
}
