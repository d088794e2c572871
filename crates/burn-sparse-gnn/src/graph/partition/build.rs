//! Cutting a graph into its parts ([`PartitionedGraph::build`]): owned rows, halo, local
//! adjacency and send lists of every part ([`LocalPart`]).

use super::assignment::{Partition, PartitionError, PartitionMethod};
use super::cache::{write_cache, GraphFingerprint};
use super::partitioners::NONE;
use crate::graph::csr::Csr;
use rayon::prelude::*;
use std::ops::Range;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};

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

const MARK: u32 = u32::MAX - 1;

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
