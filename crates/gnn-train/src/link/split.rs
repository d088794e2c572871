//! The edge split of link prediction (PyG `RandomLinkSplit`'s semantics): valid and test edges
//! held out of the graph the encoder passes messages over, an undirected edge kept together,
//! fixed negatives for valid and test.

use crate::error::TrainError;
use burn_sparse_gnn::{BuildOptions, Csr};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::HashSet;

/// A pair of nodes: `(source, destination)`.
pub type Pair = [u32; 2];

/// How to split a graph's edges.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LinkSplitConfig {
    /// Share of the edges held out for validation (PyG's default 0.05).
    pub valid: f64,
    /// Share of the edges held out for testing (PyG's default 0.10).
    pub test: f64,
    /// Seed of the split and of the fixed negatives.
    pub seed: u64,
}

impl Default for LinkSplitConfig {
    fn default() -> Self {
        Self { valid: 0.05, test: 0.10, seed: 42 }
    }
}

/// Training, validation and test pairs over `num_nodes` nodes. In an undirected split every
/// edge is listed once (the encoder's graph holds both directions of the training edges).
#[derive(Clone, Debug, PartialEq)]
pub struct LinkSplit {
    pub num_nodes: usize,
    pub undirected: bool,
    pub train: Vec<Pair>,
    /// Weights of the training edges, where the graph has edge weights.
    pub train_weights: Option<Vec<f32>>,
    pub valid_pos: Vec<Pair>,
    pub valid_neg: Vec<Pair>,
    pub test_pos: Vec<Pair>,
    pub test_neg: Vec<Pair>,
}

/// The edges of `adj` (row = destination) as `(source, destination)` pairs without self-loops,
/// each undirected edge once (source < destination) when the graph is symmetric, with their
/// weights.
fn edges(adj: &Csr) -> (Vec<Pair>, Option<Vec<f32>>, bool) {
    let undirected = adj.is_symmetric();
    let (mut out, mut w) = (Vec::new(), adj.weights().map(|_| Vec::new()));
    for r in 0..adj.n_rows() {
        for e in adj.row_ptr()[r]..adj.row_ptr()[r + 1] {
            let c = adj.col_idx()[e];
            if c as usize == r || (undirected && c as usize > r) {
                continue;
            }
            out.push([c, r as u32]);
            if let (Some(w), Some(ws)) = (w.as_mut(), adj.weights()) {
                w.push(ws[e]);
            }
        }
    }
    (out, w, undirected)
}

fn key(p: Pair, undirected: bool) -> (u32, u32) {
    if undirected {
        (p[0].min(p[1]), p[0].max(p[1]))
    } else {
        (p[0], p[1])
    }
}

impl LinkSplit {
    /// A seeded random split of the edges of `adj` (self-loops are not edges to predict) with
    /// as many fixed negatives as positives in valid and test: uniform pairs of distinct nodes
    /// that are no edge of `adj` in either split, each drawn once.
    ///
    /// Errors when a share is outside `[0, 1)`, the shares leave no training edge, a held-out
    /// share rounds to no edge, or the graph has too few non-edges for the negatives.
    pub fn random(adj: &Csr, cfg: LinkSplitConfig) -> Result<Self, TrainError> {
        for (what, v) in [("valid", cfg.valid), ("test", cfg.test)] {
            if !(0.0..1.0).contains(&v) || !v.is_finite() {
                return Err(TrainError::Data(format!("the {what} share of the edges must be in [0, 1), got {v}")));
            }
        }
        if adj.n_rows() != adj.n_cols() {
            return Err(TrainError::Data(format!(
                "link prediction needs a square graph, got {} x {}",
                adj.n_rows(),
                adj.n_cols()
            )));
        }
        let (mut all, weights, undirected) = edges(adj);
        let m = all.len();
        let n_valid = (cfg.valid * m as f64).round() as usize;
        let n_test = (cfg.test * m as f64).round() as usize;
        let too_small = |why: String| {
            TrainError::Data(format!(
                "the graph is too small to split for link prediction: {m} edges (without self-loops), {why}"
            ))
        };
        if (cfg.valid > 0.0 && n_valid == 0) || n_test == 0 {
            return Err(too_small(format!(
                "a valid share of {} and a test share of {} leave {n_valid} and {n_test} held-out edges",
                cfg.valid, cfg.test
            )));
        }
        if n_valid + n_test >= m {
            return Err(too_small(format!("{n_valid} valid and {n_test} test edges leave none to train on")));
        }
        let mut rng = StdRng::seed_from_u64(cfg.seed);
        let mut order: Vec<usize> = (0..m).collect();
        order.shuffle(&mut rng);
        let pick = |range: std::ops::Range<usize>| -> Vec<usize> {
            let mut v = order[range].to_vec();
            v.sort_unstable();
            v
        };
        let test_ids = pick(0..n_test);
        let valid_ids = pick(n_test..n_test + n_valid);
        let train_ids = pick(n_test + n_valid..m);
        let take = |ids: &[usize]| ids.iter().map(|&i| all[i]).collect::<Vec<_>>();
        let (test_pos, valid_pos, train) = (take(&test_ids), take(&valid_ids), take(&train_ids));
        let train_weights = weights.map(|w| train_ids.iter().map(|&i| w[i]).collect());
        let known: HashSet<(u32, u32)> = all.iter().map(|&p| key(p, undirected)).collect();
        all.clear();
        let mut negatives = sample_negatives(adj.n_rows(), &known, undirected, n_valid + n_test, &mut rng)?;
        let test_neg = negatives.split_off(n_valid);
        Ok(Self {
            num_nodes: adj.n_rows(),
            undirected,
            train,
            train_weights,
            valid_pos,
            valid_neg: negatives,
            test_pos,
            test_neg,
        })
    }

