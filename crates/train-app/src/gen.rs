//! Synthetic graphs: a stochastic block model with class-correlated features (the built-in,
//! learnable default dataset) and R-MAT graphs at any scale for performance work (written to
//! an npy folder so that the peer scripts read the identical graph).

use crate::error::{AppError, Result};
use burn_sparse_gnn::{BuildOptions, Csr, Features, GraphData, Split};
use indicatif::{ProgressBar, ProgressStyle};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

/// A stochastic block model with Gaussian class-centred features.
#[derive(Clone, Debug, PartialEq)]
pub struct SbmSpec {
    pub nodes: usize,
    pub classes: usize,
    /// Mean degree (both directions counted once per node).
    pub avg_degree: usize,
    /// Probability that an edge stays inside its class.
    pub homophily: f64,
    pub features: usize,
    /// Distance of the class centres (in units of the per-feature noise).
    pub signal: f32,
    pub seed: u64,
}

impl Default for SbmSpec {
    fn default() -> Self {
        Self { nodes: 3000, classes: 5, avg_degree: 10, homophily: 0.8, features: 64, signal: 0.35, seed: 17 }
    }
}

fn gauss(rng: &mut StdRng) -> f32 {
    // Box-Muller
    let u1: f32 = rng.random::<f32>().max(1e-7);
    let u2: f32 = rng.random();
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f32::consts::PI * u2).cos()
}

/// Per-class random split: `train` and `valid` nodes per class, the rest test.
pub fn per_class_split(labels: &[i64], classes: usize, train: usize, valid: usize, seed: u64) -> Split {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut by_class: Vec<Vec<u32>> = vec![Vec::new(); classes];
    for (i, &l) in labels.iter().enumerate() {
        if l >= 0 {
            by_class[l as usize].push(i as u32);
        }
    }
    let mut s = Split::default();
    for nodes in &mut by_class {
        nodes.shuffle(&mut rng);
        let t = train.min(nodes.len());
        let v = valid.min(nodes.len() - t);
        s.train.extend_from_slice(&nodes[..t]);
        s.valid.extend_from_slice(&nodes[t..t + v]);
        s.test.extend_from_slice(&nodes[t + v..]);
    }
    s.train.sort_unstable();
    s.valid.sort_unstable();
    s.test.sort_unstable();
    s
}

/// Random split: fractions `train` and `valid` of the labeled nodes, the rest test.
pub fn random_split(labels: &[i64], train: f64, valid: f64, seed: u64) -> Split {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut ids: Vec<u32> = labels.iter().enumerate().filter(|(_, &l)| l >= 0).map(|(i, _)| i as u32).collect();
    ids.shuffle(&mut rng);
    let n = ids.len();
    let (a, b) = ((n as f64 * train) as usize, (n as f64 * (train + valid)) as usize);
    let mut s = Split { train: ids[..a].to_vec(), valid: ids[a..b].to_vec(), test: ids[b..].to_vec() };
    s.train.sort_unstable();
    s.valid.sort_unstable();
    s.test.sort_unstable();
    s
}

/// Generates the SBM dataset.
pub fn sbm(spec: &SbmSpec) -> Result<GraphData> {
    if spec.nodes < spec.classes || spec.classes < 2 || spec.features == 0 {
        return Err(AppError::Config(format!("sbm needs nodes >= classes >= 2 and features > 0, got {spec:?}")));
    }
    let mut rng = StdRng::seed_from_u64(spec.seed);
    let n = spec.nodes;
    let labels: Vec<i64> = (0..n).map(|i| (i % spec.classes) as i64).collect();
    let mut members: Vec<Vec<i64>> = vec![Vec::new(); spec.classes];
    for (i, &l) in labels.iter().enumerate() {
        members[l as usize].push(i as i64);
    }
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    for i in 0..n {
        for _ in 0..spec.avg_degree.div_ceil(2) {
            let same = rng.random::<f64>() < spec.homophily;
            let mut c = labels[i] as usize;
            if !same {
                c = (c + rng.random_range(1..spec.classes)) % spec.classes;
            }
            let j = members[c][rng.random_range(0..members[c].len())];
            if j != i as i64 {
                src.push(i as i64);
                dst.push(j);
            }
        }
    }
    let adj =
        Csr::from_edges(n, &src, &dst, None, BuildOptions::undirected()).map_err(|e| AppError::graph("sbm", e))?;
    let centres: Vec<f32> = (0..spec.classes * spec.features).map(|_| gauss(&mut rng) * spec.signal).collect();
    let mut x = vec![0.0f32; n * spec.features];
    for i in 0..n {
        let c = labels[i] as usize;
        for f in 0..spec.features {
            x[i * spec.features + f] = centres[c * spec.features + f] + gauss(&mut rng);
        }
    }
    let features = Features::dense(n, spec.features, x).map_err(|e| AppError::graph("sbm", e))?;
    let split = per_class_split(&labels, spec.classes, 20, 30, spec.seed + 1);
    GraphData::new("sbm", adj, features, labels, spec.classes, Some(split)).map_err(|e| AppError::graph("sbm", e))
}

