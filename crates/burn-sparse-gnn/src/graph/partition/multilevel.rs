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
use super::partitioners::{metis_kway, SymGraph, NONE};
use rayon::prelude::*;
use std::sync::Mutex;

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

/// Size-constrained label propagation: every node starts alone and repeatedly joins the
/// cluster it is most strongly connected to whose weight stays within `max_cluster`. Nodes
/// left alone are then grouped by the cluster they are most strongly connected to (two-hop
/// clustering, which coarsens the leaves around hubs), isolated nodes with each other. Returns
/// every node's cluster id (a node id of the level).
fn cluster(g: &Level, max_cluster: u64, seed: u64, pool: &ScratchPool) -> Vec<u32> {
    let n = g.n();
    let mut cluster: Vec<u32> = (0..n as u32).collect();
    let mut cw = g.vwgt.clone();
    let order = shuffled(n, seed);
    for round in 0..CLUSTER_ROUNDS {
        let round_seed = mix(seed ^ round as u64);
        let mut moved = 0usize;
        for chunk in order.chunks(CHUNK) {
            let (cl, cwr) = (&cluster, &cw);
            let wanted: Vec<u32> = chunk
                .par_iter()
                .map(|&v| pool.with(|s| best_cluster(g, v as usize, cl, cwr, max_cluster, round_seed, s)))
                .collect();
            for (&v, &c) in chunk.iter().zip(&wanted) {
                let (v, old) = (v as usize, cluster[v as usize]);
                if c == NONE || c == old {
                    continue;
                }
                let w = g.vwgt[v];
                // the cluster emptied or filled up since the choice
                if cw[c as usize] == 0 || cw[c as usize] + w > max_cluster {
                    continue;
                }
                cw[old as usize] -= w;
                cw[c as usize] += w;
                cluster[v] = c;
                moved += 1;
            }
        }
        if moved * CLUSTER_CONVERGED < n {
            break;
        }
    }
    group_singletons(g, &mut cluster, max_cluster, seed, pool);
    cluster
}

/// The cluster `v` joins: the one it has the most edge weight to among those it fits in,
/// if that is more than to its own; ties broken by the seed. `NONE` to stay.
fn best_cluster(g: &Level, v: usize, cluster: &[u32], cw: &[u64], max_cluster: u64, seed: u64, s: &mut Scratch) -> u32 {
    let own = cluster[v] as usize;
    s.rate(g.xadj[v + 1] - g.xadj[v], g.edges(v).map(|(u, w)| (cluster[u] as usize, w)));
    let w = g.vwgt[v];
    let mut best = (s.rating(own), 0u64, NONE);
    for &(c, r) in &s.rated {
        let c = c as usize;
        if c == own || cw[c] + w > max_cluster {
            continue;
        }
        let key = (r, tie(seed, v, c));
        if key.0 > best.0 || (key.0 == best.0 && best.2 != NONE && key.1 > best.1) {
            best = (key.0, key.1, c as u32);
        }
    }
    best.2
}

/// Nodes still alone in their cluster, grouped by the cluster they have most edge weight to
/// (ignoring its weight), into clusters of at most `max_cluster`.
fn group_singletons(g: &Level, cluster: &mut [u32], max_cluster: u64, seed: u64, pool: &ScratchPool) {
    let n = g.n();
    let mut size = vec![0u32; n];
    for &c in cluster.iter() {
        size[c as usize] += 1;
    }
    let cl: &[u32] = cluster;
    let mut alone: Vec<(u32, u32)> = (0..n)
        .into_par_iter()
        .filter(|&v| size[cl[v] as usize] == 1)
        .map(|v| {
            let favourite = pool.with(|s| {
                s.rate(g.xadj[v + 1] - g.xadj[v], g.edges(v).map(|(u, w)| (cl[u] as usize, w)));
                let mut best = (0u64, 0u64, NONE);
                for &(c, r) in &s.rated {
                    let key = (r, tie(seed, v, c as usize));
                    if c as usize != v && (key.0, key.1) > (best.0, best.1) {
                        best = (key.0, key.1, c);
                    }
                }
                best.2
            });
            (favourite, v as u32)
        })
        .collect();
    alone.par_sort_unstable();
    let mut i = 0;
    while i < alone.len() {
        let favourite = alone[i].0;
        let mut j = i;
        while j < alone.len() && alone[j].0 == favourite {
            // a group: its first node is the cluster id
            let leader = alone[j].1;
            let mut weight = 0u64;
            while j < alone.len() && alone[j].0 == favourite && weight + g.vwgt[alone[j].1 as usize] <= max_cluster {
                weight += g.vwgt[alone[j].1 as usize];
                cluster[alone[j].1 as usize] = leader;
                j += 1;
            }
            if weight == 0 {
                // a node heavier than the limit stays alone
                j += 1;
            }
        }
        i = j;
    }
}

