//! CPU reference of CSR SpMM and its max-reduce backward (f64 accumulation).

use crate::csr::CsrRef;
use rayon::prelude::*;

/// How the messages of a row are combined.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reduce {
    /// `sum_e w[e] * x[col e]`.
    Sum,
    /// The sum divided by the number of edges of the row (0 for an empty row).
    Mean,
    /// The feature-wise maximum of `w[e] * x[col e]`; the winning edge is kept as the argmax
    /// (first edge on ties); an empty row gives 0 and argmax -1.
    Max,
}

/// Edge weights of an SpMM: `w[e * heads + h]` scales the features of head `h`
/// (`f / heads` consecutive features) of the message of edge `e`.
#[derive(Clone, Copy, Debug)]
pub struct EdgeWeights<'a> {
    /// `[nnz, heads]`, row-major.
    pub values: &'a [f64],
    /// Number of heads; must divide the feature width.
    pub heads: usize,
}

impl EdgeWeights<'_> {
    #[inline]
    fn get(w: Option<&Self>, e: usize, feature: usize, f: usize) -> f64 {
        match w {
            None => 1.0,
            Some(w) => {
                let per_head = f / w.heads;
                w.values[e * w.heads + feature / per_head]
            }
        }
    }
}

/// Rows per rayon task: large enough to amortise scheduling on small graphs.
const ROWS_PER_TASK: usize = 64;

/// `out[i, :] = reduce_{e in row i} w[e] * x[col e, :]` for `x` of shape `[n_cols, f]`.
/// Returns `out` `[n_rows, f]` and, for [`Reduce::Max`], the argmax edge ids `[n_rows, f]`.
pub fn spmm(
    csr: &CsrRef<'_>,
    w: Option<EdgeWeights<'_>>,
    x: &[f64],
    f: usize,
    reduce: Reduce,
) -> (Vec<f64>, Option<Vec<i64>>) {
    assert_eq!(x.len(), csr.n_cols * f, "x must be [n_cols, f]");
    if let Some(w) = &w {
        assert!(w.heads >= 1 && f % w.heads == 0, "heads must divide f");
        assert_eq!(w.values.len(), csr.nnz() * w.heads);
    }
    let mut out = vec![0.0f64; csr.n_rows * f];
    let mut arg = if reduce == Reduce::Max { vec![-1i64; csr.n_rows * f] } else { Vec::new() };
    if f == 0 {
        return (out, (reduce == Reduce::Max).then_some(arg));
    }
    let w = w.as_ref();
    let body = |i: usize, o: &mut [f64], a: Option<&mut [i64]>| {
        let r = csr.row(i);
        match reduce {
            Reduce::Sum | Reduce::Mean => {
                for e in r.clone() {
                    let j = csr.col_idx[e] as usize;
                    let xr = &x[j * f..(j + 1) * f];
                    for c in 0..f {
                        o[c] += EdgeWeights::get(w, e, c, f) * xr[c];
                    }
                }
                if reduce == Reduce::Mean && !r.is_empty() {
                    let inv = 1.0 / r.len() as f64;
                    o.iter_mut().for_each(|v| *v *= inv);
                }
            }
            Reduce::Max => {
                let a = a.expect("argmax buffer");
                for e in r {
                    let j = csr.col_idx[e] as usize;
                    for c in 0..f {
                        let v = EdgeWeights::get(w, e, c, f) * x[j * f + c];
                        if a[c] < 0 || v > o[c] {
                            o[c] = v;
                            a[c] = e as i64;
                        }
                    }
                }
            }
        }
    };
    if reduce == Reduce::Max {
        out.par_chunks_mut(f * ROWS_PER_TASK).zip(arg.par_chunks_mut(f * ROWS_PER_TASK)).enumerate().for_each(
            |(t, (oc, ac))| {
                for (k, (o, a)) in oc.chunks_mut(f).zip(ac.chunks_mut(f)).enumerate() {
                    body(t * ROWS_PER_TASK + k, o, Some(a));
                }
            },
        );
        (out, Some(arg))
    } else {
        out.par_chunks_mut(f * ROWS_PER_TASK).enumerate().for_each(|(t, oc)| {
            for (k, o) in oc.chunks_mut(f).enumerate() {
                body(t * ROWS_PER_TASK + k, o, None);
            }
        });
        (out, None)
    }
}

