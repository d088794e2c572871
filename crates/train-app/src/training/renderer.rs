//! The metrics renderer: forwards to burn-train's TUI in a terminal or prints one line per
//! epoch, and records every epoch's metrics (for `history.json` and `results.json`).

use crate::training::report::EpochMetrics;
use burn::train::metric::NumericEntry;
use burn::train::renderer::{
    EvaluationName, EvaluationProgress, MetricState, MetricsRenderer, MetricsRendererEvaluation,
    MetricsRendererTraining, ProgressType, TrainingProgress,
};
use burn::train::LearnerSummary;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

type MemoryProbe = Box<dyn Fn() -> Option<(u64, u64)> + Send + Sync>;

/// How far a run's training loss may grow before the run counts as diverged: above
/// `DIVERGENCE_FACTOR` times the first epoch's loss (or not finite), at any epoch after the
/// first. A healthy run's loss falls from its first epoch; a run that passes this bound
/// has left the region where training helps, and further epochs only add noise.
pub const DIVERGENCE_FACTOR: f64 = 2.0;

/// The rule of [`DIVERGENCE_FACTOR`]: `Some(reason)` when the training loss `loss` of `epoch`
/// counts as diverged given the first epoch's loss `first`.
pub fn diverged(first: Option<f64>, epoch: usize, loss: f64) -> Option<String> {
    if !loss.is_finite() {
        return Some(format!("the training loss is {loss} at epoch {epoch}"));
    }
    match first {
        Some(f) if f.is_finite() && f > 0.0 && loss > DIVERGENCE_FACTOR * f => Some(format!(
            "the training loss grew from {f:.4} at the first epoch to {loss:.4} at epoch {epoch} (more than \
             {DIVERGENCE_FACTOR}x)"
        )),
        _ => None,
    }
}

/// Stops a run whose training loss diverges (see [`diverged`]) through burn-train's
/// interrupter and keeps the reason for the run's error.
pub struct DivergenceGuard {
    pub interrupter: burn::train::Interrupter,
    pub first: Option<f64>,
    /// Whether growth past [`DIVERGENCE_FACTOR`] times the first epoch's loss counts (full-graph
    /// training); else only a loss that is not finite does (mini-batches of graphs, whose epoch
    /// losses rise and fall with batch normalisation's early statistics).
    pub growth: bool,
    pub reason: Arc<Mutex<Option<String>>>,
}

/// Forwards to the TUI (in a terminal) or prints one line per epoch, and records every epoch's
/// metrics; with `history` set, writes the epochs so far (after `earlier`) to that file after
/// each epoch.
pub struct RecordingRenderer {
    pub inner: Option<Box<dyn MetricsRenderer>>,
    pub names: HashMap<String, String>,
    /// Per split and metric: the epoch's sum of batch value x batch size, and the batch sizes'
    /// sum (the epoch's value is their ratio, as burn-train's running value).
    pub current: HashMap<(bool, String), (f64, usize)>,
    pub log: Arc<Mutex<Vec<EpochMetrics>>>,
    pub last: Instant,
    pub total_epochs: usize,
    pub log_every: usize,
    pub memory: MemoryProbe,
    pub history: Option<PathBuf>,
    pub earlier: Vec<EpochMetrics>,
    pub history_error: Arc<Mutex<Option<String>>>,
    /// Stops the run when its training loss diverges.
    pub guard: Option<DivergenceGuard>,
    /// Writes `history.json` at most this often (and after the last epoch).
    pub history_interval: std::time::Duration,
    pub history_written: Option<Instant>,
}

impl RecordingRenderer {
    /// A renderer for a run of `total_epochs` (TUI if `tui` is given).
    pub fn new(
        tui: Option<Box<dyn MetricsRenderer>>,
        log: Arc<Mutex<Vec<EpochMetrics>>>,
        total_epochs: usize,
        log_every: usize,
    ) -> Self {
        Self {
            inner: tui,
            names: HashMap::new(),
            current: HashMap::new(),
            log,
            last: Instant::now(),
            total_epochs,
            log_every,
            memory: Box::new(gnn_train::last_device_memory),
            history: None,
            earlier: Vec::new(),
            history_error: Arc::new(Mutex::new(None)),
            guard: None,
            history_interval: std::time::Duration::from_secs(2),
            history_written: None,
        }
    }

    fn value(&self, valid: bool, name: &str) -> Option<f64> {
        self.names
            .iter()
            .filter(|(_, n)| n.as_str() == name)
            .find_map(|(id, _)| self.current.get(&(valid, id.clone())).copied())
            .map(|(sum, count)| sum / count.max(1) as f64)
    }

