//! Mini-batch node classification (`train --training minibatch`): the shared loop
//! ([`super::train::run_learner`]) over batches of seed nodes whose blocks are sampled on the
//! device, validation and the final accuracies by exact layer-wise inference; `eval` and
//! `predict` of such a run infer the same way (docs/MINIBATCH.md).

use crate::error::{AppError, Result};
use crate::training::config::{FeatureHome, TrainConfig};
use crate::training::report::{LossScaleSummary, TrainReport};
use crate::training::train::{conclude, run_learner, Learned, Outcome};
use burn::data::dataloader::batcher::Batcher;
use burn::data::dataloader::{DataLoader, DataLoaderBuilder};
use burn::data::dataset::InMemDataset;
use burn::module::Module;
use burn::tensor::backend::AutodiffBackend;
use burn_sparse_gnn::{Csr, SparseGnnAutodiffBackend, SparseGnnBackend};
use gnn_models::GnnModelConfig;
use gnn_train::minibatch::{
    evaluate_layerwise, BlockRules, InferenceBatch, LayerwisePlan, MiniBatchClassifier, MiniBatchLoader,
    MiniBatchSource, NeighborSampler, NodeFeatures,
};
use gnn_train::{HostGraph, SplitKind};
use std::sync::Arc;
use std::time::Instant;

/// The block rules of a model on `adj`.
pub fn block_rules(cfg: &TrainConfig, model: &GnnModelConfig, adj: &Csr) -> Result<BlockRules> {
    Ok(BlockRules::for_model(adj, model, cfg.graph_options())?)
}

/// The node features `x` (`[nodes, d_in]` row-major) where `cfg` keeps them (on the host: `x`
/// itself, not a copy).
pub fn node_features<B: SparseGnnBackend>(
    cfg: &TrainConfig,
    x: &Arc<Vec<f32>>,
    d_in: usize,
    device: &B::Device,
) -> NodeFeatures<B> {
    match cfg.features_on {
        FeatureHome::Device => NodeFeatures::upload(x, d_in, device),
        FeatureHome::Host => NodeFeatures::Host { x: x.clone(), width: d_in },
    }
}

/// The same features on the inner backend (device features shared, not copied).
fn inner_features<B: AutodiffBackend>(f: &NodeFeatures<B>) -> NodeFeatures<B::InnerBackend> {
    match f {
        NodeFeatures::Device(x) => NodeFeatures::Device(x.clone().inner()),
        NodeFeatures::Host { x, width } => NodeFeatures::Host { x: x.clone(), width: *width },
    }
}

/// The layer-wise inference of one split per batch: what validation scores every epoch.
#[derive(Clone)]
struct SplitInference<B: SparseGnnBackend> {
    plan: Arc<LayerwisePlan<B>>,
    features: NodeFeatures<B>,
    labels: Arc<Vec<i64>>,
    train: Arc<Vec<u32>>,
    valid: Arc<Vec<u32>>,
    test: Arc<Vec<u32>>,
}

impl<B: SparseGnnBackend> SplitInference<B> {
    fn split(&self, s: SplitKind, device: &B::Device) -> InferenceBatch<B> {
        let ids = match s {
            SplitKind::Train => &self.train,
            SplitKind::Valid => &self.valid,
            SplitKind::Test => &self.test,
        };
        InferenceBatch::new(self.plan.clone(), self.features.clone(), &self.labels, ids, device)
    }
}

impl<B: SparseGnnBackend> Batcher<B, SplitKind, InferenceBatch<B>> for SplitInference<B> {
    fn batch(&self, items: Vec<SplitKind>, device: &B::Device) -> InferenceBatch<B> {
        self.split(items.first().copied().unwrap_or(SplitKind::Valid), device)
    }
}

