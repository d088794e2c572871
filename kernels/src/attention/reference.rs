//! CPU reference of GAT's attention coefficients and their backward (f64).

use crate::csr::CsrRef;
use rayon::prelude::*;

fn leaky(x: f64, slope: f64) -> f64 {
    if x > 0.0 {
        x
    } else {
        slope * x
    }
}

/// `alpha[e, h] = softmax over row e's edges of leaky_relu(s_dst[row e, h] + s_src[col e, h])`
/// (max-subtracted). `s_dst` is `[n_rows, heads]`, `s_src` `[n_cols, heads]`; returns
/// `[nnz, heads]`.
pub fn gat_attention(csr: &CsrRef<'_>, s_dst: &[f64], s_src: &[f64], heads: usize, slope: f64) -> Vec<f64> {
    assert_eq!(s_dst.len(), csr.n_rows * heads);
    assert_eq!(s_src.len(), csr.n_cols * heads);
    let scores: Vec<f64> = (0..csr.n_rows)
        .into_par_iter()
        .flat_map_iter(|i| {
            csr.row(i).flat_map(move |e| {
                let j = csr.col_idx[e] as usize;
                (0..heads).map(move |h| leaky(s_dst[i * heads + h] + s_src[j * heads + h], slope))
            })
        })
        .collect();
    crate::softmax::reference::edge_softmax(csr, &scores, heads)
}

/// Backward of [`gat_attention`] from its output `alpha` and gradient `d_alpha`: returns
/// `(d_s_dst [n_rows, heads], d_s_src [n_cols, heads])`.
pub fn gat_attention_backward(
    csr: &CsrRef<'_>,
    s_dst: &[f64],
    s_src: &[f64],
    alpha: &[f64],
    d_alpha: &[f64],
    heads: usize,
    slope: f64,
) -> (Vec<f64>, Vec<f64>) {
    let ds = crate::softmax::reference::edge_softmax_backward(csr, alpha, d_alpha, heads);
    let mut d_dst = vec![0.0f64; csr.n_rows * heads];
    let mut d_src = vec![0.0f64; csr.n_cols * heads];
    for i in 0..csr.n_rows {
        for e in csr.row(i) {
            let j = csr.col_idx[e] as usize;
            for h in 0..heads {
                let pre = s_dst[i * heads + h] + s_src[j * heads + h];
                let de = ds[e * heads + h] * if pre > 0.0 { 1.0 } else { slope };
                d_dst[i * heads + h] += de;
                d_src[j * heads + h] += de;
            }
        }
    }
    (d_dst, d_src)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coefficients_sum_to_one_and_the_backward_matches_finite_differences() {
        // rows: 0 -> {0, 1, 2}, 1 -> {}, 2 -> {0, 0}; two heads
        let rp = vec![0, 3, 3, 5];
        let ci = vec![0u32, 1, 2, 0, 0];
        let csr = CsrRef { n_rows: 3, n_cols: 3, row_ptr: &rp, col_idx: &ci };
        let heads = 2;
        let s_dst = vec![0.3, -1.2, 0.0, 0.5, -0.4, 2.0];
        let s_src = vec![1.1, 0.2, -0.7, -0.3, 0.25, 1.5];
        let alpha = gat_attention(&csr, &s_dst, &s_src, heads, 0.2);
        for (i, h) in [(0usize, 0usize), (0, 1), (2, 0), (2, 1)] {
            let sum: f64 = csr.row(i).map(|e| alpha[e * heads + h]).sum();
            assert!((sum - 1.0).abs() < 1e-12, "row {i} head {h}: {sum}");
        }
        let d_alpha: Vec<f64> = (0..alpha.len()).map(|k| (k as f64 * 0.37).sin()).collect();
        let loss = |sd: &[f64], ss: &[f64]| -> f64 {
            gat_attention(&csr, sd, ss, heads, 0.2).iter().zip(&d_alpha).map(|(a, d)| a * d).sum()
        };
        let (g_dst, g_src) = gat_attention_backward(&csr, &s_dst, &s_src, &alpha, &d_alpha, heads, 0.2);
        let eps = 1e-6;
        for k in 0..s_dst.len() {
            let (mut p, mut m) = (s_dst.clone(), s_dst.clone());
            p[k] += eps;
            m[k] -= eps;
            let fd = (loss(&p, &s_src) - loss(&m, &s_src)) / (2.0 * eps);
            assert!((fd - g_dst[k]).abs() < 1e-6, "d_s_dst[{k}]: {fd} against {}", g_dst[k]);
        }
        for k in 0..s_src.len() {
            let (mut p, mut m) = (s_src.clone(), s_src.clone());
            p[k] += eps;
            m[k] -= eps;
            let fd = (loss(&s_dst, &p) - loss(&s_dst, &m)) / (2.0 * eps);
            assert!((fd - g_src[k]).abs() < 1e-6, "d_s_src[{k}]: {fd} against {}", g_src[k]);
        }
    }
}
