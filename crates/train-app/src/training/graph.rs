//! Graph classification (`train --task graph`): a TU dataset, a stratified split or K stratified
//! folds, one run of the shared loop ([`super::train::run_learner`]) per split, and the
//! cross-validation summary; `eval` and `predict` on the run folder.
//!
//! A run folder holds `graph-data.json` (the dataset, the feature encoding and the split or the
//! folds), so that eval, predict and a peer script use the same graphs. With `--folds K` each
//! fold is a run folder of its own under `folds/fold-NN/` (its `graph-data.json` holds its split:
//! the fold scores as valid and test) and the top folder gets `cross-validation.json`.

use crate::error::{AppError, Result};
use crate::training::config::TrainConfig;
use crate::training::files::model_path;
use crate::training::report::{write_json, LossScaleSummary, TrainReport};
use crate::training::train::{conclude, run_learner, Learned, Outcome};
use burn::data::dataloader::DataLoaderBuilder;
use burn::data::dataset::InMemDataset;
use burn::module::Module;
use burn_sparse_gnn::{DatasetStats, SparseGnnAutodiffBackend, SparseGnnBackend};
use gnn_models::{GraphModel, GraphModelConfig};
use gnn_train::graphs::{
    predict_graphs, score_graphs, stratified_folds, GraphClassifier, GraphSet, GraphSetBatcher, GraphSplit, TuDataset,
    TuEncoding,
};
use gnn_train::Accuracies;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// The file of a run folder naming its graphs.
pub const GRAPH_DATA: &str = "graph-data.json";
/// The cross-validation summary of a `--folds` run.
pub const CROSS_VALIDATION: &str = "cross-validation.json";
/// The folder of a `--folds` run's folds.
pub const FOLDS_DIR: &str = "folds";

/// Which graphs a run trained and scored, and how their nodes were encoded.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GraphRunData {
    /// The dataset's name.
    pub dataset: String,
    /// Number of graphs of the dataset.
    pub graphs: usize,
    /// The node features and classes.
    pub encoding: TuEncoding,
    /// The run's split (of a fold: the fold scores as valid and test).
    pub split: Option<GraphSplit>,
    /// The folds of a cross-validation run (each sorted graph ids).
    pub folds: Option<Vec<Vec<usize>>>,
}

pub use super::folds::{fold_dir, summarise, CrossValidation};

/// What `train --task graph` produced.
pub enum GraphOutcome {
    Split(Box<TrainReport>),
    Folds(CrossValidation),
}

/// Reads a TU dataset folder.
pub fn load_tu(path: &str) -> Result<TuDataset> {
    let dir = Path::new(path);
    if !dir.is_dir() {
        return Err(AppError::Missing {
            path: dir.into(),
            what: "TU dataset folder (graph classification reads <NAME>_A.txt and its companions)".into(),
        });
    }
    TuDataset::load(dir).map_err(|e| AppError::Config(e.to_string()))
}

/// The model of a run.
pub fn graph_model_config(cfg: &TrainConfig, d_in: usize, classes: usize) -> Result<GraphModelConfig> {
    let m = GraphModelConfig::new(cfg.model, d_in, cfg.hidden, classes)
        .with_layers(cfg.layers)
        .with_readout(cfg.readout)
        .with_dropout(cfg.dropout)
        .with_precision(cfg.precision)
        .with_gcn_norm(cfg.gcn_norm)
        .with_sage_aggr(cfg.sage_aggr)
        .with_gat_heads(cfg.heads);
    m.check().map_err(|e| AppError::Config(e.to_string()))?;
    Ok(m)
}

