//! Using a trained run: accuracies on the splits (`eval`) and per-node outputs (`predict`).
//!
//! `eval` prepares the dataset as training did ([`prepare`]: graph options, split, features).
//! `predict` needs no labels and no split: [`prepare_unsplit`] applies the same graph options
//! and feature normalisation to any dataset whose feature width is the model's, labeled or not.

use crate::error::{AppError, Result};
use crate::training::config::apply_split;
use crate::training::config::TrainConfig;
use crate::training::files::model_path;
use crate::training::report::trained_on;
use burn::tensor::{Tensor, TensorData};
use burn_sparse_gnn::{Graph, GraphData, SparseGnnBackend};
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

/// What a model is loaded for: `eval` scores the dataset's labels, so their classes must be
/// the model's; `predict` reads only the features.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Use {
    Eval,
    Predict,
}

/// The configuration of the run in `dir` (`config.json`), its dataset replaced by
/// `dataset_override` where given.
pub fn run_config(dir: &Path, dataset_override: Option<&str>) -> Result<TrainConfig> {
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
    Ok(cfg)
}

/// The model of the run in `dir` for a dataset of `features` features and `classes` classes
/// (0 for a dataset without labels): a dataset of another feature width, or (for `eval`) of
/// more classes than the model's, is an error naming both.
fn load_model<B: SparseGnnBackend>(
    dir: &Path,
    cfg: &TrainConfig,
    features: usize,
    classes: usize,
    purpose: Use,
    device: &B::Device,
) -> Result<(GnnModelConfig, NodeClassifier<B>)> {
    let run = trained_on(dir);
    if let Some(run) = &run {
        // a dataset's class count is its largest label + 1: fewer classes in the data is fine
        if run.features != features || (purpose == Use::Eval && classes > run.classes) {
            let has = if classes == 0 {
                format!("{features} features and no labels")
            } else {
                format!("{features} features and {classes} classes")
            };
            let needs = match purpose {
                Use::Predict => format!(": predict needs {} features per node", run.features),
                Use::Eval => String::new(),
            };
            return Err(AppError::Mismatch(format!(
                "the model in {} was trained on {} features and {} classes ({}); dataset {} has {has}{needs}",
                dir.display(),
                run.features,
                run.classes,
                run.name,
                cfg.dataset
            )));
        }
    }
    let classes = match run {
        Some(r) => r.classes,
        None if classes > 0 => classes,
        None => {
            return Err(AppError::Missing {
                path: crate::training::report::results_path(dir),
                what: format!(
                    "the run's results, which give the model's class count (dataset {} has no labels to count them)",
                    cfg.dataset
                ),
            })
        }
    };
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
    Ok((model_cfg, model))
}

/// Loads the run in `dir` (config.json, model.mpk) with its dataset or `dataset_override`,
/// prepared with its split (for `eval`). A dataset of another feature width or of more classes
/// than the model's is an error naming both.
pub fn load_run<B: SparseGnnBackend>(
    dir: &Path,
    dataset_override: Option<&str>,
    device: &B::Device,
) -> Result<LoadedRun<B>> {
    let cfg = run_config(dir, dataset_override)?;
    cfg.check_device::<B>(device, "chosen")?;
    let data = crate::datasets::load(&cfg.dataset, burn_sparse_gnn::BuildOptions::default())?;
    if data.labels().iter().all(|&l| l < 0) {
        return Err(AppError::Config(format!(
            "dataset {} has no labeled nodes (every label is -1): eval scores labeled nodes; predict needs no labels",
            cfg.dataset
        )));
    }
    let host = prepare(&cfg, data)?;
    let (model_cfg, model) = load_model::<B>(dir, &cfg, host.d_in, host.data.num_classes(), Use::Eval, device)?;
    Ok(LoadedRun { cfg, host, model_cfg, model })
}

/// Loads a model saved by `train` (config from `<dir>/config.json`) and evaluates it.
pub fn eval<B: SparseGnnBackend>(
    dir: &Path,
    dataset_override: Option<&str>,
    device: &B::Device,
) -> Result<(TrainConfig, Accuracies)> {
    let run = load_run::<B>(dir, dataset_override, device)?;
    if run.cfg.training == crate::training::config::Training::Minibatch {
        let h = &run.host;
        let (plan, features) = crate::training::minibatch::inference_parts::<B>(
            &run.cfg,
            &run.model_cfg,
            h.data.adjacency(),
            h.x.clone(),
            h.d_in,
            device,
        )?;
        let split = h.data.split().ok_or_else(|| AppError::Config("the dataset has no split".into()))?;
        let batch = |ids: &[u32]| {
            gnn_train::minibatch::InferenceBatch::new(plan.clone(), features.clone(), h.data.labels(), ids, device)
        };
        let (train, valid, test) = (batch(&split.train), batch(&split.valid), batch(&split.test));
        let acc = gnn_train::minibatch::evaluate_layerwise(&run.model.model, [&train, &valid, &test])?;
        return Ok((run.cfg, acc));
    }
    let batcher = FullGraphBatcher::new(Arc::new(run.host), 0);
    Ok((run.cfg, gnn_train::evaluate(&run.model, &batcher, device)))
}