/// The graph of the clusters: one node per cluster (numbered in the order of their first
/// node), its weight the sum of its nodes', the edge weight between two clusters the sum of
/// the edges between their nodes (edges inside a cluster dropped). Returns it and every node's
/// cluster number. Clusters of more than `heavy` adjacency entries are summed on all cores.
fn contract(g: &Level, cluster: &[u32], pool: &ScratchPool, heavy: usize) -> (Level, Vec<u32>) {
    let n = g.n();
    let mut number = vec![NONE; n];
    let mut nc = 0u32;
    for &c in cluster {
        if number[c as usize] == NONE {
            number[c as usize] = nc;
            nc += 1;
        }
    }
    let nc = nc as usize;
    let map: Vec<u32> = cluster.par_iter().map(|&c| number[c as usize]).collect();
    drop(number);
    // the nodes of every cluster, in id order
    let mut start = vec![0usize; nc + 1];
    for &c in &map {
        start[c as usize + 1] += 1;
    }
    for c in 0..nc {
        start[c + 1] += start[c];
    }
    let mut cursor = start.clone();
    let mut members = vec![0u32; n];
    for (v, &c) in map.iter().enumerate() {
        members[cursor[c as usize]] = v as u32;
        cursor[c as usize] += 1;
    }
    drop(cursor);
    let range = |v: u32| g.xadj[v as usize]..g.xadj[v as usize + 1];
    // the summed weights of the edges at `indices` of `g.adj` (`count` of them) to clusters
    // other than `c`, into `s.rated`
    let rate = |c: usize, count: usize, indices: &mut dyn Iterator<Item = usize>, s: &mut Scratch| {
        let weights = g.ewgt.as_deref();
        let edges = indices
            .map(|i| (map[g.adj[i] as usize] as usize, weights.map_or(1, |w| w[i] as u64)))
            .filter(|&(cu, _)| cu != c);
        s.rate(count, edges);
    };
    let lists: Vec<(u64, Vec<(u32, u32)>)> = (0..nc)
        .into_par_iter()
        .map(|c| {
            let nodes = &members[start[c]..start[c + 1]];
            let vw: u64 = nodes.iter().map(|&v| g.vwgt[v as usize]).sum();
            let count: usize = nodes.iter().map(|&v| range(v).len()).sum();
            let summed: Vec<(u32, u64)> = if count <= heavy {
                pool.with(|s| {
                    rate(c, count, &mut nodes.iter().flat_map(|&v| range(v)), s);
                    s.rated.clone()
                })
            } else {
                // a cluster of hubs: its entries in pieces on all cores, the pieces' sums merged
                let pieces: Vec<std::ops::Range<usize>> = nodes
                    .iter()
                    .flat_map(|&v| {
                        let r = range(v);
                        r.clone().step_by(HEAVY_PIECE).map(move |a| a..(a + HEAVY_PIECE).min(r.end))
                    })
                    .collect();
                pieces
                    .into_par_iter()
                    .map(|piece| {
                        pool.with(|s| {
                            rate(c, piece.len(), &mut piece.clone(), s);
                            s.rated.clone()
                        })
                    })
                    .reduce(Vec::new, merge_sums)
            };
            (vw, summed.into_iter().map(|(cu, w)| (cu, w.min(u32::MAX as u64) as u32)).collect())
        })
        .collect();
    let mut xadj = Vec::with_capacity(nc + 1);
    xadj.push(0usize);
    let mut acc = 0usize;
    for (_, l) in &lists {
        acc += l.len();
        xadj.push(acc);
    }
    let vwgt: Vec<u64> = lists.iter().map(|(w, _)| *w).collect();
    let (adj, ewgt): (Vec<u32>, Vec<u32>) = lists.into_par_iter().flat_map_iter(|(_, l)| l).unzip();
    (Level { xadj, adj, ewgt: Some(ewgt), vwgt }, map)
}

