//! Every layer's forward against an independent dense-adjacency reference on a small graph (a
//! hub, a leaf pair, an isolated node), and its gradients against central finite differences,
//! all in f64 on the CPU backend: the convolutions without edge weights (`unweighted`), with
//! them (`weighted`), and the dense pieces the layers are built from (`dense`: the bias, the
//! lean activations, the half-saved product). This module holds their shared references.

mod dense;
mod unweighted;
mod weighted;

use burn::backend::{Autodiff, NdArray};
use burn::module::Param;
use burn::tensor::{Tensor, TensorData};
use burn_sparse_gnn::{ops, BuildOptions, Csr, Graph, GraphOptions};
use gnn_models::{GatConvConfig, GcnConvConfig, GinConvConfig, Hidden, Precision, SageAggr, SageConvConfig};

type B = Autodiff<NdArray<f64, i64>>;
type M = Vec<Vec<f64>>;

const N: usize = 7;

fn edges() -> (Vec<i64>, Vec<i64>) {
    // hub 0 with 1..5, 1-2, 3-4, node 6 isolated
    (vec![0, 0, 0, 0, 0, 1, 3], vec![1, 2, 3, 4, 5, 2, 4])
}

fn graph(self_loops: bool) -> (Graph<B>, M) {
    let (s, d) = edges();
    let adj =
        Csr::from_edges(N, &s, &d, None, BuildOptions { symmetrize: true, add_self_loops: self_loops, dedup: true })
            .unwrap();
    let mut a = vec![vec![0.0; N]; N];
    for i in 0..N {
        for &j in &adj.col_idx()[adj.row_ptr()[i]..adj.row_ptr()[i + 1]] {
            a[i][j as usize] += 1.0;
        }
    }
    (Graph::new(&adj, &Default::default(), GraphOptions::default().with_group_width(2)), a)
}

fn rnd(n: usize, seed: u64) -> Vec<f64> {
    burn_sparse_gnn::random::random_values(n, seed)
}

fn t2(v: &[f64], r: usize, c: usize) -> Tensor<B, 2> {
    Tensor::from_data(TensorData::new(v.to_vec(), [r, c]), &Default::default())
}

fn host(t: Tensor<B, 2>) -> M {
    let [r, c] = t.dims();
    let v = t.into_data().convert::<f64>().into_vec::<f64>().unwrap();
    (0..r).map(|i| v[i * c..(i + 1) * c].to_vec()).collect()
}

fn host1(t: Tensor<B, 1>) -> Vec<f64> {
    t.into_data().convert::<f64>().into_vec::<f64>().unwrap()
}

fn matmul(a: &M, b: &M) -> M {
    let (n, k, m) = (a.len(), b.len(), b[0].len());
    (0..n).map(|i| (0..m).map(|j| (0..k).map(|t| a[i][t] * b[t][j]).sum()).collect()).collect()
}

fn add_row(a: &M, b: &[f64]) -> M {
    a.iter().map(|r| r.iter().zip(b).map(|(x, y)| x + y).collect()).collect()
}

fn add(a: &M, b: &M) -> M {
    a.iter().zip(b).map(|(r, s)| r.iter().zip(s).map(|(x, y)| x + y).collect()).collect()
}

/// GraphSAGE's output from its aggregated neighbours `agg` and its input `xm`:
/// `agg W_neigh + b + xm W_root`.
fn sage_reference(conv: &gnn_models::SageConv<B>, agg: &M, xm: &M) -> M {
    let ln = &conv.lin_neigh;
    add(
        &add_row(&matmul(agg, &host(ln.weight.val())), &host1(ln.bias.as_ref().unwrap().val())),
        &matmul(xm, &host(conv.lin_root.as_ref().unwrap().weight.val())),
    )
}

