//! # gnn-train
//!
//! Full-graph node classification and link prediction with burn-train's `Learner`: the pieces a
//! Burn user needs to train a GNN (from `gnn-models` or their own) on one graph, and to save and
//! use the result. Link prediction lives in [`link`] (edge split, device-drawn negatives, dot or
//! MLP decoder, AUC / AP / Hits@K / MRR; `cargo run -p gnn-train --example link_prediction`).
//!
//! - [`FullGraphBatcher`] builds a [`GraphBatch`] per split: the whole graph, features and labels
//!   uploaded once per device, plus the scored nodes of the split. burn-train's data loaders
//!   take it with a one-item dataset per split (`InMemDataset::new(vec![SplitKind::Train])`).
//! - [`classification_output`] scores a model's logits on the batch's split (masked mean
//!   cross-entropy) as burn-train's `ClassificationOutput`, so a model's `TrainStep` /
//!   `InferenceStep` are a few lines; [`NodeClassifier`] implements them for
//!   [`gnn_models::GnnModel`].
//! - [`evaluate`] gives the accuracy of every split, [`predict`] the class probabilities,
//!   predicted labels and last-hidden-layer embeddings of every node.
//! - [`AtomicFileRecorder`] is a Burn file recorder (named MessagePack, as Burn's default) that
//!   writes to a temporary file and renames it, so an interrupted write never leaves a truncated
//!   checkpoint under its final name; it also keeps the errors it met, which burn-train's
//!   checkpointer otherwise turns into a quiet stop. [`load_checked`] loads a record into a
//!   model only when every parameter's shape matches, [`write_safetensors`] exports a module's
//!   parameters under their Burn module paths.
//!
//! ```no_run
//! use burn::backend::Autodiff;
//! use burn::data::dataloader::DataLoaderBuilder;
//! use burn::data::dataset::InMemDataset;
//! use burn_sparse_gnn::optim::FusedAdamConfig;
//! use burn::train::{Learner, SupervisedTraining};
//! use burn_sparse_gnn::{Cpu, GraphData, GraphOptions};
//! use gnn_models::{ConvKind, GnnModelConfig};
//! use gnn_train::{FullGraphBatcher, HostGraph, NodeClassifier, SplitKind};
//! use std::sync::Arc;
//!
//! type B = Autodiff<Cpu>;
//! # fn data() -> GraphData { unimplemented!() }
//! let data: GraphData = data(); // with a split
//! let host = HostGraph::new(data, GraphOptions::default()).unwrap();
//! let model_cfg = GnnModelConfig::new(ConvKind::Gcn, host.d_in, 16, host.data.num_classes()).with_linear_io(false);
//! let device = Default::default();
//! let model = NodeClassifier::new(model_cfg.init::<B>(&device).unwrap(), 42);
//! let batcher = FullGraphBatcher::new(Arc::new(host), 0);
//! let train = DataLoaderBuilder::new(batcher.clone()).batch_size(1).build(InMemDataset::new(vec![SplitKind::Train]));
//! let valid = DataLoaderBuilder::new(batcher).batch_size(1).build(InMemDataset::new(vec![SplitKind::Valid]));
//! let result = SupervisedTraining::new("/tmp/run", train, valid)
//!     .num_epochs(200)
//!     .launch(Learner::new(model, FusedAdamConfig::new().init(), 0.01));
//! let trained = result.model;
//! ```

pub mod atomic;
pub mod batch;
pub mod classifier;
pub mod error;
pub mod evaluate;
pub mod export;
pub mod graphs;
pub mod link;
pub mod loss_scale;
pub mod minibatch;
pub mod record;

pub use batch::{FullGraphBatcher, GraphBatch, HostGraph, SplitKind};
pub use classifier::{backward_step, classification_output, last_device_memory, reset_device_memory, NodeClassifier};
pub use error::TrainError;
pub use evaluate::{embeddings, evaluate, predict, predictions_of, Accuracies, Predictions};
pub use export::{param_shapes, write_safetensors, ParamShape};
pub use loss_scale::{LossScaleConfig, LossScaler, SharedLossScaler};
pub use record::{load_checked, AtomicFileRecorder};
