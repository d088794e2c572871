//! CPU reference of the CBSR operations of MaxK-GNN: scatter to dense, gather from dense,
//! SpGEMM forward (`A * scatter(Xs)`), SSpMM backward (gradient at the CBSR pattern) and the
//! edge-weight gradient of the SpGEMM.
//!
//! A CBSR matrix of `n` rows keeps `k` entries per row: `values[i * k + t]` at column
//! `indices[i * k + t]` of a `dim`-wide row; the columns of a row are distinct.

use crate::csr::CsrRef;
use rayon::prelude::*;

/// Dense `[n, dim]` matrix with the CBSR entries in place and zeros elsewhere.
pub fn to_dense(values: &[f64], indices: &[u32], n: usize, k: usize, dim: usize) -> Vec<f64> {
    assert_eq!(values.len(), n * k);
    assert_eq!(indices.len(), n * k);
    let mut out = vec![0.0f64; n * dim];
    for i in 0..n {
        for t in 0..k {
            out[i * dim + indices[i * k + t] as usize] = values[i * k + t];
        }
    }
    out
}

/// Values of the dense `[n, dim]` matrix `x` at the CBSR pattern.
pub fn gather(x: &[f64], indices: &[u32], n: usize, k: usize, dim: usize) -> Vec<f64> {
    assert_eq!(x.len(), n * dim);
    (0..n * k).map(|p| x[(p / k) * dim + indices[p] as usize]).collect()
}

/// SpGEMM forward: `out[i, :] = sum_{e=(i,j)} w[e] * scatter(cbsr[j])`, `out` is `[n_rows, dim]`.
pub fn spgemm(csr: &CsrRef<'_>, w: Option<&[f64]>, values: &[f64], indices: &[u32], k: usize, dim: usize) -> Vec<f64> {
    assert_eq!(values.len(), csr.n_cols * k);
    let mut out = vec![0.0f64; csr.n_rows * dim];
    out.par_chunks_mut(dim.max(1)).enumerate().for_each(|(i, o)| {
        for e in csr.row(i) {
            let j = csr.col_idx[e] as usize;
            let we = w.map(|w| w[e]).unwrap_or(1.0);
            for t in 0..k {
                o[indices[j * k + t] as usize] += we * values[j * k + t];
            }
        }
    });
    out
}

/// SSpMM backward of [`spgemm`] with respect to the CBSR values:
/// `dvalues[j, t] = sum_{e=(i,j)} w[e] * dy[i, indices[j, t]]`, `[n_cols, k]`. Sequential
/// scatter (the oracle); the backends use the outer product or a gather over the transpose.
pub fn sspmm(csr: &CsrRef<'_>, w: Option<&[f64]>, dy: &[f64], indices: &[u32], k: usize, dim: usize) -> Vec<f64> {
    assert_eq!(dy.len(), csr.n_rows * dim);
    assert_eq!(indices.len(), csr.n_cols * k);
    let mut dv = vec![0.0f64; csr.n_cols * k];
    for i in 0..csr.n_rows {
        for e in csr.row(i) {
            let j = csr.col_idx[e] as usize;
            let we = w.map(|w| w[e]).unwrap_or(1.0);
            for t in 0..k {
                dv[j * k + t] += we * dy[i * dim + indices[j * k + t] as usize];
            }
        }
    }
    dv
}

/// Gradient of [`spgemm`] with respect to the edge weights:
/// `dw[e] = sum_t dy[i, indices[j, t]] * values[j, t]`.
pub fn spgemm_backward_w(
    csr: &CsrRef<'_>,
    dy: &[f64],
    values: &[f64],
    indices: &[u32],
    k: usize,
    dim: usize,
) -> Vec<f64> {
    let rows = csr.edge_rows();
    (0..csr.nnz())
        .into_par_iter()
        .map(|e| {
            let (i, j) = (rows[e] as usize, csr.col_idx[e] as usize);
            (0..k).map(|t| dy[i * dim + indices[j * k + t] as usize] * values[j * k + t]).sum()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spmm::reference::{spmm, EdgeWeights};
    use crate::spmm::Reduce;

    #[test]
    fn spgemm_equals_dense_spmm_of_the_scattered_matrix() {
        let rp = vec![0, 2, 2, 3];
        let ci = vec![0u32, 2, 1];
        let csr = CsrRef { n_rows: 3, n_cols: 3, row_ptr: &rp, col_idx: &ci };
        let (k, dim) = (2, 4);
        let values = vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let indices = vec![0u32, 3, 1, 2, 3, 0];
        let w = vec![0.5, -1.0, 2.0];
        let dense = to_dense(&values, &indices, 3, k, dim);
        let (expect, _) = spmm(&csr, Some(EdgeWeights { values: &w, heads: 1 }), &dense, dim, Reduce::Sum);
        assert_eq!(spgemm(&csr, Some(&w), &values, &indices, k, dim), expect);
        assert_eq!(gather(&dense, &indices, 3, k, dim), values);
    }
}
