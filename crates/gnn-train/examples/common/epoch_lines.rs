//! A metrics renderer for the examples: one line every few epochs.

use burn::train::metric::{MetricDefinition, NumericEntry};
use burn::train::renderer::{
    EvaluationName, EvaluationProgress, MetricState, MetricsRenderer, MetricsRendererEvaluation,
    MetricsRendererTraining, ProgressType, TrainingProgress,
};
use burn::train::LearnerSummary;
use std::collections::HashMap;

/// Prints one line every `every` epochs (and after the last): the training and validation
/// values of the metrics `shown` (by name, e.g. `Loss`, `Accuracy`, `AUC`), each averaged over
/// the epoch's batches (weighted by their sizes). burn-train calls `render_valid` once per
/// validation batch; the epoch's line follows its last one.
pub struct EpochLines {
    every: usize,
    shown: Vec<String>,
    /// Metric names by metric id.
    names: HashMap<String, String>,
    /// The epoch's sum of value x batch size and of batch sizes of each metric by
    /// (validation?, name).
    values: HashMap<(bool, String), (f64, usize)>,
}

impl EpochLines {
    pub fn new(every: usize, shown: &[&str]) -> Self {
        Self {
            every: every.max(1),
            shown: shown.iter().map(|s| s.to_string()).collect(),
            names: HashMap::new(),
            values: HashMap::new(),
        }
    }

    fn record(&mut self, valid: bool, state: MetricState) {
        if let MetricState::Numeric(entry, value) = state {
            if let Some(name) = self.names.get(&format!("{:?}", entry.metric_id)) {
                let count = match value {
                    NumericEntry::Aggregated { count, .. } => count,
                    NumericEntry::Value(_) => 1,
                };
                let e = self.values.entry((valid, name.clone())).or_insert((0.0, 0));
                *e = (e.0 + value.current() * count as f64, e.1 + count);
            }
        }
    }

    fn get(&self, valid: bool, name: &str) -> String {
        match self.values.get(&(valid, name.to_string())) {
            Some((sum, count)) => format!("{:.3}", sum / (*count).max(1) as f64),
            None => "-".into(),
        }
    }
}

impl MetricsRendererTraining for EpochLines {
    fn update_train(&mut self, state: MetricState) {
        self.record(false, state);
    }
    fn update_valid(&mut self, state: MetricState) {
        self.record(true, state);
    }
    fn render_train(&mut self, _item: TrainingProgress, _progress: Vec<ProgressType>) {}
    fn render_valid(&mut self, item: TrainingProgress, _progress: Vec<ProgressType>) {
        let (epoch, total) = (item.global_progress.items_processed, item.global_progress.items_total);
        if item.progress.as_ref().is_some_and(|p| p.items_processed < p.items_total) {
            return; // not the epoch's last validation batch
        }
        if epoch % self.every == 0 || epoch == total {
            let part = |valid: bool| {
                self.shown
                    .iter()
                    .map(|n| format!("{} {}", n.to_lowercase(), self.get(valid, n)))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            println!("epoch {epoch:>3}/{total}  train {}  valid {}", part(false), part(true));
        }
        self.values.clear();
    }
    fn on_train_end(&mut self, _summary: Option<LearnerSummary>) -> Result<(), Box<dyn std::error::Error>> {
        Ok(()) // the lines above are the summary
    }
}

impl MetricsRendererEvaluation for EpochLines {
    fn update_test(&mut self, _name: EvaluationName, _state: MetricState) {}
    fn render_test(&mut self, _item: EvaluationProgress, _progress: Vec<ProgressType>) {}
}

impl MetricsRenderer for EpochLines {
    fn manual_close(&mut self) {}
    fn register_metric(&mut self, definition: MetricDefinition) {
        self.names.insert(format!("{:?}", definition.metric_id), definition.name);
    }
}
