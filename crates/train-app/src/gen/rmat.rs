//! R-MAT graphs at any scale.

use crate::error::{AppError, Result};
use crate::host_memory::check_fits;
use burn_sparse_gnn::data::MAX_EDGES;
use burn_sparse_gnn::kernels::csr::{row_blocks, split_by_row_blocks, transpose, CsrRef, Transpose};
use burn_sparse_gnn::Csr;
use indicatif::{ProgressBar, ProgressStyle};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

use super::{check_nodes, config};

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
pub(super) fn rmat_bytes(nodes: usize, edges: usize) -> u64 {
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
pub(super) fn merge_dedup(a: Vec<u64>, b: Vec<u64>) -> Vec<u64> {
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
