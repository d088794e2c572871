//! Checkpoints, resume, early stopping and best-validation selection of the runs that train
//! over parts or processes (`partitioned::devices::train` and `partitioned::processes::train`, which run their own epoch
//! loop instead of burn-train's `Learner`).
//!
//! They write the files a whole-graph run writes, in the same formats: in `<out>/checkpoint`
//! the model (`model-N.mpk`, a `NodeClassifier` record), Adam's state (`optim-N.mpk`) and the
//! learning-rate schedule (`scheduler-N.mpk`), and `<out>/history.json` after every epoch; and
//! `checkpoint/epochs.json`, the per-epoch lines of `results.json` (test accuracy and the
//! exchange included), from which a resumed run continues its history. The checkpoints kept
//! are those a whole-graph run keeps: the last two and the best by validation accuracy.
//!
//! Every epoch's dropout draws come from the seed and the epoch number, so a run resumed from
//! epoch N trains the epochs after N as the uninterrupted run does.

use crate::error::{AppError, Result};
use crate::partitioned::report::{history, PartitionedEpoch};
use crate::training::checkpoints::{checkpoint_dir, kept_epochs, resumable_epoch};
use crate::training::config::ModelSelection;
use crate::training::report::{history_path, read_json, write_json};
use crate::training::TrainConfig;
use burn::optim::Optimizer;
use burn::record::Recorder;
use burn_sparse_gnn::{SparseGnnAutodiffBackend, SparseGnnBackend};
use gnn_models::GnnModel;
use gnn_train::record::recorder_message;
use gnn_train::{AtomicFileRecorder, NodeClassifier};
use std::path::{Path, PathBuf};

/// The file of the per-epoch records of a run over parts or processes, in `dir` (the run's
/// checkpoint folder).
pub fn epochs_path(dir: &Path) -> PathBuf {
    dir.join("epochs.json")
}

/// What a resumed run starts from.
pub struct Resumed<B: SparseGnnAutodiffBackend, O> {
    /// The checkpoint's epoch (training goes on with the next).
    pub epoch: usize,
    pub model: GnnModel<B>,
    pub optim: O,
    /// The epochs up to `epoch`, as the run recorded them.
    pub epochs: Vec<PartitionedEpoch>,
}

/// The checkpoints and stopping rules of one run over parts or processes.
pub struct RunKeeper {
    dir: PathBuf,
    out: PathBuf,
    /// This process writes the run folder (one process, or rank 0).
    writes: bool,
    checkpoints: bool,
    keep_best: bool,
    patience: Option<usize>,
    seed: u64,
    /// Epochs whose checkpoint this run wrote and keeps, in order.
    saved: Vec<usize>,
}

impl RunKeeper {
    /// The keeper of `cfg`'s run; `writes`: this process writes the run folder.
    pub fn new(cfg: &TrainConfig, writes: bool) -> Self {
        Self {
            dir: checkpoint_dir(&cfg.out),
            out: cfg.out.clone(),
            writes,
            checkpoints: cfg.checkpoints,
            keep_best: cfg.select == ModelSelection::BestValid,
            patience: cfg.patience,
            seed: cfg.seed,
            saved: Vec::new(),
        }
    }

    /// Whether this process writes a checkpoint every epoch.
    fn saves(&self) -> bool {
        self.writes && (self.checkpoints || self.keep_best)
    }

    /// Reads the checkpoint of `epoch` into `model` and `optim`, with the epochs up to it.
    /// Errors name the file that is missing, does not decode or does not fit the model.
    pub fn load<B, O>(&self, epoch: usize, model: GnnModel<B>, optim: O, device: &B::Device) -> Result<Resumed<B, O>>
    where
        B: SparseGnnAutodiffBackend,
        O: Optimizer<GnnModel<B>, B>,
    {
        let wrapped = NodeClassifier::new(model, self.seed);
        let model = gnn_train::load_checked::<B, _>(wrapped, &self.dir.join(format!("model-{epoch}")), device)?.model;
        let recorder = AtomicFileRecorder::new();
        let file = self.dir.join(format!("optim-{epoch}.mpk"));
        let record = Recorder::<B>::load::<O::Record>(&recorder, file.clone(), device)
            .map_err(|e| AppError::Checkpoint(format!("{}: {}", file.display(), recorder_message(&e))))?;
        let optim = optim.load_record(record);
        let file = epochs_path(&self.dir);
        let mut epochs: Vec<PartitionedEpoch> = read_json(&file, "epoch records")?;
        epochs.retain(|e| e.epoch <= epoch);
        epochs.sort_by_key(|e| e.epoch);
        epochs.dedup_by_key(|e| e.epoch);
        if epochs.last().map(|e| e.epoch) != Some(epoch) {
            return Err(AppError::Checkpoint(format!(
                "{} has no record of epoch {epoch}, the checkpoint's",
                file.display()
            )));
        }
        Ok(Resumed { epoch, model, optim, epochs })
    }