/// Two lists of (key, sum) with ascending keys merged into one, the sums of equal keys added.
fn merge_sums(a: Vec<(u32, u64)>, b: Vec<(u32, u64)>) -> Vec<(u32, u64)> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push((a[i].0, a[i].1 + b[j].1));
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// Label propagation refinement: every node moves to the part it has the most edge weight to,
/// where that beats its own part and the part stays within `max_part`; rounds until no node
/// moves (at most [`REFINE_ROUNDS`]).
fn refine(g: &Level, part: &mut [u32], parts: usize, max_part: u64, seed: u64, pool: &ScratchPool) {
    let n = g.n();
    let mut load = vec![0u64; parts];
    for (v, &q) in part.iter().enumerate() {
        load[q as usize] += g.vwgt[v];
    }
    let order = shuffled(n, seed);
    for round in 0..REFINE_ROUNDS {
        let round_seed = mix(seed ^ round as u64);
        let mut moved = 0usize;
        for chunk in order.chunks(CHUNK) {
            let (pt, ld) = (&*part, &load);
            let wanted: Vec<u32> = chunk
                .par_iter()
                .map(|&v| pool.with(|s| best_part(g, v as usize, pt, ld, max_part, round_seed, s)))
                .collect();
            for (&v, &q) in chunk.iter().zip(&wanted) {
                if q == NONE {
                    continue;
                }
                let (v, old) = (v as usize, part[v as usize] as usize);
                let w = g.vwgt[v];
                if load[q as usize] + w > max_part {
                    continue;
                }
                load[old] -= w;
                load[q as usize] += w;
                part[v] = q;
                moved += 1;
            }
        }
        if moved * REFINE_CONVERGED < n {
            break;
        }
    }
}

/// The part `v` moves to: the one with the most edge weight from `v` among those it fits in,
/// if more than to its own part; ties broken by the seed. `NONE` to stay.
fn best_part(g: &Level, v: usize, part: &[u32], load: &[u64], max_part: u64, seed: u64, s: &mut Scratch) -> u32 {
    let own = part[v] as usize;
    s.rate_dense(g.edges(v).map(|(u, w)| (part[u] as usize, w)));
    if s.rated.len() < 2 && s.rated.first().is_none_or(|&(q, _)| q as usize == own) {
        // an inner node
        return NONE;
    }
    let w = g.vwgt[v];
    let mut best = (s.rating(own), 0u64, NONE);
    for &(q, r) in &s.rated {
        let q = q as usize;
        if q == own || load[q] + w > max_part {
            continue;
        }
        let key = (r, tie(seed, v, q));
        if key.0 > best.0 || (key.0 == best.0 && best.2 != NONE && key.1 > best.1) {
            best = (key.0, key.1, q as u32);
        }
    }
    best.2
}

#[cfg(test)]
mod tests {
    use super::super::partitioners::{metis_kway, node_weights, symmetric_copy, symmetrize, symmetrize_general};
    use super::*;
    use crate::graph::csr::{BuildOptions, Csr};
    use crate::random::{random_csr, RandomGraphSpec};
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    /// Coarsening limits for graphs of thousands of nodes.
    const SMALL: Coarsest = Coarsest { entries: 2_000, nodes_per_part: 50 };

    /// Entries of `sym` between parts (twice the cut edges).
    fn cut(sym: &SymGraph, part: &[u32]) -> usize {
        (0..part.len()).map(|v| sym.neighbours(v).iter().filter(|&&u| part[u as usize] != part[v]).count()).sum()
    }

    /// The heaviest part's weight over the mean part weight.
    fn imbalance(weight: &[u64], part: &[u32], parts: usize) -> f64 {
        let mut load = vec![0u64; parts];
        for (v, &q) in part.iter().enumerate() {
            assert!((q as usize) < parts, "node {v} in part {q}");
            load[q as usize] += weight[v];
        }
        let total: u64 = load.iter().sum();
        *load.iter().max().expect("parts") as f64 * parts as f64 / total as f64
    }

    /// `blocks` communities of `size` nodes (ids interleaved), `inner` random edges per node
    /// inside its community and one edge to another community per `1 / cross` nodes, plus
    /// `isolated` nodes without edges.
    fn communities(blocks: usize, size: usize, inner: usize, cross: f64, isolated: usize, seed: u64) -> Csr {
        let mut rng = StdRng::seed_from_u64(seed);
        let n = blocks * size;
        let (mut src, mut dst) = (Vec::new(), Vec::new());
        for v in 0..n {
            for _ in 0..inner {
                let u = rng.random_range(0..size) * blocks + v % blocks;
                src.push(v as i64);
                dst.push(u as i64);
            }
            if rng.random::<f64>() < cross {
                src.push(v as i64);
                dst.push(rng.random_range(0..n) as i64);
            }
        }
        Csr::from_edges(n + isolated, &src, &dst, None, BuildOptions::undirected()).expect("graph")
    }

    fn graphs() -> Vec<(&'static str, Csr)> {
        let hubs = random_csr(&RandomGraphSpec {
            n_rows: 6_001,
            n_cols: 6_001,
            avg_degree: 5,
            hub_degree: 3_000,
            ..Default::default()
        });
        vec![("communities", communities(6, 1_501, 4, 0.3, 37, 3)), ("random with hubs", hubs)]
    }

