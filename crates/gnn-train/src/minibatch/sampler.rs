//! The sampled mini-batch: a batch of seed nodes, its blocks sampled on the device, the
//! features of the first block's sources and the seeds' labels.

use super::blocks::BlockRules;
use super::features::NodeFeatures;
use crate::error::TrainError;
use burn::tensor::{Int, Tensor, TensorData};
use burn_sparse_gnn::ops::neighbors::{
    block_graph, sample_block, sample_next_block, step_key, BlockGraphSpec, SampledBlock,
};
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
/// once, per batch one block per layer sampled and built into the graph the layers take by
/// [`burn_sparse_gnn::ops::neighbors`]'s kernels ([`block_graph`], under [`BlockRules`]), with
/// no host copy of a block (a few sizes per hop are read back). With the rules' self-loops
/// (GAT) the sample is drawn from the graph without its self-loops and every destination gets
/// the edge from itself.
///
/// `fanouts[h]` is the fan-out of hop `h + 1` from the seeds (PyG's `num_neighbors` order:
/// `15,10,5` samples 15 neighbours of each seed, 10 of each of those, 5 at the input layer);
/// the last convolution's block is hop 1's.
pub struct NeighborSampler<B: SparseGnnBackend> {
    graph: Graph<B>,
    fanouts: Vec<usize>,
    seed: u64,
    rules: BlockRules,
    spec: BlockGraphSpec<B>,
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
        let graph = match rules.self_loops() && adj.self_loops() > 0 {
            true => Graph::<B>::new(&without_self_loops(adj)?, device, GraphOptions::default()),
            false => Graph::<B>::new(adj, device, GraphOptions::default()),
        };
        let spec = rules.device_spec::<B>(device);
        Ok(Self { graph, fanouts, seed, rules, spec, nodes: adj.n_rows() })
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
        let dst = burn_sparse_gnn::upload_int::<B, 1>(TensorData::new(ids, [seeds.len()]), &device);
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
        let blocks: Vec<Graph<B>> =
            hops.iter().zip(&self.fanouts).rev().map(|(b, &f)| block_graph(b, f, &self.spec)).collect();
        let input = hops.last().ok_or_else(|| TrainError::Data("a batch without blocks".into()))?;
        let input_nodes = input.n_src;
        // the input rows: selected on the device, or gathered on the host from the ids read back
        let input_host = match features {
            NodeFeatures::Device(_) => Vec::new(),
            NodeFeatures::Host { .. } => {
                let v = input.src.clone().into_data().convert::<i64>().into_vec::<i64>();
                let v = v.map_err(|e| TrainError::Data(format!("cannot read a batch's nodes: {e:?}")))?;
                v.into_iter().map(|i| i as u32).collect()
            }
        };
        let x = features.rows(&input_host, Some(input.src.clone()), &device)?;
        let n = seeds.len();
        let lab: Vec<i64> = seeds.iter().map(|&s| labels.get(s as usize).copied().unwrap_or(0).max(0)).collect();
        let dtype = <B::FloatElem as burn::tensor::Element>::dtype();
        Ok(MiniBatch {
            blocks,
            x,
            labels: burn_sparse_gnn::upload_int(TensorData::new(lab, [n]), &device),
            weight: burn_sparse_gnn::upload(
                TensorData::new(vec![1.0 / n.max(1) as f32; n], [n]).convert_dtype(dtype),
                &device,
            ),
            epoch,
            index,
            input_nodes,
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

/// `adj` without its self-loops.
fn without_self_loops(adj: &Csr) -> Result<Csr, TrainError> {
    let (ptr, cols) = (adj.row_ptr(), adj.col_idx());
    let mut row_ptr = Vec::with_capacity(ptr.len());
    let mut col_idx = Vec::with_capacity(cols.len());
    row_ptr.push(0i64);
    for r in 0..adj.n_rows() {
        col_idx.extend(cols[ptr[r]..ptr[r + 1]].iter().copied().filter(|&c| c as usize != r));
        row_ptr.push(col_idx.len() as i64);
    }
    Csr::from_columns(adj.n_rows(), adj.n_cols(), &row_ptr, col_idx, None).map_err(|e| TrainError::Data(e.to_string()))
}
