//! Host adjacency: a validated CSR matrix with optional edge weights, and how an edge list
//! becomes one.
//!
//! Convention: row `i` of the adjacency lists the in-neighbours of node `i` (row =
//! destination, column = source), so an aggregation computes
//! `out[i] = reduce_{j -> i} w(j -> i) * x[j]`. For the usual symmetric graphs the distinction
//! does not matter.

use crate::error::GraphError;
use sparse_gnn_kernels::csr::{transpose, CsrRef};

/// Largest number of nodes a device graph can hold (node ids are signed 32-bit, as Burn's
/// integer tensors are).
pub const MAX_INDEX: usize = i32::MAX as usize;

/// Largest number of edges a device graph can hold: edge offsets and edge ids are unsigned
/// 32-bit (stored in the bits of i32 tensors, which the kernels read as unsigned), and
/// `u32::MAX` itself stays free as the "no edge" mark of the max-reduce's argmax.
pub const MAX_EDGES: usize = u32::MAX as usize;

/// How an edge list is turned into an adjacency.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BuildOptions {
    /// Add the reverse of every edge.
    pub symmetrize: bool,
    /// Give every node a self-loop (nodes that already have one keep a single one when
    /// `dedup` is on; without `dedup` an existing self-loop is not duplicated either).
    pub add_self_loops: bool,
    /// Merge duplicate edges (their weights add up).
    pub dedup: bool,
}

impl BuildOptions {
    /// Symmetrise and deduplicate (the usual preprocessing of an undirected edge list).
    pub fn undirected() -> Self {
        Self { symmetrize: true, add_self_loops: false, dedup: true }
    }
}

/// A validated CSR adjacency with optional edge weights (host memory).
#[derive(Clone, Debug, PartialEq)]
pub struct Csr {
    n_rows: usize,
    n_cols: usize,
    pub(super) row_ptr: Vec<usize>,
    pub(super) col_idx: Vec<u32>,
    weights: Option<Vec<f32>>,
}

impl Csr {
    /// Builds a CSR from its arrays, checking every rule: `row_ptr` has `n_rows + 1` entries,
    /// starts at 0, never decreases and ends at `col_idx.len()`; every column is in
    /// `0..n_cols`; weights (if any) match the edges and are finite; sizes fit 32-bit indices.
    pub fn new(
        n_rows: usize,
        n_cols: usize,
        row_ptr: &[i64],
        col_idx: &[i64],
        weights: Option<Vec<f32>>,
    ) -> Result<Self, GraphError> {
        check_row_ptr(n_rows, n_cols, row_ptr, col_idx.len())?;
        let mut cols = Vec::with_capacity(col_idx.len());
        for (edge, &c) in col_idx.iter().enumerate() {
            if c < 0 || c as usize >= n_cols {
                return Err(GraphError::ColumnOutOfRange { edge, col: c, n_cols });
            }
            cols.push(c as u32);
        }
        if let Some(w) = &weights {
            check_weights(w, cols.len())?;
        }
        Ok(Self { n_rows, n_cols, row_ptr: row_ptr.iter().map(|&v| v as usize).collect(), col_idx: cols, weights })
    }

    /// [`Csr::new`] with the columns already as u32 and taken by value: the same checks, and
    /// no second copy of the edge array (a loader's largest).
    pub fn from_columns(
        n_rows: usize,
        n_cols: usize,
        row_ptr: &[i64],
        col_idx: Vec<u32>,
        weights: Option<Vec<f32>>,
    ) -> Result<Self, GraphError> {
        check_row_ptr(n_rows, n_cols, row_ptr, col_idx.len())?;
        if let Some((edge, &c)) = col_idx.iter().enumerate().find(|(_, &c)| c as usize >= n_cols) {
            return Err(GraphError::ColumnOutOfRange { edge, col: c as i64, n_cols });
        }
        if let Some(w) = &weights {
            check_weights(w, col_idx.len())?;
        }
        Ok(Self { n_rows, n_cols, row_ptr: row_ptr.iter().map(|&v| v as usize).collect(), col_idx, weights })
    }