    #[test]
    fn coarsens_and_cuts_about_as_little_as_metis() {
        for (name, adj) in graphs() {
            let weight = node_weights(&adj);
            for parts in [2usize, 3, 4] {
                let sym = symmetrize(&adj);
                let metis = metis_kway(&sym.xadj, &sym.adj, None, &weight, parts, 1).expect("metis");
                let (ours, depth) = multilevel_with(symmetrize(&adj), &weight, parts, 1, SMALL).expect("multilevel");
                let (metis_cut, our_cut) = (cut(&sym, &metis), cut(&sym, &ours));
                let balance = imbalance(&weight, &ours, parts);
                println!("{name} P={parts}: {depth} levels, cut {our_cut} (METIS {metis_cut}), imbalance {balance:.4}");
                assert!(depth >= 2, "{name} P={parts}: the graph was not coarsened");
                assert!(balance <= 1.0 + EPSILON + 1e-9, "{name} P={parts}: imbalance {balance}");
                let limit = if name == "communities" { 1.10 } else { 1.15 };
                assert!(
                    our_cut as f64 <= limit * metis_cut as f64,
                    "{name} P={parts}: cut {our_cut} against METIS' {metis_cut}"
                );
            }
        }
    }

    #[test]
    fn symmetric_graphs_are_copied_as_the_general_symmetrisation_builds_them() {
        let undirected = communities(3, 500, 3, 0.2, 5, 4);
        let copied = symmetric_copy(&undirected).expect("an undirected graph is symmetric");
        let built = symmetrize_general(&undirected);
        assert_eq!((&copied.xadj, &copied.adj), (&built.xadj, &built.adj));
        // self-loops are dropped, directed graphs are not copied
        let (src, dst) = ([0i64, 0, 1, 1, 2], [0i64, 1, 0, 2, 1]);
        let looped = Csr::from_edges(3, &src, &dst, None, BuildOptions::default()).expect("graph");
        let copied = symmetric_copy(&looped).expect("symmetric");
        assert_eq!((copied.xadj, copied.adj), (vec![0, 1, 3, 4], vec![1, 0, 2, 1]));
        let directed = Csr::from_edges(3, &[0i64, 1], &[1i64, 2], None, BuildOptions::default()).expect("graph");
        assert!(symmetric_copy(&directed).is_none());
        assert_eq!(symmetrize(&directed).adj, vec![1, 0, 2, 1]);
    }

    #[test]
    fn clusters_of_hubs_contract_in_pieces_as_in_one() {
        let adj = random_csr(&RandomGraphSpec {
            n_rows: 3_001,
            n_cols: 3_001,
            avg_degree: 4,
            hub_degree: 40_000,
            ..Default::default()
        });
        let sym = symmetrize(&adj);
        let g = Level { xadj: sym.xadj, adj: sym.adj, ewgt: None, vwgt: node_weights(&adj) };
        let pool = ScratchPool::new(g.n());
        let clusters = cluster(&g, g.vwgt.iter().sum::<u64>() / 40, 5, &pool);
        let (whole, map) = contract(&g, &clusters, &pool, usize::MAX);
        let (pieces, map_pieces) = contract(&g, &clusters, &pool, 100);
        assert_eq!(map, map_pieces);
        assert_eq!(
            (&whole.xadj, &whole.adj, &whole.ewgt, &whole.vwgt),
            (&pieces.xadj, &pieces.adj, &pieces.ewgt, &pieces.vwgt)
        );
        // a second level from the weighted one, also in pieces
        let again = cluster(&whole, whole.vwgt.iter().sum::<u64>() / 10, 6, &pool);
        let (a, _) = contract(&whole, &again, &pool, usize::MAX);
        let (b, _) = contract(&whole, &again, &pool, 50);
        assert_eq!((&a.xadj, &a.adj, &a.ewgt, &a.vwgt), (&b.xadj, &b.adj, &b.ewgt, &b.vwgt));
        assert!(a.n() < whole.n() && whole.n() < g.n(), "{} {} {}", a.n(), whole.n(), g.n());
        // the weights are kept: node weights sum to the input's, edge weights to the cut entries
        assert_eq!(a.vwgt.iter().sum::<u64>(), g.vwgt.iter().sum::<u64>());
    }

    #[test]
    fn equal_on_any_number_of_threads() {
        let adj = communities(4, 2_000, 3, 0.5, 11, 9);
        let weight = node_weights(&adj);
        let run = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
            pool.install(|| multilevel_with(symmetrize(&adj), &weight, 3, 42, SMALL).expect("multilevel"))
        };
        let one = run(1);
        assert!(one.1 >= 3, "only {} levels", one.1);
        assert_eq!(one, run(3));
        assert_eq!(one, run(4));
        let other_seed = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .expect("pool")
            .install(|| multilevel_with(symmetrize(&adj), &weight, 3, 43, SMALL).expect("multilevel"));
        assert_ne!(one.0, other_seed.0, "the seed changes nothing");
    }
}