    /// A split given as lists (e.g. read from files), checked: node ids in range, no self
    /// pair, at least one training edge, one test positive and one test negative, as many
    /// weights as training edges.
    pub fn check(&self) -> Result<(), TrainError> {
        let n = self.num_nodes;
        for (what, pairs) in self.parts() {
            for (i, p) in pairs.iter().enumerate() {
                if p[0] as usize >= n || p[1] as usize >= n {
                    return Err(TrainError::Data(format!(
                        "{what}: pair {i} ({}, {}) has a node outside 0..{n}",
                        p[0], p[1]
                    )));
                }
            }
        }
        for (what, len) in
            [("train", self.train.len()), ("test_pos", self.test_pos.len()), ("test_neg", self.test_neg.len())]
        {
            if len == 0 {
                return Err(TrainError::Data(format!("the link split's {what} is empty")));
            }
        }
        if let Some(w) = &self.train_weights {
            if w.len() != self.train.len() {
                return Err(TrainError::Data(format!(
                    "{} training edge weights for {} training edges",
                    w.len(),
                    self.train.len()
                )));
            }
        }
        Ok(())
    }

    /// Every list with its file name: `train_pos`, `valid_pos`, `valid_neg`, `test_pos`,
    /// `test_neg`.
    pub fn parts(&self) -> [(&'static str, &[Pair]); 5] {
        [
            ("train_pos", &self.train),
            ("valid_pos", &self.valid_pos),
            ("valid_neg", &self.valid_neg),
            ("test_pos", &self.test_pos),
            ("test_neg", &self.test_neg),
        ]
    }

    /// The graph the encoder passes messages over: the training edges (both directions in an
    /// undirected split) with their weights, with self-loops when `self_loops`.
    pub fn message_graph(&self, self_loops: bool) -> Result<Csr, TrainError> {
        let src: Vec<i64> = self.train.iter().map(|p| p[0] as i64).collect();
        let dst: Vec<i64> = self.train.iter().map(|p| p[1] as i64).collect();
        let opts = BuildOptions { symmetrize: self.undirected, add_self_loops: self_loops, dedup: true };
        Csr::from_edges(self.num_nodes, &src, &dst, self.train_weights.as_deref(), opts)
            .map_err(|e| TrainError::Data(format!("the training edges: {e}")))
    }

    /// The training positives as a pattern (row = destination): the training edges, both
    /// directions in an undirected split, no self-loops, no weights; rows sorted.
    pub fn positive_pattern(&self) -> Result<Csr, TrainError> {
        self.message_graph(false)?.with_weights(None).map_err(|e| TrainError::Data(format!("the training edges: {e}")))
    }
}

/// `count` distinct uniform pairs of distinct nodes that are no edge of `adj` (in either
/// direction when `undirected`), drawn with `seed`: the fixed negatives of a split given
/// without them.
pub fn negatives_for(adj: &Csr, undirected: bool, count: usize, seed: u64) -> Result<Vec<Pair>, TrainError> {
    let mut known = HashSet::new();
    for r in 0..adj.n_rows() {
        for &c in &adj.col_idx()[adj.row_ptr()[r]..adj.row_ptr()[r + 1]] {
            known.insert(key([c, r as u32], undirected));
        }
    }
    sample_negatives(adj.n_rows(), &known, undirected, count, &mut StdRng::seed_from_u64(seed))
}

/// `count` distinct uniform pairs of distinct nodes that are not in `known`.
fn sample_negatives(
    n: usize,
    known: &HashSet<(u32, u32)>,
    undirected: bool,
    count: usize,
    rng: &mut StdRng,
) -> Result<Vec<Pair>, TrainError> {
    let pairs = if undirected { n * n.saturating_sub(1) / 2 } else { n * n.saturating_sub(1) };
    let free = pairs.saturating_sub(known.len());
    if free < count {
        return Err(TrainError::Data(format!(
            "the graph is too dense for link prediction's negatives: {count} non-edges needed, {free} exist"
        )));
    }
    let mut seen = HashSet::with_capacity(count);
    let mut out = Vec::with_capacity(count);
    // rejection sampling; a graph whose non-edges are few takes long, so stop at a bound
    let mut tries = 0usize;
    let limit = 1000 * count.max(1) + 1_000_000;
    while out.len() < count {
        tries += 1;
        if tries > limit {
            return Err(TrainError::Data(format!(
                "drew {} of {count} negative pairs in {limit} tries: the graph is too dense",
                out.len()
            )));
        }
        let (u, v) = (rng.random_range(0..n) as u32, rng.random_range(0..n) as u32);
        if u == v {
            continue;
        }
        let k = key([u, v], undirected);
        if known.contains(&k) || !seen.insert(k) {
            continue;
        }
        out.push([u, v]);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(n: usize) -> Csr {
        let src: Vec<i64> = (0..n as i64).collect();
        let dst: Vec<i64> = (0..n as i64).map(|i| (i + 1) % n as i64).collect();
        Csr::from_edges(n, &src, &dst, None, BuildOptions::undirected()).unwrap()
    }

    #[test]
    fn splits_undirected_edges_once_and_keeps_held_out_edges_out_of_the_message_graph() {
        let adj = ring(200);
        let s = LinkSplit::random(&adj, LinkSplitConfig { valid: 0.05, test: 0.1, seed: 3 }).unwrap();
        assert!(s.undirected);
        assert_eq!((s.valid_pos.len(), s.test_pos.len(), s.train.len()), (10, 20, 170));
        assert_eq!((s.valid_neg.len(), s.test_neg.len()), (10, 20));
        let g = s.message_graph(false).unwrap();
        assert_eq!(g.nnz(), 2 * 170);
        let has = |u: u32, v: u32| g.col_idx()[g.row_ptr()[v as usize]..g.row_ptr()[v as usize + 1]].contains(&u);
        for p in s.valid_pos.iter().chain(&s.test_pos) {
            assert!(!has(p[0], p[1]) && !has(p[1], p[0]), "held-out edge {p:?} leaked");
        }
        for p in s.valid_neg.iter().chain(&s.test_neg) {
            assert_ne!(p[0], p[1]);
            let d = (p[0] as i64 - p[1] as i64).rem_euclid(200);
            assert!(d != 1 && d != 199, "negative {p:?} is an edge");
        }
        // seeded: the same split again, another with another seed
        assert_eq!(s, LinkSplit::random(&adj, LinkSplitConfig { valid: 0.05, test: 0.1, seed: 3 }).unwrap());
        assert_ne!(s, LinkSplit::random(&adj, LinkSplitConfig { valid: 0.05, test: 0.1, seed: 4 }).unwrap());
        s.check().unwrap();
    }

    #[test]
    fn refuses_graphs_too_small_and_bad_shares() {
        let adj = ring(5);
        let e = LinkSplit::random(&adj, LinkSplitConfig { valid: 0.05, test: 0.1, seed: 1 }).unwrap_err();
        assert!(e.to_string().contains("too small to split"), "{e}");
        let e = LinkSplit::random(&ring(100), LinkSplitConfig { valid: 0.6, test: 0.5, seed: 1 }).unwrap_err();
        assert!(e.to_string().contains("none to train on"), "{e}");
        let e = LinkSplit::random(&ring(100), LinkSplitConfig { valid: -0.1, test: 0.1, seed: 1 }).unwrap_err();
        assert!(e.to_string().contains("[0, 1)"), "{e}");
        // a complete graph has no non-edges
        let n = 12i64;
        let (mut s, mut d) = (Vec::new(), Vec::new());
        for u in 0..n {
            for v in u + 1..n {
                s.push(u);
                d.push(v);
            }
        }
        let full = Csr::from_edges(n as usize, &s, &d, None, BuildOptions::undirected()).unwrap();
        let e = LinkSplit::random(&full, LinkSplitConfig { valid: 0.1, test: 0.1, seed: 1 }).unwrap_err();
        assert!(e.to_string().contains("too dense"), "{e}");
    }
}
