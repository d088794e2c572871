//! The checks of a [`TrainConfig`]: its values alone, the device's types, the host's memory, and
//! the hint a divergence error carries.

use super::parse_nonlin;
use super::{name_of, Task, TrainConfig, MAX_HIDDEN, MAX_LAYERS};
use crate::error::{AppError, Result};
use burn::prelude::Backend;
use gnn_models::{ConvKind, Precision};

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
        if self.lr_step == Some(0) {
            return bad("--lr-step must be >= 1 (epochs between learning-rate steps)".into());
        }
        if !(self.lr_gamma > 0.0 && self.lr_gamma <= 1.0) {
            return bad(format!("--lr-gamma must be in (0, 1], got {}", self.lr_gamma));
        }
        if self.batch_size == Some(0) {
            return bad("--batch-size must be >= 1".into());
        }
        if self.training == super::Training::Minibatch {
            if self.task != Task::Node {
                return bad("--training minibatch trains node classification (--task node)".into());
            }
            let f = self.hop_fanouts();
            if f.len() != self.layers {
                return bad(format!("--fanouts needs one fan-out per layer: {} for {} layers", f.len(), self.layers));
            }
            if f.contains(&0) {
                return bad(format!("--fanouts must all be >= 1, got {f:?}"));
            }
            if self.infer_chunk == 0 {
                return bad("--infer-chunk must be >= 1".into());
            }
        } else if !self.fanouts.is_empty() {
            return bad("--fanouts applies to --training minibatch".into());
        }
        if self.task == Task::Graph {
            if self.batch_size == Some(0) {
                return bad("--batch-size must be >= 1 (graphs per batch)".into());
            }
            if let Some(f) = self.fold {
                if f == 0 || f > self.folds {
                    return bad(format!("--fold must be in 1..={} (--folds), got {f}", self.folds));
                }
            }
            if self.folds == 1 {
                return bad("--folds must be 0 (one split) or >= 2".into());
            }
            if self.fold_jobs == 0 {
                return bad("--fold-jobs must be >= 1 (folds trained at once)".into());
            }
            if self.fold_jobs > 1 && self.folds == 0 {
                return bad("--fold-jobs trains the folds of a cross-validation: give --folds K".into());
            }
            if self.folds == 0 {
                for (flag, v) in [("--graph-valid", self.graph_valid), ("--graph-test", self.graph_test)] {
                    if !(v > 0.0 && v < 1.0) {
                        return bad(format!("{flag} must be a share of the graphs in (0, 1), got {v}"));
                    }
                }
                if self.graph_valid + self.graph_test >= 1.0 {
                    return bad(format!(
                        "--graph-valid {} and --graph-test {} leave no graphs to train on",
                        self.graph_valid, self.graph_test
                    ));
                }
            } else {
                if self.patience.is_some() {
                    return bad("--patience stops on the validation loss; cross-validation (--folds) runs every \
                                epoch of every fold (its test fold is its validation)"
                        .into());
                }
                if self.select == super::ModelSelection::BestValid {
                    return bad("--select best-valid would select on the test fold; cross-validation reports \
                                the epoch best on average over the folds"
                        .into());
                }
            }
            if self.split.is_some() {
                return bad("--split chooses nodes for node classification; graph classification splits the \
                            graphs (--folds, or --graph-valid / --graph-test)"
                    .into());
            }
            if parse_nonlin(&self.nonlin)? != gnn_models::Nonlinearity::Relu {
                return bad("graph classification runs ReLU between its layers; --nonlin is for node \
                            classification and link prediction"
                    .into());
            }
        }
        if self.task != Task::Graph && self.fold_jobs > 1 {
            return bad("--fold-jobs trains the folds of a graph classification's cross-validation (--task graph \
                        --folds K)"
                .into());
        }
        parse_nonlin(&self.nonlin).map(|_| ())
    }
}

impl TrainConfig {
    /// A hint appended to a divergence error where the configuration explains it: GIN's
    /// unnormalised sum grows with the degree and the depth, and f16's range is narrow.
    pub fn divergence_hint(&self) -> String {
        let lr = format!("a lower --lr (now {})", self.lr);
        if self.model == ConvKind::Gin && self.gin_lambda.is_none() {
            format!(
                "; GIN's unnormalised sum grows with the degree and the depth: try the half-safe \
                 aggregation (--gin-lambda 0.1), a normalisation (--norm layernorm) or {lr}"
            )
        } else if self.precision == Precision::MixedF16 {
            format!("; f16's range is narrow: try --precision mixedbf16 or f32, or {lr}")
        } else {
            format!("; try {lr}")
        }
    }

    /// Refuses a run whose host estimate ([`host_estimate`]: the tensors, the copies of the
    /// features and of the parameters) cannot fit in what the host can still give (its
    /// available memory, or less under a cgroup limit), before the model is built: for the
    /// backends whose tensors live in host memory.
    pub fn check_size(&self, nodes: usize, d_in: usize, classes: usize) -> Result<()> {
        self.check_host_memory(nodes, d_in, classes, crate::host_memory::host_available_bytes()).map(|_| ())
    }

    /// Checks that the device stores the precision's half type (the CPU backend has no f16 /
    /// bf16; lavapipe has no bf16).
    pub fn check_device<B: Backend>(&self, device: &B::Device, backend: &str) -> Result<()> {
        if self.training == super::Training::Minibatch && self.prefetch > 0 && backend == "cuda" {
            // the batch's kernels launched from a second thread ended in an illegal memory
            // access on an H200; on CUDA the training thread builds each batch (device work)
            return Err(AppError::Config(
                "--prefetch builds batches on a second thread, which the cuda backend does not support: use \
                 --prefetch 0 (the batches are built on the device without host work to hide)"
                    .into(),
            ));
        }
        match self.precision.half() {
            Some(h) if !B::supports_dtype(device, h.into()) => {
                let half = if name_of(&self.precision).contains("bf16") { "bf16" } else { "f16" };
                Err(AppError::Config(format!(
                    "--precision {} needs {half} storage, which the {backend} backend does not support; \
                     use --precision f32 or another backend (cuda supports f16 and bf16, wgpu f16)",
                    name_of(&self.precision)
                )))
            }
            _ => Ok(()),
        }
    }
}
