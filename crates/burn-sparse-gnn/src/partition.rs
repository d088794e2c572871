//! Node partitioning of a graph into `P` parts for exact multi-GPU full-graph training
//! (host side, no tensors).
//!
//! [`partition`] assigns every node to one part ([`Partition`]): METIS k-way edge-cut
//! ([`PartitionMethod::Metis`]), a pure Rust streaming partitioner ([`PartitionMethod::Greedy`])
//! or consecutive node ranges ([`PartitionMethod::Contiguous`]). All three balance the parts by
//! the weight `in-degree + 1` of their nodes (the aggregation work of a row) and leave no part
//! empty.
//!
//! [`PartitionedGraph::build`] then cuts the adjacency into one [`LocalPart`] per part: the
//! part's own rows (destination nodes) with their columns renumbered into the part's owned
//! nodes followed by its halo (the sources of other parts its rows read), and the send lists
//! that tell every part which of its rows the others need. Each local row keeps the global row's
//! sources and weights in their order, so a local aggregation over `[owned; halo]` features adds
//! exactly the same numbers in the same order as the global one.
//!
//! A partition can be cached on disk ([`Partition::save`], [`Partition::load`]): the file holds
//! the assignment and a fingerprint of the graph, and loading it for another graph is refused.

use crate::data::Csr;
use crate::error::GraphError;
use rayon::prelude::*;
use serde::Serialize;
use std::fmt;
use std::io::Write;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// How nodes are assigned to parts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PartitionMethod {
    /// METIS 5 multilevel k-way edge-cut partitioning of the symmetrised graph (self-loops
    /// dropped, reverse edges added, duplicates merged), vertex weight `in-degree + 1`, seeded.
    /// Graphs whose symmetrised adjacency or total vertex weight exceeds METIS' 32-bit indices
    /// are partitioned by [`PartitionMethod::Greedy`] instead (with a warning). METIS keeps its
    /// random generator in process-global state, so calls into it are serialised.
    #[default]
    Metis,
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
    /// The lower-case name (`metis`, `greedy`, `contiguous`), as parsed by `FromStr`.
    pub fn as_str(self) -> &'static str {
        match self {
            PartitionMethod::Metis => "metis",
            PartitionMethod::Greedy => "greedy",
            PartitionMethod::Contiguous => "contiguous",
        }
    }

    fn code(self) -> u32 {
        match self {
            PartitionMethod::Metis => 0,
            PartitionMethod::Greedy => 1,
            PartitionMethod::Contiguous => 2,
        }
    }

    fn from_code(code: u32) -> Option<Self> {
        match code {
            0 => Some(PartitionMethod::Metis),
            1 => Some(PartitionMethod::Greedy),
            2 => Some(PartitionMethod::Contiguous),
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
            "greedy" => Ok(PartitionMethod::Greedy),
            "contiguous" => Ok(PartitionMethod::Contiguous),
            other => Err(format!("unknown partition method `{other}` (metis, greedy or contiguous)")),
        }
    }
}

/// What [`partition`] computes.
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
    TooManyParts { parts: usize, nodes: usize },
    /// The adjacency is not square (rows and columns must be the same nodes).
    #[error("the adjacency is {rows} x {cols}; partitioning needs a square one")]
    NotSquare { rows: usize, cols: usize },
    /// The assignment does not have one entry per node.
    #[error("the assignment has {got} entries for {nodes} nodes")]
    AssignmentLength { got: usize, nodes: usize },
    /// A node is assigned to a part outside `0..parts`.
    #[error("node {node} is assigned to part {part}, outside 0..{parts}")]
    PartOutOfRange { node: usize, part: u32, parts: usize },
    /// METIS returned an error.
    #[error("METIS failed: {0}")]
    Metis(String),
    /// A partition cache belongs to another graph.
    #[error("partition cache {path} does not belong to this graph: {reason}")]
    CacheMismatch { path: PathBuf, reason: String },
    /// A partition cache is truncated, damaged or not a partition cache.
    #[error("partition cache {path} is corrupt: {reason}")]
    CacheCorrupt { path: PathBuf, reason: String },
    /// Reading or writing a partition cache failed.
    #[error("partition cache {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A local adjacency failed validation (a bug of this module, reported instead of a panic).
    #[error(transparent)]
    Graph(#[from] GraphError),
}

/// One part: its own rows and the halo it reads.
#[derive(Clone, Debug, PartialEq)]
pub struct LocalPart {
    /// The part's index.
    pub part: usize,
    /// Global ids of the part's nodes, ascending. Local row `r` is node `owned[r]`.
    pub owned: Vec<u32>,
    /// Global ids of the nodes of other parts that the part's rows read, each once, grouped by
    /// owner part (ascending part, ascending id within a part).
    pub halo: Vec<u32>,
    /// Per owner part `q` (`P` entries): the range of `halo` owned by `q` (empty for
    /// `q == part`).
    pub halo_ranges: Vec<Range<usize>>,
    /// The part's rows: `owned.len()` rows in the order of `owned`, `owned.len() + halo.len()`
    /// columns; local column `c < owned.len()` is node `owned[c]`, otherwise
    /// `halo[c - owned.len()]`. Each row holds the global row's sources and weights in the same
    /// order.
    pub adj: Csr,
    /// Per part `q` (`P` entries, empty for `q == part`): the local rows (indices into
    /// `owned`) that part `q` reads, in the order of `q`'s `halo[halo_ranges[part]]`.
    pub send: Vec<Vec<u32>>,
}