/// The summary of a set of graphs for the report: nodes and edges over all graphs, the class
/// counts of the graphs (`labeled`: graphs), the split's sizes in graphs.
pub fn graph_stats(set: &GraphSet, split: Option<&GraphSplit>) -> DatasetStats {
    let adj = &set.adjacency;
    let mut deg = adj.row_degrees();
    deg.sort_unstable();
    let n = deg.len().max(1);
    let mut class_counts = vec![0; set.num_classes()];
    for &l in set.labels.iter().flatten() {
        class_counts[l as usize] += 1;
    }
    DatasetStats {
        name: set.name.clone(),
        nodes: adj.n_rows(),
        edges: adj.nnz(),
        features: set.d_in,
        classes: set.num_classes(),
        labeled: set.labels.as_ref().map_or(0, Vec::len),
        degree_min: deg.first().copied().unwrap_or(0),
        degree_median: deg.get(deg.len() / 2).copied().unwrap_or(0),
        degree_p99: deg.get((deg.len() * 99) / 100).copied().unwrap_or(0),
        degree_max: deg.last().copied().unwrap_or(0),
        degree_mean: adj.nnz() as f64 / n as f64,
        isolated: deg.iter().filter(|&&d| d == 0).count(),
        self_loops: adj.self_loops(),
        symmetric: adj.is_symmetric(),
        edge_homophily: f64::NAN,
        class_counts,
        split_sizes: split.map(|s| [s.train.len(), s.valid.len(), s.test.len()]),
    }
}

/// The encoded graphs of a run's dataset.
fn graph_set(cfg: &TrainConfig, data: &TuDataset, encoding: TuEncoding) -> Result<GraphSet> {
    let self_loops = cfg.self_loops || cfg.model.needs_self_loops();
    GraphSet::new(data, encoding, self_loops, cfg.graph_options()).map_err(|e| AppError::Config(e.to_string()))
}

/// A run's dataset loaded and encoded (the line describing it printed), its graph labels.
fn load_set(cfg: &TrainConfig) -> Result<(Arc<GraphSet>, TuEncoding, Vec<i64>)> {
    let data = load_tu(&cfg.dataset)?;
    let encoding = TuEncoding::fit(&data, cfg.tu_features).map_err(|e| AppError::Config(e.to_string()))?;
    let set = graph_set(cfg, &data, encoding.clone())?;
    graph_model_config(cfg, set.d_in, set.num_classes())?;
    let labels = set.labels.clone().unwrap_or_default();
    eprintln!(
        "dataset {}: {} graphs, {} nodes, {} edges; features: {} ({}); {} classes {:?}",
        set.name,
        set.num_graphs(),
        set.adjacency.n_rows(),
        set.adjacency.nnz(),
        encoding.describe(),
        set.d_in,
        set.num_classes(),
        encoding.class_values
    );
    Ok((Arc::new(set), encoding, labels))
}

/// The stratified folds of a `--folds` run, written with the run's configuration into
/// `cfg.out` (`graph-data.json`, `config.json`).
fn write_folds(cfg: &TrainConfig, set: &GraphSet, encoding: &TuEncoding, labels: &[i64]) -> Result<Vec<Vec<usize>>> {
    let folds = stratified_folds(labels, cfg.folds, cfg.seed).map_err(AppError::Config)?;
    let data = GraphRunData {
        dataset: set.name.clone(),
        graphs: set.num_graphs(),
        encoding: encoding.clone(),
        split: None,
        folds: Some(folds.clone()),
    };
    write_json(&cfg.out.join(GRAPH_DATA), &data)?;
    write_json(&cfg.out.join("config.json"), cfg)?;
    Ok(folds)
}

/// The set-up of a cross-validation run whose folds train in processes of their own
/// (`--fold-jobs`): the dataset loaded and checked, the folds and the configuration written
/// into `cfg.out`, where each fold's process (`fold_worker`) finds them. The number of folds.
pub fn prepare_folds(cfg: &TrainConfig) -> Result<usize> {
    cfg.check()?;
    let (set, encoding, labels) = load_set(cfg)?;
    crate::fsutil::make_out_dir(&cfg.out)?;
    Ok(write_folds(cfg, &set, &encoding, &labels)?.len())
}

