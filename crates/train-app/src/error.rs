//! Errors of the application: every bad input names the file and the problem.

use burn_sparse_gnn::{GraphError, OpError};
use std::path::PathBuf;
use thiserror::Error;

/// Something the user gave us (a file, a flag, a config) is not usable.
#[derive(Debug, Error)]
pub enum AppError {
    /// A file cannot be read or written.
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    /// The output folder (`--out`) cannot be made.
    #[error("--out {path}: cannot make the folder ({source})")]
    OutDir { path: PathBuf, source: std::io::Error },
    /// A required file is missing.
    #[error("{path}: file not found ({what})")]
    Missing { path: PathBuf, what: String },
    /// A file's dtype is not one we can use for this array.
    #[error("{path}: dtype {found} cannot be read as {expected}")]
    Dtype { path: PathBuf, found: String, expected: &'static str },
    /// A file's array has the wrong shape.
    #[error("{path}: shape {found:?}, expected {expected}")]
    Shape { path: PathBuf, found: Vec<usize>, expected: String },
    /// A file is malformed (not npy / npz / csv / json as expected).
    #[error("{path}: {msg}")]
    Format { path: PathBuf, msg: String },
    /// The graph data violates a rule.
    #[error("{context}: {source}")]
    Graph { context: String, source: GraphError },
    /// An operation rejected its arguments.
    #[error(transparent)]
    Op(#[from] OpError),
    /// A request needs more memory than a limit allows (checked before anything is allocated).
    #[error("{what} needs {} but {limit} is {}", gib(*need_bytes), gib(*limit_bytes))]
    TooLarge { what: String, need_bytes: u64, limit_bytes: u64, limit: String },
    /// A training run would need more device memory than it has (checked before training).
    #[error(
        "{what} needs an estimated {} of device memory but {budget_name} is {}: {estimate}; to fit, \
         {advice}",
        gib(*need_bytes),
        gib(*budget_bytes)
    )]
    WillNotFit {
        what: String,
        estimate: String,
        need_bytes: u64,
        budget_bytes: u64,
        budget_name: String,
        advice: String,
    },
    /// A training run on a backend whose tensors live in host memory would need more of it
    /// than the host can still give (checked before training).
    #[error(
        "{what} needs an estimated {} more host memory but {limit} is {}: {estimate}; to fit, {advice}",
        gib(*need_bytes),
        gib(*limit_bytes)
    )]
    HostWillNotFit { what: String, estimate: String, need_bytes: u64, limit_bytes: u64, limit: String, advice: String },
    /// The device ran out of memory during training (the estimate had let it start).
    #[error(
        "{what} ran out of device memory during training ({message}); the estimate before \
         training was {} ({estimate}){budget}; to fit, {advice}; checkpoints of finished epochs \
         stay in {out}",
        gib(*need_bytes)
    )]
    OutOfMemory {
        what: String,
        message: String,
        estimate: String,
        need_bytes: u64,
        budget: String,
        advice: String,
        out: String,
    },
    /// A flag or configuration value is invalid.
    #[error("invalid configuration: {0}")]
    Config(String),
    /// The requested backend is not available.
    #[error("backend {backend}: {msg}")]
    Backend { backend: String, msg: String },
    /// A self test failed.
    #[error("self test failed: {0}")]
    SelfTest(String),
    /// Checkpoints cannot be written or a resume has no complete checkpoint.
    #[error("checkpoint: {0}")]
    Checkpoint(String),
    /// A saved model and a dataset (or a record and a model) do not fit each other.
    #[error("model and data do not match: {0}")]
    Mismatch(String),
    /// The processes of a multi-process run do not fit together, or a collective between them
    /// failed.
    #[error("multi-process run: {0}")]
    Ranks(String),
    /// A fold's process of a `--fold-jobs` cross-validation failed; `output` is the end of
    /// what it printed (its `log`).
    #[error("fold {fold} of the cross-validation failed ({status}); the other folds were stopped. The end of its output ({}):\n{output}", log.display())]
    Fold { fold: usize, status: String, log: PathBuf, output: String },
    /// Training produced a non-finite loss (results and charts are still written).
    #[error("training diverged: {0}")]
    Diverged(String),
}

impl From<gnn_train::TrainError> for AppError {
    fn from(e: gnn_train::TrainError) -> Self {
        use gnn_train::TrainError as T;
        match e {
            T::Data(m) => AppError::Config(m),
            T::Mismatch { path, msg } => AppError::Mismatch(format!("{}: {msg}", path.display())),
            T::Load { path, msg } => AppError::Format { path, msg: format!("cannot load the record: {msg}") },
            T::Write { path, msg } => AppError::Format { path, msg: format!("cannot write: {msg}") },
            T::Model(m) => AppError::Config(m.to_string()),
        }
    }
}

impl AppError {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        AppError::Io { path: path.into(), source }
    }
    pub fn graph(context: impl Into<String>, source: GraphError) -> Self {
        AppError::Graph { context: context.into(), source }
    }
}

pub type Result<T> = std::result::Result<T, AppError>;

/// `bytes` in GiB with two decimals, for messages.
pub fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}
