//! The multilevel partitioner ([`PartitionMethod::Multilevel`](super::PartitionMethod)): the
//! symmetrised graph is coarsened on all cores by size-constrained label propagation, the
//! coarsest graph is partitioned by METIS, and the partition is carried back level by level,
//! each time refined by label propagation under the balance constraint (the scheme of
//! KaMinPar, Gottesbüren et al., ESA 2021, with METIS as its initial partitioner).
//!
//! Every parallel step is synchronous over a chunk of nodes: the nodes of a chunk choose their
//! moves in parallel from the state before the chunk, then the moves are applied one after
//! another in the chunk's order, each checked against the weight limits again. The result
//! depends on the seed only, not on the number of threads or their scheduling.

use super::assignment::PartitionError;
use super::partitioners::{metis_kway, NONE};
use super::symmetric::SymGraph;
use coarsen::{cluster, contract};
use rayon::prelude::*;
use refine::refine;
use std::sync::Mutex;

mod coarsen;
mod refine;
#[cfg(test)]
mod tests;

/// Adjacency entries (twice the edges) at or below which a graph is handed to METIS as it is.
const COARSEST_ENTRIES: usize = 1 << 21;
/// A coarser level must have at least this many nodes per part (else the finer one is the
/// coarsest): METIS needs room to balance.
const COARSEST_NODES_PER_PART: usize = 1_000;
/// A level that keeps more than this fraction of its nodes ends the coarsening.
const MIN_SHRINK: f64 = 0.9;
/// Allowed part weight above the mean (METIS' default for k-way, `ufactor` 30).
const EPSILON: f64 = 0.03;
/// Label propagation rounds per level while clustering.
const CLUSTER_ROUNDS: usize = 3;
/// Label propagation rounds per level while refining.
const REFINE_ROUNDS: usize = 8;
/// Clustering stops after a round that moved fewer than `1 / CLUSTER_CONVERGED` of the nodes.
const CLUSTER_CONVERGED: usize = 50;
/// Refinement stops after a round that moved fewer than `1 / REFINE_CONVERGED` of the nodes.
const REFINE_CONVERGED: usize = 500;
/// Nodes that choose their moves from the same state.
const CHUNK: usize = 8_192;
/// A cluster of more adjacency entries is contracted on all cores, in pieces of
/// [`HEAVY_PIECE`] entries.
const HEAVY_CLUSTER: usize = 1 << 16;
/// Entries per piece of a heavy cluster.
const HEAVY_PIECE: usize = 1 << 14;

/// One level of the hierarchy: an undirected weighted graph without self-loops or duplicate
/// edges.
struct Level {
    xadj: Vec<usize>,
    adj: Vec<u32>,
    /// Edge weights (saturated at `u32::MAX`, which only a graph of more than 2^32 edges
    /// between two clusters could reach); `None`: every edge weighs 1 (the input graph).
    ewgt: Option<Vec<u32>>,
    /// Node weights.
    vwgt: Vec<u64>,
}

impl Level {
    fn n(&self) -> usize {
        self.vwgt.len()
    }

    /// The neighbours of `v` with the weights of the edges to them.
    fn edges(&self, v: usize) -> impl Iterator<Item = (usize, u64)> + '_ {
        let range = self.xadj[v]..self.xadj[v + 1];
        let weights = self.ewgt.as_deref();
        range.map(move |i| (self.adj[i] as usize, weights.map_or(1, |w| w[i] as u64)))
    }
}

/// Nodes of at most this many edges rate their neighbours' labels by sorting them (cache
/// friendly); larger ones through the dense accumulator.
const SORTED_RATING_MAX: usize = 64;

/// Scratch space of one thread: a dense accumulator (all zeros between uses), the indices it
/// touched, and the summed ratings of the last [`Scratch::rate`].
#[derive(Default)]
struct Scratch {
    acc: Vec<u64>,
    touched: Vec<u32>,
    rated: Vec<(u32, u64)>,
}

impl Scratch {
    /// The sum of the values of every key of `items` (at most `count` items; keys below the
    /// pool's length) into `self.rated`, keys ascending.
    fn rate(&mut self, count: usize, items: impl Iterator<Item = (usize, u64)>) {
        self.rated.clear();
        if count <= SORTED_RATING_MAX {
            self.rated.extend(items.map(|(k, v)| (k as u32, v)));
            self.rated.sort_unstable_by_key(|&(k, _)| k);
            let mut out = 0usize;
            for i in 0..self.rated.len() {
                if out > 0 && self.rated[out - 1].0 == self.rated[i].0 {
                    self.rated[out - 1].1 += self.rated[i].1;
                } else {
                    self.rated[out] = self.rated[i];
                    out += 1;
                }
            }
            self.rated.truncate(out);
        } else {
            self.rate_dense(items);
            self.rated.sort_unstable_by_key(|&(k, _)| k);
        }
    }

    /// [`Scratch::rate`] through the dense accumulator, keys in the order first seen.
    fn rate_dense(&mut self, items: impl Iterator<Item = (usize, u64)>) {
        self.rated.clear();
        for (k, v) in items {
            if self.acc[k] == 0 {
                self.touched.push(k as u32);
            }
            self.acc[k] += v;
        }
        for &k in &self.touched {
            self.rated.push((k, self.acc[k as usize]));
            self.acc[k as usize] = 0;
        }
        self.touched.clear();
    }

