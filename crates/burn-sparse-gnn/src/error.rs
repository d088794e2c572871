//! Typed errors of the library: every rule a graph or an operation argument must follow has its
//! own variant, so a caller can tell a bad file from a bad configuration.

use thiserror::Error;

/// A graph, its features, labels or split violates a rule.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum GraphError {
    /// The row pointer does not have `rows + 1` entries.
    #[error("row pointer has {got} entries, expected rows + 1 = {expected}")]
    RowPtrLength {
        /// Entries of the row pointer.
        got: usize,
        /// Entries it needs: rows + 1.
        expected: usize,
    },
    /// The row pointer does not start at 0.
    #[error("row pointer starts at {0}, expected 0")]
    RowPtrStart(i64),
    /// The row pointer decreases.
    #[error("row pointer is not monotone: row {row} starts at {start} but ends at {end}")]
    RowPtrNotMonotone {
        /// The row.
        row: usize,
        /// Its start offset.
        start: i64,
        /// Its end offset, below the start.
        end: i64,
    },
    /// The last row pointer entry differs from the number of column indices.
    #[error("row pointer ends at {end} but there are {nnz} column indices")]
    RowPtrEnd {
        /// The last row pointer entry.
        end: i64,
        /// Number of column indices.
        nnz: usize,
    },
    /// A column index is negative or not below the number of columns.
    #[error("edge {edge} has column {col}, outside 0..{n_cols}")]
    ColumnOutOfRange {
        /// The edge (index into the column indices).
        edge: usize,
        /// Its column.
        col: i64,
        /// Number of columns.
        n_cols: usize,
    },
    /// Edge weights do not match the number of edges.
    #[error("{got} edge weights for {nnz} edges")]
    WeightsLength {
        /// Number of weights given.
        got: usize,
        /// Number of edges.
        nnz: usize,
    },
    /// An edge weight is NaN or infinite.
    #[error("edge {edge} has a non-finite weight {value}")]
    NonFiniteWeight {
        /// The edge.
        edge: usize,
        /// Its weight.
        value: f32,
    },
    /// Source and destination lists of an edge list have different lengths.
    #[error("edge list has {src} sources but {dst} destinations")]
    EdgeListLength {
        /// Number of sources.
        src: usize,
        /// Number of destinations.
        dst: usize,
    },
    /// An edge endpoint is negative or not below the number of nodes.
    #[error("edge {edge} has endpoint {node}, outside 0..{n_nodes}")]
    NodeOutOfRange {
        /// The edge (index into the edge list).
        edge: usize,
        /// The endpoint.
        node: i64,
        /// Number of nodes.
        n_nodes: usize,
    },
    /// The graph has more edges or nodes than 32-bit device indices can address.
    #[error("{what} = {count} exceeds the 32-bit index limit {limit}")]
    TooLarge {
        /// What is counted (`nodes` or `edges`).
        what: &'static str,
        /// The count.
        count: usize,
        /// The largest count allowed.
        limit: usize,
    },
    /// The feature matrix does not have the announced shape.
    #[error("features: {0}")]
    FeatureShape(String),
    /// A feature is NaN or infinite.
    #[error("feature ({node}, {feature}) is not finite ({value})")]
    NonFiniteFeature {
        /// The node (row).
        node: usize,
        /// The feature (column).
        feature: usize,
        /// The value.
        value: f32,
    },
    /// The number of labels differs from the number of nodes.
    #[error("{got} labels for {nodes} nodes")]
    LabelCount {
        /// Number of labels.
        got: usize,
        /// Number of nodes.
        nodes: usize,
    },
    /// A label is not below the number of classes (or negative other than -1 = unlabeled).
    #[error("node {node} has label {label}, outside 0..{classes} (-1 marks unlabeled)")]
    LabelOutOfRange {
        /// The node.
        node: usize,
        /// Its label.
        label: i64,
        /// The class count labels must stay below.
        classes: usize,
    },
    /// A split index is out of range.
    #[error("{split} split: node {node} outside 0..{n_nodes}")]
    SplitOutOfRange {
        /// The split (`train`, `valid` or `test`).
        split: &'static str,
        /// The node id.
        node: i64,
        /// Number of nodes.
        n_nodes: usize,
    },
    /// A split contains an unlabeled node.
    #[error("{split} split contains node {node}, which has no label")]
    UnlabeledSplitNode {
        /// The split (`train`, `valid` or `test`).
        split: &'static str,
        /// The unlabeled node.
        node: usize,
    },
    /// The features / labels / graph disagree on the number of nodes.
    #[error("{what}: {got} nodes, the graph has {nodes}")]
    NodeCount {
        /// What disagrees with the graph (features, labels, a new adjacency).
        what: &'static str,
        /// Nodes it has.
        got: usize,
        /// Nodes of the graph.
        nodes: usize,
    },
    /// The train / valid / test split cannot be trained on (empty, repeated or overlapping).
    #[error("{0}")]
    Split(SplitIssue),
    /// More classes are declared than the labeled nodes allow.
    #[error(
        "{classes} classes declared, more than the limit {limit} (the number of labeled nodes, \
         {labeled}, clamped to 1000..={max})"
    )]
    TooManyClasses {
        /// Classes declared.
        classes: usize,
        /// The limit for this dataset ([`crate::data::class_limit`]).
        limit: usize,
        /// The limit for any dataset ([`crate::data::MAX_CLASSES`]).
        max: usize,
        /// Labeled nodes.
        labeled: usize,
    },
    /// A row selection names a row outside its source or names a row twice.
    #[error("row selection: entry {entry} is row {row}, {issue} (the source has {rows} rows)")]
    RowSelection {
        /// The entry of the selection.
        entry: usize,
        /// The row it names.
        row: usize,
        /// Rows of the source.
        rows: usize,
        /// What is wrong with the row (outside the source, or named twice).
        issue: &'static str,
    },
}

