//! The training ops under autodiff against the CPU references of the kernels crate: weighted
//! cross-entropy and ReLU + dropout.

use super::measure::normwise_error;
use super::tensors::{host, tensor, upstream};
use crate::backend::SparseGnnAutodiffBackend;
use crate::random::random_values;
use burn::tensor::{Int, Tensor, TensorData};
use sparse_gnn_kernels::config::KernelConfig;

/// The weighted cross-entropy ([`crate::ops::loss::cross_entropy_rows`]) under autodiff on `B`
/// against the f64 CPU reference of the kernels crate: the terms and the logits' gradient for
/// `n` = 1,031 random rows (one of equal logits, one shifted by 1e3 so that a naive softmax
/// overflows, labels at the first and the last class, every fifth weight 0) at each class count
/// of `classes`, with the plane choice of `config`. Returns `(case, normwise error)`.
pub fn cross_entropy_checks<B: SparseGnnAutodiffBackend>(
    device: &B::Device,
    classes: &[usize],
    config: &KernelConfig,
) -> Vec<(String, f64)> {
    let n = 1_031usize;
    let mut out = Vec::new();
    for &c in classes {
        let mut x = random_values(n * c, 31 + c as u64).into_iter().map(|v| 4.0 * v).collect::<Vec<f64>>();
        x[..c].iter_mut().for_each(|v| *v = 0.5);
        x[c..2 * c].iter_mut().for_each(|v| *v += 1e3);
        let labels: Vec<i64> = (0..n).map(|i| ((i * 7 + i / 3) % c) as i64).collect();
        let mut labels = labels;
        labels[1] = 0;
        labels[2] = c as i64 - 1;
        let weight: Vec<f64> = random_values(n, 41 + c as u64)
            .into_iter()
            .enumerate()
            .map(|(i, v)| if i % 5 == 0 { 0.0 } else { v.abs() })
            .collect();
        let dterms = upstream(n, 51 + c as u64);
        // round the inputs to f32 first, so that both sides see the same values
        let x: Vec<f64> = x.iter().map(|&v| v as f32 as f64).collect();
        let weight: Vec<f64> = weight.iter().map(|&v| v as f32 as f64).collect();
        let dterms: Vec<f64> = dterms.iter().map(|&v| v as f32 as f64).collect();
        let (terms_ref, dx_ref) = sparse_gnn_kernels::loss::reference(&x, c, &labels, &weight, &dterms);

        let xt = tensor::<B, 2>(&x, [n, c], device).require_grad();
        let labels_t = Tensor::<B, 1, Int>::from_data(TensorData::new(labels.clone(), [n]), device);
        let w = tensor::<B, 1>(&weight, [n], device);
        let r = tensor::<B, 1>(&dterms, [n], device);
        let what = format!("cross-entropy, {c} classes");
        // the logits held here (the gradient goes to a copy), then logits nothing else holds
        // (an op's output: the gradient goes over them)
        for (how, logits) in [("held", xt.clone()), ("in place", xt.clone().mul_scalar(1.0))] {
            match crate::ops::loss::cross_entropy_rows(logits, labels_t.clone(), w.clone(), config) {
                Ok(terms) => {
                    let grads = (terms.clone() * r.clone()).sum().backward();
                    let dx = xt.grad(&grads).map(|g| host(g)).unwrap_or_default();
                    out.push((format!("{what}, {how}: terms"), normwise_error(&host(terms.inner()), &terms_ref)));
                    out.push((format!("{what}, {how}: logits' gradient"), normwise_error(&dx, &dx_ref)));
                }
                Err(e) => out.push((format!("{what}: {e}"), f64::INFINITY)),
            }
        }
    }
    out
}

