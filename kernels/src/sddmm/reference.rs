//! CPU reference of SDDMM: `out[e, h] = <a[row e, head h], b[col e, head h]>`.

use crate::csr::CsrRef;
use rayon::prelude::*;

/// `a` is `[n_rows, f]`, `b` is `[n_cols, f]`, the features split into `heads` equal heads;
/// returns `[nnz, heads]`.
pub fn sddmm(csr: &CsrRef<'_>, a: &[f64], b: &[f64], f: usize, heads: usize) -> Vec<f64> {
    assert!(heads >= 1 && f % heads == 0, "heads must divide f");
    assert_eq!(a.len(), csr.n_rows * f);
    assert_eq!(b.len(), csr.n_cols * f);
    let d = f / heads;
    let rows = csr.edge_rows();
    let mut out = vec![0.0f64; csr.nnz() * heads];
    out.par_chunks_mut(heads.max(1) * 256).enumerate().for_each(|(t, chunk)| {
        for (k, o) in chunk.chunks_mut(heads).enumerate() {
            let e = t * 256 + k;
            let i = rows[e] as usize;
            let j = csr.col_idx[e] as usize;
            for (h, oh) in o.iter_mut().enumerate() {
                let mut acc = 0.0;
                for c in h * d..(h + 1) * d {
                    acc += a[i * f + c] * b[j * f + c];
                }
                *oh = acc;
            }
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_products_per_head() {
        let rp = vec![0, 1, 2];
        let ci = vec![1u32, 0];
        let csr = CsrRef { n_rows: 2, n_cols: 2, row_ptr: &rp, col_idx: &ci };
        let a = vec![1.0, 2.0, 3.0, 4.0];
        let b = vec![5.0, 6.0, 7.0, 8.0];
        assert_eq!(sddmm(&csr, &a, &b, 2, 1), vec![1.0 * 7.0 + 2.0 * 8.0, 3.0 * 5.0 + 4.0 * 6.0]);
        assert_eq!(sddmm(&csr, &a, &b, 2, 2), vec![7.0, 16.0, 15.0, 24.0]);
    }
}