/// An operation was called with arguments it cannot accept.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OpError {
    /// A tensor has the wrong shape.
    #[error("{op}: {what} has shape {got:?}, expected {expected}")]
    Shape {
        /// The operation.
        op: &'static str,
        /// The argument.
        what: &'static str,
        /// Its shape.
        got: Vec<usize>,
        /// The shape it needs.
        expected: String,
    },
    /// `k` is not in `1..=dim`.
    #[error("{op}: k = {k} must be in 1..={dim}")]
    K {
        /// The operation.
        op: &'static str,
        /// The `k` given.
        k: usize,
        /// The width the values are selected from.
        dim: usize,
    },
    /// The number of heads does not divide the feature width.
    #[error("{op}: {heads} heads do not divide the width {width}")]
    Heads {
        /// The operation.
        op: &'static str,
        /// Number of heads.
        heads: usize,
        /// The feature width.
        width: usize,
    },
    /// An invalid configuration (pooling windows, sample width, reduction).
    #[error("{op}: {msg}")]
    Config {
        /// The operation.
        op: &'static str,
        /// What is wrong.
        msg: String,
    },
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
    Empty {
        /// The empty split (`train`, `valid` or `test`).
        split: &'static str,
    },
    /// A part lists a node more than once (it would weigh double in the loss or metric).
    Repeated {
        /// The split.
        split: &'static str,
        /// The first node listed again.
        node: u32,
        /// How many ids of the split repeat an earlier one.
        repeats: usize,
    },
    /// A node is in two parts (e.g. tested on what it was trained on).
    Overlap {
        /// The split that holds the node first (in the order train, valid, test).
        first: &'static str,
        /// The split that lists it again.
        second: &'static str,
        /// The first shared node of the second split.
        node: u32,
        /// Nodes of the second split that are also in another split.
        shared: usize,
    },
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
