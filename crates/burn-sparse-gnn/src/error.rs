//! Typed errors of the library: every rule a graph or an operation argument must follow has its
//! own variant, so a caller can tell a bad file from a bad configuration.

use thiserror::Error;

/// A graph, its features, labels or split violates a rule.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum GraphError {
    /// The row pointer does not have `rows + 1` entries.
    #[error("row pointer has {got} entries, expected rows + 1 = {expected}")]
    RowPtrLength { got: usize, expected: usize },
    /// The row pointer does not start at 0.
    #[error("row pointer starts at {0}, expected 0")]
    RowPtrStart(i64),
    /// The row pointer decreases.
    #[error("row pointer is not monotone: row {row} starts at {start} but ends at {end}")]
    RowPtrNotMonotone { row: usize, start: i64, end: i64 },
    /// The last row pointer entry differs from the number of column indices.
    #[error("row pointer ends at {end} but there are {nnz} column indices")]
    RowPtrEnd { end: i64, nnz: usize },
    /// A column index is negative or not below the number of columns.
    #[error("edge {edge} has column {col}, outside 0..{n_cols}")]
    ColumnOutOfRange { edge: usize, col: i64, n_cols: usize },
    /// Edge weights do not match the number of edges.
    #[error("{got} edge weights for {nnz} edges")]
    WeightsLength { got: usize, nnz: usize },
    /// An edge weight is NaN or infinite.
    #[error("edge {edge} has a non-finite weight {value}")]
    NonFiniteWeight { edge: usize, value: f32 },
    /// Source and destination lists of an edge list have different lengths.
    #[error("edge list has {src} sources but {dst} destinations")]
    EdgeListLength { src: usize, dst: usize },
    /// An edge endpoint is negative or not below the number of nodes.
    #[error("edge {edge} has endpoint {node}, outside 0..{n_nodes}")]
    NodeOutOfRange { edge: usize, node: i64, n_nodes: usize },
    /// The graph has more edges or nodes than 32-bit device indices can address.
    #[error("{what} = {count} exceeds the 32-bit index limit {limit}")]
    TooLarge { what: &'static str, count: usize, limit: usize },
    /// The feature matrix does not have the announced shape.
    #[error("features: {0}")]
    FeatureShape(String),
    /// A feature is NaN or infinite.
    #[error("feature ({node}, {feature}) is not finite ({value})")]
    NonFiniteFeature { node: usize, feature: usize, value: f32 },
    /// The number of labels differs from the number of nodes.
    #[error("{got} labels for {nodes} nodes")]
    LabelCount { got: usize, nodes: usize },
    /// A label is not below the number of classes (or negative other than -1 = unlabeled).
    #[error("node {node} has label {label}, outside 0..{classes} (-1 marks unlabeled)")]
    LabelOutOfRange { node: usize, label: i64, classes: usize },
    /// A split index is out of range.
    #[error("{split} split: node {node} outside 0..{n_nodes}")]
    SplitOutOfRange { split: &'static str, node: i64, n_nodes: usize },
    /// A split contains an unlabeled node.
    #[error("{split} split contains node {node}, which has no label")]
    UnlabeledSplitNode { split: &'static str, node: usize },
    /// The features / labels / graph disagree on the number of nodes.
    #[error("{what}: {got} nodes, the graph has {nodes}")]
    NodeCount { what: &'static str, got: usize, nodes: usize },
    /// The train / valid / test split cannot be trained on (empty, repeated or overlapping).
    #[error("{0}")]
    Split(SplitIssue),
    /// More classes are declared than the labeled nodes allow.
    #[error(
        "{classes} classes declared, more than the limit {limit} (the number of labeled nodes, \
         {labeled}, clamped to 1000..={max})"
    )]
    TooManyClasses { classes: usize, limit: usize, max: usize, labeled: usize },
    /// A row selection names a row outside its source or names a row twice.
    #[error("row selection: entry {entry} is row {row}, {issue} (the source has {rows} rows)")]
    RowSelection { entry: usize, row: usize, rows: usize, issue: &'static str },
}

/// An operation was called with arguments it cannot accept.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OpError {
    /// A tensor has the wrong shape.
    #[error("{op}: {what} has shape {got:?}, expected {expected}")]
    Shape { op: &'static str, what: &'static str, got: Vec<usize>, expected: String },
    /// `k` is not in `1..=dim`.
    #[error("{op}: k = {k} must be in 1..={dim}")]
    K { op: &'static str, k: usize, dim: usize },
    /// The number of heads does not divide the feature width.
    #[error("{op}: {heads} heads do not divide the width {width}")]
    Heads { op: &'static str, heads: usize, width: usize },
    /// An invalid configuration (pooling windows, sample width, reduction).
    #[error("{op}: {msg}")]
    Config { op: &'static str, msg: String },
}

/// Any error of this crate.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum Error {
    /// See [`GraphError`].
    #[error(transparent)]
    Graph(#[from] GraphError),
    /// See [`OpError`].
    #[error(transparent)]
    Op(#[from] OpError),
}

/// Why a split cannot be trained on (see [`Split::check`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SplitIssue {
    /// A part has no node: nothing to train on, no model selection, or a test accuracy
    /// computed over nothing.
    Empty { split: &'static str },
    /// A part lists a node more than once (it would weigh double in the loss or metric).
    Repeated { split: &'static str, node: u32, repeats: usize },
    /// A node is in two parts (e.g. tested on what it was trained on).
    Overlap { first: &'static str, second: &'static str, node: u32, shared: usize },
}

impl std::fmt::Display for SplitIssue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Empty { split } => write!(f, "the {split} split is empty (train, valid and test all need nodes)"),
            Self::Repeated { split, node, repeats } => {
                write!(f, "the {split} split lists node {node} more than once ({repeats} repeated ids)")
            }
            Self::Overlap { first, second, node, shared } => write!(
                f,
                "the {first} and {second} splits overlap: node {node} is in both ({shared} shared nodes); \
                 a node may be in one split only"
            ),
        }
    }
}
