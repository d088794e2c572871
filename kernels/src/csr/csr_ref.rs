//! The borrowed CSR structure ([`CsrRef`]) every reference takes.

/// A borrowed CSR matrix structure (no values): row `i` owns the edges
/// `row_ptr[i]..row_ptr[i + 1]`, and edge `e` reads from column (source node) `col_idx[e]`.
///
/// Convention used throughout the project: row = destination node, column = source node, so
/// `spmm` computes `out[i] = reduce_{e=(i,j)} w[e] * x[j]` (messages flow from `j` to `i`).
#[derive(Clone, Copy, Debug)]
pub struct CsrRef<'a> {
    /// Number of rows (destination nodes).
    pub n_rows: usize,
    /// Number of columns (source nodes).
    pub n_cols: usize,
    /// Row pointer, `n_rows + 1` monotone offsets starting at 0.
    pub row_ptr: &'a [usize],
    /// Column index of each edge, `row_ptr[n_rows]` entries, each `< n_cols`.
    pub col_idx: &'a [u32],
}

impl<'a> CsrRef<'a> {
    /// Number of stored edges.
    pub fn nnz(&self) -> usize {
        self.col_idx.len()
    }

    /// Edge range of row `i`.
    #[inline]
    pub fn row(&self, i: usize) -> core::ops::Range<usize> {
        self.row_ptr[i]..self.row_ptr[i + 1]
    }

    /// Number of edges of row `i`.
    #[inline]
    pub fn degree(&self, i: usize) -> usize {
        self.row_ptr[i + 1] - self.row_ptr[i]
    }

    /// The COO row of every edge (`rows[e] = i` for `e` in row `i`).
    pub fn edge_rows(&self) -> Vec<u32> {
        let mut rows = vec![0u32; self.nnz()];
        for i in 0..self.n_rows {
            for r in &mut rows[self.row(i)] {
                *r = i as u32;
            }
        }
        rows
    }
}
