//! Cross-validation of graph classification: the folds' folders, the summary over the folds
//! (the GIN paper's protocol) and its collection from folds trained in processes of their own
//! (`train --folds K --fold-jobs N`).

use crate::error::{AppError, Result};
use crate::training::config::TrainConfig;
use crate::training::graph::{CROSS_VALIDATION, FOLDS_DIR};
use crate::training::report::{read_json, write_json};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The summary of a cross-validation run (`cross-validation.json`): the GIN paper's protocol,
/// the test accuracy of each fold per epoch, averaged over the folds, at the epoch best on
/// average.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CrossValidation {
    pub dataset: String,
    pub folds: usize,
    pub epochs: usize,
    /// The epoch (1-based) whose mean test accuracy over the folds is highest.
    pub best_epoch: usize,
    /// Mean and standard deviation (population, as the GIN paper's code) over the folds of the
    /// test accuracy at `best_epoch`.
    pub mean_accuracy: f64,
    pub std_accuracy: f64,
    /// Each fold's test accuracy at `best_epoch`.
    pub fold_accuracy: Vec<f64>,
    /// The mean test accuracy at the last epoch, and each fold's final model's test accuracy.
    pub last_epoch_mean: f64,
    pub final_accuracy: Vec<f64>,
    /// The mean over the folds of the test accuracy at each epoch.
    pub mean_curve: Vec<f64>,
    /// Wall time of the whole run (every fold, evaluation included), seconds.
    pub seconds: f64,
    pub backend: String,
    pub commit: String,
}

/// The folder of fold `f` (0-based) of a cross-validation run.
pub fn fold_dir(out: &Path, f: usize) -> PathBuf {
    out.join(FOLDS_DIR).join(format!("fold-{:02}", f + 1))
}

/// The cross-validation summary of the folds' per-epoch test accuracies.
pub fn summarise(
    dataset: &str,
    curves: Vec<Vec<f64>>,
    final_accuracy: Vec<f64>,
    seconds: f64,
    backend: &str,
) -> CrossValidation {
    let epochs = curves.iter().map(Vec::len).min().unwrap_or(0);
    let k = curves.len().max(1) as f64;
    let mean_curve: Vec<f64> = (0..epochs).map(|e| curves.iter().map(|c| c[e]).sum::<f64>() / k).collect();
    // the earliest epoch of the highest mean
    let best = mean_curve.iter().enumerate().fold(0, |b, (e, &v)| if v > mean_curve[b] { e } else { b });
    let fold_accuracy: Vec<f64> = curves.iter().map(|c| c.get(best).copied().unwrap_or(f64::NAN)).collect();
    let mean = fold_accuracy.iter().sum::<f64>() / k;
    let std = (fold_accuracy.iter().map(|a| (a - mean).powi(2)).sum::<f64>() / k).sqrt();
    CrossValidation {
        dataset: dataset.to_string(),
        folds: curves.len(),
        epochs,
        best_epoch: best + 1,
        mean_accuracy: mean,
        std_accuracy: std,
        fold_accuracy,
        last_epoch_mean: mean_curve.last().copied().unwrap_or(f64::NAN),
        final_accuracy,
        mean_curve,
        seconds,
        backend: backend.to_string(),
        commit: crate::bench::commit(),
    }
}

/// What the summary reads of a fold's `results.json` (a [`crate::training::report::TrainReport`];
/// values that were not numbers are written as `null`).
#[derive(Debug, Deserialize)]
pub struct FoldResults {
    pub dataset: FoldDataset,
    pub backend: String,
    pub epochs: Vec<FoldEpoch>,
    pub final_accuracy: FoldAccuracy,
}

/// The dataset's name in a fold's results.
#[derive(Debug, Deserialize)]
pub struct FoldDataset {
    pub name: String,
}

/// An epoch of a fold: its test fold's accuracy (scored as the validation part).
#[derive(Debug, Deserialize)]
pub struct FoldEpoch {
    pub valid_accuracy: Option<f64>,
}

/// The final model's accuracy on the test fold.
#[derive(Debug, Deserialize)]
pub struct FoldAccuracy {
    pub test: Option<f64>,
}

/// Reads the results of fold `f` (0-based) of the run in `out`.
pub fn read_fold(out: &Path, f: usize) -> Result<FoldResults> {
    let path = fold_dir(out, f).join("results.json");
    let r: FoldResults = read_json(&path, "results of a fold")?;
    if r.epochs.is_empty() {
        return Err(AppError::Format { path, msg: "the fold recorded no epochs".into() });
    }
    Ok(r)
}

/// The cross-validation summary of a run whose `cfg.folds` folds trained in their folders
/// (`folds/fold-NN/results.json`), written to `cross-validation.json`; `seconds`: the wall
/// time of the whole run. A fold without its results is an error naming the file.
pub fn collect_folds(cfg: &TrainConfig, seconds: f64) -> Result<CrossValidation> {
    let mut curves = Vec::with_capacity(cfg.folds);
    let mut final_accuracy = Vec::with_capacity(cfg.folds);
    let (mut dataset, mut backend) = (String::new(), String::new());
    for f in 0..cfg.folds {
        let r = read_fold(&cfg.out, f)?;
        curves.push(r.epochs.iter().map(|e| e.valid_accuracy.unwrap_or(f64::NAN)).collect());
        final_accuracy.push(r.final_accuracy.test.unwrap_or(f64::NAN));
        dataset = r.dataset.name;
        backend = r.backend;
    }
    let cv = summarise(&dataset, curves, final_accuracy, seconds, &backend);
    write_json(&cfg.out.join(CROSS_VALIDATION), &cv)?;
    Ok(cv)
}