impl LocalPart {
    /// The global node id of local column `c` (owned nodes first, then the halo); `None` past
    /// the last column.
    pub fn global_col(&self, c: usize) -> Option<u32> {
        if c < self.owned.len() {
            Some(self.owned[c])
        } else {
            self.halo.get(c - self.owned.len()).copied()
        }
    }

    /// Rows this part sends per exchange (the sum of its send lists).
    pub fn send_rows(&self) -> usize {
        self.send.iter().map(Vec::len).sum()
    }
}

/// Identity of a graph's structure for partition caches: node count, edge count and a 64-bit
/// hash of the row pointer and column indices (edge weights are not part of it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct GraphFingerprint {
    /// Number of nodes.
    pub n_nodes: u64,
    /// Number of edges.
    pub nnz: u64,
    /// Hash of `row_ptr` and `col_idx`.
    pub hash: u64,
}

impl GraphFingerprint {
    /// The fingerprint of `adj` (one parallel pass over its arrays).
    pub fn of(adj: &Csr) -> Self {
        let rp = hash_words(adj.row_ptr(), |&v| v as u64);
        let ci = hash_words(adj.col_idx(), |&v| v as u64);
        let mut h = mix(SEED_HASH, adj.n_rows() as u64);
        h = mix(h, adj.n_cols() as u64);
        h = mix(h, rp);
        h = mix(h, ci);
        Self { n_nodes: adj.n_rows() as u64, nnz: adj.nnz() as u64, hash: fmix(h) }
    }
}

/// A graph cut into its parts.
#[derive(Clone, Debug, PartialEq)]
pub struct PartitionedGraph {
    /// Number of nodes of the global graph.
    pub n_nodes: usize,
    /// One entry per part, in part order.
    pub parts: Vec<LocalPart>,
    /// The part of every node.
    pub assignment: Vec<u32>,
    /// The partitioner of the assignment.
    pub method: PartitionMethod,
    /// The seed of the assignment.
    pub seed: u64,
    /// The global graph's fingerprint (written with the assignment by [`PartitionedGraph::save`]).
    pub fingerprint: GraphFingerprint,
}

/// Sizes of one part.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PartStats {
    /// The part's index.
    pub part: usize,
    /// Nodes (rows) the part owns.
    pub owned: usize,
    /// Edges of its rows.
    pub local_edges: usize,
    /// Halo nodes it receives per exchange.
    pub halo: usize,
    /// Edges of its rows whose source is in another part.
    pub cut_edges: usize,
    /// Rows it sends per exchange.
    pub send_rows: usize,
}

/// Sizes and balance of a [`PartitionedGraph`], for results files.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PartitionStats {
    /// The partitioner.
    pub method: PartitionMethod,
    /// Number of parts.
    pub parts: usize,
    /// Nodes of the graph.
    pub n_nodes: usize,
    /// Edges of the graph.
    pub edges: usize,
    /// Per part, in part order.
    pub per_part: Vec<PartStats>,
    /// Edges whose source is in another part than their destination.
    pub cut_edges: usize,
    /// `cut_edges / edges` (0 for a graph without edges).
    pub cut_fraction: f64,
    /// Halo rows of all parts together: the feature rows moved per exchange.
    pub halo_total: usize,
    /// Most nodes owned by one part.
    pub max_owned: usize,
    /// Mean nodes per part.
    pub mean_owned: f64,
    /// `max_owned / mean_owned` (1 = perfectly balanced).
    pub owned_imbalance: f64,
    /// Most edges of one part.
    pub max_edges: usize,
    /// Mean edges per part.
    pub mean_edges: f64,
    /// `max_edges / mean_edges` (1 = perfectly balanced; 1 for a graph without edges).
    pub edge_imbalance: f64,
}

impl PartitionStats {
    /// Bytes moved per exchange of `width` features of `bytes_per_elem` bytes each:
    /// `halo_total * width * bytes_per_elem`.
    pub fn halo_bytes(&self, width: usize, bytes_per_elem: usize) -> u64 {
        self.halo_total as u64 * width as u64 * bytes_per_elem as u64
    }
}

