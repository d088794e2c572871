//! The sampled mini-batch: a batch of seed nodes, its blocks sampled on the device, the
//! features of the first block's sources and the seeds' labels.

use super::blocks::{BlockRules, HostBlock};
use super::features::NodeFeatures;
use crate::error::TrainError;
use burn::tensor::{Int, Tensor, TensorData};
use burn_sparse_gnn::ops::neighbors::{sample_block, sample_next_block, step_key, SampledBlock};
use burn_sparse_gnn::{Csr, Graph, GraphOptions, SparseGnnBackend};
use std::sync::Arc;

/// A sampled mini-batch (see [`gnn_models::GnnModel::forward_blocks`]).
#[derive(Clone, Debug)]
pub struct MiniBatch<B: burn::tensor::backend::Backend> {
    /// Convolution `l`'s block, first to last (the last one's rows are the seeds).
    pub blocks: Vec<Graph<B>>,
    /// Features of the first block's sources.
    pub x: Tensor<B, 2>,
    /// The seeds' labels.
    pub labels: Tensor<B, 1, Int>,
    /// Each seed's weight in the loss, `1 / seeds`.
    pub weight: Tensor<B, 1>,
    /// The epoch (1-based) and the batch's index in it: the dropout draws' seed.
    pub epoch: usize,
    pub index: usize,
    /// Sources of the first block (the nodes whose features the batch read).
    pub input_nodes: usize,
}

/// Neighbour sampling for mini-batches on the device: the whole graph's structure uploaded
/// once, per batch one block per layer built by [`burn_sparse_gnn::ops::neighbors`]'s kernels,
/// then read back and uploaded as the device graphs the layers take ([`BlockRules`]).
///
/// `fanouts[h]` is the fan-out of hop `h + 1` from the seeds (PyG's `num_neighbors` order:
/// `15,10,5` samples 15 neighbours of each seed, 10 of each of those, 5 at the input layer);
/// the last convolution's block is hop 1's.
pub struct NeighborSampler<B: SparseGnnBackend> {
    graph: Graph<B>,
    fanouts: Vec<usize>,
    seed: u64,
    rules: BlockRules,
    nodes: usize,
}

impl<B: SparseGnnBackend> NeighborSampler<B> {
    /// Uploads `adj` (rows: the nodes each node aggregates from, as the layers read it);
    /// `seed` keys every batch's sample.
    ///
    /// Errors on an empty or zero fan-out list and on the graphs [`BlockRules::new`] refuses.
    pub fn new(
        adj: &Csr,
        fanouts: Vec<usize>,
        seed: u64,
        rules: BlockRules,
        device: &B::Device,
    ) -> Result<Self, TrainError> {
        if fanouts.is_empty() || fanouts.contains(&0) {
            return Err(TrainError::Data(format!("fan-outs must be at least 1 per layer, got {fanouts:?}")));
        }
        // only the CSR is read; the default options keep the upload plain
        let graph = Graph::<B>::new(adj, device, GraphOptions::default());
        Ok(Self { graph, fanouts, seed, rules, nodes: adj.n_rows() })
    }

    /// Layers (blocks per batch).
    pub fn layers(&self) -> usize {
        self.fanouts.len()
    }

    /// Nodes of the graph.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// The block rules.
    pub fn rules(&self) -> &BlockRules {
        &self.rules
    }

    /// The device.
    pub fn device(&self) -> B::Device {
        self.graph.device()
    }

    /// Samples the blocks of `seeds` (distinct nodes) on the device, hop 1 first; `batch` keys
    /// the draw (the same seeds and key give the same blocks on every backend).
    pub fn sample_device(&self, seeds: &[u32], batch: u64) -> Result<Vec<SampledBlock<B>>, TrainError> {
        let device = self.graph.device();
        let ids: Vec<i64> = seeds.iter().map(|&s| s as i64).collect();
        let dst = Tensor::<B, 1, Int>::from_data(TensorData::new(ids, [seeds.len()]), &device);
        let op = |e: burn_sparse_gnn::OpError| TrainError::Data(e.to_string());
        let mut hops = Vec::with_capacity(self.fanouts.len());
        hops.push(sample_block(&self.graph, dst, self.fanouts[0], step_key(self.seed, 0, batch)).map_err(op)?);
        for (h, &f) in self.fanouts.iter().enumerate().skip(1) {
            let next = sample_next_block(&self.graph, &hops[h - 1], f, step_key(self.seed, h as u32, batch));
            hops.push(next.map_err(op)?);
        }
        Ok(hops)
    }

    /// The batch of `seeds`: the blocks (first convolution first) as device graphs, the
    /// features of the first block's sources from `features`, the seeds' `labels`.
    pub fn batch(
        &self,
        seeds: &[u32],
        (epoch, index): (usize, usize),
        features: &NodeFeatures<B>,
        labels: &[i64],
    ) -> Result<MiniBatch<B>, TrainError> {
        let key = ((epoch as u64) << 32) ^ index as u64;
        let hops = self.sample_device(seeds, key)?;
        let device = self.graph.device();
        let input_ids = hops.last().map(|b| b.src.clone());
        let mut blocks = Vec::with_capacity(hops.len());
        let mut input_host = Vec::new();
        for (i, b) in hops.into_iter().rev().enumerate() {
            let host = HostBlock::read(b)?;
            if i == 0 {
                input_host = host.src.clone();
            }
            blocks.push(self.rules.graph::<B>(host, true, &device)?);
        }
        let x = features.rows(&input_host, input_ids, &device)?;
        let n = seeds.len();
        let lab: Vec<i64> = seeds.iter().map(|&s| labels.get(s as usize).copied().unwrap_or(0).max(0)).collect();
        let dtype = <B::FloatElem as burn::tensor::Element>::dtype();
        Ok(MiniBatch {
            blocks,
            x,
            labels: Tensor::from_data(TensorData::new(lab, [n]), &device),
            weight: Tensor::from_data(
                TensorData::new(vec![1.0 / n.max(1) as f32; n], [n]).convert_dtype(dtype),
                (&device, dtype),
            ),
            epoch,
            index,
            input_nodes: input_host.len(),
        })
    }
}

/// Everything a batch is made from, shared by the loader's threads.
pub struct MiniBatchSource<B: SparseGnnBackend> {
    /// The sampler.
    pub sampler: NeighborSampler<B>,
    /// Node features.
    pub features: NodeFeatures<B>,
    /// Every node's label (-1: unlabeled).
    pub labels: Arc<Vec<i64>>,
}

impl<B: SparseGnnBackend> MiniBatchSource<B> {
    /// The batch of `seeds` ([`NeighborSampler::batch`]).
    pub fn batch(&self, seeds: &[u32], at: (usize, usize)) -> Result<MiniBatch<B>, TrainError> {
        self.sampler.batch(seeds, at, &self.features, &self.labels)
    }
}