/// Gradient of a max-reduce SpMM with respect to `x`:
/// `dx[j, c] = sum_{e=(i,j): argmax[i,c] = e} w[e] * dout[i, c]`. Sequential scatter: this is
/// the oracle, the backends compute it as a gather over the transpose.
pub fn spmm_max_backward_x(
    csr: &CsrRef<'_>,
    w: Option<EdgeWeights<'_>>,
    dout: &[f64],
    argmax: &[i64],
    f: usize,
) -> Vec<f64> {
    assert_eq!(dout.len(), csr.n_rows * f);
    assert_eq!(argmax.len(), csr.n_rows * f);
    let mut dx = vec![0.0f64; csr.n_cols * f];
    for i in 0..csr.n_rows {
        for c in 0..f {
            let a = argmax[i * f + c];
            if a >= 0 {
                let e = a as usize;
                debug_assert!(csr.row(i).contains(&e));
                let j = csr.col_idx[e] as usize;
                dx[j * f + c] += EdgeWeights::get(w.as_ref(), e, c, f) * dout[i * f + c];
            }
        }
    }
    dx
}

/// Gradient of a max-reduce SpMM with respect to the edge weights (`[nnz, heads]`):
/// `dw[e, h] = sum_{c in head h: argmax[i,c] = e} dout[i, c] * x[j, c]`.
pub fn spmm_max_backward_w(
    csr: &CsrRef<'_>,
    heads: usize,
    dout: &[f64],
    x: &[f64],
    argmax: &[i64],
    f: usize,
) -> Vec<f64> {
    assert!(heads >= 1 && f % heads == 0);
    let per_head = f / heads;
    let mut dw = vec![0.0f64; csr.nnz() * heads];
    for i in 0..csr.n_rows {
        for c in 0..f {
            let a = argmax[i * f + c];
            if a >= 0 {
                let e = a as usize;
                let j = csr.col_idx[e] as usize;
                dw[e * heads + c / per_head] += dout[i * f + c] * x[j * f + c];
            }
        }
    }
    dw
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sum_mean_max_on_a_small_graph() {
        // row 0: edges to 1 (w 2), 2 (w -1); row 1 empty; row 2: edge to 0 (w 1) twice
        let rp = vec![0, 2, 2, 4];
        let ci = vec![1u32, 2, 0, 0];
        let csr = CsrRef { n_rows: 3, n_cols: 3, row_ptr: &rp, col_idx: &ci };
        let x = vec![1.0, 10.0, 2.0, 20.0, 3.0, 30.0];
        let w = vec![2.0, -1.0, 1.0, 1.0];
        let ew = EdgeWeights { values: &w, heads: 1 };
        let (s, _) = spmm(&csr, Some(ew), &x, 2, Reduce::Sum);
        assert_eq!(s, vec![4.0 - 3.0, 40.0 - 30.0, 0.0, 0.0, 2.0, 20.0]);
        let (m, _) = spmm(&csr, Some(ew), &x, 2, Reduce::Mean);
        assert_eq!(m, vec![0.5, 5.0, 0.0, 0.0, 1.0, 10.0]);
        let (mx, arg) = spmm(&csr, Some(ew), &x, 2, Reduce::Max);
        assert_eq!(mx, vec![4.0, 40.0, 0.0, 0.0, 1.0, 10.0]);
        // ties in row 2: the first edge (2) wins
        assert_eq!(arg.unwrap(), vec![0, 0, -1, -1, 2, 2]);
    }

    #[test]
    fn heads_scale_their_own_features() {
        let rp = vec![0, 1];
        let ci = vec![0u32];
        let csr = CsrRef { n_rows: 1, n_cols: 1, row_ptr: &rp, col_idx: &ci };
        let x = vec![1.0, 1.0, 1.0, 1.0];
        let w = vec![2.0, 3.0];
        let (s, _) = spmm(&csr, Some(EdgeWeights { values: &w, heads: 2 }), &x, 4, Reduce::Sum);
        assert_eq!(s, vec![2.0, 2.0, 3.0, 3.0]);
    }
}