    /// The epoch to resume from: `requested` if its checkpoint loads, else the latest earlier
    /// one that does (saying why), else an error; and that checkpoint, read.
    pub fn resume<B, O>(
        &mut self,
        requested: usize,
        model: GnnModel<B>,
        optim: O,
        device: &B::Device,
    ) -> Result<Resumed<B, O>>
    where
        B: SparseGnnAutodiffBackend,
        O: Optimizer<GnnModel<B>, B> + Clone,
    {
        let records = epochs_path(&self.dir);
        if self.dir.join(format!("model-{requested}.mpk")).exists() && !records.exists() {
            return Err(AppError::Missing {
                path: records,
                what: "the epoch records of a run over parts or processes: the run in this folder trained on the \
                       whole graph; resume it without --devices, --parts or --processes"
                    .into(),
            });
        }
        // the checkpoint that loads is kept, not read a second time
        let mut loaded = None;
        resumable_epoch(&self.dir, requested, |e| {
            let r = self.load(e, model.clone(), optim.clone(), device).map_err(|e| e.to_string())?;
            loaded = Some(r);
            Ok(())
        })?;
        let resumed = loaded.ok_or_else(|| AppError::Checkpoint("no checkpoint was read".into()))?;
        let epoch = resumed.epoch;
        // the checkpoints already there count as this run's (the oldest beaten ones go first)
        self.saved = kept_epochs(&self.dir).into_iter().filter(|&e| e <= epoch).collect();
        Ok(resumed)
    }

    /// After an epoch: writes its checkpoint (when the run keeps checkpoints, or needs them to
    /// select the best epoch), removes those that can no longer be kept, and writes the
    /// history so far. `epochs` ends with the epoch just trained.
    pub fn after_epoch<B, O>(&mut self, model: &GnnModel<B>, optim: &O, epochs: &[PartitionedEpoch]) -> Result<()>
    where
        B: SparseGnnAutodiffBackend,
        O: Optimizer<GnnModel<B>, B>,
    {
        if !self.writes {
            return Ok(());
        }
        let Some(last) = epochs.last() else { return Ok(()) };
        let epoch = last.epoch;
        if self.saves() {
            let fail = |what: &str, e: String| {
                AppError::Checkpoint(format!(
                    "cannot write the {what} checkpoint of epoch {epoch} to {} ({e}); fix the folder or pass \
                     --checkpoints false",
                    self.dir.display()
                ))
            };
            std::fs::create_dir_all(&self.dir).map_err(|e| fail("", e.to_string()))?;
            let recorder = AtomicFileRecorder::new();
            let wrapped = NodeClassifier::new(model.clone(), self.seed);
            burn::module::Module::save_file(wrapped, self.dir.join(format!("model-{epoch}")), &recorder)
                .map_err(|e| fail("model", recorder_message(&e)))?;
            Recorder::<B>::record(&recorder, optim.to_record(), self.dir.join(format!("optim-{epoch}")))
                .map_err(|e| fail("optimizer", recorder_message(&e)))?;
            // the schedule's position as a whole-graph run writes it (burn-train's step schedule:
            // the index of the last step, one step per epoch), so either kind of run resumes it
            let position = i32::try_from(epoch).unwrap_or(i32::MAX) - 1;
            Recorder::<B>::record(&recorder, position, self.dir.join(format!("scheduler-{epoch}")))
                .map_err(|e| fail("schedule", recorder_message(&e)))?;
            write_json(&epochs_path(&self.dir), &epochs)?;
            self.saved.push(epoch);
            self.prune(epochs)?;
        }
        write_json(&history_path(&self.out), &history(epochs))?;
        Ok(())
    }

    /// Removes the checkpoints that are neither among the last two (the last one when the
    /// run keeps checkpoints only to select the best) nor the best by validation accuracy.
    fn prune(&mut self, epochs: &[PartitionedEpoch]) -> Result<()> {
        let keep_last = if self.checkpoints { 2 } else { 1 };
        let best = best_valid(epochs.iter().filter(|e| self.saved.contains(&e.epoch)));
        let recent = self.saved.len().saturating_sub(keep_last);
        let mut kept = Vec::new();
        for (i, &e) in self.saved.iter().enumerate() {
            if i >= recent || best == Some(e) {
                kept.push(e);
            } else {
                self.remove(e)?;
            }
        }
        self.saved = kept;
        Ok(())
    }

