//! What a partition is: the partitioner choice ([`PartitionMethod`], [`PartitionOptions`]),
//! the node -> part assignment ([`Partition`]) with its checks, and [`PartitionError`].

use crate::error::GraphError;
use crate::graph::csr::Csr;
use rayon::prelude::*;
use serde::Serialize;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

/// How nodes are assigned to parts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PartitionMethod {
    /// METIS 5 multilevel k-way edge-cut partitioning of the symmetrised graph (self-loops
    /// dropped, reverse edges added, duplicates merged), vertex weight `in-degree + 1`, seeded.
    /// Graphs whose symmetrised adjacency or total vertex weight exceeds METIS' 32-bit indices
    /// are partitioned by [`PartitionMethod::Greedy`] instead (with a warning). METIS keeps its
    /// random generator in process-global state, so calls into it are serialised.
    Metis,
    /// Multilevel on all cores (the default): the symmetrised graph (as for METIS; an
    /// undirected graph stored both ways is copied as it is) is coarsened by size-constrained
    /// label propagation (clusters of at most 3 % of a part's weight; nodes left alone grouped
    /// by the cluster they are most connected to) while a level has more than 2^21 adjacency
    /// entries and the next keeps at least 1,000 nodes per part, METIS partitions the coarsest
    /// level (node and edge weights summed), and the partition is carried back level by level,
    /// refined at each by label propagation under a part weight of at most 3 % above the mean.
    /// Graphs of at most 2^21 adjacency entries go to METIS directly. Every parallel step
    /// chooses moves for a chunk of nodes from the same state and applies them in order, so
    /// equal seeds give equal partitions on any number of threads.
    #[default]
    Multilevel,
    /// Pure Rust, deterministic, on the symmetrised graph: parts are grown one after another
    /// to their share of the weight (each time taking the node with the most neighbours already
    /// in the part), then streaming passes over a breadth-first order (at most twelve, until
    /// fewer than 0.1 % of the nodes move) move every node to the part holding most of its
    /// neighbours less a convex cost of the part's load (Fennel's objective), under a capacity
    /// of 3 % above the mean part weight.
    Greedy,
    /// Consecutive node id ranges of near-equal weight (no attention to edges): a baseline and
    /// a predictable split for tests.
    Contiguous,
}

impl PartitionMethod {
    /// The lower-case name (`multilevel`, `metis`, `greedy`, `contiguous`), as parsed by `FromStr`.
    pub fn as_str(self) -> &'static str {
        match self {
            PartitionMethod::Metis => "metis",
            PartitionMethod::Multilevel => "multilevel",
            PartitionMethod::Greedy => "greedy",
            PartitionMethod::Contiguous => "contiguous",
        }
    }

    pub(super) fn code(self) -> u32 {
        match self {
            PartitionMethod::Metis => 0,
            PartitionMethod::Greedy => 1,
            PartitionMethod::Contiguous => 2,
            PartitionMethod::Multilevel => 3,
        }
    }

    pub(super) fn from_code(code: u32) -> Option<Self> {
        match code {
            0 => Some(PartitionMethod::Metis),
            1 => Some(PartitionMethod::Greedy),
            2 => Some(PartitionMethod::Contiguous),
            3 => Some(PartitionMethod::Multilevel),
            _ => None,
        }
    }
}

impl fmt::Display for PartitionMethod {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for PartitionMethod {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_lowercase().as_str() {
            "metis" => Ok(PartitionMethod::Metis),
            "multilevel" => Ok(PartitionMethod::Multilevel),
            "greedy" => Ok(PartitionMethod::Greedy),
            "contiguous" => Ok(PartitionMethod::Contiguous),
            other => Err(format!("unknown partition method `{other}` (multilevel, metis, greedy or contiguous)")),
        }
    }
}

/// What [`partition`](super::partition) computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct PartitionOptions {
    /// Number of parts `P` (at least 1, at most the number of nodes).
    pub parts: usize,
    /// The partitioner.
    pub method: PartitionMethod,
    /// Seed of the partitioner: METIS' random seed; for Greedy the first node of the
    /// breadth-first order is `seed % n`; Contiguous ignores it. Equal seeds give equal results.
    pub seed: u64,
}

impl PartitionOptions {
    /// `parts` parts by `method`, seed 0.
    pub fn new(parts: usize, method: PartitionMethod) -> Self {
        Self { parts, method, seed: 0 }
    }
}

