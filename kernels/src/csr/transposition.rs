//! Transposing a CSR structure (one pass, or blocks of rows in parallel) and the row blocks
//! it works on.

use super::csr_ref::CsrRef;
use rayon::prelude::*;

/// A transpose (CSC) of a CSR structure together with the edge permutation: the `k`-th edge of
/// the transpose is edge `perm[k]` of the original (CSR order). Within a transposed row, edges
/// keep their CSR order, so every reduction over the transpose is deterministic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transpose {
    /// Row pointer of the transpose, `n_cols + 1` entries.
    pub row_ptr: Vec<usize>,
    /// Column (= original row) of each transposed edge.
    pub col_idx: Vec<u32>,
    /// Original edge id of each transposed edge.
    pub perm: Vec<u32>,
}

/// Builds the transpose of `csr` with a stable counting sort: O(N + M + E), on the rayon
/// threads for large structures (see [`transpose_in_blocks`]); the result does not depend on
/// the number of threads.
pub fn transpose(csr: &CsrRef<'_>) -> Transpose {
    transpose_in_blocks(csr, transpose_blocks(csr))
}

/// Structures with fewer edges are transposed and counted on one thread.
pub(super) const PARALLEL_EDGES: usize = 1 << 22;

/// Row blocks [`transpose`] sorts in parallel: one per rayon thread, fewer where the blocks'
/// column counters (4 bytes per column and block) would pass a quarter of the output's bytes.
fn transpose_blocks(csr: &CsrRef<'_>) -> usize {
    if csr.nnz() < PARALLEL_EDGES {
        return 1;
    }
    let by_memory = csr.nnz() / (4 * csr.n_cols.max(1));
    rayon::current_num_threads().min(by_memory).max(1)
}

/// Edges per column of `csr`, counted on the rayon threads for large structures (as many
/// counters per thread as columns, so fewer threads where they would pass a quarter of the
/// column ids' bytes).
pub fn column_counts(csr: &CsrRef<'_>) -> Vec<usize> {
    let n = csr.n_cols;
    let count_into = |mut count: Vec<usize>, cols: &[u32]| {
        for &c in cols {
            count[c as usize] += 1;
        }
        count
    };
    let threads = if csr.nnz() < PARALLEL_EDGES {
        1
    } else {
        rayon::current_num_threads().min(csr.nnz() / (8 * n.max(1))).max(1)
    };
    if threads == 1 {
        return count_into(vec![0usize; n], csr.col_idx);
    }
    csr.col_idx
        .par_chunks(csr.nnz().div_ceil(threads))
        .map(|cols| count_into(vec![0usize; n], cols))
        .reduce_with(|mut a, b| {
            a.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
            a
        })
        .unwrap_or_else(|| vec![0usize; n])
}

/// The rows of a row pointer (`n + 1` offsets) cut into at most `blocks` contiguous blocks of
/// about the same edge count: block `b` owns rows `starts[b]..starts[b + 1]` (some blocks may
/// be empty).
pub fn row_blocks(row_ptr: &[usize], blocks: usize) -> Vec<usize> {
    let n = row_ptr.len().saturating_sub(1);
    let nnz = row_ptr.last().copied().unwrap_or(0);
    let blocks = blocks.clamp(1, n.max(1));
    let mut starts: Vec<usize> =
        (0..blocks).map(|b| row_ptr.partition_point(|&p| p < b * nnz / blocks).min(n)).collect();
    starts[0] = 0;
    for b in 1..blocks {
        starts[b] = starts[b].max(starts[b - 1]);
    }
    starts.push(n);
    starts
}

/// `out` (one entry per edge of `row_ptr`) cut at the row blocks `starts` of [`row_blocks`]:
/// each block's rows with its own slice, for filling the blocks on separate threads.
pub fn split_by_row_blocks<'a, T>(
    out: &'a mut [T],
    row_ptr: &[usize],
    starts: &[usize],
) -> Vec<(core::ops::Range<usize>, &'a mut [T])> {
    let mut rest = out;
    let mut pieces = Vec::with_capacity(starts.len().saturating_sub(1));
    for w in starts.windows(2) {
        let (head, tail) = rest.split_at_mut(row_ptr[w[1]] - row_ptr[w[0]]);
        pieces.push((w[0]..w[1], head));
        rest = tail;
    }
    pieces
}

/// [`transpose`] with the rows cut into `blocks` contiguous blocks of about the same edge
/// count. Each block counts its edges per column; a column's edges are then laid out block
/// after block, so within each transposed row the edges keep their CSR order, exactly as one
/// pass over all rows would place them. Each block then writes its edges at its own offsets
/// (disjoint positions; relaxed atomic stores, plain stores on the usual targets).
pub fn transpose_in_blocks(csr: &CsrRef<'_>, blocks: usize) -> Transpose {
    use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
    let (nnz, n_cols) = (csr.nnz(), csr.n_cols);
    let starts = row_blocks(csr.row_ptr, blocks);
    let blocks = starts.len() - 1;
    // per block: its edges per column, then (below) its first position within each column
    let mut cursor: Vec<Vec<u32>> = (0..blocks)
        .into_par_iter()
        .map(|b| {
            let mut count = vec![0u32; n_cols];
            for &c in &csr.col_idx[csr.row_ptr[starts[b]]..csr.row_ptr[starts[b + 1]]] {
                count[c as usize] += 1;
            }
            count
        })
        .collect();
    let mut row_ptr = vec![0usize; n_cols + 1];
    for j in 0..n_cols {
        // edges of column j before block b's: row_ptr[j] + the blocks before it
        let mut within = 0u32;
        for c in cursor.iter_mut() {
            let n = c[j];
            c[j] = within;
            within += n;
        }
        row_ptr[j + 1] = row_ptr[j] + within as usize;
    }
    let col_idx: Vec<AtomicU32> = (0..nnz).into_par_iter().map(|_| AtomicU32::new(0)).collect();
    let perm: Vec<AtomicU32> = (0..nnz).into_par_iter().map(|_| AtomicU32::new(0)).collect();
    cursor.par_iter_mut().enumerate().for_each(|(b, next)| {
        for i in starts[b]..starts[b + 1] {
            for e in csr.row(i) {
                let j = csr.col_idx[e] as usize;
                let k = row_ptr[j] + next[j] as usize;
                next[j] += 1;
                col_idx[k].store(i as u32, Relaxed);
                perm[k].store(e as u32, Relaxed);
            }
        }
    });
    // same size and alignment: `collect` reuses the allocations
    let col_idx = col_idx.into_iter().map(AtomicU32::into_inner).collect();
    let perm = perm.into_iter().map(AtomicU32::into_inner).collect();
    Transpose { row_ptr, col_idx, perm }
}

impl Transpose {
    /// A borrowed CSR view of the transpose (`n_rows` and `n_cols` swapped).
    pub fn as_csr<'a>(&'a self, original: &CsrRef<'_>) -> CsrRef<'a> {
        CsrRef { n_rows: original.n_cols, n_cols: original.n_rows, row_ptr: &self.row_ptr, col_idx: &self.col_idx }
    }
}