    /// The rating of `key` in `self.rated` (0 where absent).
    fn rating(&self, key: usize) -> u64 {
        self.rated.iter().find(|&&(k, _)| k as usize == key).map_or(0, |&(_, r)| r)
    }
}

/// One [`Scratch`] per thread of the rayon pool, grown on first use to `len` entries.
struct ScratchPool {
    slots: Vec<Slot>,
    len: usize,
}

/// A thread's [`Scratch`] on cache lines of its own (its lock is taken for every node).
#[repr(align(128))]
struct Slot(Mutex<Scratch>);

impl ScratchPool {
    fn new(len: usize) -> Self {
        let threads = rayon::current_num_threads().max(1);
        Self { slots: (0..threads).map(|_| Slot(Mutex::new(Scratch::default()))).collect(), len }
    }

    fn with<R>(&self, f: impl FnOnce(&mut Scratch) -> R) -> R {
        let i = rayon::current_thread_index().unwrap_or(0) % self.slots.len();
        let mut s = self.slots[i].0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if s.acc.len() < self.len {
            s.acc.resize(self.len, 0);
        }
        f(&mut s)
    }
}

/// splitmix64 of `x`: the seeded tie-breaks and orders.
pub(super) fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

fn tie(seed: u64, v: usize, c: usize) -> u64 {
    mix(seed ^ mix((v as u64) << 32 ^ c as u64))
}

/// The nodes `0..n` in a seeded random order.
fn shuffled(n: usize, seed: u64) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    order.par_sort_unstable_by_key(|&v| (mix(seed ^ v as u64), v));
    order
}

/// Partitions `sym` (node weights `weight`) into `parts` parts: coarsening, METIS on the
/// coarsest level, refinement on the way back. Graphs of at most [`COARSEST_ENTRIES`] adjacency
/// entries are partitioned by METIS directly.
pub(super) fn multilevel(sym: SymGraph, weight: &[u64], parts: usize, seed: u64) -> Result<Vec<u32>, PartitionError> {
    let limits = Coarsest { entries: COARSEST_ENTRIES, nodes_per_part: COARSEST_NODES_PER_PART };
    multilevel_with(sym, weight, parts, seed, limits).map(|(part, _)| part)
}

/// Where the coarsening ends.
#[derive(Clone, Copy)]
struct Coarsest {
    /// A level of at most this many adjacency entries is the coarsest.
    entries: usize,
    /// A level of fewer nodes per part is not used (the finer one is the coarsest).
    nodes_per_part: usize,
}

/// [`multilevel`] with the coarsening's end at `limits`; also returns the number of levels
/// (1: the graph went to METIS as it is).
fn multilevel_with(
    sym: SymGraph,
    weight: &[u64],
    parts: usize,
    seed: u64,
    limits: Coarsest,
) -> Result<(Vec<u32>, usize), PartitionError> {
    let total: u64 = weight.iter().sum();
    let max_part = ((total as f64 / parts as f64) * (1.0 + EPSILON)).floor() as u64;
    let max_cluster = ((EPSILON * total as f64 / parts as f64) as u64).max(1);
    let pool = ScratchPool::new(weight.len());
    let mut levels = vec![Level { xadj: sym.xadj, adj: sym.adj, ewgt: None, vwgt: weight.to_vec() }];
    // maps[i]: node of level i -> node of level i + 1
    let mut maps: Vec<Vec<u32>> = Vec::new();
    loop {
        let g = levels.last().expect("the input level");
        if g.adj.len() <= limits.entries {
            break;
        }
        let level_seed = mix(seed ^ levels.len() as u64);
        let clusters = cluster(g, max_cluster, level_seed, &pool);
        let (coarse, map) = contract(g, &clusters, &pool, HEAVY_CLUSTER);
        log::debug!(
            "multilevel partitioner: level {} has {} nodes and {} adjacency entries",
            levels.len(),
            coarse.n(),
            coarse.adj.len()
        );
        if coarse.n() < limits.nodes_per_part * parts || coarse.n() as f64 > MIN_SHRINK * g.n() as f64 {
            break;
        }
        levels.push(coarse);
        maps.push(map);
    }
    let depth = levels.len();
    let coarsest = levels.last().expect("the input level");
    let mut part = metis_kway(&coarsest.xadj, &coarsest.adj, coarsest.ewgt.as_deref(), &coarsest.vwgt, parts, seed)?;
    refine(coarsest, &mut part, parts, max_part, mix(seed ^ 0xC0A5), &pool);
    while let Some(map) = maps.pop() {
        levels.pop();
        let g = levels.last().expect("a finer level");
        part = map.par_iter().map(|&c| part[c as usize]).collect();
        refine(g, &mut part, parts, max_part, mix(seed ^ levels.len() as u64 ^ 0xF17E), &pool);
    }
    Ok((part, depth))
}

/// The label (cluster or part) node `v` moves to among `s.rated` (its edge weight per label):
/// the one with the most weight among those `fits`, if more than to its own label `own`; ties
/// broken by the seed. `NONE` to stay.
fn best_label(v: usize, own: usize, seed: u64, s: &Scratch, fits: impl Fn(usize) -> bool) -> u32 {
    let mut best = (s.rating(own), 0u64, NONE);
    for &(label, r) in &s.rated {
        let label = label as usize;
        if label == own || !fits(label) {
            continue;
        }
        let key = (r, tie(seed, v, label));
        if key.0 > best.0 || (key.0 == best.0 && best.2 != NONE && key.1 > best.1) {
            best = (key.0, key.1, label as u32);
        }
    }
    best.2
}
