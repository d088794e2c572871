//! Whether a mixed-precision run scales its loss ([`gnn_train::loss_scale`]).

use gnn_models::Precision;
use gnn_train::LossScaleConfig;
use serde::{Deserialize, Serialize};

/// Loss scaling of a run.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum LossScaling {
    /// Dynamic loss scaling in mixed f16, none otherwise (f32 and bf16 have f32's range).
    #[default]
    Auto,
    /// No loss scaling.
    Off,
}

impl LossScaling {
    /// The scaler's settings for a run in `precision` (`None`: no scaling).
    pub fn config(self, precision: Precision) -> Option<LossScaleConfig> {
        (self == LossScaling::Auto && precision == Precision::MixedF16).then(LossScaleConfig::default)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_mixed_f16_scales_by_default() {
        assert!(LossScaling::Auto.config(Precision::MixedF16).is_some());
        for p in [Precision::F32, Precision::Tf32, Precision::MixedBf16] {
            assert!(LossScaling::Auto.config(p).is_none());
        }
        assert!(LossScaling::Off.config(Precision::MixedF16).is_none());
    }
}
