//! Link prediction's full-graph batches: the encoder's graph and features on the device, and
//! the pairs a split scores.

use super::split::{LinkSplit, Pair};
use crate::batch::SplitKind;
use crate::error::TrainError;
use burn::data::dataloader::batcher::Batcher;
use burn::tensor::{Int, Tensor, TensorData};
use burn_sparse_gnn::partition::PartitionedGraph;
use burn_sparse_gnn::{Csr, Graph, GraphOptions, SparseGnnBackend};
use gnn_models::partitioned::devices::{devices_of, DistGraph, HaloLayout};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Pairs scored in the training step's metrics (the loss takes every pair): a strided sample.
pub const TRAIN_METRIC_PAIRS: usize = 1 << 15;

/// The pairs of a batch as a pattern (row = destination) and, in its CSR order, each pair's
/// destination (`rows`) and source (`cols`).
#[derive(Clone, Debug)]
pub struct Pairs<B: burn::prelude::Backend> {
    pub pattern: Graph<B>,
    pub rows: Tensor<B, 1, Int>,
    pub cols: Tensor<B, 1, Int>,
}

/// The encoder's graph (training edges only) and input features on the devices.
#[derive(Clone, Debug)]
pub enum Encoder<B: burn::prelude::Backend> {
    /// The whole graph and the features on the batch's device.
    Whole { graph: Graph<B>, x: Tensor<B, 2> },
    /// The graph cut into parts on their devices ([`LinkHost::with_parts`]), each part's input
    /// rows on its device; the batch's device leads.
    Parts { graph: DistGraph<B>, xs: Vec<Tensor<B, 2>> },
}

/// One step's data. Cloning is cheap.
#[derive(Clone, Debug)]
pub struct LinkBatch<B: burn::prelude::Backend> {
    /// What the encoder reads.
    pub encoder: Encoder<B>,
    /// Training: the positive training pairs (also the known edges negatives avoid); valid /
    /// test: the split's positives and fixed negatives.
    pub pairs: Pairs<B>,
    /// Valid / test: 1 for a positive, 0 for a negative, in the pairs' CSR order.
    pub labels: Option<Tensor<B, 1, Int>>,
    /// Training: negatives per positive, drawn in the step.
    pub negatives: usize,
    /// Training: the seed of this epoch's negatives.
    pub negative_seed: u64,
    /// Training: the pairs of the step's metrics ([`TRAIN_METRIC_PAIRS`] at most).
    pub sample: Tensor<B, 1, Int>,
    pub epoch: usize,
}

/// Host data of a link-prediction run.
pub struct LinkHost {
    pub split: LinkSplit,
    /// `[num_nodes, d_in]` row-major.
    pub x: Vec<f32>,
    pub d_in: usize,
    pub opts: GraphOptions,
    /// The encoder's graph has self-loops (GCN's normalisation with them, GAT).
    pub self_loops: bool,
    /// Negatives per positive in training (>= 1).
    pub negatives: usize,
    pub seed: u64,
    /// The encoder on the parts of its graph, where set.
    pub parts: Option<LinkParts>,
}

/// How the encoder runs on the parts of its graph: a partition of the encoder's graph
/// ([`LinkSplit::message_graph`]), the device index of each part's device (round-robin over
/// `devices`, the first one the leader that the batch's device is) and how the parts hold
/// their halo columns. The embeddings come back to the leader, where the decoder and the loss
/// run.
#[derive(Clone, Debug)]
pub struct LinkParts {
    pub partition: PartitionedGraph,
    pub devices: Vec<usize>,
    pub layout: HaloLayout,
}

impl LinkHost {
    /// Checks the split, the features' size and the negative ratio.
    pub fn new(
        split: LinkSplit,
        x: Vec<f32>,
        d_in: usize,
        opts: GraphOptions,
        self_loops: bool,
        negatives: usize,
        seed: u64,
    ) -> Result<Self, TrainError> {
        split.check()?;
        if x.len() != split.num_nodes * d_in {
            return Err(TrainError::Data(format!(
                "{} feature values for {} nodes of width {d_in}",
                x.len(),
                split.num_nodes
            )));
        }
        if negatives == 0 {
            return Err(TrainError::Data("the negative ratio must be at least 1 negative per positive".into()));
        }
        Ok(Self { split, x, d_in, opts, self_loops, negatives, seed, parts: None })
    }

