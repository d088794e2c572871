//! Checkpoints: the best-validation strategy, and choosing a checkpoint that loads when resuming.

use crate::error::{AppError, Result};
use crate::training::report::EpochMetrics;
use burn::module::AutodiffModule;
use burn::optim::Optimizer;
use burn::record::Recorder;
use burn::tensor::backend::AutodiffBackend;
use burn::train::checkpoint::{CheckpointingAction, CheckpointingStrategy};
use burn::train::metric::store::EventStoreClient;
use gnn_train::record::recorder_message;
use gnn_train::AtomicFileRecorder;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// `<out>/checkpoint`, where burn-train's checkpointer writes `model-N.mpk`, `optim-N.mpk` and
/// `scheduler-N.mpk`.
pub fn checkpoint_dir(out: &Path) -> PathBuf {
    out.join("checkpoint")
}

/// Checkpoints every epoch and deletes those that can no longer be the best by validation
/// accuracy, judged from the epochs already logged (the metrics reach the log asynchronously,
/// so an epoch whose accuracy is not known yet is kept), except the last `keep_last` (resume).
/// burn-train's own metric strategy reads the event store, which can lag the epoch it judges.
pub struct BestValidCheckpoints {
    pub log: Arc<Mutex<Vec<EpochMetrics>>>,
    pub saved: Vec<usize>,
    pub keep_last: usize,
}

impl CheckpointingStrategy for BestValidCheckpoints {
    fn checkpointing(&mut self, epoch: usize, _: &EventStoreClient) -> Vec<CheckpointingAction> {
        let log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        let acc = |e: usize| log.iter().find(|m| m.epoch == e).and_then(EpochMetrics::selection_score);
        let best = best_valid(log.iter().map(|m| (m.epoch, m.selection_score())));
        self.saved.push(epoch);
        let recent = self.saved.len().saturating_sub(self.keep_last);
        let mut actions = vec![CheckpointingAction::Save];
        let mut kept = Vec::new();
        for (i, &e) in self.saved.iter().enumerate() {
            let beaten = match (acc(e), best) {
                (Some(a), Some((be, ba))) => e != be && (a < ba || (a == ba && e > be)),
                _ => false,
            };
            if beaten && i < recent {
                actions.push(CheckpointingAction::Delete(e));
            } else {
                kept.push(e);
            }
        }
        self.saved = kept;
        actions
    }
}

/// Of `(epoch, validation accuracy)` pairs, the epoch with the highest accuracy and that
/// accuracy (the earliest epoch on ties; epochs without an accuracy do not count). Every run
/// keeps and selects its checkpoints by this rule.
pub fn best_valid(epochs: impl Iterator<Item = (usize, Option<f64>)>) -> Option<(usize, f64)> {
    let mut best: Option<(usize, f64)> = None;
    for (epoch, acc) in epochs {
        if let Some(a) = acc {
            if best.is_none_or(|(be, ba)| a > ba || (a == ba && epoch < be)) {
                best = Some((epoch, a));
            }
        }
    }
    best
}

/// The epoch of this run with the highest validation accuracy (earliest on ties) among those
/// whose model checkpoint is on disk in `dir`.
pub fn best_checkpoint(epochs: &[EpochMetrics], dir: &Path) -> Option<usize> {
    best_valid(
        epochs
            .iter()
            .filter(|e| dir.join(format!("model-{}.mpk", e.epoch)).exists())
            .map(|e| (e.epoch, e.selection_score())),
    )
    .map(|(e, _)| e)
}

/// Checks that the checkpoint of `epoch` in `dir` is complete: the model record loads into
/// `model` with every shape matching, and the optimizer and scheduler records decode.
pub fn verify<B, M, O>(
    dir: &Path,
    epoch: usize,
    model: &M,
    _optim: &O,
    device: &B::Device,
) -> std::result::Result<(), String>
where
    B: AutodiffBackend,
    M: AutodiffModule<B>,
    O: Optimizer<M, B>,
{
    gnn_train::load_checked::<B, M>(model.clone(), &dir.join(format!("model-{epoch}")), device)
        .map_err(|e| e.to_string())?;
    let recorder = AtomicFileRecorder::new();
    let optim = dir.join(format!("optim-{epoch}.mpk"));
    Recorder::<B>::load::<O::Record>(&recorder, optim.clone(), device)
        .map_err(|e| format!("{}: {}", optim.display(), recorder_message(&e)))?;
    let scheduler = dir.join(format!("scheduler-{epoch}.mpk"));
    // one-device runs keep the step schedule's position (an i32), runs over parts a unit record
    Recorder::<B>::load::<i32>(&recorder, scheduler.clone(), device)
        .map(|_| ())
        .or_else(|_| Recorder::<B>::load::<()>(&recorder, scheduler.clone(), device))
        .map_err(|e| format!("{}: {}", scheduler.display(), recorder_message(&e)))?;
    Ok(())
}

/// The epochs whose model checkpoint is in `dir`, in order.
pub fn kept_epochs(dir: &Path) -> Vec<usize> {
    let mut epochs: Vec<usize> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| {
                    let name = e.file_name();
                    name.to_str()?.strip_prefix("model-")?.strip_suffix(".mpk")?.parse().ok()
                })
                .collect()
        })
        .unwrap_or_default();
    epochs.sort_unstable();
    epochs
}

/// The epoch to resume from: `requested` if its checkpoint is complete, else the latest
/// earlier one that is (with a message saying why), else an error.
pub fn resumable_epoch(
    dir: &Path,
    requested: usize,
    mut verify: impl FnMut(usize) -> std::result::Result<(), String>,
) -> Result<usize> {
    let model = dir.join(format!("model-{requested}.mpk"));
    if !model.exists() {
        let kept = kept_epochs(dir);
        let what = match kept.is_empty() {
            true => "checkpoint to resume from; the run has none (runs with --checkpoints false \
                     write none)"
                .to_string(),
            false => format!(
                "checkpoint to resume from; the run keeps those of epochs {} (the last two and \
                 the best by validation accuracy)",
                kept.iter().map(usize::to_string).collect::<Vec<_>>().join(", ")
            ),
        };
        return Err(AppError::Missing { path: model, what });
    }
    let mut why = match verify(requested) {
        Ok(()) => return Ok(requested),
        Err(e) => e,
    };
    for epoch in (1..requested).rev() {
        if !dir.join(format!("model-{epoch}.mpk")).exists() {
            continue;
        }
        match verify(epoch) {
            Ok(()) => {
                eprintln!(
                    "warning: the checkpoint of epoch {requested} is incomplete or does not fit the model ({why}); \
                     resuming from epoch {epoch}, the latest complete checkpoint"
                );
                return Ok(epoch);
            }
            Err(e) => why = format!("{why}; epoch {epoch}: {e}"),
        }
    }
    Err(AppError::Checkpoint(format!(
        "cannot resume from epoch {requested} in {}: {why}; no earlier checkpoint is complete",
        dir.display()
    )))
}

/// Refuses to resume from checkpoint `start` a run of `epochs` epochs that has none left.
pub fn check_epochs_left(start: usize, epochs: usize) -> Result<()> {
    if start >= epochs {
        return Err(AppError::Config(format!(
            "the run already trained {start} epochs; pass --epochs with more than {start} to train on"
        )));
    }
    Ok(())
}