/// ReLU + dropout ([`crate::dropout`]) under autodiff on `B` against the CPU reference of the
/// kernels crate: the output and the input gradient for random rows (some entries exactly 0),
/// with and without ReLU, drop probabilities 0, 0.5 and 0.9, row ids given (a permutation with
/// an offset) or not, at each width of `widths`. Returns `(case, largest difference)`; the
/// arithmetic is the same (one f32 product per entry), so every difference must be 0.
pub fn relu_dropout_checks<B: SparseGnnAutodiffBackend>(device: &B::Device, widths: &[usize]) -> Vec<(String, f64)> {
    use crate::ops::dropout::{relu_dropout, DropoutSeed};
    use sparse_gnn_kernels::dropout::{keep_scale, reference, reference_grad, ReluDropout};
    let mut out = Vec::new();
    let n = 517;
    // two arbitrary draws of the dropout seed (not 1/pi)
    #[allow(clippy::approx_constant)]
    let seed = [0.318_f32, 0.777];
    for &d in widths {
        let mut xv: Vec<f32> = random_values(n * d, 91 + d as u64).into_iter().map(|v| v as f32).collect();
        xv.iter_mut().step_by(7).for_each(|v| *v = 0.0);
        let dyv: Vec<f32> = random_values(n * d, 191 + d as u64).into_iter().map(|v| v as f32).collect();
        let ids: Vec<i64> = (0..n as i64).rev().map(|r| r + 1_000_000).collect();
        for relu in [true, false] {
            for prob in [0.0, 0.5, 0.9] {
                for with_rows in [false, true] {
                    if !relu && prob == 0.0 || (prob == 0.0 && with_rows) {
                        continue;
                    }
                    let what = format!(
                        "{}dropout {prob}, width {d}{}",
                        if relu { "relu + " } else { "" },
                        if with_rows { ", global row ids" } else { "" }
                    );
                    let x = Tensor::<B, 2>::from_data(TensorData::new(xv.clone(), [n, d]), device).require_grad();
                    let dy = Tensor::<B, 2>::from_data(TensorData::new(dyv.clone(), [n, d]), device);
                    let rows = Tensor::<B, 1, Int>::from_data(TensorData::new(ids.clone(), [n]), device);
                    let s = DropoutSeed::<B>::from_floats(seed, device);
                    let y = match relu_dropout(x.clone(), relu, prob, Some(&s), with_rows.then_some(&rows)) {
                        Ok(y) => y,
                        Err(_) => {
                            out.push((what, f64::INFINITY));
                            continue;
                        }
                    };
                    let grads = (y.clone() * dy).sum().backward();
                    let got_y = y.into_data().convert::<f32>().into_vec::<f32>().unwrap_or_default();
                    let got_dx = x
                        .grad(&grads)
                        .map(|g| g.into_data().convert::<f32>().into_vec::<f32>().unwrap_or_default())
                        .unwrap_or_default();
                    let spec = ReluDropout { relu, prob };
                    let (want_y, mask) = reference(&xv, n, d, with_rows.then_some(&ids[..]), seed, spec);
                    let want_dx = reference_grad(&dyv, &mask, n, d, keep_scale(prob));
                    let diff = |p: &[f32], q: &[f32]| {
                        if p.len() != q.len() {
                            return f64::INFINITY;
                        }
                        p.iter().zip(q).map(|(a, b)| (f64::from(*a) - f64::from(*b)).abs()).fold(0.0, f64::max)
                    };
                    out.push((what, diff(&got_y, &want_y).max(diff(&got_dx, &want_dx))));
                }
            }
        }
    }
    out
}

/// The binary cross-entropy with logits ([`crate::ops::loss::binary_cross_entropy`]) under
/// autodiff on `B` against the f64 CPU reference of the kernels crate: the terms and the scores'
/// gradient for `p` = 1,031 random scores (scaled by 8, with 0, +-30, +-100 and +-1e4 among
/// them, where a naive `log(1 + exp(s))` overflows), with labels and weights one per score
/// (every fifth weight 0, labels 0 and 1) and one for all (label 1 weight 1, label 0 with the
/// per-score weights). Returns `(case, normwise error)`.
pub fn binary_cross_entropy_checks<B: SparseGnnAutodiffBackend>(device: &B::Device) -> Vec<(String, f64)> {
    let p = 1_031usize;
    let mut s: Vec<f64> = random_values(p, 61).into_iter().map(|v| 8.0 * v).collect();
    for (i, v) in [0.0, 30.0, -30.0, 100.0, -100.0, 1e4, -1e4].into_iter().enumerate() {
        s[i * 3] = v;
    }
    let s: Vec<f64> = s.iter().map(|&v| v as f32 as f64).collect();
    let labels: Vec<f64> = (0..p).map(|i| ((i * 7 + i / 2) % 2) as f64).collect();
    let weight: Vec<f64> = random_values(p, 62)
        .into_iter()
        .enumerate()
        .map(|(i, v)| if i % 5 == 0 { 0.0 } else { (v.abs() as f32) as f64 })
        .collect();
    let dterms: Vec<f64> = upstream(p, 63).iter().map(|&v| v as f32 as f64).collect();
    let mut out = Vec::new();
    let cases: [(&str, Vec<f64>, Vec<f64>); 3] = [
        ("labels and weights per score", labels, weight.clone()),
        ("label 1, weight 1 for all", vec![1.0], vec![1.0]),
        ("label 0 for all, weights per score", vec![0.0], weight),
    ];
    for (what, y, w) in cases {
        let (terms_ref, ds_ref) = sparse_gnn_kernels::loss::binary_reference(&s, &y, &w, &dterms);
        let st = tensor::<B, 1>(&s, [p], device).require_grad();
        let (yt, wt) = (tensor::<B, 1>(&y, [y.len()], device), tensor::<B, 1>(&w, [w.len()], device));
        let r = tensor::<B, 1>(&dterms, [p], device);
        let what = format!("binary cross-entropy, {what}");
        // the scores held here (the gradient goes to a copy), then scores nothing else holds
        for (how, scores) in [("held", st.clone()), ("in place", st.clone().mul_scalar(1.0))] {
            match crate::ops::loss::binary_cross_entropy(scores, yt.clone(), wt.clone()) {
                Ok(terms) => {
                    let grads = (terms.clone() * r.clone()).sum().backward();
                    let ds = st.grad(&grads).map(|g| host(g)).unwrap_or_default();
                    out.push((format!("{what}, {how}: terms"), normwise_error(&host(terms.inner()), &terms_ref)));
                    out.push((format!("{what}, {how}: scores' gradient"), normwise_error(&ds, &ds_ref)));
                }
                Err(e) => out.push((format!("{what}: {e}"), f64::INFINITY)),
            }
        }
    }
    out
}