/// GIN's MLP on the host: `relu(z W1 + b1) W2 + b2` with the layer's parameters.
fn gin_mlp_reference(conv: &gnn_models::GinConv<B>, z: &M) -> M {
    let h =
        relu(&add_row(&matmul(z, &host(conv.mlp_in.weight.val())), &host1(conv.mlp_in.bias.as_ref().unwrap().val())));
    add_row(&matmul(&h, &host(conv.mlp_out.weight.val())), &host1(conv.mlp_out.bias.as_ref().unwrap().val()))
}

fn rows(x: &[f64], c: usize) -> M {
    x.chunks(c).map(|r| r.to_vec()).collect()
}

fn assert_close(got: &M, want: &M, tol: f64) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        for (j, (a, b)) in g.iter().zip(w).enumerate() {
            assert!((a - b).abs() <= tol * (1.0 + b.abs()), "({i}, {j}): {a} vs {b}");
        }
    }
}

fn relu(m: &M) -> M {
    m.iter().map(|r| r.iter().map(|v| v.max(0.0)).collect()).collect()
}

/// `sum(f(x) * r)` and its autodiff gradient against central differences on every entry.
fn check_grad(f: impl Fn(Tensor<B, 2>) -> Tensor<B, 2>, d_in: usize, seed: u64) {
    let x = rnd(N * d_in, seed);
    let xt = t2(&x, N, d_in).require_grad();
    let out = f(xt.clone());
    let [r, c] = out.dims();
    let rr = t2(&rnd(r * c, seed + 100), r, c);
    let grads = (out * rr.clone()).sum().backward();
    let g = host(xt.grad(&grads).map(|t| Tensor::<B, 2>::from_inner(t)).unwrap());
    let loss = |v: &[f64]| -> f64 { host1((f(t2(v, N, d_in)) * rr.clone()).sum())[0] };
    let eps = 1e-6;
    for i in 0..N * d_in {
        let mut p = x.clone();
        let mut m = x.clone();
        p[i] += eps;
        m[i] -= eps;
        let fd = (loss(&p) - loss(&m)) / (2.0 * eps);
        let ad = g[i / d_in][i % d_in];
        assert!((fd - ad).abs() <= 1e-6 * (1.0 + fd.abs()), "entry {i}: finite difference {fd} vs autodiff {ad}");
    }
}

/// Every row's edges `(column, weight)` of an adjacency with weights (1 without).
type Rows = Vec<Vec<(usize, f64)>>;

/// GAT on the weighted rows `nb`: per head, the softmax of the LeakyReLU scores over each row,
/// each coefficient times its edge weight.
fn gat_weighted_reference(conv: &gnn_models::GatConv<B>, nb: &Rows, x: &M) -> M {
    let (hd, dd) = (conv.heads, conv.d_head);
    let xw = matmul(x, &host(conv.lin.weight.val()));
    let (asrc, adst) = (host(conv.att_src.val()), host(conv.att_dst.val()));
    let score = |i: usize, j: usize, h: usize| {
        let s: f64 = (0..dd).map(|d| xw[i][h * dd + d] * adst[h][d] + xw[j][h * dd + d] * asrc[h][d]).sum();
        if s > 0.0 {
            s
        } else {
            0.2 * s
        }
    };
    let bias = host1(conv.bias.val());
    (0..N)
        .map(|i| {
            let mut out = vec![0.0; hd * dd];
            for h in 0..hd {
                let m = nb[i].iter().map(|&(j, _)| score(i, j, h)).fold(f64::NEG_INFINITY, f64::max);
                let z: f64 = nb[i].iter().map(|&(j, _)| (score(i, j, h) - m).exp()).sum();
                for &(j, w) in &nb[i] {
                    let alpha = (score(i, j, h) - m).exp() / z * w;
                    for d in 0..dd {
                        out[h * dd + d] += alpha * xw[j][h * dd + d];
                    }
                }
            }
            let out: Vec<f64> = if conv.concat {
                out
            } else {
                (0..dd).map(|d| (0..hd).map(|h| out[h * dd + d]).sum::<f64>() / hd as f64).collect()
            };
            out.iter().zip(&bias).map(|(o, b)| o + b).collect()
        })
        .collect()
}
