//! Graph classification as burn-train's `TrainStep` / `InferenceStep`.

use super::batch::GraphSetBatch;
use crate::classifier::backward_step;
use crate::loss_scale::{LossScaleConfig, LossScaler, SharedLossScaler};
use burn::module::Module;
use burn::prelude::Backend;
use burn::tensor::Tensor;
use burn::train::{ClassificationOutput, InferenceStep, TrainOutput, TrainStep};
use burn_sparse_gnn::loss::{cross_entropy_rows, sum_terms};
use burn_sparse_gnn::{SparseGnnAutodiffBackend, SparseGnnBackend};
use gnn_models::GraphModel;

/// A [`GraphModel`] scored on a batch of graphs: the mean cross-entropy over the batch's
/// graphs (what burn-train trains).
#[derive(Module, Debug)]
pub struct GraphClassifier<B: Backend> {
    pub model: GraphModel<B>,
    /// Dynamic loss scaling ([`crate::loss_scale`]), shared by the clones burn-train makes.
    #[module(skip)]
    loss_scale: SharedLossScaler,
}

impl<B: SparseGnnBackend> GraphClassifier<B> {
    pub fn new(model: GraphModel<B>) -> Self {
        Self { model, loss_scale: SharedLossScaler::default() }
    }

    /// Trains with dynamic loss scaling (`None`: without).
    pub fn with_loss_scale(mut self, config: Option<LossScaleConfig>) -> Self {
        self.loss_scale = SharedLossScaler::new(config);
        self
    }

    /// The loss scaler's state, where the model trains with one.
    pub fn loss_scaler(&self) -> Option<LossScaler> {
        self.loss_scale.state()
    }

    /// Loss and logits of a batch.
    pub fn classify(&self, batch: &GraphSetBatch<B>) -> ClassificationOutput<B> {
        let logits = self.model.forward(&batch.graph, &batch.pool, batch.x.clone());
        graph_output(logits, batch)
    }
}

/// The mean cross-entropy of a batch's logits `[graphs, classes]` (reduced in a fixed order,
/// [`sum_terms`]) as burn-train's `ClassificationOutput`.
pub fn graph_output<B: SparseGnnBackend>(logits: Tensor<B, 2>, batch: &GraphSetBatch<B>) -> ClassificationOutput<B> {
    let n = logits.dims()[0];
    let weight = Tensor::full([n], 1.0 / n as f32, &logits.device());
    let terms = cross_entropy_rows(logits.clone(), batch.labels.clone(), weight, batch.graph.kernel_config())
        .unwrap_or_else(|e| panic!("the model's logits must have one row per graph of the batch: {e}"));
    ClassificationOutput::new(sum_terms(terms), logits.detach(), batch.labels.clone())
}

impl<B: SparseGnnAutodiffBackend> TrainStep for GraphClassifier<B> {
    type Input = GraphSetBatch<B>;
    type Output = ClassificationOutput<B>;

    fn step(&self, batch: GraphSetBatch<B>) -> TrainOutput<ClassificationOutput<B>> {
        let device = batch.x.device();
        let item = self.classify(&batch);
        backward_step(self, self.loss_scale.get(), item, &device)
    }
}

impl<B: SparseGnnBackend> InferenceStep for GraphClassifier<B> {
    type Input = GraphSetBatch<B>;
    type Output = ClassificationOutput<B>;

    fn step(&self, batch: GraphSetBatch<B>) -> ClassificationOutput<B> {
        self.classify(&batch)
    }
}
