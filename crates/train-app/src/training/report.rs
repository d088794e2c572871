//! What a run writes about itself: the per-epoch metrics (`history.json`, kept up to date while
//! training so that a resumed run has its whole history) and the final report (`results.json`).

use crate::error::{AppError, Result};
use crate::training::config::TrainConfig;
use burn_sparse_gnn::DatasetStats;
use gnn_train::Accuracies;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Metrics of one epoch.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct EpochMetrics {
    pub epoch: usize,
    pub train_loss: Option<f64>,
    pub train_accuracy: Option<f64>,
    pub valid_loss: Option<f64>,
    pub valid_accuracy: Option<f64>,
    /// Link prediction: ROC-AUC of the step's sampled training pairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train_auc: Option<f64>,
    /// Link prediction: ROC-AUC of the validation pairs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_auc: Option<f64>,
    /// Wall time of the epoch (train step and validation), seconds.
    pub seconds: f64,
    /// Device memory held by the process at the end of the epoch (CubeCL pools), bytes.
    pub device_bytes_reserved: Option<u64>,
    pub device_bytes_in_use: Option<u64>,
}

/// What a training run produced (also written to `<out>/results.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TrainReport {
    pub config: TrainConfig,
    pub dataset: DatasetSummary,
    pub backend: String,
    pub commit: String,
    /// Every epoch of the run, those before a resume included.
    pub epochs: Vec<EpochMetrics>,
    pub final_accuracy: Accuracies,
    /// The epoch whose model `final_accuracy` measures (the last one unless
    /// `select: best-valid`).
    #[serde(default)]
    pub selected_epoch: Option<usize>,
    /// The checkpoint epoch the run resumed from, if it did.
    #[serde(default)]
    pub resumed_from: Option<usize>,
    pub train_seconds: f64,
    pub graph_setup_seconds: f64,
    pub parameters: usize,
    /// Dynamic loss scaling (mixed f16; `None`: the run did not scale its loss).
    #[serde(default)]
    pub loss_scale: Option<LossScaleSummary>,
    /// Link prediction: the metrics of the selected model on the valid and test pairs
    /// (`final_accuracy` then holds the share of pairs on the right side of probability 0.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<gnn_train::link::LinkEvaluation>,
}

/// What a run's loss scaling did ([`gnn_train::loss_scale`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LossScaleSummary {
    /// The scale after the last step.
    pub scale: f32,
    /// Training steps skipped because their gradients were not finite (each halved the scale).
    pub skipped_steps: u64,
}

impl EpochMetrics {
    /// What a run selects its best epoch by: the validation ROC-AUC in link prediction, the
    /// validation accuracy otherwise.
    pub fn selection_score(&self) -> Option<f64> {
        self.valid_auc.or(self.valid_accuracy)
    }
}

impl From<&gnn_train::LossScaler> for LossScaleSummary {
    fn from(s: &gnn_train::LossScaler) -> Self {
        Self { scale: s.scale(), skipped_steps: s.skipped_steps() }
    }
}

/// Dataset statistics for the results file.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DatasetSummary {
    pub name: String,
    pub nodes: usize,
    pub edges: usize,
    pub features: usize,
    pub classes: usize,
    pub degree_max: usize,
    pub degree_mean: f64,
    pub edge_homophily: f64,
    pub split_sizes: Option<[usize; 3]>,
}

impl From<&DatasetStats> for DatasetSummary {
    fn from(s: &DatasetStats) -> Self {
        Self {
            name: s.name.clone(),
            nodes: s.nodes,
            edges: s.edges,
            features: s.features,
            classes: s.classes,
            degree_max: s.degree_max,
            degree_mean: s.degree_mean,
            edge_homophily: s.edge_homophily,
            split_sizes: s.split_sizes,
        }
    }
}

/// `<out>/history.json`: the epochs trained so far.
pub fn history_path(dir: &Path) -> PathBuf {
    dir.join("history.json")
}

/// `<out>/results.json`.
pub fn results_path(dir: &Path) -> PathBuf {
    dir.join("results.json")
}

/// Reads a JSON file of a run (a regular file).
pub fn read_json<T: serde::de::DeserializeOwned>(path: &Path, what: &str) -> Result<T> {
    let mut text = String::new();
    let file = crate::npyio::open_regular(path, what)?;
    std::io::Read::read_to_string(&mut std::io::Read::take(file, 1 << 30), &mut text)
        .map_err(|e| AppError::io(path, e))?;
    serde_json::from_str(&text).map_err(|e| AppError::Format { path: path.into(), msg: e.to_string() })
}

/// The epochs a run in `dir` recorded up to and including `last` (from `history.json`, else
/// `results.json`), sorted; empty when neither holds them.
pub fn earlier_epochs(dir: &Path, last: usize) -> Vec<EpochMetrics> {
    let from_history = read_json::<Vec<EpochMetrics>>(&history_path(dir), "history").ok();
    let from_results = || read_json::<TrainReport>(&results_path(dir), "results").ok().map(|r| r.epochs);
    let mut epochs: Vec<EpochMetrics> =
        from_history.or_else(from_results).unwrap_or_default().into_iter().filter(|e| e.epoch <= last).collect();
    epochs.sort_by_key(|e| e.epoch);
    epochs.dedup_by_key(|e| e.epoch);
    epochs
}

/// The dataset summary of the run in `dir`, where its results say.
pub fn trained_on(dir: &Path) -> Option<DatasetSummary> {
    read_json::<TrainReport>(&results_path(dir), "results").ok().map(|r| r.dataset)
}

/// Writes `value` as pretty JSON to `path` atomically.
pub fn write_json<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    let text =
        serde_json::to_string_pretty(value).map_err(|e| AppError::Format { path: path.into(), msg: e.to_string() })?;
    crate::fsutil::write_atomic(path, text.as_bytes())
}
