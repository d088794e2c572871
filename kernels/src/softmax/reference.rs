//! CPU reference of the edge softmax over CSR rows (max-subtracted, as GAT needs).

use crate::csr::CsrRef;
use rayon::prelude::*;

fn per_row<F>(csr: &CsrRef<'_>, heads: usize, out: &mut [f64], f: F)
where
    F: Fn(core::ops::Range<usize>, usize, &mut [f64]) + Sync,
{
    // Rows own disjoint edge ranges: split `out` at the row boundaries.
    let mut slices: Vec<(usize, &mut [f64])> = Vec::with_capacity(csr.n_rows);
    let mut rest = out;
    for i in 0..csr.n_rows {
        let (head, tail) = rest.split_at_mut(csr.degree(i) * heads);
        slices.push((i, head));
        rest = tail;
    }
    slices.into_par_iter().with_min_len(64).for_each(|(i, s)| {
        let r = csr.row(i);
        for h in 0..heads {
            f(r.clone(), h, s);
        }
    });
}

/// `y[e, h] = exp(s[e, h] - m) / sum_{e' in row} exp(s[e', h] - m)` with `m` the row maximum.
pub fn edge_softmax(csr: &CsrRef<'_>, s: &[f64], heads: usize) -> Vec<f64> {
    assert_eq!(s.len(), csr.nnz() * heads);
    let mut y = vec![0.0f64; s.len()];
    per_row(csr, heads, &mut y, |r, h, out| {
        let base = r.start;
        let m = r.clone().map(|e| s[e * heads + h]).fold(f64::NEG_INFINITY, f64::max);
        let mut z = 0.0;
        for e in r.clone() {
            let v = (s[e * heads + h] - m).exp();
            out[(e - base) * heads + h] = v;
            z += v;
        }
        for e in r {
            out[(e - base) * heads + h] /= z;
        }
    });
    y
}

/// Backward of [`edge_softmax`]: `ds = y * (dy - sum_{row} y * dy)`.
pub fn edge_softmax_backward(csr: &CsrRef<'_>, y: &[f64], dy: &[f64], heads: usize) -> Vec<f64> {
    assert_eq!(y.len(), csr.nnz() * heads);
    assert_eq!(dy.len(), y.len());
    let mut ds = vec![0.0f64; y.len()];
    per_row(csr, heads, &mut ds, |r, h, out| {
        let base = r.start;
        let dot: f64 = r.clone().map(|e| y[e * heads + h] * dy[e * heads + h]).sum();
        for e in r {
            let k = e * heads + h;
            out[(e - base) * heads + h] = y[k] * (dy[k] - dot);
        }
    });
    ds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_sum_to_one_and_large_scores_do_not_overflow() {
        let rp = vec![0, 3, 3, 4];
        let ci = vec![0u32, 1, 2, 0];
        let csr = CsrRef { n_rows: 3, n_cols: 3, row_ptr: &rp, col_idx: &ci };
        let s = vec![1000.0, 1001.0, 999.0, -5.0];
        let y = edge_softmax(&csr, &s, 1);
        assert!((y[0] + y[1] + y[2] - 1.0).abs() < 1e-12);
        assert!(y[1] > y[0] && y[0] > y[2]);
        assert_eq!(y[3], 1.0);
        let dy = vec![1.0, 1.0, 1.0, 3.0];
        let ds = edge_softmax_backward(&csr, &y, &dy, 1);
        // a constant upstream gradient has zero softmax gradient
        assert!(ds.iter().all(|v| v.abs() < 1e-12));
    }
}
