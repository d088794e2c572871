//! Full-batch training through burn-train (node classification and link prediction), by concern:
//!
//! - [`config`]: [`TrainConfig`], the options (flags, config-file keys and `config.json` in one).
//! - [`train`](mod@train): a run (`SupervisedTraining` + `Learner`), resume, the saved model.
//! - [`checkpoints`]: the best-validation strategy and the choice of a complete checkpoint.
//! - [`renderer`]: the plain / TUI metrics renderer that records every epoch.
//! - [`report`]: `results.json` and `history.json`.
//! - [`eval`]: `eval` and `predict` on a trained run.
//! - [`link`]: link prediction: the edge split in the run folder, training, `eval` and `predict`.
//! - [`graph`]: graph classification: TU datasets, splits and cross-validation folds, `eval` and
//!   `predict`.
//!
//! The batcher, the classifier with its train / inference steps and the evaluation live in the
//! `gnn-train` library (re-exported here).

pub mod buffers;
pub mod checkpoints;
pub mod config;
pub mod eval;
pub mod files;
pub mod folds;
pub mod graph;
pub mod link;
pub mod minibatch;
pub mod renderer;
pub mod report;
pub mod train;

pub use config::{apply_split, parse_nonlin, Architecture, FeatureHome, ModelSelection, Task, TrainConfig, Training};
pub use eval::prepare;
pub use eval::{eval, load_run, predict, PredictOutput};
pub use files::{model_path, safetensors_path};
pub use gnn_train::{evaluate, Accuracies, FullGraphBatcher, GraphBatch, HostGraph, NodeClassifier, SplitKind};
pub use report::{DatasetSummary, EpochMetrics, TrainReport};
pub use train::{train, ADAM_EPSILON};
