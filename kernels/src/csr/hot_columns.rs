//! The most-read columns of a structure: their statistics ([`HotStats`]) and the split of the
//! structure into hot and cold edges ([`HotSplit`]).

use super::csr_ref::CsrRef;
use super::transposition::{column_counts, row_blocks, split_by_row_blocks};
use rayon::prelude::*;

/// The split of a CSR structure by its most-read columns, for the two-pass SpMM sum / mean of
/// `spmm::hot`. On the graphs GNNs train on, a few thousand source nodes receive a tenth or more
/// of all edges, but their gathers reach L1 too rarely to be cached there (the other gathers
/// stream through it). The split serves them from shared memory instead: the *cold* structure
/// (the edges of every other column, a CSR of its own with its own edge groups) runs through
/// the usual kernel, and a second kernel adds the *hot* edges, whose feature rows it keeps in
/// shared memory one feature tile at a time.
///
/// `hot_rank[e]` is the rank of the hot column of hot edge `e` (its row in `cols`); both edge
/// lists keep the CSR order of their row.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HotSplit {
    /// The hot columns, ascending (rank `r` is `cols[r]`).
    pub cols: Vec<u32>,
    /// Row pointer of the cold edges, `n_rows + 1` entries.
    pub cold_ptr: Vec<usize>,
    /// Column of each cold edge.
    pub cold_col: Vec<u32>,
    /// Row pointer of the hot edges, `n_rows + 1` entries.
    pub hot_ptr: Vec<usize>,
    /// Rank of the column of each hot edge.
    pub hot_rank: Vec<u32>,
}

/// How much of a structure's traffic its most-read columns take: what decides whether the
/// hot-column split pays (see [`HotSplit`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct HotStats {
    /// Rows of the structure.
    pub rows: usize,
    /// Edges of the structure.
    pub edges: usize,
    /// Columns considered hot (at most the requested count, only columns with edges).
    pub hot_cols: usize,
    /// Edges on the hot columns.
    pub hot_edges: usize,
    /// Rows with at least one hot edge.
    pub rows_with_hot: usize,
}

impl HotStats {
    /// Counts the edges of the (at most) `max_cols` most-read columns of `csr`.
    pub fn new(csr: &CsrRef<'_>, max_cols: usize) -> Self {
        let n = csr.n_cols;
        let mut stats = Self { rows: csr.n_rows, edges: csr.nnz(), ..Default::default() };
        if max_cols == 0 || n == 0 || csr.nnz() == 0 {
            return stats;
        }
        let count = column_counts(csr);
        let mut order: Vec<u32> = (0..n as u32).collect();
        let h = max_cols.min(n);
        if h < n {
            order.select_nth_unstable_by(h - 1, |&a, &b| count[b as usize].cmp(&count[a as usize]).then(a.cmp(&b)));
        }
        let mut hot = vec![false; n];
        for &c in order[..h].iter().filter(|&&c| count[c as usize] > 0) {
            hot[c as usize] = true;
            stats.hot_cols += 1;
            stats.hot_edges += count[c as usize];
        }
        stats.rows_with_hot =
            (0..csr.n_rows).filter(|&i| csr.col_idx[csr.row(i)].iter().any(|&c| hot[c as usize])).count();
        stats
    }

    /// Share of the edges on the hot columns.
    pub fn share(&self) -> f64 {
        self.hot_edges as f64 / self.edges.max(1) as f64
    }

    /// Hot edges per row that has any: the work the second pass does for each row it visits.
    pub fn hot_per_row(&self) -> f64 {
        self.hot_edges as f64 / self.rows_with_hot.max(1) as f64
    }
}

impl HotSplit {
    /// Splits off the (at most) `max_cols` columns with the most edges (ties: lower column
    /// first). Returns `None` when `max_cols` is 0, the structure has fewer than `min_edges`
    /// edges, or those columns receive less than `min_share` of the edges (where the second
    /// pass would not pay for itself).
    pub fn new(csr: &CsrRef<'_>, max_cols: usize, min_share: f64, min_edges: usize) -> Option<Self> {
        let n = csr.n_cols;
        if max_cols == 0 || n == 0 || csr.nnz() == 0 || csr.nnz() < min_edges {
            return None;
        }
        let count = column_counts(csr);
        let mut order: Vec<u32> = (0..n as u32).collect();
        let h = max_cols.min(n);
        if h < n {
            order.select_nth_unstable_by(h - 1, |&a, &b| count[b as usize].cmp(&count[a as usize]).then(a.cmp(&b)));
        }
        let mut cols: Vec<u32> = order[..h].iter().copied().filter(|&c| count[c as usize] > 0).collect();
        cols.sort_unstable();
        let hot_edges: usize = cols.iter().map(|&c| count[c as usize]).sum();
        if cols.is_empty() || (hot_edges as f64) < min_share * csr.nnz() as f64 {
            return None;
        }
        let mut rank = vec![u32::MAX; n];
        for (r, &c) in cols.iter().enumerate() {
            rank[c as usize] = r as u32;
        }
        // hot edges per row, then each block of rows fills its own slices of the edge lists
        // (on the rayon threads; the lists are the same for any number of blocks)
        let hot_deg: Vec<usize> = (0..csr.n_rows)
            .into_par_iter()
            .map(|i| csr.col_idx[csr.row(i)].iter().filter(|&&c| rank[c as usize] != u32::MAX).count())
            .collect();
        let mut cold_ptr = Vec::with_capacity(csr.n_rows + 1);
        let mut hot_ptr = Vec::with_capacity(csr.n_rows + 1);
        cold_ptr.push(0);
        hot_ptr.push(0);
        for (i, &h) in hot_deg.iter().enumerate() {
            hot_ptr.push(hot_ptr[i] + h);
            cold_ptr.push(cold_ptr[i] + csr.degree(i) - h);
        }
        drop(hot_deg);
        let mut cold_col = vec![0u32; csr.nnz() - hot_edges];
        let mut hot_rank = vec![0u32; hot_edges];
        let starts = row_blocks(csr.row_ptr, rayon::current_num_threads());
        let cold_pieces = split_by_row_blocks(&mut cold_col, &cold_ptr, &starts);
        let hot_pieces = split_by_row_blocks(&mut hot_rank, &hot_ptr, &starts);
        cold_pieces.into_par_iter().zip(hot_pieces).for_each(|((rows, cold), (_, hot))| {
            let (mut nc, mut nh) = (0, 0);
            for &c in &csr.col_idx[csr.row_ptr[rows.start]..csr.row_ptr[rows.end]] {
                match rank[c as usize] {
                    u32::MAX => {
                        cold[nc] = c;
                        nc += 1;
                    }
                    r => {
                        hot[nh] = r;
                        nh += 1;
                    }
                }
            }
        });
        Some(Self { cols, cold_ptr, cold_col, hot_ptr, hot_rank })
    }

    /// The cold edges as a CSR structure of the same shape.
    pub fn cold<'a>(&'a self, original: &CsrRef<'_>) -> CsrRef<'a> {
        CsrRef { n_rows: original.n_rows, n_cols: original.n_cols, row_ptr: &self.cold_ptr, col_idx: &self.cold_col }
    }

    /// Number of hot edges.
    pub fn hot_edges(&self) -> usize {
        self.hot_rank.len()
    }
}
