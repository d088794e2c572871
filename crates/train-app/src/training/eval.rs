//! Using a trained run: accuracies on the splits (`eval`) and per-node outputs (`predict`).

use crate::error::{AppError, Result};
use crate::training::config::TrainConfig;
use crate::training::report::trained_on;
use crate::training::train::{model_path, prepare};
use burn_sparse_gnn::SparseGnnBackend;
use gnn_models::GnnModelConfig;
use gnn_train::{Accuracies, FullGraphBatcher, HostGraph, NodeClassifier, TrainError};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A trained run loaded for inference: its configuration, the (possibly other) dataset
/// prepared as the run prepared its own, and the model.
pub struct LoadedRun<B: SparseGnnBackend> {
    pub cfg: TrainConfig,
    pub host: HostGraph,
    pub model_cfg: GnnModelConfig,
    pub model: NodeClassifier<B>,
}

/// Loads the run in `dir` (config.json, model.mpk) with its dataset or `dataset_override`.
/// A dataset of another feature width or class count than the model's is an error naming both.
pub fn load_run<B: SparseGnnBackend>(
    dir: &Path,
    dataset_override: Option<&str>,
    device: &B::Device,
) -> Result<LoadedRun<B>> {
    let cfg_path = dir.join("config.json");
    if !cfg_path.exists() {
        return Err(AppError::Missing {
            path: cfg_path,
            what: "the run's configuration (is this a train --out folder?)".into(),
        });
    }
    let mut cfg = TrainConfig::from_file(&cfg_path)?;
    if let Some(d) = dataset_override {
        cfg.dataset = d.to_string();
    }
    cfg.check_device::<B>(device, "chosen")?;
    let data = crate::datasets::load(&cfg.dataset, burn_sparse_gnn::BuildOptions::default())?;
    let host = prepare(&cfg, data)?;
    let (features, classes) = (host.d_in, host.data.num_classes());
    if let Some(run) = trained_on(dir) {
        // a dataset's class count is its largest label + 1: fewer classes in the data is fine
        if run.features != features || classes > run.classes {
            return Err(AppError::Mismatch(format!(
                "the model in {} was trained on {} features and {} classes ({}); dataset {} has {features} features \
                 and {classes} classes",
                dir.display(),
                run.features,
                run.classes,
                run.name,
                cfg.dataset
            )));
        }
    }
    let classes = trained_on(dir).map_or(classes, |r| r.classes);
    let model_cfg = cfg.model_config(features, classes)?;
    let model =
        NodeClassifier::new(model_cfg.init::<B>(device).map_err(|e| AppError::Config(e.to_string()))?, cfg.seed);
    let model = gnn_train::load_checked(model, &model_path(dir), device).map_err(|e| match e {
        TrainError::Mismatch { path, msg } => AppError::Mismatch(format!(
            "{}: {msg}; the run's config.json and dataset {} ({features} features, {classes} classes) describe \
             another model",
            path.display(),
            cfg.dataset
        )),
        other => other.into(),
    })?;
    Ok(LoadedRun { cfg, host, model_cfg, model })
}

/// Loads a model saved by `train` (config from `<dir>/config.json`) and evaluates it.
pub fn eval<B: SparseGnnBackend>(
    dir: &Path,
    dataset_override: Option<&str>,
    device: &B::Device,
) -> Result<(TrainConfig, Accuracies)> {
    let run = load_run::<B>(dir, dataset_override, device)?;
    let batcher = FullGraphBatcher::new(Arc::new(run.host), 0);
    Ok((run.cfg, gnn_train::evaluate(&run.model, &batcher, device)))
}

/// What `predict` wrote.
#[derive(Clone, Debug)]
pub struct PredictOutput {
    pub nodes: usize,
    pub classes: usize,
    /// The embedding width, where the model has a hidden layer to take them from.
    pub hidden: Option<usize>,
    pub files: Vec<PathBuf>,
}

/// Writes `probabilities.npy` (`[n, classes]` f32), `predictions.npy` (`[n]` i64) and
/// `embeddings.npy` (`[n, hidden]` f32, the last hidden layer's output) of every node into
/// `out_dir` (atomically).
pub fn predict<B: SparseGnnBackend>(
    dir: &Path,
    dataset_override: Option<&str>,
    out_dir: &Path,
    device: &B::Device,
) -> Result<PredictOutput> {
    let run = load_run::<B>(dir, dataset_override, device)?;
    let batcher = FullGraphBatcher::new(Arc::new(run.host), 0);
    let (graph, x, _) = batcher.resident::<B>(device);
    let p = gnn_train::predict(&run.model.model, &graph, x.clone());
    crate::fsutil::make_out_dir(out_dir)?;
    let mut files = Vec::new();
    let probabilities = out_dir.join("probabilities.npy");
    crate::npyio::write(&probabilities, &[p.nodes, p.classes], &p.probabilities)?;
    files.push(probabilities);
    let predictions = out_dir.join("predictions.npy");
    crate::npyio::write(&predictions, &[p.nodes], &p.predictions)?;
    files.push(predictions);
    let mut hidden = None;
    if let Some(emb) = gnn_train::embeddings(&run.model_cfg, &run.model.model, &graph, x)? {
        let [n, h] = emb.dims();
        let values = emb.into_data().convert::<f32>().to_vec::<f32>().unwrap_or_default();
        let path = out_dir.join("embeddings.npy");
        crate::npyio::write(&path, &[n, h], &values)?;
        files.push(path);
        hidden = Some(h);
    } else {
        eprintln!(
            "note: no embeddings.npy: a classic {} of {} layer(s) has no hidden layer whose output can be taken",
            run.cfg.model.name(),
            run.cfg.layers
        );
    }
    Ok(PredictOutput { nodes: p.nodes, classes: p.classes, hidden, files })
}