/// Trains graph classification on backend `B`: one split, or `cfg.folds` folds (only
/// `cfg.fold` where it is given). `fold_worker`: this process trains one fold of a run whose
/// parent process wrote the run folder's files ([`prepare_folds`]); the fold's own folder is
/// all it writes.
pub fn train_graph<B: SparseGnnAutodiffBackend>(
    cfg: &TrainConfig,
    device: &B::Device,
    backend: &str,
    resume: Option<usize>,
    tui: bool,
    fold_worker: bool,
) -> Result<GraphOutcome> {
    cfg.check()?;
    cfg.check_device::<B>(device, backend)?;
    let (set, encoding, labels) = load_set(cfg)?;
    crate::fsutil::make_out_dir(&cfg.out)?;
    let run_data = |split: Option<GraphSplit>, folds: Option<Vec<Vec<usize>>>| GraphRunData {
        dataset: set.name.clone(),
        graphs: set.num_graphs(),
        encoding: encoding.clone(),
        split,
        folds,
    };
    if cfg.folds == 0 {
        // a resumed run keeps the split it was trained on
        let kept = match resume {
            Some(_) => Some(read_run_data(&cfg.out, set.num_graphs())?),
            None => None,
        };
        let split = match kept.and_then(|d| d.split) {
            Some(s) => s,
            None => {
                GraphSplit::stratified(&labels, cfg.graph_valid, cfg.graph_test, cfg.seed).map_err(AppError::Config)?
            }
        };
        write_json(&cfg.out.join(GRAPH_DATA), &run_data(Some(split.clone()), None))?;
        let report = train_split::<B>(cfg, set.clone(), &split, device, backend, resume, tui)?;
        return Ok(GraphOutcome::Split(Box::new(report)));
    }
    if resume.is_some() {
        return Err(AppError::Config(
            "a cross-validation run is not resumed; run it again, or resume one fold's run folder".into(),
        ));
    }
    let folds = match fold_worker {
        false => write_folds(cfg, &set, &encoding, &labels)?,
        true => {
            // the parent's folds, which this process must train the same
            let folds = stratified_folds(&labels, cfg.folds, cfg.seed).map_err(AppError::Config)?;
            if read_run_data(&cfg.out, set.num_graphs())?.folds.as_ref() != Some(&folds) {
                return Err(AppError::Config(format!(
                    "{} holds other folds than this dataset gives; start the run again",
                    cfg.out.join(GRAPH_DATA).display()
                )));
            }
            folds
        }
    };
    let started = Instant::now();
    let mut curves = Vec::with_capacity(folds.len());
    let mut final_accuracy = Vec::with_capacity(folds.len());
    let which: Vec<usize> = match cfg.fold {
        Some(f) => vec![f - 1],
        None => (0..folds.len()).collect(),
    };
    for f in which {
        let mut fold_cfg = cfg.clone();
        fold_cfg.out = fold_dir(&cfg.out, f);
        crate::fsutil::make_out_dir(&fold_cfg.out)?;
        let split = GraphSplit::from_fold(&folds, f);
        write_json(&fold_cfg.out.join(GRAPH_DATA), &run_data(Some(split.clone()), None))?;
        eprintln!(
            "fold {}/{}: {} training graphs, {} test graphs",
            f + 1,
            folds.len(),
            split.train.len(),
            split.test.len()
        );
        let report = train_split::<B>(&fold_cfg, set.clone(), &split, device, backend, None, tui)?;
        println!("fold {}/{}: test acc {:.4}", f + 1, folds.len(), report.final_accuracy.test);
        curves.push(report.epochs.iter().map(|e| e.valid_accuracy.unwrap_or(f64::NAN)).collect::<Vec<_>>());
        final_accuracy.push(report.final_accuracy.test);
    }
    let cv = summarise(&set.name, curves, final_accuracy, started.elapsed().as_secs_f64(), backend);
    if cfg.fold.is_some() {
        // one fold of several: its run folder holds its history; no summary of one fold
        return Ok(GraphOutcome::Folds(cv));
    }
    write_json(&cfg.out.join(CROSS_VALIDATION), &cv)?;
    Ok(GraphOutcome::Folds(cv))
}

