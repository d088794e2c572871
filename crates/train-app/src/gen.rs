//! Synthetic graphs: a stochastic block model with class-correlated features (the built-in,
//! learnable default dataset) and R-MAT graphs at any scale for performance work (written to
//! an npy folder so that the peer scripts read the identical graph).

use crate::error::{AppError, Result};
use crate::memory::check_fits;
use burn_sparse_gnn::data::{class_limit, MAX_EDGES, MAX_INDEX};
use burn_sparse_gnn::kernels::csr::{row_blocks, split_by_row_blocks, transpose, CsrRef, Transpose};
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

/// Train and valid nodes per class of the SBM's split; every class needs one more for test.
const SBM_TRAIN: usize = 20;
const SBM_VALID: usize = 30;

/// Bytes per generated SBM edge pair at the peak (both endpoint lists, the symmetrised edge
/// tuples and their merged copy).
const SBM_BYTES_PER_PAIR: u64 = 48;

fn config(msg: String) -> AppError {
    AppError::Config(msg)
}

/// Refuses a node count that 32-bit node ids cannot address.
fn check_nodes(kind: &str, nodes: usize) -> Result<()> {
    if nodes > MAX_INDEX {
        return Err(config(format!("{kind}: --nodes {nodes} is more than {MAX_INDEX} (node ids are 32-bit)")));
    }
    Ok(())
}

/// Refuses a class count below 1 (`min`) or beyond [`class_limit`] of `nodes` labeled nodes.
fn check_classes(kind: &str, classes: usize, min: usize, nodes: usize) -> Result<()> {
    if classes < min {
        return Err(config(format!("{kind}: --classes {classes}: needs at least {min}")));
    }
    let limit = class_limit(nodes);
    if classes > limit {
        return Err(config(format!(
            "{kind}: --classes {classes} is more than {limit} (at most max(1000, nodes) classes, 1000000 in all)"
        )));
    }
    Ok(())
}