/// Assigns every node of `adj` (square; row = destination) to one of `opts.parts` parts.
///
/// Parts are balanced by the node weight `in-degree + 1`; none is empty. Equal inputs give equal
/// assignments.
///
/// # Errors
/// Zero parts, more parts than nodes, a non-square adjacency, a METIS failure.
///
/// # Example
/// ```
/// use burn_sparse_gnn::partition::{partition, PartitionMethod, PartitionOptions, PartitionedGraph};
/// use burn_sparse_gnn::{BuildOptions, Csr};
///
/// // two triangles 0-1-2 and 3-4-5 joined by the edge 2-3, stored both ways
/// let src = [0, 1, 2, 3, 4, 5, 2];
/// let dst = [1, 2, 0, 4, 5, 3, 3];
/// let adj = Csr::from_edges(6, &src, &dst, None, BuildOptions::undirected()).unwrap();
/// let p = partition(&adj, &PartitionOptions::new(2, PartitionMethod::Metis)).unwrap();
/// assert_eq!(p.assignment[0], p.assignment[1]);
/// assert_ne!(p.assignment[0], p.assignment[4]);
///
/// let g = PartitionedGraph::build(&adj, &p).unwrap();
/// // the edge 2-3 is cut in both directions; each part reads one halo node
/// assert_eq!(g.stats().cut_edges, 2);
/// assert_eq!(g.parts[0].halo.len(), 1);
/// ```
pub fn partition(adj: &Csr, opts: &PartitionOptions) -> Result<Partition, PartitionError> {
    let n = check_graph(adj, opts.parts)?;
    let weight = node_weights(adj);
    let parts = opts.parts;
    let (mut assignment, method) = if parts == 1 {
        (vec![0u32; n], opts.method)
    } else {
        match opts.method {
            PartitionMethod::Contiguous => (contiguous(&weight, parts), PartitionMethod::Contiguous),
            PartitionMethod::Greedy => {
                let sym = symmetrize(adj);
                (greedy(&sym, &weight, parts, opts.seed), PartitionMethod::Greedy)
            }
            PartitionMethod::Metis => {
                let sym = symmetrize(adj);
                let total: u64 = weight.iter().sum();
                if sym.adj.len() > i32::MAX as usize || total > i32::MAX as u64 {
                    log::warn!(
                        "METIS takes 32-bit indices: {} symmetrised adjacency entries, total vertex weight {}; \
                         partitioning with Greedy instead",
                        sym.adj.len(),
                        total
                    );
                    (greedy(&sym, &weight, parts, opts.seed), PartitionMethod::Greedy)
                } else {
                    (metis_kway(&sym, &weight, parts, opts.seed)?, PartitionMethod::Metis)
                }
            }
        }
    };
    fill_empty_parts(&mut assignment, parts);
    Ok(Partition { parts, assignment, method, seed: opts.seed })
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

    /// Writes the assignment with `adj`'s fingerprint to `path` (atomically: a temporary file
    /// in the same folder renamed over `path`). Format: see [`Partition::load`].
    pub fn save(&self, adj: &Csr, path: impl AsRef<Path>) -> Result<(), PartitionError> {
        self.check(adj)?;
        write_cache(path.as_ref(), self, &GraphFingerprint::of(adj))
    }

    /// Reads a partition written by [`Partition::save`] for the graph `adj`.
    ///
    /// The file (little-endian) holds a magic `SGNNPART`, a format version, the method, parts,
    /// seed, the graph's node count, edge count and structure hash, the assignment (`u32` per
    /// node) and a checksum of all of it. The loaded `parts`, `method` and `seed` say what the
    /// partition was computed with; comparing them with the wanted options is the caller's.
    ///
    /// # Errors
    /// [`PartitionError::CacheMismatch`] when the file was written for another graph,
    /// [`PartitionError::CacheCorrupt`] for a truncated, damaged or foreign file,
    /// [`PartitionError::Io`] when it cannot be read.
    pub fn load(path: impl AsRef<Path>, adj: &Csr) -> Result<Self, PartitionError> {
        read_cache(path.as_ref(), &GraphFingerprint::of(adj))
    }
}

