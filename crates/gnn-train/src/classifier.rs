//! Node classification as burn-train's `TrainStep` / `InferenceStep`.

use crate::batch::GraphBatch;
use crate::loss_scale::{LossScaleConfig, LossScaler, SharedLossScaler};
use burn::module::{AutodiffModule, Module};
use burn::optim::GradientsParams;
use burn::prelude::Backend;
use burn::tensor::Tensor;
use burn::train::{ClassificationOutput, InferenceStep, TrainOutput, TrainStep};
use burn_sparse_gnn::loss::cross_entropy_rows;
use burn_sparse_gnn::{SparseGnnAutodiffBackend, SparseGnnBackend};
use gnn_models::GnnModel;
use std::sync::{Arc, Mutex};

/// Scores logits `[n, classes]` of every node on the batch's split: the mean cross-entropy
/// over the split's nodes, and the split's logits and labels for burn-train's accuracy metric.
///
/// The loss is computed over all rows with a per-node weight (`1 / |split|` on the split, 0
/// elsewhere) by [`burn_sparse_gnn::loss::cross_entropy_rows`]: two passes over the logits,
/// the gradient written over them, and no scatter-add of a row selection in the backward pass.
///
/// Panics when the logits do not have one row per node of the batch's graph.
pub fn classification_output<B: SparseGnnBackend>(
    logits: Tensor<B, 2>,
    batch: &GraphBatch<B>,
) -> ClassificationOutput<B> {
    let out = logits.clone().detach().select(0, batch.idx.clone());
    let config = batch.graph.kernel_config();
    let terms = cross_entropy_rows(logits, batch.labels.clone(), batch.weight.clone(), config)
        .unwrap_or_else(|e| panic!("the model's logits must have one row per node of the graph: {e}"));
    // the same bits every run (not Burn's whole-tensor sum: see `sum_terms`)
    let loss = burn_sparse_gnn::loss::sum_terms(terms);
    let targets = batch.labels.clone().select(0, batch.idx.clone());
    ClassificationOutput::new(loss, out, targets)
}

/// A [`GnnModel`] scored on the nodes of a split (what burn-train trains).
#[derive(Module, Debug)]
pub struct NodeClassifier<B: Backend> {
    pub model: GnnModel<B>,
    seed: u64,
    /// Dynamic loss scaling ([`crate::loss_scale`]), shared by the clones burn-train makes.
    #[module(skip)]
    loss_scale: SharedLossScaler,
}

impl<B: SparseGnnBackend> NodeClassifier<B> {
    /// Wraps a model; `seed` seeds each epoch's dropout draws together with the epoch number.
    pub fn new(model: GnnModel<B>, seed: u64) -> Self {
        Self { model, seed, loss_scale: SharedLossScaler::default() }
    }

    /// Trains with dynamic loss scaling ([`crate::loss_scale`]; `None`: without).
    pub fn with_loss_scale(mut self, config: Option<LossScaleConfig>) -> Self {
        self.loss_scale = SharedLossScaler::new(config);
        self
    }

    /// The loss scaler's state (scale, skipped steps), where the model trains with one.
    pub fn loss_scaler(&self) -> Option<LossScaler> {
        self.loss_scale.state()
    }

    /// Loss and logits on the batch's split (see [`classification_output`]).
    pub fn classify(&self, batch: &GraphBatch<B>) -> ClassificationOutput<B> {
        classification_output(self.model.forward(&batch.graph, batch.x.clone()), batch)
    }
}

/// Device memory `(reserved, in use)` read on the training thread after the last backward pass
/// (CubeCL memory pools are per stream, i.e. per thread: a renderer cannot read them itself).
static LAST_MEMORY: Mutex<Option<(u64, u64)>> = Mutex::new(None);

/// The device memory `(reserved, in use)` after the last training step, where the backend tells.
pub fn last_device_memory() -> Option<(u64, u64)> {
    *LAST_MEMORY.lock().unwrap_or_else(|e| e.into_inner())
}

/// Forgets the last reading (before a new run).
pub fn reset_device_memory() {
    *LAST_MEMORY.lock().unwrap_or_else(|e| e.into_inner()) = None;
}

pub(crate) fn record_memory<B: SparseGnnBackend>(device: &B::Device) {
    if let Some(m) = B::device_memory(device) {
        *LAST_MEMORY.lock().unwrap_or_else(|e| e.into_inner()) = Some(m);
    }
}

/// The backward pass of a training step on `item.loss`, scaled by the loss scaler where the
/// model trains with one (its gradients unscaled, a step with non-finite gradients skipped), and
/// the device memory read after it.
pub fn backward_step<B: SparseGnnAutodiffBackend, M: AutodiffModule<B>>(
    model: &M,
    scaler: Option<&Arc<Mutex<LossScaler>>>,
    item: ClassificationOutput<B>,
    device: &B::Device,
) -> TrainOutput<ClassificationOutput<B>> {
    let Some(scaler) = scaler else {
        let grads = item.loss.backward();
        record_memory::<B>(device);
        return TrainOutput::new(model, grads, item);
    };
    let mut scaler = scaler.lock().unwrap_or_else(|e| e.into_inner());
    let grads = item.loss.clone().mul_scalar(scaler.scale()).backward();
    record_memory::<B>(device);
    let mut grads = GradientsParams::from_grads(grads, model);
    scaler.unscale::<B, M>(&mut grads, model);
    TrainOutput { grads, item }
}

impl<B: SparseGnnAutodiffBackend> TrainStep for NodeClassifier<B> {
    type Input = GraphBatch<B>;
    type Output = ClassificationOutput<B>;

    fn step(&self, batch: GraphBatch<B>) -> TrainOutput<ClassificationOutput<B>> {
        let device = batch.x.device();
        // dropout draws depend on (seed, epoch) only: a resumed run repeats them
        B::seed(&device, self.seed.wrapping_mul(1_000_003).wrapping_add(batch.epoch as u64));
        let item = self.classify(&batch);
        backward_step(self, self.loss_scale.get(), item, &device)
    }
}

impl<B: SparseGnnBackend> InferenceStep for NodeClassifier<B> {
    type Input = GraphBatch<B>;
    type Output = ClassificationOutput<B>;

    fn step(&self, batch: GraphBatch<B>) -> ClassificationOutput<B> {
        self.classify(&batch)
    }
}