/// Trains node classification on mini-batches on backend `B` (see the module docs); `resume`
/// continues from a checkpoint epoch of `cfg.out`, `tui` shows the terminal dashboard.
pub fn train_minibatch<B: SparseGnnAutodiffBackend>(
    cfg: &TrainConfig,
    mut host: HostGraph,
    device: &B::Device,
    backend: &str,
    resume: Option<usize>,
    tui: bool,
) -> Result<TrainReport> {
    cfg.check()?;
    cfg.check_device::<B>(device, backend)?;
    let stats = host.data.stats();
    let model_cfg = cfg.model_config(host.d_in, host.data.num_classes())?;
    let split = host.data.split().cloned().ok_or_else(|| AppError::Config("the dataset has no split".into()))?;
    if split.train.is_empty() {
        return Err(AppError::Config(format!("{}: the training split is empty", stats.name)));
    }
    let adj = host.data.adjacency();
    let rules = block_rules(cfg, &model_cfg, adj)?;
    crate::fsutil::make_out_dir(&cfg.out)?;
    B::seed(device, cfg.seed);
    let model = model_cfg.init::<B>(device).map_err(|e| AppError::Config(e.to_string()))?;
    model.initialise_parameters();
    let model = MiniBatchClassifier::new(model, cfg.seed).with_loss_scale(cfg.loss_scale.config(cfg.precision));
    let parameters = model.num_params();
    let labels = Arc::new(host.data.labels().to_vec());
    // the features are read through this one copy (a graph's largest array)
    let x = Arc::new(std::mem::take(&mut host.x));
    let batches = split.train.len().div_ceil(cfg.seed_batch());
    let mut inference: Option<SplitInference<B::InnerBackend>> = None;
    let learned = run_learner::<B, _>(cfg, model, device, resume, tui, false, batches, |start| {
        let setup = Instant::now();
        let features = node_features::<B>(cfg, &x, host.d_in, device);
        let sampler = NeighborSampler::<B>::new(adj, cfg.hop_fanouts(), cfg.seed, rules.clone(), device)?;
        let plan = LayerwisePlan::<B::InnerBackend>::new(adj, &rules, cfg.infer_chunk, device)?;
        let infer = SplitInference {
            plan: Arc::new(plan),
            features: inner_features(&features),
            labels: labels.clone(),
            train: Arc::new(split.train.clone()),
            valid: Arc::new(split.valid.clone()),
            test: Arc::new(split.test.clone()),
        };
        let source = Arc::new(MiniBatchSource { sampler, features, labels: labels.clone() });
        let train = MiniBatchLoader::new(
            source,
            split.train.clone(),
            cfg.seed_batch(),
            cfg.seed,
            start.unwrap_or(0),
            cfg.prefetch,
        )?;
        let train: Arc<dyn DataLoader<B, _>> = Arc::new(train);
        let valid = DataLoaderBuilder::new(infer.clone())
            .batch_size(1)
            .set_device(device.clone())
            .build(InMemDataset::new(vec![SplitKind::Valid]));
        inference = Some(infer);
        Ok(((train, valid), setup.elapsed().as_secs_f64()))
    })?;
    let infer = inference.ok_or_else(|| AppError::Config("the training data was never prepared".into()))?;
    let Learned { trained, run } = learned;
    let loss_scale = trained.loss_scaler().as_ref().map(LossScaleSummary::from);
    let splits = [SplitKind::Train, SplitKind::Valid, SplitKind::Test].map(|s| infer.split(s, device));
    let final_accuracy = evaluate_layerwise(&trained.model, [&splits[0], &splits[1], &splits[2]])?;
    let outcome = Outcome { final_accuracy, parameters, loss_scale, link: None };
    conclude(cfg, &stats, backend, (&trained, &trained.model), run, outcome)
}

/// The layer-wise inference of a model on a prepared graph (`eval` and `predict` of a mini-batch
/// run): its plan and features.
pub fn inference_parts<B: SparseGnnBackend>(
    cfg: &TrainConfig,
    model: &GnnModelConfig,
    adj: &Csr,
    x: Vec<f32>,
    d_in: usize,
    device: &B::Device,
) -> Result<(Arc<LayerwisePlan<B>>, NodeFeatures<B>)> {
    let rules = block_rules(cfg, model, adj)?;
    let plan = LayerwisePlan::<B>::new(adj, &rules, cfg.infer_chunk, device)?;
    Ok((Arc::new(plan), node_features::<B>(cfg, &Arc::new(x), d_in, device)))
}