/// A dataset prepared for inference: the graph as the run's options build it and the dense
/// `[n, d_in]` features (row-major), normalised as in training.
pub struct Unsplit {
    pub data: GraphData,
    pub x: Vec<f32>,
    pub d_in: usize,
}

/// Prepares the host data of a run: the split, then the options applied to the graph and the
/// dense features ([`prepare_unsplit`], which `predict` uses alone).
pub fn prepare(cfg: &TrainConfig, data: GraphData) -> Result<HostGraph> {
    let data = apply_split(data, cfg.split.as_deref(), cfg.seed)?;
    let u = prepare_unsplit(cfg, data)?;
    HostGraph::with_features(u.data, u.x, u.d_in, cfg.graph_options()).map_err(AppError::from)
}

/// The host data of a run without the split (`predict`; [`prepare`] splits first): the
/// self-loops (always for GAT), symmetrisation and deduplication of the run's options, then the
/// dense features, row-normalised where the run normalised them (PyG's `NormalizeFeatures`:
/// each row divided by its sum clamped to >= 1).
/// Labels are neither read nor needed.
pub fn prepare_unsplit(cfg: &TrainConfig, data: GraphData) -> Result<Unsplit> {
    let needs_loops = cfg.self_loops || cfg.model.needs_self_loops();
    let data = if needs_loops || cfg.symmetrize {
        let opts =
            burn_sparse_gnn::BuildOptions { symmetrize: cfg.symmetrize, add_self_loops: needs_loops, dedup: true };
        crate::datasets::rebuild(data, opts)?
    } else {
        data
    };
    crate::host_memory::check_fits(data.features().dense_bytes(), || {
        format!("{}: the dense [{}, {}] f32 feature matrix", data.name, data.num_nodes(), data.features().width())
    })?;
    let mut x = data.features().to_dense();
    let d_in = data.features().width();
    if cfg.normalize_features && d_in > 0 {
        for row in x.chunks_mut(d_in) {
            let sum = row.iter().sum::<f32>().max(1.0);
            row.iter_mut().for_each(|v| *v /= sum);
        }
    }
    Ok(Unsplit { data, x, d_in })
}

/// Reads `--nodes`: an `.npy` of integer node ids (int64, int32 or another integer type), one
/// dimension, each id in `0..nodes` and listed once. Errors name the file, the entry and the id.
pub fn read_node_ids(path: &Path, nodes: usize, dataset: &str) -> Result<Vec<usize>> {
    let ids = crate::npyio::read_ints(path)?;
    crate::npyio::expect_shape(path, &ids.shape, &[None])?;
    if ids.data.is_empty() {
        return Err(AppError::Format { path: path.into(), msg: "holds no node ids: nothing to predict".into() });
    }
    let mut first = vec![usize::MAX; nodes];
    let mut out = Vec::with_capacity(ids.data.len());
    for (entry, &id) in ids.data.iter().enumerate() {
        let node = usize::try_from(id).ok().filter(|&i| i < nodes).ok_or_else(|| AppError::Format {
            path: path.into(),
            msg: format!("entry {entry} is node id {id}, outside 0..{nodes} (dataset {dataset} has {nodes} nodes)"),
        })?;
        if first[node] != usize::MAX {
            return Err(AppError::Format {
                path: path.into(),
                msg: format!(
                    "node id {id} is listed twice (entries {} and {entry}): each node may be listed once",
                    first[node]
                ),
            });
        }
        first[node] = entry;
        out.push(node);
    }
    Ok(out)
}

/// What `predict` wrote.
#[derive(Clone, Debug)]
pub struct PredictOutput {
    /// Rows written: every node of the dataset, or the nodes of `--nodes`.
    pub nodes: usize,
    /// Nodes of the dataset.
    pub dataset_nodes: usize,
    pub classes: usize,
    /// The embedding width, where the model has a hidden layer to take them from.
    pub hidden: Option<usize>,
    pub files: Vec<PathBuf>,
}