    /// Builds the adjacency of `n_nodes` nodes from an edge list `src[e] -> dst[e]` (the CSR row
    /// is the destination). Edges are sorted by (destination, source); `opts` can symmetrise,
    /// add self-loops and merge duplicates.
    pub fn from_edges(
        n_nodes: usize,
        src: &[i64],
        dst: &[i64],
        weights: Option<&[f32]>,
        opts: BuildOptions,
    ) -> Result<Self, GraphError> {
        check_size("nodes", n_nodes, MAX_INDEX)?;
        if src.len() != dst.len() {
            return Err(GraphError::EdgeListLength { src: src.len(), dst: dst.len() });
        }
        if let Some(w) = weights {
            check_weights(w, src.len())?;
        }
        for (edge, &node) in src.iter().chain(dst.iter()).enumerate() {
            if node < 0 || node as usize >= n_nodes {
                let edge = if edge >= src.len() { edge - src.len() } else { edge };
                return Err(GraphError::NodeOutOfRange { edge, node, n_nodes });
            }
        }
        let mut edges: Vec<(u32, u32, f32)> = Vec::with_capacity(src.len() * (1 + opts.symmetrize as usize));
        for e in 0..src.len() {
            let w = weights.map(|w| w[e]).unwrap_or(1.0);
            edges.push((dst[e] as u32, src[e] as u32, w));
            if opts.symmetrize && src[e] != dst[e] {
                edges.push((src[e] as u32, dst[e] as u32, w));
            }
        }
        if opts.add_self_loops {
            let mut has = vec![false; n_nodes];
            for &(r, c, _) in &edges {
                if r == c {
                    has[r as usize] = true;
                }
            }
            for (i, h) in has.iter().enumerate() {
                if !h {
                    edges.push((i as u32, i as u32, 1.0));
                }
            }
        }
        edges.sort_by_key(|&(r, c, _)| (r, c));
        if opts.dedup {
            let mut merged: Vec<(u32, u32, f32)> = Vec::with_capacity(edges.len());
            for (r, c, w) in edges {
                match merged.last_mut() {
                    Some(last) if last.0 == r && last.1 == c => last.2 += w,
                    _ => merged.push((r, c, w)),
                }
            }
            edges = merged;
        }
        check_size("edges", edges.len(), MAX_EDGES)?;
        let mut row_ptr = vec![0usize; n_nodes + 1];
        for &(r, _, _) in &edges {
            row_ptr[r as usize + 1] += 1;
        }
        for i in 0..n_nodes {
            row_ptr[i + 1] += row_ptr[i];
        }
        let col_idx = edges.iter().map(|e| e.1).collect();
        let weights = weights.map(|_| edges.iter().map(|e| e.2).collect());
        Ok(Self { n_rows: n_nodes, n_cols: n_nodes, row_ptr, col_idx, weights })
    }

    /// Number of rows (destination nodes).
    pub fn n_rows(&self) -> usize {
        self.n_rows
    }
    /// Number of columns (source nodes).
    pub fn n_cols(&self) -> usize {
        self.n_cols
    }
    /// Number of edges.
    pub fn nnz(&self) -> usize {
        self.col_idx.len()
    }
    /// Row pointer (`n_rows + 1` entries).
    pub fn row_ptr(&self) -> &[usize] {
        &self.row_ptr
    }
    /// Column of every edge.
    pub fn col_idx(&self) -> &[u32] {
        &self.col_idx
    }
    /// Edge weights, if any.
    pub fn weights(&self) -> Option<&[f32]> {
        self.weights.as_deref()
    }
    /// Replaces the edge weights (checked).
    pub fn with_weights(mut self, weights: Option<Vec<f32>>) -> Result<Self, GraphError> {
        if let Some(w) = &weights {
            check_weights(w, self.nnz())?;
        }
        self.weights = weights;
        Ok(self)
    }
    /// Borrowed view used by the references.
    pub fn as_ref(&self) -> CsrRef<'_> {
        CsrRef { n_rows: self.n_rows, n_cols: self.n_cols, row_ptr: &self.row_ptr, col_idx: &self.col_idx }
    }
    /// Number of edges of every row (in-degree of every node).
    pub fn row_degrees(&self) -> Vec<usize> {
        self.row_ptr.windows(2).map(|w| w[1] - w[0]).collect()
    }
    /// Number of edges of every column (out-degree of every node).
    pub fn col_degrees(&self) -> Vec<usize> {
        let mut d = vec![0usize; self.n_cols];
        for &c in &self.col_idx {
            d[c as usize] += 1;
        }
        d
    }
    /// Sum of the weights of every row's edges (weighted in-degree, f64 sums in edge order);
    /// `None` without weights.
    pub fn row_weight_sums(&self) -> Option<Vec<f64>> {
        let w = self.weights.as_ref()?;
        Some(self.row_ptr.windows(2).map(|r| w[r[0]..r[1]].iter().map(|&v| f64::from(v)).sum()).collect())
    }
    /// Sum of the weights of every column's edges (weighted out-degree, f64 sums in edge
    /// order); `None` without weights.
    pub fn col_weight_sums(&self) -> Option<Vec<f64>> {
        let w = self.weights.as_ref()?;
        let mut d = vec![0.0f64; self.n_cols];
        for (&c, &v) in self.col_idx.iter().zip(w) {
            d[c as usize] += f64::from(v);
        }
        Some(d)
    }
    /// The transposed adjacency (weights follow their edges).
    pub fn transposed(&self) -> Csr {
        let t = transpose(&self.as_ref());
        let weights = self.weights.as_ref().map(|w| t.perm.iter().map(|&e| w[e as usize]).collect());
        Csr { n_rows: self.n_cols, n_cols: self.n_rows, row_ptr: t.row_ptr, col_idx: t.col_idx, weights }
    }
    /// Whether the structure equals its transpose (an undirected graph stored both ways).
    pub fn is_symmetric(&self) -> bool {
        if self.n_rows != self.n_cols {
            return false;
        }
        let t = transpose(&self.as_ref());
        // rows of the transpose are in CSR order of the original rows, i.e. ascending when the
        // original rows are traversed in order; compare as sorted sets per row
        (0..self.n_rows).all(|i| {
            let mut a: Vec<u32> = self.col_idx[self.row_ptr[i]..self.row_ptr[i + 1]].to_vec();
            let mut b: Vec<u32> = t.col_idx[t.row_ptr[i]..t.row_ptr[i + 1]].to_vec();
            a.sort_unstable();
            b.sort_unstable();
            a == b
        })
    }
    /// Number of self-loops.
    pub fn self_loops(&self) -> usize {
        (0..self.n_rows)
            .map(|i| self.col_idx[self.row_ptr[i]..self.row_ptr[i + 1]].iter().filter(|&&c| c as usize == i).count())
            .sum()
    }
}

