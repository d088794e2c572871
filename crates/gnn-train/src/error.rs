//! Errors of the training library.

use std::path::PathBuf;
use thiserror::Error;

/// What can go wrong while preparing, saving or loading a node-classification model.
#[derive(Debug, Error)]
pub enum TrainError {
    /// The graph data cannot be trained on as given.
    #[error("{0}")]
    Data(String),
    /// A record (checkpoint, saved model) does not fit the model it is loaded into.
    #[error("{path}: {msg}")]
    Mismatch { path: PathBuf, msg: String },
    /// A record cannot be read or decoded.
    #[error("{path}: cannot load the record: {msg}")]
    Load { path: PathBuf, msg: String },
    /// A file cannot be written.
    #[error("{path}: {msg}")]
    Write { path: PathBuf, msg: String },
    /// The model configuration is invalid.
    #[error(transparent)]
    Model(#[from] gnn_models::ModelError),
}
