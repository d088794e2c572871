//! Graph classification: TU datasets ([`tu`]), batches of whole graphs as one block-diagonal
//! graph ([`batch`]), the classifier for burn-train's `Learner` ([`model`]), stratified folds
//! and splits ([`folds`]) and evaluation ([`evaluate`]). The model is
//! [`gnn_models::GraphModel`]; `cargo run -p gnn-train --example graph_classification`.

pub mod batch;
pub mod evaluate;
pub mod folds;
pub mod model;
pub mod tu;

pub use batch::{GraphSet, GraphSetBatch, GraphSetBatcher, PACKED_BATCH_ENTRIES};
pub use evaluate::{predict_graphs, score_graphs, GraphPredictions, GraphScore};
pub use folds::{stratified_folds, GraphSplit};
pub use model::{graph_output, GraphClassifier};
pub use tu::{is_tu_dir, TuDataset, TuEncoding, TuError, TuFeatures};