/// The rows `ids` of a row-major matrix of rows `width` wide, in that order (all rows when
/// `ids` is `None`).
fn rows<T: Copy>(values: Vec<T>, width: usize, ids: Option<&[usize]>) -> Vec<T> {
    match ids {
        None => values,
        Some(ids) => ids.iter().flat_map(|&i| values[i * width..(i + 1) * width].iter().copied()).collect(),
    }
}

/// Writes `probabilities.npy` (`[n, classes]` f32), `predictions.npy` (`[n]` i64) and
/// `embeddings.npy` (`[n, hidden]` f32, the last hidden layer's output) into `out_dir`
/// (each atomically): a row per node of the dataset (the run's or `dataset_override`, with or
/// without labels), or, with `nodes` (an `.npy` of node ids), a row per listed node in the
/// file's order. The whole graph is still computed: a node's output depends on its
/// neighbourhood.
pub fn predict<B: SparseGnnBackend>(
    dir: &Path,
    dataset_override: Option<&str>,
    nodes: Option<&Path>,
    out_dir: &Path,
    device: &B::Device,
) -> Result<PredictOutput> {
    let cfg = run_config(dir, dataset_override)?;
    cfg.check_device::<B>(device, "chosen")?;
    let data = crate::datasets::load(&cfg.dataset, burn_sparse_gnn::BuildOptions::default())?;
    let n = data.num_nodes();
    let ids = nodes.map(|p| read_node_ids(p, n, &cfg.dataset)).transpose()?;
    let input = prepare_unsplit(&cfg, data)?;
    let (model_cfg, model) = load_model::<B>(dir, &cfg, input.d_in, input.data.num_classes(), Use::Predict, device)?;
    let ids = ids.as_deref();
    if cfg.training == crate::training::config::Training::Minibatch {
        // layer-wise, as the run evaluated: no whole-graph forward pass on the device
        let (plan, features) = crate::training::minibatch::inference_parts::<B>(
            &cfg,
            &model_cfg,
            input.data.adjacency(),
            input.x,
            input.d_in,
            device,
        )?;
        drop(input.data);
        let logits = gnn_train::minibatch::layerwise_logits(&model.model, &plan, &features)?;
        let p = gnn_train::predictions_of(logits);
        let rows_out = ids.map_or(n, |i| i.len());
        crate::fsutil::make_out_dir(out_dir)?;
        let probabilities = out_dir.join("probabilities.npy");
        crate::npyio::write(&probabilities, &[rows_out, p.classes], &rows(p.probabilities, p.classes, ids))?;
        let predictions = out_dir.join("predictions.npy");
        crate::npyio::write(&predictions, &[rows_out], &rows(p.predictions, 1, ids))?;
        eprintln!("note: no embeddings.npy: a mini-batch run predicts layer-wise, without the hidden layers' output");
        let files = vec![probabilities, predictions];
        return Ok(PredictOutput { nodes: rows_out, dataset_nodes: n, classes: p.classes, hidden: None, files });
    }
    let graph = Graph::<B>::new(input.data.adjacency(), device, cfg.graph_options());
    let dtype = <B::FloatElem as burn::tensor::Element>::dtype();
    let x = Tensor::<B, 2>::from_data(TensorData::new(input.x, [n, input.d_in]).convert_dtype(dtype), (device, dtype));
    drop(input.data);
    let p = gnn_train::predict(&model.model, &graph, x.clone());
    let rows_out = ids.map_or(n, |i| i.len());
    crate::fsutil::make_out_dir(out_dir)?;
    let mut files = Vec::new();
    let probabilities = out_dir.join("probabilities.npy");
    crate::npyio::write(&probabilities, &[rows_out, p.classes], &rows(p.probabilities, p.classes, ids))?;
    files.push(probabilities);
    let predictions = out_dir.join("predictions.npy");
    crate::npyio::write(&predictions, &[rows_out], &rows(p.predictions, 1, ids))?;
    files.push(predictions);
    let mut hidden = None;
    if let Some(emb) = gnn_train::embeddings(&model_cfg, &model.model, &graph, x)? {
        let [_, h] = emb.dims();
        let values =
            emb.into_data().convert::<f32>().to_vec::<f32>().map_err(|e| {
                AppError::Config(format!("the embeddings could not be read back from the device: {e:?}"))
            })?;
        let path = out_dir.join("embeddings.npy");
        crate::npyio::write(&path, &[rows_out, h], &rows(values, h, ids))?;
        files.push(path);
        hidden = Some(h);
    } else {
        eprintln!(
            "note: no embeddings.npy: a classic {} of {} layer(s) has no hidden layer whose output can be taken",
            cfg.model.name(),
            cfg.layers
        );
    }
    Ok(PredictOutput { nodes: rows_out, dataset_nodes: n, classes: p.classes, hidden, files })
}