/// The rules of a row pointer over `nnz` edges ([`Csr::new`]), and the sizes' 32-bit limits.
fn check_row_ptr(n_rows: usize, n_cols: usize, row_ptr: &[i64], nnz: usize) -> Result<(), GraphError> {
    check_size("nodes", n_rows.max(n_cols), MAX_INDEX)?;
    check_size("edges", nnz, MAX_EDGES)?;
    if row_ptr.len() != n_rows + 1 {
        return Err(GraphError::RowPtrLength { got: row_ptr.len(), expected: n_rows + 1 });
    }
    if row_ptr[0] != 0 {
        return Err(GraphError::RowPtrStart(row_ptr[0]));
    }
    for (row, w) in row_ptr.windows(2).enumerate() {
        if w[1] < w[0] {
            return Err(GraphError::RowPtrNotMonotone { row, start: w[0], end: w[1] });
        }
    }
    let end = row_ptr[n_rows];
    if end != nnz as i64 {
        return Err(GraphError::RowPtrEnd { end, nnz });
    }
    Ok(())
}

fn check_size(what: &'static str, count: usize, limit: usize) -> Result<(), GraphError> {
    if count > limit {
        return Err(GraphError::TooLarge { what, count, limit });
    }
    Ok(())
}

fn check_weights(w: &[f32], nnz: usize) -> Result<(), GraphError> {
    if w.len() != nnz {
        return Err(GraphError::WeightsLength { got: w.len(), nnz });
    }
    if let Some((edge, &value)) = w.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(GraphError::NonFiniteWeight { edge, value });
    }
    Ok(())
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_reach_the_unsigned_32_bit_limit_nodes_the_signed_one() {
        assert!(check_size("edges", MAX_EDGES, MAX_EDGES).is_ok());
        assert!(check_size("edges", i32::MAX as usize + 1, MAX_EDGES).is_ok());
        let e = check_size("edges", MAX_EDGES + 1, MAX_EDGES).unwrap_err();
        assert_eq!(e, GraphError::TooLarge { what: "edges", count: MAX_EDGES + 1, limit: 4_294_967_295 });
        assert!(check_size("nodes", MAX_INDEX + 1, MAX_INDEX).is_err());
    }

    #[test]
    fn edge_list_options() {
        let src = [0i64, 1, 1, 2];
        let dst = [1i64, 2, 2, 2];
        let plain = Csr::from_edges(3, &src, &dst, None, BuildOptions::default()).unwrap();
        assert_eq!(plain.row_ptr(), &[0, 0, 1, 4]);
        assert_eq!(plain.col_idx(), &[0, 1, 1, 2]);
        let dd = Csr::from_edges(3, &src, &dst, None, BuildOptions { dedup: true, ..Default::default() }).unwrap();
        assert_eq!(dd.col_idx(), &[0, 1, 2]);
        let sym = Csr::from_edges(3, &src, &dst, None, BuildOptions::undirected()).unwrap();
        assert!(sym.is_symmetric());
        assert_eq!(sym.nnz(), 5); // 0-1, 1-0, 1-2, 2-1, 2-2
        let sl = Csr::from_edges(
            3,
            &src,
            &dst,
            None,
            BuildOptions { add_self_loops: true, dedup: true, ..Default::default() },
        )
        .unwrap();
        assert_eq!(sl.self_loops(), 3);
        let w = [1.0f32, 2.0, 3.0, 4.0];
        let wd = Csr::from_edges(3, &src, &dst, Some(&w), BuildOptions { dedup: true, ..Default::default() }).unwrap();
        assert_eq!(wd.weights().unwrap(), &[1.0, 5.0, 4.0]);
        // weighted degrees: rows 1 (0 -> 1) and 2 (1 -> 2, 2 -> 2); columns 0, 1 and 2
        assert_eq!(wd.row_weight_sums().unwrap(), vec![0.0, 1.0, 9.0]);
        assert_eq!(wd.col_weight_sums().unwrap(), vec![1.0, 5.0, 4.0]);
        assert!(dd.row_weight_sums().is_none() && dd.col_weight_sums().is_none());
    }
}