/// An R-MAT graph: `nodes` nodes, about `edges` directed edges after symmetrisation and
/// deduplication (self-loops dropped), ids randomly relabelled.
#[derive(Clone, Debug, PartialEq)]
pub struct RmatSpec {
    pub nodes: usize,
    pub edges: usize,
    pub a: f64,
    pub b: f64,
    pub c: f64,
    pub seed: u64,
}

impl RmatSpec {
    /// The reddit-scale graph of `../shared/docs/performance.md`.
    pub fn reddit_scale() -> Self {
        Self { nodes: 232_965, edges: 129_362_596, a: 0.45, b: 0.22, c: 0.22, seed: 1 }
    }
}

fn progress(len: u64, msg: &str) -> ProgressBar {
    let pb = ProgressBar::new(len);
    pb.set_style(
        ProgressStyle::with_template("{msg:>12} [{bar:40}] {pos}/{len} ({elapsed})")
            .expect("valid template")
            .progress_chars("=> "),
    );
    pb.set_message(msg.to_string());
    pb
}

/// Generates the R-MAT adjacency (symmetric CSR, sorted rows).
pub fn rmat(spec: &RmatSpec) -> Result<Csr> {
    let n = spec.nodes;
    if n < 2 || spec.a <= 0.0 || spec.b < 0.0 || spec.c < 0.0 || spec.a + spec.b + spec.c >= 1.0 {
        return Err(AppError::Config(format!(
            "rmat needs nodes >= 2 and a > 0, b, c >= 0, a + b + c < 1, got {spec:?}"
        )));
    }
    let max_undirected = n as u128 * (n as u128 - 1) / 2;
    let target = spec.edges.div_ceil(2);
    if target as u128 > max_undirected / 2 {
        return Err(AppError::Config(format!("{} edges are too dense for {n} nodes", spec.edges)));
    }
    let scale = (n as f64).log2().ceil() as u32;
    let mut perm: Vec<u32> = (0..1u32 << scale).collect();
    perm.shuffle(&mut StdRng::seed_from_u64(spec.seed));
    let (ab, abc) = (spec.a + spec.b, spec.a + spec.b + spec.c);
    let mut keys: Vec<u64> = Vec::new();
    let pb = progress(target as u64, "R-MAT edges");
    let mut round = 0u64;
    let chunk = 1usize << 20;
    while keys.len() < target {
        let missing = target - keys.len();
        let batch = (missing as f64 * 1.2) as usize + 1024;
        let chunks = batch.div_ceil(chunk);
        let mut fresh: Vec<u64> = (0..chunks)
            .into_par_iter()
            .flat_map_iter(|ci| {
                let mut rng =
                    StdRng::seed_from_u64(spec.seed ^ (round << 40) ^ ((ci as u64 + 1) * 0x9E37_79B9_7F4A_7C15));
                let perm = &perm;
                (0..chunk).filter_map(move |_| {
                    let (mut u, mut v) = (0u32, 0u32);
                    for _ in 0..scale {
                        let r: f64 = rng.random();
                        let (bu, bv) = if r < spec.a {
                            (0, 0)
                        } else if r < ab {
                            (0, 1)
                        } else if r < abc {
                            (1, 0)
                        } else {
                            (1, 1)
                        };
                        u = (u << 1) | bu;
                        v = (v << 1) | bv;
                    }
                    let (pu, pv) = (perm[u as usize], perm[v as usize]);
                    if pu as usize >= n || pv as usize >= n || pu == pv {
                        return None;
                    }
                    let (lo, hi) = (pu.min(pv) as u64, pu.max(pv) as u64);
                    Some((lo << 32) | hi)
                })
            })
            .collect();
        fresh.par_sort_unstable();
        fresh.dedup();
        // merge with what we have
        let mut merged = Vec::with_capacity(keys.len() + fresh.len());
        let (mut i, mut j) = (0, 0);
        while i < keys.len() || j < fresh.len() {
            let next = if j >= fresh.len() || (i < keys.len() && keys[i] <= fresh[j]) {
                i += 1;
                keys[i - 1]
            } else {
                j += 1;
                fresh[j - 1]
            };
            if merged.last() != Some(&next) {
                merged.push(next);
            }
        }
        keys = merged;
        pb.set_position(keys.len().min(target) as u64);
        round += 1;
        if round > 64 {
            return Err(AppError::Config(format!(
                "rmat: could not reach {} edges (graph saturated at {})",
                spec.edges,
                keys.len() * 2
            )));
        }
    }
    pb.finish();
    // drop a seeded random excess so that exactly `target` undirected pairs remain
    if keys.len() > target {
        let mut rng = StdRng::seed_from_u64(spec.seed ^ 0xA5A5);
        let mut drop = vec![false; keys.len()];
        let mut excess = keys.len() - target;
        while excess > 0 {
            let i = rng.random_range(0..keys.len());
            if !drop[i] {
                drop[i] = true;
                excess -= 1;
            }
        }
        let mut i = 0;
        keys.retain(|_| {
            i += 1;
            !drop[i - 1]
        });
    }
    // symmetric CSR
    let mut deg = vec![0usize; n + 1];
    for &k in &keys {
        deg[(k >> 32) as usize + 1] += 1;
        deg[(k & 0xffff_ffff) as usize + 1] += 1;
    }
    for i in 0..n {
        deg[i + 1] += deg[i];
    }
    let row_ptr = deg.clone();
    let mut next = deg;
    let mut col = vec![0i64; row_ptr[n]];
    for &k in &keys {
        let (lo, hi) = ((k >> 32) as usize, (k & 0xffff_ffff) as usize);
        col[next[lo]] = hi as i64;
        next[lo] += 1;
        col[next[hi]] = lo as i64;
        next[hi] += 1;
    }
    drop(keys);
    // sort every row
    let mut rows: Vec<&mut [i64]> = Vec::with_capacity(n);
    let mut rest = col.as_mut_slice();
    for i in 0..n {
        let (head, tail) = rest.split_at_mut(row_ptr[i + 1] - row_ptr[i]);
        rows.push(head);
        rest = tail;
    }
    rows.into_par_iter().for_each(|r| r.sort_unstable());
    let rp: Vec<i64> = row_ptr.iter().map(|&v| v as i64).collect();
    Csr::new(n, n, &rp, &col, None).map_err(|e| AppError::graph("rmat", e))
}

