//! What a partitioned run reports: its partition, its epochs and `results.json`, and the
//! files it writes at the end.

use crate::bench::commit;
use crate::error::{AppError, Result};
use crate::training::TrainConfig;
use burn_sparse_gnn::collective::CommStats;
use burn_sparse_gnn::partition::PartitionStats;
use burn_sparse_gnn::SparseGnnBackend;
use gnn_models::GnnModel;
use serde::Serialize;

use crate::training::report::{EpochMetrics, LossScaleSummary};

/// What a partitioned run reports about its partition.
#[derive(Clone, Debug, Serialize)]
pub struct PartitionReport {
    pub parts: usize,
    pub devices: usize,
    pub method: String,
    pub stats: PartitionStats,
    /// Bytes sent between parts per training epoch (forward halo rows and their gradients).
    pub exchanged_bytes_per_epoch: u64,
    /// Seconds to partition (or read the cached partition) and to build the parts.
    pub partition_seconds: f64,
    pub setup_seconds: f64,
    /// Whether the partition came from the cache file.
    pub cached: bool,
    /// The boundary-sampling rate of the training steps (absent: exact).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boundary_sampling: Option<f64>,
    /// How the parts hold their halo columns (`joined` or `split`).
    pub halo_layout: String,
    /// Processes of a multi-process run (one part each; absent: one process).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processes: Option<usize>,
    /// What moved the halo rows between the processes (`nccl` or `host`; absent: one process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<burn_sparse_gnn::collective::RowTransport>,
}

/// What `train --devices` / `--parts` writes to `results.json`.
#[derive(Clone, Debug, Serialize)]
pub struct PartitionedReport {
    pub config: TrainConfig,
    pub backend: String,
    pub commit: String,
    pub partition: PartitionReport,
    /// Per epoch: loss, accuracies (train, valid, test) and seconds.
    pub epochs: Vec<PartitionedEpoch>,
    pub train_seconds: f64,
    /// Accuracy of the model the run ends with (the fields a whole-graph run's
    /// `final_accuracy` has, less its test loss).
    pub final_accuracy: SplitAccuracy,
    /// The epoch whose model the run saved (the last, or the best by validation accuracy
    /// with `--select best-valid`).
    pub selected_epoch: Option<usize>,
    /// The checkpoint epoch the run resumed from, if it did.
    pub resumed_from: Option<usize>,
    /// Dynamic loss scaling (mixed f16; `None`: the run did not scale its loss).
    pub loss_scale: Option<crate::training::report::LossScaleSummary>,
}

/// Accuracy on the train, valid and test splits.
#[derive(Clone, Copy, Debug, Serialize, serde::Deserialize, PartialEq)]
pub struct SplitAccuracy {
    pub train: f64,
    pub valid: f64,
    pub test: f64,
}

/// One epoch of a partitioned run (in `results.json` under the names a whole-graph run's
/// epochs have: `train_loss`, `train_accuracy`, `valid_loss`, `valid_accuracy`, and
/// `test_accuracy`).
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct PartitionedEpoch {
    pub epoch: usize,
    /// The training step's loss.
    #[serde(rename = "train_loss")]
    pub loss: f64,
    /// Accuracies of the model after the step, evaluated without dropout (a whole-graph run's
    /// per-epoch train accuracy is that of the training step's forward pass, with dropout).
    #[serde(rename = "train_accuracy")]
    pub train: f64,
    #[serde(rename = "valid_accuracy")]
    pub valid: f64,
    /// The loss on the valid split, without dropout.
    pub valid_loss: f64,
    #[serde(rename = "test_accuracy")]
    pub test: f64,
    pub seconds: f64,
    /// What the collectives between processes moved in this epoch, measured on this rank
    /// (multi-process runs, rank 0: the training step and the evaluation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange: Option<CommStats>,
}

/// How a run ended: the epoch whose model it keeps, the epoch it resumed from, its training
/// time, what its loss scaling did.
pub(crate) struct RunOutcome {
    pub selected_epoch: Option<usize>,
    pub resumed_from: Option<usize>,
    pub train_seconds: f64,
    pub loss_scale: Option<LossScaleSummary>,
}

/// Writes what a partitioned run leaves in `cfg.out`, each file atomically: the trained model
/// (`model.mpk`, `model.safetensors`: the whole-graph model's records, which `eval` and
/// `predict` read), `history.json`, `curves.png` and `results.json`; returns the report.
pub(crate) fn write_outputs<B: SparseGnnBackend>(
    cfg: &TrainConfig,
    model: GnnModel<B>,
    epochs: Vec<PartitionedEpoch>,
    partition: PartitionReport,
    backend: &str,
    run: RunOutcome,
) -> Result<PartitionedReport> {
    // the trained parameters, as the whole-graph run saves them
    let trained = gnn_train::NodeClassifier::new(model, cfg.seed);
    let model_file = crate::training::files::model_path(&cfg.out);
    burn::module::Module::save_file(trained.clone(), model_file.clone(), &gnn_train::AtomicFileRecorder::new())
        .map_err(|e| AppError::Format { path: model_file.with_extension("mpk"), msg: e.to_string() })?;
    gnn_train::write_safetensors(&trained.model, &crate::training::files::safetensors_path(&cfg.out))?;
    let history = history(&epochs);
    crate::training::report::write_json(&crate::training::report::history_path(&cfg.out), &history)?;
    let chart = cfg.out.join("curves.png");
    if let Err(e) = crate::charts::write_curves(&chart, &history) {
        eprintln!("warning: no chart written to {}: {e}", chart.display());
    }
    let selected = epochs.iter().find(|e| Some(e.epoch) == run.selected_epoch).or(epochs.last());
    let final_accuracy = selected.map_or(SplitAccuracy { train: f64::NAN, valid: f64::NAN, test: f64::NAN }, |e| {
        SplitAccuracy { train: e.train, valid: e.valid, test: e.test }
    });
    let report = PartitionedReport {
        config: cfg.clone(),
        backend: backend.to_string(),
        commit: commit(),
        partition,
        epochs,
        train_seconds: run.train_seconds,
        final_accuracy,
        selected_epoch: run.selected_epoch,
        resumed_from: run.resumed_from,
        loss_scale: run.loss_scale,
    };
    let text = serde_json::to_string_pretty(&report).map_err(|e| AppError::Config(e.to_string()))?;
    crate::fsutil::write_atomic(&cfg.out.join("results.json"), text.as_bytes())?;
    Ok(report)
}

/// The epochs as `history.json` holds them.
pub fn history(epochs: &[PartitionedEpoch]) -> Vec<EpochMetrics> {
    epochs
        .iter()
        .map(|e| EpochMetrics {
            epoch: e.epoch,
            train_loss: Some(e.loss),
            train_accuracy: Some(e.train),
            valid_loss: Some(e.valid_loss),
            valid_accuracy: Some(e.valid),
            train_auc: None,
            valid_auc: None,
            seconds: e.seconds,
            device_bytes_reserved: None,
            device_bytes_in_use: None,
        })
        .collect()
}
