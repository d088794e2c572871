//! Host-side borrowed views of the sparse structures every reference takes.

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

/// Builds the transpose of `csr` with a stable counting sort: O(N + M + E).
pub fn transpose(csr: &CsrRef<'_>) -> Transpose {
    let mut counts = vec![0usize; csr.n_cols + 1];
    for &c in csr.col_idx {
        counts[c as usize + 1] += 1;
    }
    for j in 0..csr.n_cols {
        counts[j + 1] += counts[j];
    }
    let row_ptr = counts.clone();
    let mut next = counts;
    let mut col_idx = vec![0u32; csr.nnz()];
    let mut perm = vec![0u32; csr.nnz()];
    for i in 0..csr.n_rows {
        for e in csr.row(i) {
            let j = csr.col_idx[e] as usize;
            let k = next[j];
            next[j] += 1;
            col_idx[k] = i as u32;
            perm[k] = e as u32;
        }
    }
    Transpose { row_ptr, col_idx, perm }
}

impl Transpose {
    /// A borrowed CSR view of the transpose (`n_rows` and `n_cols` swapped).
    pub fn as_csr<'a>(&'a self, original: &CsrRef<'_>) -> CsrRef<'a> {
        CsrRef { n_rows: original.n_cols, n_cols: original.n_rows, row_ptr: &self.row_ptr, col_idx: &self.col_idx }
    }
}

/// The edge-group partition used for load balance: every row is split into consecutive groups
/// of at most `width` edges (empty rows have no group). A row with more than one group is a
/// *split row*: its groups write partial results to staging slots that a second pass combines
/// in group order, so results stay deterministic without float atomics. The second pass also
/// visits the empty rows (with no slot) to write their value (0 for every reduction), so no
/// output needs a separate zero fill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgeGroups {
    /// Maximum edges per group.
    pub width: usize,
    /// Edge offsets of the groups, `G + 1` entries (group `g` is `ptr[g]..ptr[g + 1]`).
    pub ptr: Vec<usize>,
    /// Row of each group.
    pub row: Vec<u32>,
    /// Staging slot of each group, or `-1` when its row has a single group.
    pub slot: Vec<i32>,
    /// The rows of the second pass (split rows and empty rows), ascending.
    pub finish_rows: Vec<u32>,
    /// Slot offsets of the finish rows, `finish_rows.len() + 1` entries; the slots of finish
    /// row `s` are `finish_ptr[s]..finish_ptr[s + 1]`, in group order (none for an empty row).
    pub finish_ptr: Vec<usize>,
}

impl EdgeGroups {
    /// Partitions `csr` into groups of at most `width` edges (`width >= 1`).
    pub fn new(csr: &CsrRef<'_>, width: usize) -> Self {
        let width = width.max(1);
        let mut ptr = Vec::with_capacity(csr.nnz() / width + csr.n_rows + 1);
        let mut row = Vec::with_capacity(ptr.capacity());
        let mut slot = Vec::with_capacity(ptr.capacity());
        let mut finish_rows = Vec::new();
        let mut finish_ptr = vec![0usize];
        let mut n_slots = 0usize;
        for i in 0..csr.n_rows {
            let r = csr.row(i);
            let deg = r.len();
            if deg == 0 {
                finish_rows.push(i as u32);
                finish_ptr.push(n_slots);
                continue;
            }
            let n_groups = deg.div_ceil(width);
            for g in 0..n_groups {
                ptr.push(r.start + g * width);
                row.push(i as u32);
                if n_groups > 1 {
                    slot.push(n_slots as i32);
                    n_slots += 1;
                } else {
                    slot.push(-1);
                }
            }
            if n_groups > 1 {
                finish_rows.push(i as u32);
                finish_ptr.push(n_slots);
            }
        }
        ptr.push(csr.nnz());
        Self { width, ptr, row, slot, finish_rows, finish_ptr }
    }

    /// Number of groups.
    pub fn len(&self) -> usize {
        self.row.len()
    }

    /// Whether there is no group (the matrix has no edge).
    pub fn is_empty(&self) -> bool {
        self.row.is_empty()
    }

    /// Number of staging slots (groups that belong to split rows).
    pub fn n_slots(&self) -> usize {
        *self.finish_ptr.last().unwrap_or(&0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> (Vec<usize>, Vec<u32>) {
        // row 0: 1, 2 ; row 1: empty ; row 2: 0, 1, 2, 2
        (vec![0, 2, 2, 6], vec![1, 2, 0, 1, 2, 2])
    }

    #[test]
    fn transpose_is_stable_and_inverts() {
        let (rp, ci) = small();
        let csr = CsrRef { n_rows: 3, n_cols: 3, row_ptr: &rp, col_idx: &ci };
        let t = transpose(&csr);
        assert_eq!(t.row_ptr, vec![0, 1, 3, 6]);
        assert_eq!(t.col_idx, vec![2, 0, 2, 0, 2, 2]);
        assert_eq!(t.perm, vec![2, 0, 3, 1, 4, 5]);
        let tc = t.as_csr(&csr);
        let tt = transpose(&tc);
        assert_eq!(tt.row_ptr, rp);
        assert_eq!(tt.col_idx, ci);
    }

    #[test]
    fn groups_split_long_rows() {
        let (rp, ci) = small();
        let csr = CsrRef { n_rows: 3, n_cols: 3, row_ptr: &rp, col_idx: &ci };
        let g = EdgeGroups::new(&csr, 3);
        assert_eq!(g.ptr, vec![0, 2, 5, 6]);
        assert_eq!(g.row, vec![0, 2, 2]);
        assert_eq!(g.slot, vec![-1, 0, 1]);
        assert_eq!(g.finish_rows, vec![1, 2]);
        assert_eq!(g.finish_ptr, vec![0, 0, 2]);
        assert_eq!(g.n_slots(), 2);
        let g1 = EdgeGroups::new(&csr, 100);
        assert_eq!(g1.finish_rows, vec![1]);
        assert_eq!(g1.len(), 2);
    }
}
