//! Mini-batch node classification as burn-train's `TrainStep` / `InferenceStep`: training
//! steps on sampled blocks, validation by exact layer-wise inference.

use super::features::NodeFeatures;
use super::infer::{layerwise_logits, LayerwisePlan};
use super::sampler::MiniBatch;
use crate::classifier::backward_step;
use crate::evaluate::Accuracies;
use crate::loss_scale::{LossScaleConfig, LossScaler, SharedLossScaler};
use crate::TrainError;
use burn::module::Module;
use burn::prelude::Backend;
use burn::tensor::{ElementConversion, Int, Tensor, TensorData};
use burn::train::{ClassificationOutput, InferenceStep, TrainOutput, TrainStep};
use burn_sparse_gnn::loss::{cross_entropy_rows, sum_terms};
use burn_sparse_gnn::{KernelConfig, SparseGnnAutodiffBackend, SparseGnnBackend};
use gnn_models::GnnModel;
use std::sync::Arc;

/// A [`GnnModel`] trained on sampled mini-batches (what burn-train trains with
/// [`super::MiniBatchLoader`]) and evaluated by layer-wise inference.
#[derive(Module, Debug)]
pub struct MiniBatchClassifier<B: Backend> {
    pub model: GnnModel<B>,
    seed: u64,
    #[module(skip)]
    loss_scale: SharedLossScaler,
}

impl<B: SparseGnnBackend> MiniBatchClassifier<B> {
    /// Wraps a model; `seed` seeds each batch's dropout draws with the epoch and the batch.
    pub fn new(model: GnnModel<B>, seed: u64) -> Self {
        Self { model, seed, loss_scale: SharedLossScaler::default() }
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

    /// Loss and logits of a batch's seeds.
    ///
    /// Panics when the batch's blocks do not fit the model (the loader builds them for it).
    pub fn classify(&self, batch: &MiniBatch<B>) -> ClassificationOutput<B> {
        let logits = self
            .model
            .forward_blocks(&batch.blocks, batch.x.clone())
            .unwrap_or_else(|e| panic!("the batch's blocks do not fit the model: {e}"));
        let config = batch.blocks.last().map(|g| g.kernel_config().clone()).unwrap_or_default();
        scored(logits, batch.labels.clone(), batch.weight.clone(), None, &config)
    }
}

/// The mean cross-entropy of the rows `rows` of `logits` (all rows: `None`) with their labels
/// and weights, and the rows' logits and labels for the accuracy metric.
fn scored<B: SparseGnnBackend>(
    logits: Tensor<B, 2>,
    labels: Tensor<B, 1, Int>,
    weight: Tensor<B, 1>,
    rows: Option<&Tensor<B, 1, Int>>,
    config: &KernelConfig,
) -> ClassificationOutput<B> {
    let (out, targets) = match rows {
        Some(r) => (logits.clone().detach().select(0, r.clone()), labels.clone().select(0, r.clone())),
        None => (logits.clone().detach(), labels.clone()),
    };
    let terms = cross_entropy_rows(logits, labels, weight, config)
        .unwrap_or_else(|e| panic!("the logits must have one row per label: {e}"));
    ClassificationOutput::new(sum_terms(terms), out, targets)
}

impl<B: SparseGnnAutodiffBackend> TrainStep for MiniBatchClassifier<B> {
    type Input = MiniBatch<B>;
    type Output = ClassificationOutput<B>;

    fn step(&self, batch: MiniBatch<B>) -> TrainOutput<ClassificationOutput<B>> {
        let device = batch.x.device();
        // dropout draws depend on (seed, epoch, batch) only: a resumed run repeats them
        let key = self.seed.wrapping_mul(1_000_003).wrapping_add((batch.epoch as u64) << 32 | batch.index as u64);
        B::seed(&device, key);
        let item = self.classify(&batch);
        backward_step(self, self.loss_scale.get(), item, &device)
    }
}

/// What layer-wise inference scores: the plan, the features, every node's label and a split's
/// nodes with their loss weights.
#[derive(Clone, Debug)]
pub struct InferenceBatch<B: Backend> {
    pub plan: Arc<LayerwisePlan<B>>,
    pub features: NodeFeatures<B>,
    /// `[nodes]` labels (unlabeled nodes as class 0: never scored).
    pub labels: Tensor<B, 1, Int>,
    /// The split's nodes.
    pub idx: Tensor<B, 1, Int>,
    /// `[nodes]`: `1 / |split|` on the split, 0 elsewhere.
    pub weight: Tensor<B, 1>,
}

impl<B: SparseGnnBackend> InferenceBatch<B> {
    /// The batch of the split `ids` (node ids) of a graph whose labels are `labels`.
    pub fn new(
        plan: Arc<LayerwisePlan<B>>,
        features: NodeFeatures<B>,
        labels: &[i64],
        ids: &[u32],
        device: &B::Device,
    ) -> Self {
        let n = labels.len();
        let lab: Vec<i64> = labels.iter().map(|&l| l.max(0)).collect();
        let mut w = vec![0f32; n];
        for &i in ids {
            if let Some(v) = w.get_mut(i as usize) {
                *v += 1.0 / ids.len().max(1) as f32;
            }
        }
        let idx: Vec<i64> = ids.iter().map(|&i| i as i64).collect();
        let dtype = <B::FloatElem as burn::tensor::Element>::dtype();
        Self {
            plan,
            features,
            labels: burn_sparse_gnn::upload_int(TensorData::new(lab, [n]), device),
            idx: burn_sparse_gnn::upload_int(TensorData::new(idx, [ids.len()]), device),
            weight: burn_sparse_gnn::upload(TensorData::new(w, [n]).convert_dtype(dtype), device),
        }
    }

    /// Loss and logits of the split's nodes under `model`, by layer-wise inference.
    pub fn classify(&self, model: &GnnModel<B>) -> Result<ClassificationOutput<B>, TrainError> {
        let logits = layerwise_logits(model, &self.plan, &self.features)?;
        Ok(scored(logits, self.labels.clone(), self.weight.clone(), Some(&self.idx), &KernelConfig::default()))
    }

    /// The split's accuracy and mean loss under `model`.
    pub fn accuracy(&self, model: &GnnModel<B>) -> Result<(f64, f64), TrainError> {
        let out = self.classify(model)?;
        let n = out.targets.dims()[0];
        let pred = out.output.argmax(1).reshape([n]);
        let correct: i64 = pred.equal(out.targets).int().sum().into_scalar().elem();
        Ok((correct as f64 / n.max(1) as f64, out.loss.into_scalar().elem::<f64>()))
    }
}

impl<B: SparseGnnBackend> InferenceStep for MiniBatchClassifier<B> {
    type Input = InferenceBatch<B>;
    type Output = ClassificationOutput<B>;

    fn step(&self, batch: InferenceBatch<B>) -> ClassificationOutput<B> {
        batch.classify(&self.model).unwrap_or_else(|e| panic!("layer-wise inference failed: {e}"))
    }
}

/// Accuracies of `model` on the three splits by layer-wise inference (run it on an inference
/// backend); `splits`: the train, valid and test batches.
pub fn evaluate_layerwise<B: SparseGnnBackend>(
    model: &GnnModel<B>,
    splits: [&InferenceBatch<B>; 3],
) -> Result<Accuracies, TrainError> {
    let (train, _) = splits[0].accuracy(model)?;
    let (valid, _) = splits[1].accuracy(model)?;
    let (test, test_loss) = splits[2].accuracy(model)?;
    Ok(Accuracies { train, valid, test, test_loss })
}
