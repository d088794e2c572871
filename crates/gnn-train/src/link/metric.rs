//! ROC-AUC as a burn-train metric (the TUI, the epoch log): the scores of a step's output read
//! back and ranked on the host in `O(n log n)` (burn-train's `AurocMetric` compares every pair
//! of items on the device).

use super::metrics::auc;
use burn::prelude::Backend;
use burn::tensor::{Int, Tensor};
use burn::train::metric::state::{FormatOptions, NumericMetricState};
use burn::train::metric::{
    Adaptor, Metric, MetricAttributes, MetricMetadata, MetricName, Numeric, NumericAttributes, NumericEntry,
    SerializedEntry,
};
use burn::train::ClassificationOutput;
use std::marker::PhantomData;
use std::sync::Arc;

/// Two-class logits `[n, 2]` (score = column 1 - column 0) and labels `[n]` (1 positive).
pub struct PairScores<B: Backend> {
    logits: Tensor<B, 2>,
    targets: Tensor<B, 1, Int>,
}

impl<B: Backend> Adaptor<PairScores<B>> for ClassificationOutput<B> {
    fn adapt(&self) -> PairScores<B> {
        PairScores { logits: self.output.clone(), targets: self.targets.clone() }
    }
}

/// ROC-AUC (%) of the scored pairs of each step.
#[derive(Clone)]
pub struct LinkAucMetric<B: Backend> {
    name: MetricName,
    state: NumericMetricState,
    _b: PhantomData<B>,
}

impl<B: Backend> Default for LinkAucMetric<B> {
    fn default() -> Self {
        Self::new()
    }
}

impl<B: Backend> LinkAucMetric<B> {
    /// The metric, named `AUC`.
    pub fn new() -> Self {
        Self { name: Arc::new("AUC".to_string()), state: NumericMetricState::default(), _b: PhantomData }
    }
}

impl<B: Backend> Metric for LinkAucMetric<B> {
    type Input = PairScores<B>;

    fn update(&mut self, item: &PairScores<B>, _metadata: &MetricMetadata) -> SerializedEntry {
        let [n, c] = item.logits.dims();
        let scores = if c >= 2 {
            let l = item.logits.clone();
            (l.clone().narrow(1, 1, 1) - l.narrow(1, 0, 1)).reshape([n])
        } else {
            item.logits.clone().reshape([n * c])
        };
        let s = scores.into_data().convert::<f32>().into_vec::<f32>().unwrap_or_default();
        let t = item.targets.clone().into_data().convert::<i64>().into_vec::<i64>().unwrap_or_default();
        let (mut pos, mut neg) = (Vec::new(), Vec::new());
        for (v, l) in s.into_iter().zip(t) {
            if l == 1 {
                pos.push(v);
            } else {
                neg.push(v);
            }
        }
        let value = 100.0 * auc(&pos, &neg);
        self.state.update(value, n, FormatOptions::new(self.name()).unit("%").precision(2))
    }

    fn clear(&mut self) {
        self.state.reset()
    }

    fn name(&self) -> MetricName {
        self.name.clone()
    }

    fn attributes(&self) -> MetricAttributes {
        NumericAttributes { unit: Some("%".to_string()), higher_is_better: true }.into()
    }
}

impl<B: Backend> Numeric for LinkAucMetric<B> {
    fn value(&self) -> NumericEntry {
        self.state.current_value()
    }

    fn running_value(&self) -> NumericEntry {
        self.state.running_value()
    }
}