impl PartitionedGraph {
    /// Cuts `adj` (square; row = destination) into the parts of `partition`: owned rows, halo,
    /// local adjacency and send lists of every part, one part after another: per part two
    /// parallel passes over its edges and one over all node ids (`O(nnz + P * n)` in all, no
    /// hashing); parts may be empty. Each local adjacency is validated by [`Csr::new`].
    pub fn build(adj: &Csr, partition: &Partition) -> Result<Self, PartitionError> {
        partition.check(adj)?;
        let n = adj.n_rows();
        let p_count = partition.parts;
        let a = &partition.assignment;
        let (rp, ci, wt) = (adj.row_ptr(), adj.col_idx(), adj.weights());

        // owned nodes of every part (ascending) and every node's local row index
        let mut owned: Vec<Vec<u32>> = vec![Vec::new(); p_count];
        let mut local = vec![0u32; n];
        for (v, &p) in a.iter().enumerate() {
            let list = &mut owned[p as usize];
            local[v] = list.len() as u32;
            list.push(v as u32);
        }

        // per node, while part p is built: its local column (owned nodes of p, then halo nodes),
        // MARK for a halo node not numbered yet, NONE otherwise; one read per edge finds it
        let slot: Vec<AtomicU32> = (0..n).into_par_iter().map(|_| AtomicU32::new(NONE)).collect();
        let mut parts = Vec::with_capacity(p_count);
        for (p, own) in owned.into_iter().enumerate() {
            own.par_iter().enumerate().for_each(|(r, &v)| slot[v as usize].store(r as u32, Ordering::Relaxed));
            own.par_iter().for_each(|&v| {
                for &c in &ci[rp[v as usize]..rp[v as usize + 1]] {
                    let s = &slot[c as usize];
                    if s.load(Ordering::Relaxed) == NONE {
                        s.store(MARK, Ordering::Relaxed);
                    }
                }
            });
            let marked: Vec<u32> =
                (0..n).into_par_iter().filter(|&c| slot[c].load(Ordering::Relaxed) == MARK).map(|c| c as u32).collect();
            // group by owner part, ascending id within (a stable counting sort)
            let mut count = vec![0usize; p_count];
            for &c in &marked {
                count[a[c as usize] as usize] += 1;
            }
            let mut halo_ranges = Vec::with_capacity(p_count);
            let mut start = 0;
            for &k in &count {
                halo_ranges.push(start..start + k);
                start += k;
            }
            let mut next: Vec<usize> = halo_ranges.iter().map(|r| r.start).collect();
            let mut halo = vec![0u32; marked.len()];
            for &c in &marked {
                let q = a[c as usize] as usize;
                halo[next[q]] = c;
                next[q] += 1;
            }
            drop(marked);
            let n_own = own.len();
            halo.par_iter()
                .enumerate()
                .for_each(|(i, &c)| slot[c as usize].store((n_own + i) as u32, Ordering::Relaxed));

            let mut row_ptr = Vec::with_capacity(n_own + 1);
            row_ptr.push(0i64);
            let mut acc = 0i64;
            for &v in &own {
                acc += (rp[v as usize + 1] - rp[v as usize]) as i64;
                row_ptr.push(acc);
            }
            let mut cols = vec![0i64; acc as usize];
            fill_by_rows(&row_ptr, &mut cols, |r, out| {
                let v = own[r] as usize;
                for (o, &c) in out.iter_mut().zip(&ci[rp[v]..rp[v + 1]]) {
                    *o = slot[c as usize].load(Ordering::Relaxed) as i64;
                }
            });
            let weights: Option<Vec<f32>> = wt.map(|w| {
                let mut out = vec![0f32; acc as usize];
                fill_by_rows(&row_ptr, &mut out, |r, o| {
                    let v = own[r] as usize;
                    o.copy_from_slice(&w[rp[v]..rp[v + 1]]);
                });
                out
            });
            let local_adj = Csr::new(n_own, n_own + halo.len(), &row_ptr, &cols, weights)?;
            drop(cols);
            own.par_iter().chain(halo.par_iter()).for_each(|&c| slot[c as usize].store(NONE, Ordering::Relaxed));
            parts.push(LocalPart { part: p, owned: own, halo, halo_ranges, adj: local_adj, send: Vec::new() });
        }

        // send lists: what part q reads from part p, as p's local rows, in q's halo order
        let sends: Vec<Vec<Vec<u32>>> = (0..p_count)
            .into_par_iter()
            .map(|p| {
                (0..p_count)
                    .map(|q| {
                        if q == p {
                            return Vec::new();
                        }
                        let lq = &parts[q];
                        lq.halo[lq.halo_ranges[p].clone()].iter().map(|&g| local[g as usize]).collect()
                    })
                    .collect()
            })
            .collect();
        for (part, send) in parts.iter_mut().zip(sends) {
            part.send = send;
        }
        Ok(Self {
            n_nodes: n,
            parts,
            assignment: a.clone(),
            method: partition.method,
            seed: partition.seed,
            fingerprint: GraphFingerprint::of(adj),
        })
    }

    /// The assignment as a [`Partition`].
    pub fn partition(&self) -> Partition {
        Partition { parts: self.parts.len(), assignment: self.assignment.clone(), method: self.method, seed: self.seed }
    }

    /// Sizes, cut and balance.
    pub fn stats(&self) -> PartitionStats {
        let per_part: Vec<PartStats> = self
            .parts
            .iter()
            .map(|lp| {
                let n_own = lp.owned.len() as u32;
                let cut = lp.adj.col_idx().par_iter().filter(|&&c| c >= n_own).count();
                PartStats {
                    part: lp.part,
                    owned: lp.owned.len(),
                    local_edges: lp.adj.nnz(),
                    halo: lp.halo.len(),
                    cut_edges: cut,
                    send_rows: lp.send_rows(),
                }
            })
            .collect();
        let p = per_part.len().max(1) as f64;
        let edges: usize = per_part.iter().map(|s| s.local_edges).sum();
        let cut_edges: usize = per_part.iter().map(|s| s.cut_edges).sum();
        let max_owned = per_part.iter().map(|s| s.owned).max().unwrap_or(0);
        let max_edges = per_part.iter().map(|s| s.local_edges).max().unwrap_or(0);
        let mean_owned = self.n_nodes as f64 / p;
        let mean_edges = edges as f64 / p;
        PartitionStats {
            method: self.method,
            parts: self.parts.len(),
            n_nodes: self.n_nodes,
            edges,
            cut_edges,
            cut_fraction: if edges == 0 { 0.0 } else { cut_edges as f64 / edges as f64 },
            halo_total: per_part.iter().map(|s| s.halo).sum(),
            max_owned,
            mean_owned,
            owned_imbalance: if mean_owned > 0.0 { max_owned as f64 / mean_owned } else { 1.0 },
            max_edges,
            mean_edges,
            edge_imbalance: if mean_edges > 0.0 { max_edges as f64 / mean_edges } else { 1.0 },
            per_part,
        }
    }

    /// Writes the assignment and the graph's fingerprint to `path` (atomically), the format of
    /// [`Partition::save`].
    pub fn save(&self, path: impl AsRef<Path>) -> Result<(), PartitionError> {
        write_cache(path.as_ref(), &self.partition(), &self.fingerprint)
    }

    /// Reads an assignment written for `adj` ([`Partition::load`]) and builds the parts.
    pub fn load(path: impl AsRef<Path>, adj: &Csr) -> Result<Self, PartitionError> {
        let p = Partition::load(path, adj)?;
        Self::build(adj, &p)
    }
}

// ---------------------------------------------------------------------------------------------
// checks and weights

const NONE: u32 = u32::MAX;
const MARK: u32 = u32::MAX - 1;