/// A node -> part assignment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Partition {
    /// Number of parts `P`.
    pub parts: usize,
    /// The part of every node (`assignment[v] < parts`).
    pub assignment: Vec<u32>,
    /// The partitioner that produced the assignment (Greedy where METIS fell back to it).
    pub method: PartitionMethod,
    /// The seed it ran with.
    pub seed: u64,
}

/// Why a graph could not be partitioned, split or its partition cached.
#[derive(thiserror::Error, Debug)]
pub enum PartitionError {
    /// Zero parts were asked for.
    #[error("cannot partition into 0 parts")]
    ZeroParts,
    /// More parts than nodes were asked for (every part needs a node).
    #[error("{parts} parts for {nodes} nodes: every part needs at least one node")]
    TooManyParts {
        /// Parts asked for.
        parts: usize,
        /// Nodes of the graph.
        nodes: usize,
    },
    /// The adjacency is not square (rows and columns must be the same nodes).
    #[error("the adjacency is {rows} x {cols}; partitioning needs a square one")]
    NotSquare {
        /// Rows of the adjacency.
        rows: usize,
        /// Columns of the adjacency.
        cols: usize,
    },
    /// The assignment does not have one entry per node.
    #[error("the assignment has {got} entries for {nodes} nodes")]
    AssignmentLength {
        /// Entries of the assignment.
        got: usize,
        /// Nodes of the graph.
        nodes: usize,
    },
    /// A node is assigned to a part outside `0..parts`.
    #[error("node {node} is assigned to part {part}, outside 0..{parts}")]
    PartOutOfRange {
        /// The node.
        node: usize,
        /// Its part.
        part: u32,
        /// Number of parts.
        parts: usize,
    },
    /// METIS returned an error.
    #[error("METIS failed: {0}")]
    Metis(String),
    /// A partition cache belongs to another graph.
    #[error("partition cache {path} does not belong to this graph: {reason}")]
    CacheMismatch {
        /// The cache file.
        path: PathBuf,
        /// What differs.
        reason: String,
    },
    /// A partition cache is truncated, damaged or not a partition cache.
    #[error("partition cache {path} is corrupt: {reason}")]
    CacheCorrupt {
        /// The cache file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// Reading or writing a partition cache failed.
    #[error("partition cache {path}: {source}")]
    Io {
        /// The cache file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A local adjacency failed validation (a bug of this module, reported instead of a panic).
    #[error(transparent)]
    Graph(#[from] GraphError),
}

impl Partition {
    /// Checks the assignment against `adj`: one entry per node, every part in `0..parts`,
    /// `1 <= parts <= n`, square adjacency.
    pub fn check(&self, adj: &Csr) -> Result<(), PartitionError> {
        let n = check_graph(adj, self.parts)?;
        check_assignment(&self.assignment, n, self.parts)
    }

    /// Edges of `adj` whose source lies in another part than their destination.
    pub fn cut_edges(&self, adj: &Csr) -> Result<usize, PartitionError> {
        self.check(adj)?;
        let (rp, ci, a) = (adj.row_ptr(), adj.col_idx(), &self.assignment);
        Ok((0..adj.n_rows())
            .into_par_iter()
            .map(|v| ci[rp[v]..rp[v + 1]].iter().filter(|&&c| a[c as usize] != a[v]).count())
            .sum())
    }
}
/// Checks squareness and `1 <= parts <= n`; returns `n`.
pub(super) fn check_graph(adj: &Csr, parts: usize) -> Result<usize, PartitionError> {
    if adj.n_rows() != adj.n_cols() {
        return Err(PartitionError::NotSquare { rows: adj.n_rows(), cols: adj.n_cols() });
    }
    let n = adj.n_rows();
    if parts == 0 {
        return Err(PartitionError::ZeroParts);
    }
    if parts > n {
        return Err(PartitionError::TooManyParts { parts, nodes: n });
    }
    Ok(n)
}

pub(super) fn check_assignment(a: &[u32], n: usize, parts: usize) -> Result<(), PartitionError> {
    if a.len() != n {
        return Err(PartitionError::AssignmentLength { got: a.len(), nodes: n });
    }
    if let Some((node, &part)) = a.par_iter().enumerate().find_first(|&(_, &q)| q as usize >= parts) {
        return Err(PartitionError::PartOutOfRange { node, part, parts });
    }
    Ok(())
}
