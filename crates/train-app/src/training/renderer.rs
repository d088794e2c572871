//! The metrics renderer: forwards to burn-train's TUI in a terminal or prints one line per
//! epoch, and records every epoch's metrics (for `history.json` and `results.json`).

use crate::training::report::EpochMetrics;
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

/// Forwards to the TUI (in a terminal) or prints one line per epoch, and records every epoch's
/// metrics; with `history` set, writes the epochs so far (after `earlier`) to that file after
/// each epoch.
pub struct RecordingRenderer {
    pub inner: Option<Box<dyn MetricsRenderer>>,
    pub names: HashMap<String, String>,
    pub current: HashMap<(bool, String), f64>,
    pub log: Arc<Mutex<Vec<EpochMetrics>>>,
    pub last: Instant,
    pub total_epochs: usize,
    pub log_every: usize,
    pub memory: MemoryProbe,
    pub history: Option<PathBuf>,
    pub earlier: Vec<EpochMetrics>,
    pub history_error: Arc<Mutex<Option<String>>>,
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
        }
    }

    fn value(&self, valid: bool, name: &str) -> Option<f64> {
        self.names
            .iter()
            .filter(|(_, n)| n.as_str() == name)
            .find_map(|(id, _)| self.current.get(&(valid, id.clone())).copied())
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
            seconds,
            device_bytes_reserved: mem.map(|m| m.0),
            device_bytes_in_use: mem.map(|m| m.1),
        };
        if self.inner.is_none() && self.log_every > 0 && (epoch % self.log_every == 0 || epoch == self.total_epochs) {
            let f = |v: Option<f64>| v.map(|v| format!("{v:.4}")).unwrap_or_else(|| "-".into());
            let mem = m
                .device_bytes_reserved
                .map(|b| format!("  mem {:.2} GiB", b as f64 / (1u64 << 30) as f64))
                .unwrap_or_default();
            println!(
                "epoch {:>4}/{}  train loss {} acc {}  valid loss {} acc {}  {:.3} s{}",
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
        let mut log = self.log.lock().unwrap_or_else(|e| e.into_inner());
        log.retain(|e| e.epoch != epoch);
        log.push(m);
        if let Some(path) = &self.history {
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

fn metric_key(state: &MetricState) -> Option<(String, f64)> {
    match state {
        MetricState::Numeric(entry, value) => Some((format!("{:?}", entry.metric_id), value.current())),
        MetricState::Generic(_) => None,
    }
}

impl MetricsRendererTraining for RecordingRenderer {
    fn update_train(&mut self, state: MetricState) {
        if let Some((id, v)) = metric_key(&state) {
            self.current.insert((false, id), v);
        }
        if let Some(r) = self.inner.as_mut() {
            r.update_train(state);
        }
    }
    fn update_valid(&mut self, state: MetricState) {
        if let Some((id, v)) = metric_key(&state) {
            self.current.insert((true, id), v);
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
        if let Some(r) = self.inner.as_mut() {
            r.render_valid(item, progress);
        }
        self.epoch_done(epoch);
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