    fn remove(&self, epoch: usize) -> Result<()> {
        for kind in ["model", "optim", "scheduler"] {
            let f = self.dir.join(format!("{kind}-{epoch}.mpk"));
            if f.exists() {
                std::fs::remove_file(&f).map_err(|e| AppError::io(&f, e))?;
            }
        }
        Ok(())
    }

    /// Whether `--patience` ends the run after the last of `epochs`: no lower validation loss
    /// than the best one for that many epochs (as a whole-graph run decides).
    pub fn should_stop(&self, epochs: &[PartitionedEpoch]) -> bool {
        let (Some(p), Some(last)) = (self.patience, epochs.last()) else { return false };
        let mut best: Option<(usize, f64)> = None;
        for e in epochs {
            if best.is_none_or(|(_, b)| e.valid_loss < b) {
                best = Some((e.epoch, e.valid_loss));
            }
        }
        best.is_some_and(|(b, _)| last.epoch - b >= p)
    }

    /// The epoch whose model the run ends with: the best by validation accuracy among the
    /// checkpoints on disk with `--select best-valid`, else the last.
    pub fn selected_epoch(&self, epochs: &[PartitionedEpoch]) -> Option<usize> {
        if self.keep_best && self.writes {
            if let Some(e) = best_valid(epochs.iter().filter(|e| self.saved.contains(&e.epoch))) {
                return Some(e);
            }
        }
        epochs.last().map(|e| e.epoch)
    }

    /// The model the run ends with: `last` (the model after the last epoch), or the selected
    /// epoch's checkpoint read back; removes the checkpoints written only to select it.
    pub fn finish<B: SparseGnnBackend>(
        &mut self,
        last: GnnModel<B>,
        epochs: &[PartitionedEpoch],
        device: &B::Device,
    ) -> Result<GnnModel<B>> {
        let selected = self.selected_epoch(epochs);
        let mut model = last;
        if let Some(e) = selected.filter(|&e| Some(e) != epochs.last().map(|l| l.epoch)) {
            let wrapped = NodeClassifier::new(model, self.seed);
            model = gnn_train::load_checked::<B, _>(wrapped, &self.dir.join(format!("model-{e}")), device)?.model;
        }
        if self.writes && self.keep_best && !self.checkpoints {
            for e in std::mem::take(&mut self.saved) {
                self.remove(e)?;
            }
            let f = epochs_path(&self.dir);
            if f.exists() {
                std::fs::remove_file(&f).map_err(|e| AppError::io(&f, e))?;
            }
            let _ = std::fs::remove_dir(&self.dir); // only if now empty
        }
        Ok(model)
    }
}

/// The epoch with the highest validation accuracy (the earliest on ties), by the rule of
/// whole-graph runs.
fn best_valid<'a>(epochs: impl Iterator<Item = &'a PartitionedEpoch>) -> Option<usize> {
    crate::training::checkpoints::best_valid(epochs.map(|e| (e.epoch, Some(e.valid)))).map(|(e, _)| e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn epoch(epoch: usize, valid: f64, valid_loss: f64) -> PartitionedEpoch {
        PartitionedEpoch { epoch, loss: 1.0, train: 0.5, valid, valid_loss, test: 0.5, seconds: 0.1, exchange: None }
    }

    #[test]
    fn patience_counts_epochs_since_the_lowest_valid_loss() {
        let mut cfg = TrainConfig { patience: Some(2), ..TrainConfig::default() };
        let k = RunKeeper::new(&cfg, false);
        let e = [epoch(1, 0.1, 1.0), epoch(2, 0.2, 0.8), epoch(3, 0.3, 0.9)];
        assert!(!k.should_stop(&e));
        let e = [epoch(1, 0.1, 1.0), epoch(2, 0.2, 0.8), epoch(3, 0.3, 0.9), epoch(4, 0.3, 0.8)];
        assert!(k.should_stop(&e), "epoch 4 equals, not beats, epoch 2's loss");
        cfg.patience = None;
        assert!(!RunKeeper::new(&cfg, false).should_stop(&e));
    }

    #[test]
    fn best_valid_takes_the_earliest_of_ties() {
        let e = [epoch(1, 0.5, 1.0), epoch(2, 0.7, 1.0), epoch(3, 0.7, 1.0), epoch(4, 0.6, 1.0)];
        assert_eq!(best_valid(e.iter()), Some(2));
        assert_eq!(best_valid([].iter()), None);
    }
}
