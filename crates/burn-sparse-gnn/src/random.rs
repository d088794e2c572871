//! Seeded random graphs with the hard cases every kernel must survive: empty rows, a hub row
//! far longer than any cube, self-loops, duplicate edges, rectangular shapes.

use crate::data::Csr;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// What a random graph contains.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RandomGraphSpec {
    /// Rows (destination nodes).
    pub n_rows: usize,
    /// Columns (source nodes).
    pub n_cols: usize,
    /// Mean edges per ordinary row (degrees are uniform in `0..=2 * avg_degree`).
    pub avg_degree: usize,
    /// Edges of the hub row (row `n_rows / 2`), 0 for none.
    pub hub_degree: usize,
    /// Fraction of rows forced empty.
    pub empty_fraction: f64,
    /// Add a self-loop to every fifth row (square graphs only).
    pub self_loops: bool,
    /// Repeat some edges within a row.
    pub duplicates: bool,
    /// RNG seed.
    pub seed: u64,
}

impl Default for RandomGraphSpec {
    fn default() -> Self {
        Self {
            n_rows: 301,
            n_cols: 301,
            avg_degree: 6,
            hub_degree: 10_000,
            empty_fraction: 0.1,
            self_loops: true,
            duplicates: true,
            seed: 1,
        }
    }
}

/// Builds a random CSR graph (unweighted) following `spec`.
pub fn random_csr(spec: &RandomGraphSpec) -> Csr {
    let mut rng = StdRng::seed_from_u64(spec.seed);
    let hub = spec.n_rows / 2;
    let mut row_ptr = vec![0i64];
    let mut col_idx: Vec<i64> = Vec::new();
    for i in 0..spec.n_rows {
        let mut cols: Vec<i64> = Vec::new();
        let empty = rng.random::<f64>() < spec.empty_fraction;
        if spec.n_cols > 0 && i == hub && spec.hub_degree > 0 {
            for _ in 0..spec.hub_degree {
                cols.push(rng.random_range(0..spec.n_cols) as i64);
            }
        } else if spec.n_cols > 0 && !empty {
            let d = rng.random_range(0..=2 * spec.avg_degree);
            for _ in 0..d {
                cols.push(rng.random_range(0..spec.n_cols) as i64);
            }
            if spec.duplicates && !cols.is_empty() && rng.random::<f64>() < 0.3 {
                let c = cols[rng.random_range(0..cols.len())];
                cols.push(c);
            }
            if spec.self_loops && spec.n_rows == spec.n_cols && i % 5 == 0 {
                cols.push(i as i64);
            }
        }
        if !cols.is_empty() {
            cols.sort_unstable();
        }
        col_idx.extend_from_slice(&cols);
        row_ptr.push(col_idx.len() as i64);
    }
    Csr::new(spec.n_rows, spec.n_cols, &row_ptr, &col_idx, None).expect("generated CSR is valid")
}

/// `n` values uniform in `[-1, 1)` rounded to f32 (so every backend sees the same numbers).
pub fn random_values(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| (rng.random::<f32>() * 2.0 - 1.0) as f64).collect()
}

/// Like [`random_values`] but on a grid of 1/8 steps in `[-2, 2]`: many exact ties, for
/// testing deterministic tie-breaking.
pub fn random_tied_values(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| rng.random_range(-16i32..=16) as f64 / 8.0).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn has_the_hard_cases() {
        let g = random_csr(&RandomGraphSpec::default());
        let deg = g.row_degrees();
        assert!(deg.iter().any(|&d| d == 0), "empty rows");
        assert!(deg.iter().any(|&d| d >= 10_000), "hub row");
        assert!(g.self_loops() > 0, "self-loops");
        let dup = (0..g.n_rows()).any(|i| {
            let r = &g.col_idx()[g.row_ptr()[i]..g.row_ptr()[i + 1]];
            r.windows(2).any(|w| w[0] == w[1])
        });
        assert!(dup, "duplicate edges");
    }
}
