//! Host-side borrowed views of the sparse structures every reference takes.

use rayon::prelude::*;

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

/// Builds the transpose of `csr` with a stable counting sort: O(N + M + E), on the rayon
/// threads for large structures (see [`transpose_in_blocks`]); the result does not depend on
/// the number of threads.
pub fn transpose(csr: &CsrRef<'_>) -> Transpose {
    transpose_in_blocks(csr, transpose_blocks(csr))
}

/// Structures with fewer edges are transposed and counted on one thread.
const PARALLEL_EDGES: usize = 1 << 22;

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

    /// The blocked transpose equals the one-block transpose for any block count, on graphs
    /// with a hub row, a hub column, empty rows and columns, and more blocks than rows.
    #[test]
    fn blocked_transpose_matches_one_block() {
        let mut s = 0x2545_F491_4F6C_DD1Du64;
        let mut rnd = move |m: u64| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s % m
        };
        for (n_rows, n_cols) in [(1usize, 1usize), (3, 5), (57, 31), (400, 1_000)] {
            let mut row_ptr = vec![0usize];
            let mut col_idx = Vec::new();
            for i in 0..n_rows {
                let deg = match i % 7 {
                    0 => 0,
                    3 => 3 * n_cols,
                    _ => rnd(9) as usize,
                };
                let mut row: Vec<u32> =
                    (0..deg).map(|_| if rnd(3) == 0 { 0 } else { rnd(n_cols as u64) as u32 }).collect();
                row.sort_unstable();
                col_idx.extend(row);
                row_ptr.push(col_idx.len());
            }
            let csr = CsrRef { n_rows, n_cols, row_ptr: &row_ptr, col_idx: &col_idx };
            let want = transpose_in_blocks(&csr, 1);
            assert_eq!(want.row_ptr[n_cols], col_idx.len());
            for blocks in [2, 3, 8, n_rows + 5] {
                assert_eq!(transpose_in_blocks(&csr, blocks), want, "{n_rows}x{n_cols}, {blocks} blocks");
            }
            assert_eq!(transpose(&csr), want);
        }
    }

    /// The split's edge lists, filled by blocks of rows, are each row's hot and cold edges in
    /// CSR order; the column counts of a structure large enough for several threads match one
    /// pass.
    #[test]
    fn hot_split_and_column_counts_match_one_pass() {
        let (n_rows, n_cols) = (3_001usize, 517usize);
        let mut s = 0x9E37_79B9_7F4A_7C15u64;
        let mut row_ptr = vec![0usize];
        let mut col_idx = Vec::new();
        for i in 0..n_rows {
            let deg = if i % 11 == 0 {
                0
            } else if i == 1_500 {
                1_500_000
            } else {
                1_000 + i % 97
            };
            for _ in 0..deg {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                col_idx.push(if s % 4 == 0 { (s >> 8) as u32 % 8 } else { (s >> 8) as u32 % n_cols as u32 });
            }
            row_ptr.push(col_idx.len());
        }
        let csr = CsrRef { n_rows, n_cols, row_ptr: &row_ptr, col_idx: &col_idx };
        assert!(csr.nnz() >= PARALLEL_EDGES);
        let mut want = vec![0usize; n_cols];
        col_idx.iter().for_each(|&c| want[c as usize] += 1);
        assert_eq!(column_counts(&csr), want);
        let split = HotSplit::new(&csr, 6, 0.0, 0).expect("a split");
        assert_eq!(split.cols.len(), 6);
        for i in 0..n_rows {
            let row = &col_idx[csr.row(i)];
            let hot: Vec<u32> = row.iter().filter(|c| split.cols.contains(c)).copied().collect();
            let cold: Vec<u32> = row.iter().filter(|c| !split.cols.contains(c)).copied().collect();
            let got_hot: Vec<u32> = split.hot_rank[split.hot_ptr[i]..split.hot_ptr[i + 1]]
                .iter()
                .map(|&r| split.cols[r as usize])
                .collect();
            assert_eq!(got_hot, hot, "row {i}");
            assert_eq!(&split.cold_col[split.cold_ptr[i]..split.cold_ptr[i + 1]], &cold[..], "row {i}");
        }
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

    #[test]
    fn hot_split_partitions_every_row() {
        // column 5 has 4 edges, 33 has 3, 2 has 2, others 1; row 3 is empty
        let row_ptr = vec![0, 4, 8, 11, 11];
        let col_idx = vec![5, 33, 2, 0, 5, 33, 2, 7, 5, 33, 5];
        let csr = CsrRef { n_rows: 4, n_cols: 40, row_ptr: &row_ptr, col_idx: &col_idx };
        let s = HotSplit::new(&csr, 2, 0.0, 0).expect("a split");
        assert_eq!(s.cols, vec![5, 33]);
        assert_eq!(s.hot_ptr, vec![0, 2, 4, 7, 7]);
        assert_eq!(s.hot_rank, vec![0, 1, 0, 1, 0, 1, 0]);
        assert_eq!(s.cold_ptr, vec![0, 2, 4, 4, 4]);
        assert_eq!(s.cold_col, vec![2, 0, 2, 7]);
        assert_eq!(s.hot_edges() + s.cold(&csr).nnz(), csr.nnz());
        // below the minimum share or size, or no room: no split
        assert!(HotSplit::new(&csr, 2, 0.9, 0).is_none());
        assert!(HotSplit::new(&csr, 2, 0.0, 12).is_none());
        assert!(HotSplit::new(&csr, 0, 0.0, 0).is_none());
        // more room than columns with edges: every read column is hot, no cold edge is left
        let all = HotSplit::new(&csr, 100, 0.0, 0).expect("a split");
        assert_eq!(all.cols, vec![0, 2, 5, 7, 33]);
        assert!(all.cold_col.is_empty());
    }
}
