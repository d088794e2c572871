//! The full-graph batch: the whole graph on a device plus the nodes a split scores.

use crate::error::TrainError;
use burn::data::dataloader::batcher::Batcher;
use burn::prelude::Backend;
use burn::tensor::{Int, Tensor, TensorData};
use burn_sparse_gnn::{Graph, GraphData, GraphOptions, SparseGnnBackend};
use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Which nodes a batch scores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitKind {
    Train,
    Valid,
    Test,
}

/// The whole graph on a device plus the ids of the scored nodes. Cloning is cheap.
#[derive(Clone, Debug)]
pub struct GraphBatch<B: Backend> {
    pub graph: Graph<B>,
    pub x: Tensor<B, 2>,
    pub labels: Tensor<B, 1, Int>,
    pub idx: Tensor<B, 1, Int>,
    /// Per-node loss weight: `1 / |split|` on the split's nodes, 0 elsewhere.
    pub weight: Tensor<B, 1>,
    /// Epoch the batch belongs to (seeds dropout so that a resumed run repeats the same
    /// random draws).
    pub epoch: usize,
}

/// Host data of a training run: the graph with its split, the dense `[n, d_in]` features and
/// the options the graph is uploaded with.
pub struct HostGraph {
    pub data: GraphData,
    pub x: Vec<f32>,
    pub d_in: usize,
    pub opts: GraphOptions,
}

impl HostGraph {
    /// The graph's features made dense. The data must carry a split (train / valid / test).
    pub fn new(data: GraphData, opts: GraphOptions) -> Result<Self, TrainError> {
        let x = data.features().to_dense();
        let d_in = data.features().width();
        Self::with_features(data, x, d_in, opts)
    }

    /// With features prepared by the caller (e.g. row-normalised): `x` is `[n, d_in]` row-major.
    pub fn with_features(data: GraphData, x: Vec<f32>, d_in: usize, opts: GraphOptions) -> Result<Self, TrainError> {
        if data.split().is_none() {
            return Err(TrainError::Data(format!("{}: the graph has no train / valid / test split", data.name)));
        }
        if x.len() != data.num_nodes() * d_in {
            return Err(TrainError::Data(format!(
                "{}: {} feature values for {} nodes of width {d_in}",
                data.name,
                x.len(),
                data.num_nodes()
            )));
        }
        Ok(Self { data, x, d_in, opts })
    }
}

type Resident<B> = (Graph<B>, Tensor<B, 2>, Tensor<B, 1, Int>);
type Ids<B> = (Tensor<B, 1, Int>, Tensor<B, 1>);

/// Builds [`GraphBatch`]es, uploading the graph once per backend and device.
#[derive(Clone)]
pub struct FullGraphBatcher {
    host: Arc<HostGraph>,
    cache: Arc<Mutex<HashMap<(TypeId, String), Box<dyn Any + Send>>>>,
    epoch: Arc<AtomicUsize>,
}

impl FullGraphBatcher {
    /// `first_epoch`: the number of epochs already trained (0, or the epoch resumed from).
    pub fn new(host: Arc<HostGraph>, first_epoch: usize) -> Self {
        Self { host, cache: Default::default(), epoch: Arc::new(AtomicUsize::new(first_epoch)) }
    }

    /// The host data.
    pub fn host(&self) -> &HostGraph {
        &self.host
    }

    /// The device-resident parts (graph, features, labels), built once.
    pub fn resident<B: SparseGnnBackend>(&self, device: &B::Device) -> Resident<B> {
        let key = (TypeId::of::<B>(), format!("{device:?}"));
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = cache.get(&key).and_then(|b| b.downcast_ref::<Resident<B>>()) {
            return v.clone();
        }
        let h = &self.host;
        let graph = Graph::<B>::new(h.data.adjacency(), device, h.opts);
        let n = h.data.num_nodes();
        let dtype = <B::FloatElem as burn::tensor::Element>::dtype();
        let x = burn_sparse_gnn::upload(TensorData::new(h.x.clone(), [n, h.d_in]).convert_dtype(dtype), device);
        // unlabeled nodes (-1) are never scored; class 0 keeps the gather in range
        let labels: Vec<i64> = h.data.labels().iter().map(|&l| l.max(0)).collect();
        let labels = burn_sparse_gnn::upload_int(TensorData::new(labels, [n]), device);
        let v = (graph, x, labels);
        cache.insert(key, Box::new(v.clone()));
        v
    }

    /// The split's node ids and the per-node loss weights (`1 / |split|` on the split), uploaded
    /// once per backend, device and split.
    fn ids<B: SparseGnnBackend>(&self, split: SplitKind, device: &B::Device) -> Ids<B> {
        let key = (TypeId::of::<B>(), format!("{device:?}/{split:?}"));
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(v) = cache.get(&key).and_then(|b| b.downcast_ref::<Ids<B>>()) {
            return v.clone();
        }
        // HostGraph::new refuses data without a split; an empty id list otherwise
        let ids: &[u32] = match self.host.data.split() {
            Some(s) => match split {
                SplitKind::Train => &s.train,
                SplitKind::Valid => &s.valid,
                SplitKind::Test => &s.test,
            },
            None => &[],
        };
        let v: Vec<i64> = ids.iter().map(|&i| i as i64).collect();
        let n = self.host.data.num_nodes();
        let mut w = vec![0.0f32; n];
        let share = 1.0 / ids.len().max(1) as f32;
        for &i in ids {
            w[i as usize] += share;
        }
        let dtype = <B::FloatElem as burn::tensor::Element>::dtype();
        let w = burn_sparse_gnn::upload(TensorData::new(w, [n]).convert_dtype(dtype), device);
        let v: Ids<B> = (burn_sparse_gnn::upload_int(TensorData::new(v, [ids.len()]), device), w);
        cache.insert(key, Box::new(v.clone()));
        v
    }
}

impl<B: SparseGnnBackend> Batcher<B, SplitKind, GraphBatch<B>> for FullGraphBatcher {
    fn batch(&self, items: Vec<SplitKind>, device: &B::Device) -> GraphBatch<B> {
        let split = items.first().copied().unwrap_or(SplitKind::Train);
        let (graph, x, labels) = self.resident::<B>(device);
        let epoch = if split == SplitKind::Train {
            self.epoch.fetch_add(1, Ordering::SeqCst) + 1
        } else {
            self.epoch.load(Ordering::SeqCst)
        };
        let (idx, weight) = self.ids::<B>(split, device);
        GraphBatch { graph, x, labels, idx, weight, epoch }
    }
}