    fn epoch_done(&mut self, epoch: usize) {
        let seconds = self.last.elapsed().as_secs_f64();
        self.last = Instant::now();
        let mem = (self.memory)();
        let m = EpochMetrics {
            epoch,
            train_loss: self.value(false, "Loss"),
            train_accuracy: self.value(false, "Accuracy").map(|a| a / 100.0),
            valid_loss: self.value(true, "Loss"),
            valid_accuracy: self.value(true, "Accuracy").map(|a| a / 100.0),
            train_auc: self.value(false, "AUC").map(|a| a / 100.0),
            valid_auc: self.value(true, "AUC").map(|a| a / 100.0),
            seconds,
            device_bytes_reserved: mem.map(|m| m.0),
            device_bytes_in_use: mem.map(|m| m.1),
        };
        self.current.clear();
        if self.inner.is_none() && self.log_every > 0 && (epoch % self.log_every == 0 || epoch == self.total_epochs) {
            let f = |v: Option<f64>| v.map(|v| format!("{v:.4}")).unwrap_or_else(|| "-".into());
            let mem = m
                .device_bytes_reserved
                .map(|b| format!("  mem {:.2} GiB", b as f64 / (1u64 << 30) as f64))
                .unwrap_or_default();
            let auc = match (m.train_auc, m.valid_auc) {
                (None, None) => String::new(),
                (t, v) => format!("  auc train {} valid {}", f(t), f(v)),
            };
            println!(
                "epoch {:>4}/{}  train loss {} acc {}  valid loss {} acc {}{auc}  {:.3} s{}",
                epoch,
                self.total_epochs,
                f(m.train_loss),
                f(m.train_accuracy),
                f(m.valid_loss),
                f(m.valid_accuracy),
                seconds,
                mem
            );
        }
        let mut stop = false;
        if let (Some(g), Some(loss)) = (self.guard.as_mut(), m.train_loss) {
            if g.first.is_none() {
                g.first = Some(loss);
            }
            if let Some(reason) = diverged(g.first.filter(|_| epoch > 1 && g.growth), epoch, loss) {
                *g.reason.lock().unwrap_or_else(|e| e.into_inner()) = Some(reason);
                g.interrupter.stop(Some("the training loss diverged"));
                stop = true;
            }
        }
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        log.retain(|e| e.epoch != epoch);
        log.push(m);
        // the history file is rewritten every few seconds, after the last epoch and when the
        // run stops: each write replaces the whole file (atomically, flushed to disk)
        let due = self.history_written.is_none_or(|t| t.elapsed() >= self.history_interval)
            || epoch >= self.total_epochs
            || stop;
        if let Some(path) = self.history.as_ref().filter(|_| due) {
            self.history_written = Some(Instant::now());
            let mut all: Vec<EpochMetrics> =
                self.earlier.iter().filter(|e| !log.iter().any(|l| l.epoch == e.epoch)).cloned().collect();
            all.extend(log.iter().cloned());
            all.sort_by_key(|e| e.epoch);
            if let Err(e) = crate::training::report::write_json(path, &all) {
                *self.history_error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.to_string());
            }
        }
    }
}

fn metric_key(state: &MetricState) -> Option<(String, f64, usize)> {
    match state {
        MetricState::Numeric(entry, value) => {
            let count = match value {
                NumericEntry::Aggregated { count, .. } => *count,
                NumericEntry::Value(_) => 1,
            };
            Some((format!("{:?}", entry.metric_id), value.current() * count as f64, count))
        }
        MetricState::Generic(_) => None,
    }
}

impl MetricsRendererTraining for RecordingRenderer {
    fn update_train(&mut self, state: MetricState) {
        if let Some((id, sum, count)) = metric_key(&state) {
            let e = self.current.entry((false, id)).or_insert((0.0, 0));
            *e = (e.0 + sum, e.1 + count);
        }
        if let Some(r) = self.inner.as_mut() {
            r.update_train(state);
        }
    }
    fn update_valid(&mut self, state: MetricState) {
        if let Some((id, sum, count)) = metric_key(&state) {
            let e = self.current.entry((true, id)).or_insert((0.0, 0));
            *e = (e.0 + sum, e.1 + count);
        }
        if let Some(r) = self.inner.as_mut() {
            r.update_valid(state);
        }
    }
    fn render_train(&mut self, item: TrainingProgress, progress: Vec<ProgressType>) {
        if let Some(r) = self.inner.as_mut() {
            r.render_train(item, progress);
        }
    }
    fn render_valid(&mut self, item: TrainingProgress, progress: Vec<ProgressType>) {
        let epoch = item.global_progress.items_processed;
        // the epoch ends with its last validation batch
        let last = item.progress.as_ref().is_none_or(|p| p.items_processed >= p.items_total);
        if let Some(r) = self.inner.as_mut() {
            r.render_valid(item, progress);
        }
        if last {
            self.epoch_done(epoch);
        }
    }
    fn on_train_end(&mut self, summary: Option<LearnerSummary>) -> std::result::Result<(), Box<dyn std::error::Error>> {
        match self.inner.as_mut() {
            Some(r) => r.on_train_end(summary),
            None => Ok(()),
        }
    }
}

impl MetricsRendererEvaluation for RecordingRenderer {
    fn update_test(&mut self, name: EvaluationName, state: MetricState) {
        if let Some(r) = self.inner.as_mut() {
            r.update_test(name, state);
        }
    }
    fn render_test(&mut self, item: EvaluationProgress, progress: Vec<ProgressType>) {
        if let Some(r) = self.inner.as_mut() {
            r.render_test(item, progress);
        }
    }
}

impl MetricsRenderer for RecordingRenderer {
    fn manual_close(&mut self) {
        if let Some(r) = self.inner.as_mut() {
            r.manual_close();
        }
    }
    fn register_metric(&mut self, definition: burn::train::metric::MetricDefinition) {
        self.names.insert(format!("{:?}", definition.metric_id), definition.name.clone());
        if let Some(r) = self.inner.as_mut() {
            r.register_metric(definition);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loss_past_twice_the_first_or_not_finite_diverges() {
        assert!(diverged(Some(1.0), 2, 1.9).is_none());
        assert!(diverged(Some(1.0), 5, 0.2).is_none());
        let r = diverged(Some(1.0), 7, 2.5).unwrap();
        assert!(r.contains("epoch 7") && r.contains("1.0000") && r.contains("2.5000"), "{r}");
        assert!(diverged(None, 1, f64::NAN).is_some());
        assert!(diverged(Some(1.0), 3, f64::INFINITY).is_some());
        // the first epoch itself is the reference, never judged against itself
        assert!(diverged(None, 1, 80.0).is_none());
    }
}
