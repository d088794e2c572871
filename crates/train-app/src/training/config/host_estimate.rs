//! The host memory of a run whose tensors live in host memory (the CPU backend, and wgpu on a
//! CPU adapter such as lavapipe): the device estimate of `gnn_models::memory_estimate` plus the copies
//! the host makes around it, checked against what the host can still give
//! ([`crate::host_memory::host_available_bytes`]: `MemAvailable`, or less where a cgroup limit
//! leaves less) before training, so that a run that cannot fit ends in an error naming what to
//! change instead of an aborted allocation.
//!
//! Besides the tensors the estimate counts (the features as a tensor, the parameters with
//! their gradients and Adam's two moments, the saved activations), the host holds, measured on
//! the CPU backend (peak resident memory of runs on 50 nodes with 10^6 and 2 x 10^6 dense
//! features, hidden widths 16 and 64; about 6 feature-sized and 9 weight-sized copies at the
//! peak):
//!
//! - the features as loaded and their dense, normalised f32 copy that training reads (two
//!   `[nodes, features]` f32 arrays, held before the model is built);
//! - two working copies of the input features per epoch (the first layer's product and its
//!   weight gradient read them);
//! - one more copy of the parameters while the optimizer steps, and, with checkpoints, four
//!   more: the model and optimizer records a checkpoint writes while the next epoch runs.

use super::TrainConfig;
use crate::error::{AppError, Result};
use crate::host_memory::gib;
use gnn_models::memory_estimate::{estimate_training, parameter_count, GraphSize};

/// Host bytes of a run on a backend whose tensors live in host memory, per component.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostEstimate {
    /// The tensors of training as the device estimate counts them, the graph's excluded.
    pub tensors: u64,
    /// The features as loaded and their dense f32 copy, held before training starts.
    pub feature_copies: u64,
    /// The working copies of the input features an epoch makes.
    pub feature_work: u64,
    /// The parameter copies of the optimizer step and of the checkpoints.
    pub parameter_copies: u64,
    /// All of the above.
    pub total: u64,
}

impl std::fmt::Display for HostEstimate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} (tensors {}, features as loaded and as dense f32 {}, working copies of the features {}, \
             optimizer and checkpoint copies of the parameters {})",
            gib(self.total),
            gib(self.tensors),
            gib(self.feature_copies),
            gib(self.feature_work),
            gib(self.parameter_copies)
        )
    }
}

impl TrainConfig {
    /// The host memory of training on `nodes` nodes of `d_in` features and `classes` classes
    /// on a backend whose tensors live in host memory (see the module docs). The graph's own
    /// tensors are not counted.
    pub fn host_estimate(&self, nodes: usize, d_in: usize, classes: usize) -> Result<HostEstimate> {
        let model = self.model_config(d_in, classes)?;
        let size = GraphSize { nodes, edges: 0, features: d_in, hot_split: false, staging_slots: 0 };
        let tensors = estimate_training(&size, &model).total;
        let features = (nodes as u64).saturating_mul(d_in as u64).saturating_mul(4);
        let feature_copies = features.saturating_mul(2);
        let feature_work = features.saturating_mul(2);
        let copies = if self.checkpoints { 5 } else { 1 };
        let parameter_copies = parameter_count(&model).saturating_mul(4).saturating_mul(copies);
        let total =
            tensors.saturating_add(feature_copies).saturating_add(feature_work).saturating_add(parameter_copies);
        Ok(HostEstimate { tensors, feature_copies, feature_work, parameter_copies, total })
    }

    /// Refuses a run whose host estimate cannot fit in `available` bytes (what the host can
    /// still give once the dataset is loaded; `None`: the system does not say), with what to
    /// change. The features as loaded and their dense copy are held already, so the rest of the
    /// estimate is what must fit.
    pub fn check_host_memory(
        &self,
        nodes: usize,
        d_in: usize,
        classes: usize,
        available: Option<u64>,
    ) -> Result<HostEstimate> {
        let est = self.host_estimate(nodes, d_in, classes)?;
        let need = est.total - est.feature_copies;
        let Some(available) = available.filter(|&a| need > a) else { return Ok(est) };
        let mut advice = Vec::new();
        if self.checkpoints {
            advice.push("--checkpoints false (no checkpoint copies of the parameters)".to_string());
        }
        if self.hidden > 1 {
            advice.push(format!("a smaller --hidden (now {})", self.hidden));
        }
        if self.layers > 1 {
            advice.push(format!("fewer --layers (now {})", self.layers));
        }
        if (est.feature_work + est.feature_copies).saturating_mul(4) >= est.total {
            advice.push(format!("fewer input features (now {d_in})"));
        }
        advice.push("a machine with more memory, or a GPU backend (--backend cuda or wgpu)".into());
        Err(AppError::HostWillNotFit {
            what: format!(
                "training {} {}x{} on {nodes} nodes of {d_in} features",
                self.model.name(),
                self.layers,
                self.hidden
            ),
            estimate: format!(
                "the host estimate is {est}, and the features as loaded and as dense f32 are held already"
            ),
            need_bytes: need,
            limit_bytes: available,
            limit: "the host's available memory".into(),
            advice: format!("try {}", advice.join(", or ")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_features_count_their_host_copies() {
        // 50 nodes of 10^7 features (Kipf & Welling's GCN): the device estimate counts the
        // features twice and the [10^7, 16] weight four times; the host holds about twice that
        let cfg = TrainConfig::default();
        let device = {
            let model = cfg.model_config(10_000_000, 2).unwrap();
            let size = GraphSize { nodes: 50, edges: 0, features: 10_000_000, hot_split: false, staging_slots: 0 };
            estimate_training(&size, &model).total
        };
        let est = cfg.host_estimate(50, 10_000_000, 2).unwrap();
        assert_eq!(est.tensors, device);
        assert!(est.total > 2 * device, "host {est} vs device {}", gib(device));
        assert_eq!(est.feature_copies, 2 * 50 * 10_000_000 * 4);
        let fewer = TrainConfig { checkpoints: false, ..cfg.clone() }.host_estimate(50, 10_000_000, 2).unwrap();
        assert!(fewer.parameter_copies * 5 == est.parameter_copies, "{fewer} vs {est}");
        // an 8 GiB host refuses it, naming what to change; 64 GiB fits
        let e = cfg.check_host_memory(50, 10_000_000, 2, Some(8 << 30)).unwrap_err().to_string();
        for needle in
            ["more host memory but the host's available memory is 8.00 GiB", "--checkpoints false", "--hidden"]
        {
            assert!(e.contains(needle), "expected `{needle}` in {e}");
        }
        assert!(cfg.check_host_memory(50, 10_000_000, 2, Some(64 << 30)).is_ok());
        assert!(cfg.check_host_memory(50, 10_000_000, 2, None).is_ok());
    }
}