/// Checks squareness and `1 <= parts <= n`; returns `n`.
fn check_graph(adj: &Csr, parts: usize) -> Result<usize, PartitionError> {
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

fn check_assignment(a: &[u32], n: usize, parts: usize) -> Result<(), PartitionError> {
    if a.len() != n {
        return Err(PartitionError::AssignmentLength { got: a.len(), nodes: n });
    }
    if let Some((node, &part)) = a.par_iter().enumerate().find_first(|&(_, &q)| q as usize >= parts) {
        return Err(PartitionError::PartOutOfRange { node, part, parts });
    }
    Ok(())
}

/// `in-degree + 1` of every node: the work of its row.
fn node_weights(adj: &Csr) -> Vec<u64> {
    adj.row_ptr().par_windows(2).map(|w| (w[1] - w[0]) as u64 + 1).collect()
}

/// Moves one node into every empty part, taken from the part with the most nodes (its highest
/// id), so that every part of a graph with at least `parts` nodes owns a node.
fn fill_empty_parts(assignment: &mut [u32], parts: usize) {
    let mut count = vec![0usize; parts];
    for &q in assignment.iter() {
        count[q as usize] += 1;
    }
    for empty in 0..parts {
        if count[empty] > 0 {
            continue;
        }
        let Some((donor, &size)) = count.iter().enumerate().max_by_key(|&(i, &c)| (c, std::cmp::Reverse(i))) else {
            return;
        };
        if size < 2 {
            return;
        }
        if let Some(v) = assignment.iter().rposition(|&q| q as usize == donor) {
            assignment[v] = empty as u32;
            count[donor] -= 1;
            count[empty] += 1;
        }
    }
}

/// Edges per block of [`fill_by_rows`].
const BLOCK_EDGES: i64 = 1 << 16;

/// Fills `out`, the edges of consecutive rows with offsets `row_ptr`, in parallel: blocks of
/// consecutive rows of about [`BLOCK_EDGES`] edges get disjoint slices of `out`, and
/// `fill(r, slice)` writes the edges of row `r`.
fn fill_by_rows<T: Send>(row_ptr: &[i64], out: &mut [T], fill: impl Fn(usize, &mut [T]) + Sync) {
    let n_rows = row_ptr.len().saturating_sub(1);
    let mut bounds = vec![0usize];
    let mut block_start = 0i64;
    for r in 0..n_rows {
        if row_ptr[r + 1] - block_start >= BLOCK_EDGES {
            bounds.push(r + 1);
            block_start = row_ptr[r + 1];
        }
    }
    if bounds.last() != Some(&n_rows) {
        bounds.push(n_rows);
    }
    let mut blocks = Vec::with_capacity(bounds.len());
    let mut rest = out;
    for w in bounds.windows(2) {
        let len = (row_ptr[w[1]] - row_ptr[w[0]]) as usize;
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(len);
        blocks.push((w[0]..w[1], head));
        rest = tail;
    }
    blocks.into_par_iter().for_each(|(rows, slice)| {
        let base = row_ptr[rows.start];
        for r in rows {
            let (s, e) = ((row_ptr[r] - base) as usize, (row_ptr[r + 1] - base) as usize);
            fill(r, &mut slice[s..e]);
        }
    });
}

// ---------------------------------------------------------------------------------------------
// symmetrised graph

/// An undirected graph without self-loops or duplicates: the neighbours of `v` are
/// `adj[xadj[v]..xadj[v + 1]]`, ascending.
struct SymGraph {
    xadj: Vec<usize>,
    adj: Vec<u32>,
}

impl SymGraph {
    fn neighbours(&self, v: usize) -> &[u32] {
        &self.adj[self.xadj[v]..self.xadj[v + 1]]
    }
}

/// The union of `adj` and its transpose without self-loops, duplicates merged. Parallel: counts
/// and scatter through atomics (entry order within a node is arbitrary there), then every node's
/// list is sorted and deduplicated, which makes the result independent of the scheduling.
fn symmetrize(adj: &Csr) -> SymGraph {
    let n = adj.n_rows();
    let (rp, ci) = (adj.row_ptr(), adj.col_idx());
    let out: Vec<usize> =
        (0..n).into_par_iter().map(|r| ci[rp[r]..rp[r + 1]].iter().filter(|&&c| c as usize != r).count()).collect();
    let inc: Vec<AtomicUsize> = (0..n).into_par_iter().map(|_| AtomicUsize::new(0)).collect();
    (0..n).into_par_iter().for_each(|r| {
        for &c in &ci[rp[r]..rp[r + 1]] {
            if c as usize != r {
                inc[c as usize].fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    let mut start = Vec::with_capacity(n + 1);
    start.push(0usize);
    let mut acc = 0usize;
    for v in 0..n {
        acc += out[v] + inc[v].load(Ordering::Relaxed);
        start.push(acc);
    }
    let buf: Vec<AtomicU32> = (0..acc).into_par_iter().map(|_| AtomicU32::new(0)).collect();
    let cursor: Vec<AtomicUsize> = (0..n).into_par_iter().map(|v| AtomicUsize::new(start[v] + out[v])).collect();
    drop(inc);
    (0..n).into_par_iter().for_each(|r| {
        let mut k = start[r];
        for &c in &ci[rp[r]..rp[r + 1]] {
            if c as usize != r {
                buf[k].store(c, Ordering::Relaxed);
                k += 1;
                let pos = cursor[c as usize].fetch_add(1, Ordering::Relaxed);
                buf[pos].store(r as u32, Ordering::Relaxed);
            }
        }
    });
    drop(cursor);
    let lists: Vec<Vec<u32>> = (0..n)
        .into_par_iter()
        .map(|v| {
            let mut l: Vec<u32> = buf[start[v]..start[v + 1]].iter().map(|x| x.load(Ordering::Relaxed)).collect();
            l.sort_unstable();
            l.dedup();
            l
        })
        .collect();
    drop(buf);
    let mut xadj = Vec::with_capacity(n + 1);
    xadj.push(0usize);
    let mut acc = 0usize;
    for l in &lists {
        acc += l.len();
        xadj.push(acc);
    }
    let adj: Vec<u32> = lists.into_par_iter().flatten().collect();
    SymGraph { xadj, adj }
}

// ---------------------------------------------------------------------------------------------
// partitioners

/// Consecutive ranges: node `v` goes to the part whose weight quantile holds the middle of `v`'s
/// weight; boundaries are then clamped so that every part gets at least one node.
fn contiguous(weight: &[u64], parts: usize) -> Vec<u32> {
    let n = weight.len();
    let total: u128 = weight.iter().map(|&w| w as u128).sum();
    // twice the weight before the middle of node v
    let mut mid = Vec::with_capacity(n);
    let mut before: u128 = 0;
    for &w in weight {
        mid.push(2 * before + w as u128);
        before += w as u128;
    }
    let mut bounds = vec![0usize; parts + 1];
    bounds[parts] = n;
    for (k, b) in bounds.iter_mut().enumerate().take(parts).skip(1) {
        // first node whose middle lies at or past k / parts of the total weight
        let target = 2 * k as u128 * total;
        *b = mid.partition_point(|&m| m * (parts as u128) < target);
    }
    for k in 1..parts {
        bounds[k] = bounds[k].max(bounds[k - 1] + 1);
    }
    for k in (1..parts).rev() {
        bounds[k] = bounds[k].min(bounds[k + 1] - 1);
    }
    let mut assignment = vec![0u32; n];
    for k in 0..parts {
        assignment[bounds[k]..bounds[k + 1]].fill(k as u32);
    }
    assignment
}

/// Breadth-first order of all nodes: from `first`, then from the lowest unvisited id of each
/// further component.
fn bfs_order(sym: &SymGraph, first: usize) -> Vec<u32> {
    let n = sym.xadj.len() - 1;
    let mut seen = vec![false; n];
    let mut order: Vec<u32> = Vec::with_capacity(n);
    let roots = std::iter::once(first).chain(0..n);
    for root in roots {
        if seen[root] {
            continue;
        }
        seen[root] = true;
        let mut head = order.len();
        order.push(root as u32);
        while head < order.len() {
            let v = order[head] as usize;
            head += 1;
            for &u in sym.neighbours(v) {
                if !seen[u as usize] {
                    seen[u as usize] = true;
                    order.push(u);
                }
            }
        }
    }
    order
}

/// Capacity of a Greedy part above the mean part weight.
const GREEDY_SLACK: f64 = 0.03;
/// Restreaming passes of Greedy at most (fewer once a pass moves fewer than 0.1 % of the nodes).
const GREEDY_RESTREAMS: usize = 12;

/// Greedy: parts grown one after another ([`grow_parts`]), then refined by restreaming passes
/// in breadth-first order: each node moves to the part maximising
/// `neighbours there - alpha * ((load + w)^1.5 - load^1.5)` under a hard capacity,
/// `alpha = edges * P^0.5 / total_weight^1.5` (Fennel's objective with `gamma = 1.5`, computed
/// with `sqrt`, which is exactly rounded, so the result is the same on every platform).
fn greedy(sym: &SymGraph, weight: &[u64], parts: usize, seed: u64) -> Vec<u32> {
    let n = weight.len();
    let total: u64 = weight.iter().sum();
    let cap = total as f64 / parts as f64 * (1.0 + GREEDY_SLACK);
    let edges = sym.adj.len() as f64 / 2.0;
    let alpha = edges * (parts as f64).sqrt() / (total as f64 * (total as f64).sqrt());
    let order = bfs_order(sym, (seed % n as u64) as usize);
    let mut assign = grow_parts(sym, weight, parts, &order);
    let mut load = vec![0u64; parts];
    for (v, &q) in assign.iter().enumerate() {
        load[q as usize] += weight[v];
    }
    let mut count = vec![0u32; parts];
    let mut touched: Vec<usize> = Vec::with_capacity(parts);
    for _ in 0..GREEDY_RESTREAMS {
        let mut moved = 0usize;
        for &v in &order {
            let v = v as usize;
            let old = assign[v];
            load[old as usize] -= weight[v];
            for &u in sym.neighbours(v) {
                let q = assign[u as usize] as usize;
                if count[q] == 0 {
                    touched.push(q);
                }
                count[q] += 1;
            }
            let best = greedy_choice(&count, &load, weight[v], cap, alpha, old);
            for q in touched.drain(..) {
                count[q] = 0;
            }
            assign[v] = best as u32;
            load[best] += weight[v];
            if best as u32 != old {
                moved += 1;
            }
        }
        // converged: fewer than 0.1 % of the nodes moved
        if moved * 1000 < n.max(1) {
            break;
        }
    }
    assign
}

/// Grows parts `0..P-1` one after another to their share of the total weight: part `k` starts
/// at the first unassigned node of `order` and repeatedly takes the unassigned node with the
/// most neighbours already in part `k` (ties to the lower id; a new start from `order` when its
/// region has no unassigned neighbour left). The last part takes the rest.
fn grow_parts(sym: &SymGraph, weight: &[u64], parts: usize, order: &[u32]) -> Vec<u32> {
    let n = weight.len();
    let total: u128 = weight.iter().map(|&w| w as u128).sum();
    let mut assign = vec![NONE; n];
    let mut conn = vec![0u32; n];
    let mut touched: Vec<u32> = Vec::new();
    let mut heap: std::collections::BinaryHeap<u64> = std::collections::BinaryHeap::new();
    // key: connections in the high half, the complement of the id in the low half
    let key = |c: u32, v: u32| ((c as u64) << 32) | (u32::MAX - v) as u64;
    let mut next_start = 0usize;
    let mut filled: u128 = 0;
    for k in 0..parts.saturating_sub(1) {
        let target = total * (k as u128 + 1) / parts as u128;
        while filled < target {
            let mut pick = None;
            while let Some(top) = heap.pop() {
                let (c, v) = ((top >> 32) as u32, u32::MAX - top as u32);
                if assign[v as usize] == NONE && conn[v as usize] == c {
                    pick = Some(v as usize);
                    break;
                }
            }
            let v = match pick {
                Some(v) => v,
                None => {
                    while next_start < n && assign[order[next_start] as usize] != NONE {
                        next_start += 1;
                    }
                    match order.get(next_start) {
                        Some(&v) => v as usize,
                        None => break,
                    }
                }
            };
            assign[v] = k as u32;
            filled += weight[v] as u128;
            for &u in sym.neighbours(v) {
                let ui = u as usize;
                if assign[ui] == NONE {
                    if conn[ui] == 0 {
                        touched.push(u);
                    }
                    conn[ui] += 1;
                    heap.push(key(conn[ui], u));
                }
            }
        }
        heap.clear();
        for u in touched.drain(..) {
            conn[u as usize] = 0;
        }
    }
    let last = parts.saturating_sub(1) as u32;
    for a in assign.iter_mut().filter(|a| **a == NONE) {
        *a = last;
    }
    assign
}

/// The part for a node of weight `w` with `count[q]` neighbours in part `q`: among the parts it
/// fits in (`load + w <= cap`), the highest `count - alpha * ((load + w)^1.5 - load^1.5)`,
/// then its previous part `old`, then the lighter part, then the lower index; the lightest part
/// where it fits nowhere.
fn greedy_choice(count: &[u32], load: &[u64], w: u64, cap: f64, alpha: f64, old: u32) -> usize {
    let mut best: Option<(usize, f64)> = None;
    for q in 0..load.len() {
        let (l, after) = (load[q] as f64, (load[q] + w) as f64);
        if after > cap {
            continue;
        }
        let score = count[q] as f64 - alpha * (after * after.sqrt() - l * l.sqrt());
        let better = match best {
            None => true,
            Some((b, bs)) => {
                if score != bs {
                    score > bs
                } else if (q as u32 == old) != (b as u32 == old) {
                    q as u32 == old
                } else {
                    load[q] < load[b]
                }
            }
        };
        if better {
            best = Some((q, score));
        }
    }
    match best {
        Some((q, _)) => q,
        None => (0..load.len()).min_by_key(|&q| (load[q], q)).unwrap_or(0),
    }
}

/// Serialises the calls into METIS (see [`metis_kway`]).
static METIS_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// METIS k-way edge-cut partitioning of `sym` (which must fit 32-bit indices).
fn metis_kway(sym: &SymGraph, weight: &[u64], parts: usize, seed: u64) -> Result<Vec<u32>, PartitionError> {
    let n = weight.len();
    let err = |what: &str| PartitionError::Metis(format!("{what} exceeds 32-bit indices"));
    let xadj: Vec<i32> =
        sym.xadj.par_iter().map(|&x| i32::try_from(x)).collect::<Result<_, _>>().map_err(|_| err("adjacency"))?;
    let adjncy: Vec<i32> = sym.adj.par_iter().map(|&x| x as i32).collect();
    let vwgt: Vec<i32> =
        weight.par_iter().map(|&w| i32::try_from(w)).collect::<Result<_, _>>().map_err(|_| err("vertex weight"))?;
    let nparts = i32::try_from(parts).map_err(|_| err("parts"))?;
    let mut part = vec![0i32; n];
    let seed = (seed % i32::MAX as u64) as i32;
    // METIS keeps its random generator in process-global state: one call at a time, so that
    // equal seeds give equal partitions
    let _guard = METIS_LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    metis::Graph::new(1, nparts, &xadj, &adjncy)
        .map_err(|e| PartitionError::Metis(format!("{e:?}")))?
        .set_vwgt(&vwgt)
        .set_option(metis::option::Seed(seed))
        .part_kway(&mut part)
        .map_err(|e| PartitionError::Metis(e.to_string()))?;
    part.into_par_iter()
        .enumerate()
        .map(|(v, q)| {
            u32::try_from(q)
                .ok()
                .filter(|&q| (q as usize) < parts)
                .ok_or_else(|| PartitionError::Metis(format!("node {v} assigned to part {q}")))
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// hashing and the cache file

const SEED_HASH: u64 = 0x5347_4e4e_5041_5254;
const MAGIC: &[u8; 8] = b"SGNNPART";
const VERSION: u32 = 1;
/// magic, version, method, parts, seed, n_nodes, nnz, graph hash
const HEADER: usize = 8 + 4 + 4 + 8 + 8 + 8 + 8 + 8;
/// Elements hashed per parallel chunk (fixed, so the hash does not depend on the thread count).
const HASH_CHUNK: usize = 1 << 16;

fn mix(h: u64, x: u64) -> u64 {
    (h.rotate_left(23) ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// MurmurHash3's 64-bit finaliser.
fn fmix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

fn hash_words<T: Sync>(data: &[T], word: impl Fn(&T) -> u64 + Sync) -> u64 {
    let chunks: Vec<u64> =
        data.par_chunks(HASH_CHUNK).map(|c| fmix(c.iter().fold(SEED_HASH, |h, x| mix(h, word(x))))).collect();
    fmix(chunks.iter().fold(mix(SEED_HASH, data.len() as u64), |h, &x| mix(h, x)))
}

fn checksum(bytes: &[u8]) -> u64 {
    hash_words(bytes, |&b| b as u64)
}

/// Makes the temporary file names of concurrent writers in one process distinct.
static TMP_COUNTER: AtomicUsize = AtomicUsize::new(0);

fn write_cache(path: &Path, p: &Partition, fp: &GraphFingerprint) -> Result<(), PartitionError> {
    let mut bytes = Vec::with_capacity(HEADER + 4 * p.assignment.len() + 8);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&VERSION.to_le_bytes());
    bytes.extend_from_slice(&p.method.code().to_le_bytes());
    bytes.extend_from_slice(&(p.parts as u64).to_le_bytes());
    bytes.extend_from_slice(&p.seed.to_le_bytes());
    bytes.extend_from_slice(&fp.n_nodes.to_le_bytes());
    bytes.extend_from_slice(&fp.nnz.to_le_bytes());
    bytes.extend_from_slice(&fp.hash.to_le_bytes());
    for &q in &p.assignment {
        bytes.extend_from_slice(&q.to_le_bytes());
    }
    let sum = checksum(&bytes);
    bytes.extend_from_slice(&sum.to_le_bytes());

    let io = |source| PartitionError::Io { path: path.to_path_buf(), source };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "partition".into());
    let tmp = path.with_file_name(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(e)
    })
}

fn read_cache(path: &Path, fp: &GraphFingerprint) -> Result<Partition, PartitionError> {
    let bytes = std::fs::read(path).map_err(|source| PartitionError::Io { path: path.to_path_buf(), source })?;
    let corrupt = |reason: String| PartitionError::CacheCorrupt { path: path.to_path_buf(), reason };
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return Err(corrupt("not a partition cache (bad magic)".into()));
    }
    if bytes.len() < HEADER + 8 {
        return Err(corrupt(format!("{} bytes, shorter than the {}-byte header", bytes.len(), HEADER + 8)));
    }
    let u32_at = |o: usize| u32::from_le_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]]);
    let u64_at = |o: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[o..o + 8]);
        u64::from_le_bytes(b)
    };
    let version = u32_at(8);
    if version != VERSION {
        return Err(corrupt(format!("format version {version}, this build reads {VERSION}")));
    }
    let n_nodes = u64_at(32);
    let expected = usize::try_from(n_nodes)
        .ok()
        .and_then(|n| n.checked_mul(4))
        .and_then(|b| b.checked_add(HEADER + 8))
        .ok_or_else(|| corrupt(format!("node count {n_nodes} is impossible")))?;
    if bytes.len() != expected {
        return Err(corrupt(format!("{} bytes, expected {expected} for {n_nodes} nodes (truncated?)", bytes.len())));
    }
    let body = &bytes[..bytes.len() - 8];
    if checksum(body) != u64_at(bytes.len() - 8) {
        return Err(corrupt("checksum mismatch".into()));
    }
    let method =
        PartitionMethod::from_code(u32_at(12)).ok_or_else(|| corrupt(format!("unknown method {}", u32_at(12))))?;
    let parts = u64_at(16);
    let seed = u64_at(24);
    let found = GraphFingerprint { n_nodes, nnz: u64_at(40), hash: u64_at(48) };
    if found != *fp {
        let reason = if found.n_nodes != fp.n_nodes {
            format!("written for {} nodes, the graph has {}", found.n_nodes, fp.n_nodes)
        } else if found.nnz != fp.nnz {
            format!("written for {} edges, the graph has {}", found.nnz, fp.nnz)
        } else {
            format!("structure hash {:016x}, the graph's is {:016x}", found.hash, fp.hash)
        };
        return Err(PartitionError::CacheMismatch { path: path.to_path_buf(), reason });
    }
    let parts = usize::try_from(parts)
        .ok()
        .filter(|&p| p >= 1 && p as u64 <= n_nodes.max(1))
        .ok_or_else(|| corrupt(format!("{parts} parts")))?;
    let assignment: Vec<u32> =
        body[HEADER..].chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    if let Err(e) = check_assignment(&assignment, n_nodes as usize, parts) {
        return Err(corrupt(e.to_string()));
    }
    Ok(Partition { parts, assignment, method, seed })
}