    /// Runs the encoder on the parts of `parts.partition`, which must partition the encoder's
    /// graph (errors when its node count differs or no device is named).
    pub fn with_parts(mut self, parts: LinkParts) -> Result<Self, TrainError> {
        if parts.partition.n_nodes != self.split.num_nodes {
            return Err(TrainError::Data(format!(
                "the partition has {} nodes, the encoder's graph {}",
                parts.partition.n_nodes, self.split.num_nodes
            )));
        }
        if parts.devices.is_empty() {
            return Err(TrainError::Data("the encoder's parts need at least one device".into()));
        }
        self.parts = Some(parts);
        Ok(self)
    }
}

type Resident<B> = (Encoder<B>, Pairs<B>, Tensor<B, 1, Int>);
type Scored<B> = (Pairs<B>, Tensor<B, 1, Int>);

/// Builds [`LinkBatch`]es, uploading each graph once per backend and device.
#[derive(Clone)]
pub struct LinkBatcher {
    host: Arc<LinkHost>,
    cache: Arc<Mutex<HashMap<(TypeId, String), Box<dyn Any + Send>>>>,
    epoch: Arc<AtomicUsize>,
}

fn ints<B: SparseGnnBackend>(v: Vec<i64>, device: &B::Device) -> Tensor<B, 1, Int> {
    let n = v.len();
    burn_sparse_gnn::upload_int(TensorData::new(v, [n]), device)
}

fn pairs_of<B: SparseGnnBackend>(csr: &Csr, opts: GraphOptions, device: &B::Device) -> Pairs<B> {
    pairs_on(csr, Graph::new(csr, device, opts), device)
}

/// The pairs of `csr`, whose device graph is `pattern`.
fn pairs_on<B: SparseGnnBackend>(csr: &Csr, pattern: Graph<B>, device: &B::Device) -> Pairs<B> {
    let mut rows = Vec::with_capacity(csr.nnz());
    for r in 0..csr.n_rows() {
        rows.extend(std::iter::repeat_n(r as i64, csr.row_ptr()[r + 1] - csr.row_ptr()[r]));
    }
    let cols = csr.col_idx().iter().map(|&c| c as i64).collect();
    Pairs { pattern, rows: ints::<B>(rows, device), cols: ints::<B>(cols, device) }
}

/// The pattern of `pos` then `neg` (row = destination) and each pair's label in CSR order.
pub fn scored_pattern(n: usize, pos: &[Pair], neg: &[Pair]) -> Result<(Csr, Vec<i64>), TrainError> {
    let mut all: Vec<(u32, u32, i64)> =
        pos.iter().map(|p| (p[1], p[0], 1)).chain(neg.iter().map(|p| (p[1], p[0], 0))).collect();
    all.sort_unstable();
    let mut row_ptr = vec![0i64; n + 1];
    for &(r, _, _) in &all {
        row_ptr[r as usize + 1] += 1;
    }
    for i in 0..n {
        row_ptr[i + 1] += row_ptr[i];
    }
    let cols = all.iter().map(|&(_, c, _)| c).collect();
    let labels = all.iter().map(|&(_, _, l)| l).collect();
    let csr = Csr::from_columns(n, n, &row_ptr, cols, None).map_err(|e| TrainError::Data(format!("pairs: {e}")))?;
    Ok((csr, labels))
}

impl LinkBatcher {
    /// `first_epoch`: the number of epochs already trained (0, or the epoch resumed from).
    pub fn new(host: Arc<LinkHost>, first_epoch: usize) -> Self {
        Self { host, cache: Default::default(), epoch: Arc::new(AtomicUsize::new(first_epoch)) }
    }

    /// The host data.
    pub fn host(&self) -> &LinkHost {
        &self.host
    }