/// Random features (`[n, f]`, uniform in [-1, 1)), labels (`classes`) and a 65/10/25 split for a
/// generated graph used in timing runs.
pub fn random_node_data(adj: Csr, name: &str, features: usize, classes: usize, seed: u64) -> Result<GraphData> {
    let n = adj.n_rows();
    let x: Vec<f32> = (0..n)
        .into_par_iter()
        .flat_map_iter(|i| {
            let mut rng = StdRng::seed_from_u64(seed ^ (i as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
            (0..features).map(move |_| rng.random::<f32>() * 2.0 - 1.0).collect::<Vec<_>>()
        })
        .collect();
    let mut rng = StdRng::seed_from_u64(seed);
    let labels: Vec<i64> = (0..n).map(|_| rng.random_range(0..classes as i64)).collect();
    let mut ids: Vec<u32> = (0..n as u32).collect();
    ids.shuffle(&mut rng);
    let (a, b) = (n * 65 / 100, n * 75 / 100);
    let mut split = Split { train: ids[..a].to_vec(), valid: ids[a..b].to_vec(), test: ids[b..].to_vec() };
    split.train.sort_unstable();
    split.valid.sort_unstable();
    split.test.sort_unstable();
    let features = Features::dense(n, features, x).map_err(|e| AppError::graph(name, e))?;
    GraphData::new(name, adj, features, labels, classes, Some(split)).map_err(|e| AppError::graph(name, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rmat_is_symmetric_skewed_and_close_to_the_target() {
        let spec = RmatSpec { nodes: 3000, edges: 60_000, a: 0.45, b: 0.22, c: 0.22, seed: 3 };
        let g = rmat(&spec).unwrap();
        assert!(g.is_symmetric());
        assert_eq!(g.self_loops(), 0);
        assert_eq!(g.nnz(), 60_000);
        let deg = g.row_degrees();
        let max = *deg.iter().max().unwrap();
        // a uniform graph of mean degree 20 has a maximum near 40; R-MAT (a = 0.45) concentrates edges
        assert!(max as f64 > 5.0 * g.nnz() as f64 / 3000.0, "power-law hub: max degree {max}");
        // deterministic
        assert_eq!(rmat(&spec).unwrap(), g);
    }

    #[test]
    fn sbm_is_homophilous_and_split_per_class() {
        let d = sbm(&SbmSpec::default()).unwrap();
        let s = d.stats();
        assert!(s.edge_homophily > 0.7, "{}", s.edge_homophily);
        assert!(s.symmetric);
        assert_eq!(d.split().unwrap().train.len(), 20 * 5);
        assert_eq!(d.split().unwrap().valid.len(), 30 * 5);
    }
}