/// One run of the shared loop on `split` in `cfg.out`: the selected model's accuracy on the
/// split's parts, the report written.
fn train_split<B: SparseGnnAutodiffBackend>(
    cfg: &TrainConfig,
    set: Arc<GraphSet>,
    split: &GraphSplit,
    device: &B::Device,
    backend: &str,
    resume: Option<usize>,
    tui: bool,
) -> Result<TrainReport> {
    let stats = graph_stats(&set, Some(split));
    let model_cfg = graph_model_config(cfg, set.d_in, set.num_classes())?;
    B::seed(device, cfg.seed);
    let model = model_cfg.init::<B>(device).map_err(|e| AppError::Config(e.to_string()))?;
    let model = GraphClassifier::new(model).with_loss_scale(cfg.loss_scale.config(cfg.precision));
    let parameters = model.num_params();
    let batches = split.train.len().div_ceil(cfg.graph_batch());
    let learned = run_learner::<B, _>(cfg, model, device, resume, tui, false, batches, |start| {
        let batcher = GraphSetBatcher::new(set.clone());
        // each epoch a new order: the loader's generator, seeded by the run and where it starts
        let shuffle = cfg.seed.wrapping_add(start.unwrap_or(0) as u64);
        let train = DataLoaderBuilder::new(batcher.clone())
            .batch_size(cfg.graph_batch())
            .shuffle(shuffle)
            .set_device(device.clone())
            .build(InMemDataset::new(split.train.clone()));
        let valid = DataLoaderBuilder::new(batcher)
            .batch_size(cfg.graph_batch())
            .set_device(device.clone())
            .build(InMemDataset::new(split.valid.clone()));
        Ok(((train, valid), 0.0))
    })?;
    let Learned { trained, run } = learned;
    let loss_scale = trained.loss_scaler().as_ref().map(LossScaleSummary::from);
    let score = |ids: &[usize]| score_graphs(&trained.model, &set, ids, cfg.graph_batch(), device);
    let (train, valid, test) = (score(&split.train), score(&split.valid), score(&split.test));
    let acc = |s: Option<gnn_train::graphs::GraphScore>| s.map_or(f64::NAN, |s| s.accuracy);
    let final_accuracy = Accuracies {
        train: acc(train),
        valid: acc(valid),
        test: acc(test),
        test_loss: test.map_or(f64::NAN, |s| s.loss),
    };
    let outcome = Outcome { final_accuracy, parameters, loss_scale, link: None };
    conclude(cfg, &stats, backend, (&trained, &trained.model), run, outcome)
}

/// Reads a run folder's `graph-data.json`, checked against a dataset of `graphs` graphs.
pub fn read_run_data(dir: &Path, graphs: usize) -> Result<GraphRunData> {
    let path = dir.join(GRAPH_DATA);
    let text = std::fs::read_to_string(&path).map_err(|e| AppError::io(&path, e))?;
    let data: GraphRunData =
        serde_json::from_str(&text).map_err(|e| AppError::Format { path: path.clone(), msg: e.to_string() })?;
    if data.graphs != graphs {
        return Err(AppError::Format {
            path,
            msg: format!("the run was trained on {} graphs, the dataset has {graphs}", data.graphs),
        });
    }
    if let Some(s) = &data.split {
        s.check(graphs).map_err(|msg| AppError::Format { path: path.clone(), msg })?;
    }
    Ok(data)
}

/// A trained graph classifier loaded from a run folder (one split, or one fold's folder).
pub fn load_graph_run<B: SparseGnnBackend>(
    dir: &Path,
    device: &B::Device,
) -> Result<(TrainConfig, GraphRunData, GraphSet, GraphModel<B>)> {
    let cfg = crate::training::eval::run_config(dir, None)?;
    if dir.join(FOLDS_DIR).is_dir() && !model_path(dir).with_extension("mpk").is_file() {
        return Err(AppError::Config(format!(
            "{} is a cross-validation run: each fold has its model; pass a fold's folder ({})",
            dir.display(),
            fold_dir(dir, 0).display()
        )));
    }
    cfg.check_device::<B>(device, "chosen")?;
    let data = load_tu(&cfg.dataset)?;
    let run = read_run_data(dir, data.num_graphs())?;
    let set = graph_set(&cfg, &data, run.encoding.clone())?;
    let model = graph_model_config(&cfg, set.d_in, set.num_classes())?
        .init::<B>(device)
        .map_err(|e| AppError::Config(e.to_string()))?;
    // model.mpk is the classifier's record (the model under `model`)
    let model = gnn_train::load_checked(GraphClassifier::new(model), &model_path(dir), device)?.model;
    Ok((cfg, run, set, model))
}