    fn cached<T: Clone + Send + 'static>(
        &self,
        key: (TypeId, String),
        make: impl FnOnce() -> Result<T, TrainError>,
    ) -> Result<T, TrainError> {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = cache.get(&key).and_then(|b| b.downcast_ref::<T>()) {
            return Ok(v.clone());
        }
        let v = make()?;
        cache.insert(key, Box::new(v.clone()));
        Ok(v)
    }

    /// The device-resident parts (the encoder's graph and features, the training pairs, the
    /// metric sample), built once; with the encoder on parts, neither the whole graph (unless
    /// it is the pairs' pattern) nor the whole features stay on this device. Errors only where
    /// the split's graphs cannot be built.
    pub fn resident<B: SparseGnnBackend>(&self, device: &B::Device) -> Result<Resident<B>, TrainError> {
        let h = &self.host;
        self.cached((TypeId::of::<B>(), format!("{device:?}")), || {
            let message = h.split.message_graph(h.self_loops)?;
            let dtype = <B::FloatElem as burn::tensor::Element>::dtype();
            let n = h.split.num_nodes;
            let x = burn_sparse_gnn::upload(TensorData::new(h.x.clone(), [n, h.d_in]).convert_dtype(dtype), device);
            // the encoder's graph is the positive pattern itself where it has neither
            // self-loops nor weights: one graph on the device, not two
            let same = !h.self_loops && h.split.train_weights.is_none();
            let encoder = match &h.parts {
                None => Encoder::Whole { graph: Graph::<B>::new(&message, device, h.opts), x },
                Some(p) => {
                    // the batch's device leads; the parts go round-robin over the devices
                    let devices = devices_of(device, &p.devices);
                    let graph = DistGraph::<B>::with_layout(&message, &p.partition, &devices, h.opts, p.layout)
                        .map_err(|e| TrainError::Data(format!("the encoder's parts: {e}")))?;
                    let xs = graph.scatter(x);
                    Encoder::Parts { graph, xs }
                }
            };
            let positives = if same { message } else { h.split.positive_pattern()? };
            let pairs = match (&encoder, same) {
                (Encoder::Whole { graph, .. }, true) => pairs_on::<B>(&positives, graph.clone(), device),
                _ => pairs_of::<B>(&positives, h.opts, device),
            };
            let nnz = positives.nnz();
            let step = nnz.div_ceil(TRAIN_METRIC_PAIRS).max(1);
            let sample = ints::<B>((0..nnz as i64).step_by(step).collect(), device);
            Ok((encoder, pairs, sample))
        })
    }

    /// The pairs of the valid or test split with their labels, built once per device.
    pub fn scored<B: SparseGnnBackend>(&self, split: SplitKind, device: &B::Device) -> Result<Scored<B>, TrainError> {
        let s = &self.host.split;
        let (pos, neg) = match split {
            SplitKind::Test => (&s.test_pos, &s.test_neg),
            _ => (&s.valid_pos, &s.valid_neg),
        };
        self.cached((TypeId::of::<B>(), format!("{device:?}/{split:?}")), || {
            let (csr, labels) = scored_pattern(s.num_nodes, pos, neg)?;
            Ok((pairs_of::<B>(&csr, self.host.opts, device), ints::<B>(labels, device)))
        })
    }

    /// The batch of `split` (the training split draws the next epoch's negatives).
    pub fn try_batch<B: SparseGnnBackend>(
        &self,
        split: SplitKind,
        device: &B::Device,
    ) -> Result<LinkBatch<B>, TrainError> {
        let (encoder, train_pairs, sample) = self.resident::<B>(device)?;
        let epoch = if split == SplitKind::Train {
            self.epoch.fetch_add(1, Ordering::SeqCst) + 1
        } else {
            self.epoch.load(Ordering::SeqCst)
        };
        let negative_seed = self.host.seed.wrapping_mul(0x9E37_79B9_7F4A_7C15).wrapping_add(epoch as u64);
        let (pairs, labels) = match split {
            SplitKind::Train => (train_pairs, None),
            s => {
                let (p, l) = self.scored::<B>(s, device)?;
                (p, Some(l))
            }
        };
        Ok(LinkBatch { encoder, pairs, labels, negatives: self.host.negatives, negative_seed, sample, epoch })
    }
}

impl<B: SparseGnnBackend> Batcher<B, SplitKind, LinkBatch<B>> for LinkBatcher {
    fn batch(&self, items: Vec<SplitKind>, device: &B::Device) -> LinkBatch<B> {
        let split = items.first().copied().unwrap_or(SplitKind::Train);
        // the split was checked when the host data was made: its graphs build
        self.try_batch::<B>(split, device).unwrap_or_else(|e| panic!("link prediction batch: {e}"))
    }
}
