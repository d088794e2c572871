//! The checks of a [`TrainConfig`] that do not depend on the dataset.

use super::parse_nonlin;
use super::{Task, TrainConfig, MAX_HIDDEN, MAX_LAYERS};
use crate::error::{AppError, Result};

impl TrainConfig {
    /// Checks the values that do not depend on the dataset.
    pub fn check(&self) -> Result<()> {
        let bad = |m: String| Err(AppError::Config(m));
        if self.epochs == 0 {
            return bad("--epochs must be >= 1".into());
        }
        if self.patience == Some(0) {
            return bad("--patience must be >= 1 (epochs without a better validation loss)".into());
        }
        if !(self.lr > 0.0 && self.lr.is_finite()) {
            return bad(format!("--lr must be a positive number, got {}", self.lr));
        }
        if !(self.weight_decay >= 0.0 && self.weight_decay.is_finite()) {
            return bad(format!("--weight-decay must be a number >= 0, got {}", self.weight_decay));
        }
        for (flag, p) in [
            ("--dropout", self.dropout),
            ("--input-dropout", self.input_dropout),
            ("--attention-dropout", self.attention_dropout),
        ] {
            if !(0.0..1.0).contains(&p) {
                return bad(format!("{flag} must be in [0, 1), got {p}"));
            }
        }
        if let Some(l) = self.gin_lambda {
            if !(l.is_finite() && l > 0.0) {
                return bad(format!("--gin-lambda must be a positive number, got {l}"));
            }
        }
        if self.layers == 0 || self.layers > MAX_LAYERS {
            return bad(format!("--layers must be in 1..={MAX_LAYERS}, got {}", self.layers));
        }
        if self.hidden == 0 || self.hidden > MAX_HIDDEN {
            return bad(format!("--hidden must be in 1..={MAX_HIDDEN}, got {}", self.hidden));
        }
        if self.group_width == Some(0) {
            return bad("--group-width must be >= 1".into());
        }
        if self.cbsr_group_width == 0 {
            return bad("--cbsr-group-width must be >= 1".into());
        }
        if self.task == Task::Link {
            for (flag, v) in [("--link-valid", self.link_valid), ("--link-test", self.link_test)] {
                if !(0.0..1.0).contains(&v) {
                    return bad(format!("{flag} must be a share of the edges in [0, 1), got {v}"));
                }
            }
            if self.link_test == 0.0 {
                return bad("--link-test must be > 0: link prediction reports its test metrics".into());
            }
            if self.link_valid + self.link_test >= 1.0 {
                return bad(format!(
                    "--link-valid {} and --link-test {} leave no edges to train on",
                    self.link_valid, self.link_test
                ));
            }
            if self.negatives == 0 {
                return bad("--negatives must be >= 1 (negative pairs per positive pair)".into());
            }
            if self.embedding == 0 || self.embedding > MAX_HIDDEN {
                return bad(format!("--embedding must be in 1..={MAX_HIDDEN}, got {}", self.embedding));
            }
            if self.hits_k == 0 {
                return bad("--hits-k must be >= 1".into());
            }
            if self.split.is_some() {
                return bad("--split chooses nodes for node classification; link prediction splits the edges \
                            (--link-valid, --link-test)"
                    .into());
            }
        }
        parse_nonlin(&self.nonlin).map(|_| ())
    }
}