/// `eval` of a graph classification run: the accuracy of its model on each part of its split,
/// or a cross-validation run's summary with each fold's model re-scored on its test fold.
pub fn eval_graph<B: SparseGnnBackend>(dir: &Path, device: &B::Device) -> Result<Vec<String>> {
    let cfg = crate::training::eval::run_config(dir, None)?;
    if cfg.folds >= 2 && dir.join(FOLDS_DIR).is_dir() {
        let mut lines = Vec::new();
        let mut accs = Vec::new();
        for f in (0..cfg.folds).filter(|&f| fold_dir(dir, f).join("model.mpk").is_file()) {
            let (_, run, set, model) = load_graph_run::<B>(&fold_dir(dir, f), device)?;
            let split = run.split.ok_or_else(|| AppError::Config(format!("fold {} has no split", f + 1)))?;
            if let Some(s) = score_graphs(&model, &set, &split.test, cfg.graph_batch(), device) {
                lines.push(format!("fold {}/{}: test acc {:.4} ({} graphs)", f + 1, cfg.folds, s.accuracy, s.graphs));
                accs.push(s.accuracy);
            }
        }
        let k = accs.len().max(1) as f64;
        let mean = accs.iter().sum::<f64>() / k;
        let std = (accs.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / k).sqrt();
        lines.push(format!("final models: test acc {mean:.4} ± {std:.4} over {} folds", accs.len()));
        let cv_path = dir.join(CROSS_VALIDATION);
        if let Ok(text) = std::fs::read_to_string(&cv_path) {
            if let Ok(cv) = serde_json::from_str::<CrossValidation>(&text) {
                lines.push(format!(
                    "cross-validation: test acc {:.4} ± {:.4} at epoch {} (best mean over {} folds)",
                    cv.mean_accuracy, cv.std_accuracy, cv.best_epoch, cv.folds
                ));
            }
        }
        return Ok(lines);
    }
    let (cfg, run, set, model) = load_graph_run::<B>(dir, device)?;
    let split = run.split.ok_or_else(|| AppError::Config("the run folder has no split".into()))?;
    let mut parts = Vec::new();
    for (name, ids) in [("train", &split.train), ("valid", &split.valid), ("test", &split.test)] {
        if let Some(s) = score_graphs(&model, &set, ids, cfg.graph_batch(), device) {
            parts.push(format!("{name} {:.4}", s.accuracy));
        }
    }
    Ok(vec![format!("{} on {}: accuracy {}", cfg.model.name(), set.name, parts.join(" "))])
}

/// What `predict` wrote for a set of graphs.
pub struct GraphPredictOutput {
    pub graphs: usize,
    pub classes: usize,
    pub files: Vec<PathBuf>,
}

/// `predict` of a graph classification run: the class probabilities and the predicted class
/// (its index and the dataset's own label value) of every graph of the run's dataset or of
/// `dataset` (a TU folder, labeled or not, encoded as the run's).
pub fn predict_graph<B: SparseGnnBackend>(
    dir: &Path,
    dataset: Option<&str>,
    out_dir: &Path,
    device: &B::Device,
) -> Result<GraphPredictOutput> {
    let (cfg, run, set, model) = load_graph_run::<B>(dir, device)?;
    let set = match dataset {
        Some(path) => graph_set(&cfg, &load_tu(path)?, run.encoding.clone())?,
        None => set,
    };
    let ids: Vec<usize> = (0..set.num_graphs()).collect();
    let p = predict_graphs(&model, &set, &ids, cfg.graph_batch(), device);
    crate::fsutil::make_out_dir(out_dir)?;
    let probabilities = out_dir.join("probabilities.npy");
    crate::npyio::write(&probabilities, &[ids.len(), p.classes], &p.probabilities)?;
    let predictions = out_dir.join("predictions.csv");
    let mut text = String::from("graph,class,label\n");
    for (g, &c) in p.predicted.iter().enumerate() {
        text.push_str(&format!("{},{c},{}\n", g + 1, run.encoding.class_values[c]));
    }
    crate::fsutil::write_atomic(&predictions, text.as_bytes())?;
    Ok(GraphPredictOutput { graphs: ids.len(), classes: p.classes, files: vec![probabilities, predictions] })
}