impl SbmSpec {
    /// Checks every option before anything is generated: counts that 32-bit ids hold, a
    /// probability for the homophily, a degree a simple graph can have, enough nodes per class
    /// for a split with test nodes, and memory for the edges and features.
    pub fn check(&self) -> Result<()> {
        let n = self.nodes;
        check_nodes("sbm", n)?;
        check_classes("sbm", self.classes, 2, n)?;
        let per_class = n / self.classes;
        if per_class <= SBM_TRAIN + SBM_VALID {
            return Err(config(format!(
                "sbm: --nodes {n} with --classes {} gives {per_class} nodes per class, but the split takes \
                 {SBM_TRAIN} train + {SBM_VALID} valid per class and needs test nodes: use at least {} nodes",
                self.classes,
                (SBM_TRAIN + SBM_VALID + 1) * self.classes
            )));
        }
        if self.features == 0 {
            return Err(config("sbm: --features 0: at least one feature is needed".into()));
        }
        if !(self.homophily.is_finite() && (0.0..=1.0).contains(&self.homophily)) {
            return Err(config(format!("sbm: --homophily {} must be a probability in [0, 1]", self.homophily)));
        }
        if !self.signal.is_finite() {
            return Err(config(format!("sbm: signal {} must be finite", self.signal)));
        }
        if self.avg_degree > n - 1 {
            return Err(config(format!(
                "sbm: --avg-degree {} is more than nodes - 1 = {} (the most a node can have without duplicates)",
                self.avg_degree,
                n - 1
            )));
        }
        let pairs = (n as u64).saturating_mul(self.avg_degree.div_ceil(2) as u64);
        let need = pairs
            .saturating_mul(SBM_BYTES_PER_PAIR)
            .saturating_add((n as u64).saturating_mul(self.features as u64).saturating_mul(4))
            .saturating_add((n as u64).saturating_mul(64));
        check_fits(need, || format!("sbm: --nodes {n} --avg-degree {} --features {}", self.avg_degree, self.features))
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
    spec.check()?;
    let mut rng = StdRng::seed_from_u64(spec.seed);
    let n = spec.nodes;
    let labels: Vec<i64> = (0..n).map(|i| (i % spec.classes) as i64).collect();
    let mut members: Vec<Vec<i64>> = vec![Vec::new(); spec.classes];
    for (i, &l) in labels.iter().enumerate() {
        members[l as usize].push(i as i64);
    }
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    for (i, &label) in labels.iter().enumerate() {
        for _ in 0..spec.avg_degree.div_ceil(2) {
            let same = rng.random::<f64>() < spec.homophily;
            let mut c = label as usize;
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
    let split = per_class_split(&labels, spec.classes, SBM_TRAIN, SBM_VALID, spec.seed.wrapping_add(1));
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

    /// Checks every option before anything is generated: node and edge counts that 32-bit ids
    /// hold, finite probabilities, a density the nodes allow, and memory for the generation.
    pub fn check(&self) -> Result<()> {
        let n = self.nodes;
        if n < 2 {
            return Err(config(format!("rmat: --nodes {n}: at least 2 nodes are needed")));
        }
        check_nodes("rmat", n)?;
        if self.edges > MAX_EDGES {
            return Err(config(format!("rmat: --edges {} is more than {MAX_EDGES} (edge ids are 32-bit)", self.edges)));
        }
        // the graph is symmetric: an odd count rounds up to whole pairs of directed edges
        let directed = self.edges.div_ceil(2) * 2;
        if directed > MAX_EDGES {
            return Err(config(format!(
                "rmat: --edges {} rounds up to {directed} directed edges (the graph is symmetric), more than \
                 {MAX_EDGES} (edge ids are 32-bit); the most is {}",
                self.edges,
                MAX_EDGES / 2 * 2
            )));
        }
        let (a, b, c) = (self.a, self.b, self.c);
        let finite = a.is_finite() && b.is_finite() && c.is_finite();
        if !finite || a <= 0.0 || b < 0.0 || c < 0.0 || a + b + c >= 1.0 {
            return Err(config(format!("rmat: --a {a} --b {b} --c {c}: need a > 0, b >= 0, c >= 0 and a + b + c < 1")));
        }
        let max_undirected = n as u128 * (n as u128 - 1) / 2;
        if self.edges.div_ceil(2) as u128 > max_undirected / 2 {
            return Err(config(format!("rmat: --edges {} are too dense for --nodes {n}", self.edges)));
        }
        check_fits(rmat_bytes(n, self.edges), || format!("rmat: --nodes {n} --edges {}", self.edges))
    }
}

/// Peak bytes of [`rmat`]: the id permutation (4 per id of the power of two), about 32 per
/// undirected pair (sorted keys, a fresh batch and their merge; later the upper triangle's
/// columns, its transpose and the CSR's columns)
/// and 40 per node (degrees and row pointers).
fn rmat_bytes(nodes: usize, edges: usize) -> u64 {
    let ids = (nodes as u64).next_power_of_two();
    ids * 4 + edges.div_ceil(2) as u64 * 32 + nodes as u64 * 40
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

/// The union of two sorted lists without repeats, sorted: the value range is cut where the
/// longer list's quantiles fall, and each slice of both lists is merged on its own thread.
fn merge_dedup(a: Vec<u64>, b: Vec<u64>) -> Vec<u64> {
    let merge = |a: &[u64], b: &[u64]| {
        let mut out = Vec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() || j < b.len() {
            let next = if j >= b.len() || (i < a.len() && a[i] <= b[j]) {
                i += 1;
                a[i - 1]
            } else {
                j += 1;
                b[j - 1]
            };
            if out.last() != Some(&next) {
                out.push(next);
            }
        }
        out
    };
    let longer = if a.len() >= b.len() { &a } else { &b };
    let parts = (rayon::current_num_threads() * 4).min(longer.len()).max(1);
    let mut cuts: Vec<u64> = (1..parts).map(|p| longer[p * longer.len() / parts]).collect();
    cuts.dedup();
    // slice r holds the values in [cuts[r - 1], cuts[r]): equal values share a slice
    let bounds = |s: &[u64]| -> Vec<usize> {
        std::iter::once(0).chain(cuts.iter().map(|&c| s.partition_point(|&x| x < c))).chain([s.len()]).collect()
    };
    let (ab, bb) = (bounds(&a), bounds(&b));
    let pieces: Vec<Vec<u64>> =
        (0..ab.len() - 1).into_par_iter().map(|r| merge(&a[ab[r]..ab[r + 1]], &b[bb[r]..bb[r + 1]])).collect();
    drop((a, b));
    pieces.concat()
}

/// Generates the R-MAT adjacency (symmetric CSR, sorted rows).
pub fn rmat(spec: &RmatSpec) -> Result<Csr> {
    spec.check()?;
    let n = spec.nodes;
    let target = spec.edges.div_ceil(2);
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
        keys = if keys.is_empty() { fresh } else { merge_dedup(keys, fresh) };
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
    // symmetric CSR: the sorted pairs are the upper triangle, row `lo` with its columns `hi`
    // in order; the lower triangle is its transpose (columns in order too), and since every
    // lower column of a row is below the row and every upper one above it, a row is its
    // lower part followed by its upper part, sorted without a sort
    let mut up_ptr = vec![0usize; n + 1];
    for &k in &keys {
        up_ptr[(k >> 32) as usize + 1] += 1;
    }
    for i in 0..n {
        up_ptr[i + 1] += up_ptr[i];
    }
    let up_col: Vec<u32> = keys.par_iter().map(|&k| (k & 0xffff_ffff) as u32).collect();
    drop(keys);
    let upper = CsrRef { n_rows: n, n_cols: n, row_ptr: &up_ptr, col_idx: &up_col };
    let Transpose { row_ptr: low_ptr, col_idx: low_col, perm } = transpose(&upper);
    drop(perm);
    let row_ptr: Vec<usize> = (0..=n).map(|i| up_ptr[i] + low_ptr[i]).collect();
    let mut col = vec![0u32; row_ptr[n]];
    // blocks of rows of about the same edge count, each filled on its own thread
    let starts = row_blocks(&row_ptr, rayon::current_num_threads());
    split_by_row_blocks(&mut col, &row_ptr, &starts).into_par_iter().for_each(|(rows, out)| {
        let mut at = 0;
        for i in rows {
            for part in [&low_col[low_ptr[i]..low_ptr[i + 1]], &up_col[up_ptr[i]..up_ptr[i + 1]]] {
                out[at..at + part.len()].copy_from_slice(part);
                at += part.len();
            }
        }
    });
    drop((low_col, up_col));
    let rp: Vec<i64> = row_ptr.iter().map(|&v| v as i64).collect();
    Csr::from_columns(n, n, &rp, col, None).map_err(|e| AppError::graph("rmat", e))
}

/// Checks the options of [`random_node_data`] for `nodes` nodes before anything is generated
/// (callers can run it before generating the graph): at least one class and no more than the
/// class limit, enough nodes for a split with nodes in every part, memory for the features.
pub fn check_node_data(name: &str, nodes: usize, features: usize, classes: usize) -> Result<()> {
    let n = nodes;
    check_classes(name, classes, 1, n)?;
    if n * 65 / 100 == 0 || n * 75 / 100 == n * 65 / 100 || n * 75 / 100 == n {
        return Err(config(format!("{name}: {n} nodes are too few for a 65/10/25 split with nodes in every part")));
    }
    let need = (n as u64).saturating_mul(features as u64).saturating_mul(4).saturating_add(n as u64 * 32);
    check_fits(need, || format!("{name}: --features {features} for {n} nodes"))
}

/// Random features (`[n, f]`, uniform in [-1, 1)), labels (`classes`) and a 65/10/25 split for a
/// generated graph used in timing runs.
pub fn random_node_data(adj: Csr, name: &str, features: usize, classes: usize, seed: u64) -> Result<GraphData> {
    let n = adj.n_rows();
    check_node_data(name, n, features, classes)?;
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
    let (a, b) = (n * 65 / 100, n * 75 / 100); // non-empty parts: checked above
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
    fn merged_lists_are_sorted_without_repeats() {
        let mut s = 7u64;
        let mut list = |n: usize, m: u64| {
            let mut v: Vec<u64> = (0..n)
                .map(|_| {
                    s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                    (s >> 33) % m
                })
                .collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        for (na, nb, m) in [(0, 5, 10), (5, 0, 10), (1, 1, 2), (1_000, 37, 300), (50_000, 80_000, 90_000), (9, 9, 1)] {
            let (a, b) = (list(na, m), list(nb, m));
            let mut want: Vec<u64> = a.iter().chain(&b).copied().collect();
            want.sort_unstable();
            want.dedup();
            assert_eq!(merge_dedup(a, b), want, "{na} + {nb} below {m}");
        }
    }

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

    fn config_error(r: Result<impl std::fmt::Debug>) -> String {
        match r {
            Err(e @ AppError::Config(_)) => e.to_string(),
            other => panic!("expected a configuration error, got {other:?}"),
        }
    }

    #[test]
    fn bad_sbm_options_are_configuration_errors_naming_the_option() {
        let base = SbmSpec::default();
        let e = config_error(sbm(&SbmSpec { homophily: 1.5, ..base.clone() }));
        assert!(e.contains("--homophily 1.5 must be a probability"), "{e}");
        let e = config_error(sbm(&SbmSpec { homophily: f64::NAN, ..base.clone() }));
        assert!(e.contains("--homophily NaN"), "{e}");
        let e = config_error(sbm(&SbmSpec { avg_degree: 1_000_000_000_000, ..base.clone() }));
        assert!(e.contains("--avg-degree 1000000000000 is more than nodes - 1 = 2999"), "{e}");
        let e = config_error(sbm(&SbmSpec { classes: 1, ..base.clone() }));
        assert!(e.contains("--classes 1: needs at least 2"), "{e}");
        let e = config_error(sbm(&SbmSpec { nodes: 100, ..base.clone() }));
        assert!(e.contains("use at least 255 nodes"), "{e}");
        let e = config_error(sbm(&SbmSpec { nodes: 3_000_000_000, ..base.clone() }));
        assert!(e.contains("--nodes 3000000000 is more than 2147483647"), "{e}");
        let e = config_error(sbm(&SbmSpec { features: 0, ..base }));
        assert!(e.contains("--features 0"), "{e}");
    }

    #[test]
    fn an_sbm_beyond_the_host_memory_is_refused_before_generating() {
        if crate::memory::host_available_bytes().is_none() {
            return;
        }
        let spec = SbmSpec { nodes: 2_000_000_000, avg_degree: 1_000, ..SbmSpec::default() };
        match sbm(&spec) {
            Err(e @ AppError::TooLarge { .. }) => {
                let e = e.to_string();
                assert!(e.contains("sbm: --nodes 2000000000 --avg-degree 1000"), "{e}");
            }
            other => panic!("expected TooLarge, got {other:?}"),
        }
    }

    #[test]
    fn bad_rmat_options_are_errors_not_overflows() {
        let base = RmatSpec { nodes: 1000, edges: 10_000, a: 0.45, b: 0.22, c: 0.22, seed: 1 };
        for nodes in [3_000_000_000usize, 2_147_483_648, usize::MAX] {
            let e = config_error(rmat(&RmatSpec { nodes, ..base.clone() }));
            assert!(e.contains(&format!("--nodes {nodes} is more than 2147483647")), "{e}");
        }
        let e = config_error(rmat(&RmatSpec { edges: 5_000_000_000, ..base.clone() }));
        assert!(e.contains("--edges 5000000000 is more than 4294967295"), "{e}");
        // an odd count at the limit would round up past it
        let e = config_error(rmat(&RmatSpec { edges: 4_294_967_295, ..base.clone() }));
        assert!(e.contains("rounds up to 4294967296 directed edges"), "{e}");
        assert!(e.contains("the most is 4294967294"), "{e}");
        let e = config_error(rmat(&RmatSpec { a: f64::NAN, ..base.clone() }));
        assert!(e.contains("--a NaN"), "{e}");
        let e = config_error(rmat(&RmatSpec { edges: 1_000_000, ..base.clone() }));
        assert!(e.contains("too dense"), "{e}");
        // the largest node count 32-bit ids allow, with edges beyond the memory of most hosts
        let big = RmatSpec { nodes: 2_147_483_647, edges: 2_000_000_000, ..base.clone() };
        if crate::memory::host_available_bytes().is_some_and(|a| a < rmat_bytes(big.nodes, big.edges)) {
            let e = rmat(&big).unwrap_err().to_string();
            assert!(e.contains("rmat: --nodes 2147483647 --edges 2000000000 needs"), "{e}");
        }
        let adj = rmat(&base).unwrap();
        let e = config_error(random_node_data(adj.clone(), "rmat", 8, 0, 1));
        assert!(e.contains("--classes 0: needs at least 1"), "{e}");
        assert!(check_node_data("rmat", 232_965, 602, 0).is_err());
        let e = config_error(random_node_data(adj.clone(), "rmat", 8, 5_000, 1));
        assert!(e.contains("--classes 5000 is more than 1000"), "{e}");
        let d = random_node_data(adj, "rmat", 8, 3, 1).unwrap();
        assert_eq!(d.num_classes(), 3);
        let tiny = Csr::from_edges(2, &[0], &[1], None, BuildOptions::undirected()).unwrap();
        let e = config_error(random_node_data(tiny, "rmat", 8, 2, 1));
        assert!(e.contains("2 nodes are too few"), "{e}");
    }
}
