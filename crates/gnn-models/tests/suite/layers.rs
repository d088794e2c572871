//! Every layer's forward against an independent dense-adjacency reference on a small graph (a
//! hub, a leaf pair, an isolated node), and its gradients against central finite differences,
//! all in f64 on the CPU backend.

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

#[test]
fn gcn_matches_the_normalised_dense_adjacency() {
    for (d_in, d_out) in [(3, 5), (6, 2)] {
        let (g, a) = graph(false);
        let conv = GcnConvConfig::new(d_in, d_out).init::<B>(&Default::default());
        let conv = gnn_models::GcnConv {
            bias: Some(Param::from_tensor(Tensor::from_data(
                TensorData::new(rnd(d_out, 9), [d_out]),
                &Default::default(),
            ))),
            ..conv
        };
        let x = rnd(N * d_in, 1);
        let got = host(conv.forward(&g, &Hidden::Dense(t2(&x, N, d_in)), Precision::F32));
        // D^-1/2 (A + I) D^-1/2 X W + b
        let deg: Vec<f64> = (0..N).map(|i| a[i].iter().sum::<f64>() + 1.0).collect();
        let ahat: M = (0..N)
            .map(|i| (0..N).map(|j| (a[i][j] + if i == j { 1.0 } else { 0.0 }) / (deg[i] * deg[j]).sqrt()).collect())
            .collect();
        let w = host(conv.linear.weight.val());
        let want = add_row(&matmul(&matmul(&ahat, &rows(&x, d_in)), &w), &host1(conv.bias.as_ref().unwrap().val()));
        assert_close(&got, &want, 1e-10);
    }
}

#[test]
fn sage_matches_mean_sum_and_max_pool_references() {
    let (g, a) = graph(false);
    let (d_in, d_out) = (4, 3);
    let x = rnd(N * d_in, 2);
    let xm = rows(&x, d_in);
    for aggr in [SageAggr::Mean, SageAggr::Sum, SageAggr::MaxPool] {
        for d in [(d_in, d_out), (d_in, 6)] {
            let conv = SageConvConfig::new(d.0, d.1).with_aggr(aggr).init::<B>(&Default::default());
            let got = host(conv.forward(&g, &Hidden::Dense(t2(&x, N, d.0)), Precision::F32));
            let msgs = match aggr {
                SageAggr::MaxPool => {
                    let p = conv.lin_pool.as_ref().unwrap();
                    relu(&add_row(&matmul(&xm, &host(p.weight.val())), &host1(p.bias.as_ref().unwrap().val())))
                }
                _ => xm.clone(),
            };
            let agg: M = (0..N)
                .map(|i| {
                    let nb: Vec<usize> = (0..N).filter(|&j| a[i][j] > 0.0).collect();
                    (0..msgs[0].len())
                        .map(|c| match aggr {
                            SageAggr::Mean => {
                                if nb.is_empty() {
                                    0.0
                                } else {
                                    nb.iter().map(|&j| msgs[j][c]).sum::<f64>() / nb.len() as f64
                                }
                            }
                            SageAggr::Sum => nb.iter().map(|&j| msgs[j][c]).sum(),
                            SageAggr::MaxPool => nb
                                .iter()
                                .map(|&j| msgs[j][c])
                                .fold(if nb.is_empty() { 0.0 } else { f64::NEG_INFINITY }, f64::max),
                        })
                        .collect()
                })
                .collect();
            assert_close(&got, &sage_reference(&conv, &agg, &xm), 1e-10);
        }
    }
}

#[test]
fn gin_matches_its_mlp_of_the_sum_and_the_half_safe_mean() {
    let (g, a) = graph(false);
    for lambda in [None, Some(0.1)] {
        for (d_in, d_out) in [(3, 5), (6, 2)] {
            let conv = GinConvConfig::new(d_in, d_out)
                .with_eps(0.3)
                .with_half_safe_lambda(lambda)
                .init::<B>(&Default::default());
            let x = rnd(N * d_in, 3);
            let xm = rows(&x, d_in);
            let got = host(conv.forward(&g, &Hidden::Dense(t2(&x, N, d_in)), Precision::F32));
            let z: M = (0..N)
                .map(|i| {
                    let deg: f64 = a[i].iter().sum();
                    (0..d_in)
                        .map(|c| {
                            let s: f64 = (0..N).map(|j| a[i][j] * xm[j][c]).sum();
                            let agg = match lambda {
                                Some(l) => {
                                    if deg > 0.0 {
                                        l * s / deg
                                    } else {
                                        0.0
                                    }
                                }
                                None => s,
                            };
                            1.3 * xm[i][c] + agg
                        })
                        .collect()
                })
                .collect();
            let h = relu(&add_row(
                &matmul(&z, &host(conv.mlp_in.weight.val())),
                &host1(conv.mlp_in.bias.as_ref().unwrap().val()),
            ));
            let want = add_row(
                &matmul(&h, &host(conv.mlp_out.weight.val())),
                &host1(conv.mlp_out.bias.as_ref().unwrap().val()),
            );
            assert_close(&got, &want, 1e-10);
        }
    }
}

/// [`gat_weighted_reference`] with every edge of the dense adjacency `a` weighted 1.
fn gat_reference(conv: &gnn_models::GatConv<B>, a: &M, x: &M) -> M {
    let nb: Rows = (0..N).map(|i| (0..N).filter(|&j| a[i][j] > 0.0).map(|j| (j, 1.0)).collect()).collect();
    gat_weighted_reference(conv, &nb, x)
}

#[test]
fn gat_matches_per_head_attention() {
    let (g, a) = graph(true);
    for concat in [true, false] {
        let conv = GatConvConfig::new(4, 3).with_heads(2).with_concat(concat).init::<B>(&Default::default());
        let conv = gnn_models::GatConv {
            bias: Param::from_tensor(Tensor::from_data(
                TensorData::new(rnd(if concat { 6 } else { 3 }, 7), [if concat { 6 } else { 3 }]),
                &Default::default(),
            )),
            ..conv
        };
        let x = rnd(N * 4, 4);
        let got = host(conv.forward(&g, &Hidden::Dense(t2(&x, N, 4)), Precision::F32));
        assert_close(&got, &gat_reference(&conv, &a, &rows(&x, 4)), 1e-10);
    }
}

#[test]
fn maxk_input_equals_the_dense_top_k_input() {
    let (g, _) = graph(false);
    let x = rnd(N * 8, 5);
    let xt = t2(&x, N, 8);
    let sparse = Hidden::Sparse(ops::maxk(xt.clone(), 3));
    let dense = Hidden::Dense(ops::maxk(xt, 3).to_dense());
    for aggr in [SageAggr::Mean, SageAggr::Sum] {
        let conv = SageConvConfig::new(8, 5).with_aggr(aggr).init::<B>(&Default::default());
        assert_close(
            &host(conv.forward(&g, &sparse, Precision::F32)),
            &host(conv.forward(&g, &dense, Precision::F32)),
            1e-12,
        );
    }
    let gcn = GcnConvConfig::new(8, 5).init::<B>(&Default::default());
    assert_close(
        &host(gcn.forward(&g, &sparse, Precision::F32)),
        &host(gcn.forward(&g, &dense, Precision::F32)),
        1e-12,
    );
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

#[test]
fn layer_gradients_match_finite_differences() {
    let (g, _) = graph(false);
    let (gl, _) = graph(true);
    let dev = Default::default();
    let gcn = GcnConvConfig::new(4, 3).init::<B>(&dev);
    check_grad(|x| gcn.forward(&g, &Hidden::Dense(x), Precision::F32), 4, 10);
    for aggr in [SageAggr::Mean, SageAggr::Sum, SageAggr::MaxPool] {
        let sage = SageConvConfig::new(4, 3).with_aggr(aggr).init::<B>(&dev);
        check_grad(|x| sage.forward(&g, &Hidden::Dense(x), Precision::F32), 4, 11);
    }
    let gin = GinConvConfig::new(4, 3).with_eps(0.2).init::<B>(&dev);
    check_grad(|x| gin.forward(&g, &Hidden::Dense(x), Precision::F32), 4, 12);
    let gat = GatConvConfig::new(4, 2).with_heads(2).init::<B>(&dev);
    check_grad(|x| gat.forward(&gl, &Hidden::Dense(x), Precision::F32), 4, 13);
    // through MaxK (CBSR SpGEMM forward, SSpMM backward)
    let sage = SageConvConfig::new(6, 3).init::<B>(&dev);
    check_grad(|x| sage.forward(&g, &Hidden::Sparse(ops::maxk(x, 2)), Precision::F32), 6, 14);
}

#[test]
fn learnable_eps_and_attention_receive_gradients() {
    let (g, _) = graph(true);
    let dev = Default::default();
    let x = t2(&rnd(N * 4, 20), N, 4);
    let gin = GinConvConfig::new(4, 3).init::<B>(&dev);
    let grads = gin.forward(&g, &Hidden::Dense(x.clone()), Precision::F32).sum().backward();
    assert!(gin.eps.grad(&grads).is_some(), "eps is learned");
    let gat = GatConvConfig::new(4, 2).with_heads(2).init::<B>(&dev);
    let grads = gat.forward(&g, &Hidden::Dense(x), Precision::F32).powf_scalar(2.0).sum().backward();
    let ga = gat.att_src.grad(&grads).expect("attention gradient");
    assert!(ga.abs().sum().into_scalar() > 0.0);
}

#[test]
fn add_bias_passes_dy_on_and_sums_it_for_the_bias() {
    // more rows than two chunks of Burn's split-K product, and a few
    for (n, d) in [(2 * burn_sparse_gnn::dense::CHUNK_ROWS + 37, 3), (5, 2)] {
        let yv = rnd(n * d, 8);
        let bv = rnd(d, 9);
        let dyv = rnd(n * d, 10);
        let y = t2(&yv, n, d).require_grad();
        let b = Tensor::<B, 1>::from_data(TensorData::new(bv.clone(), [d]), &Default::default()).require_grad();
        let out = gnn_models::linear::add_bias(y.clone(), b.clone());
        let grads = (out.clone() * t2(&dyv, n, d)).sum().backward();
        let gb = b.grad(&grads).unwrap().to_data().to_vec::<f64>().unwrap();
        // `y`'s gradient is the output's
        assert_eq!(y.grad(&grads).unwrap().to_data().to_vec::<f64>().unwrap(), dyv);
        let got = host(out);
        for c in 0..d {
            let want: f64 = (0..n).map(|i| dyv[i * d + c]).sum();
            assert!((gb[c] - want).abs() < 1e-9 * (1.0 + want.abs()), "column {c}: {} vs {want}", gb[c]);
            for i in [0, n / 2, n - 1] {
                assert!((got[i][c] - (yv[i * d + c] + bv[c])).abs() < 1e-12);
            }
        }
    }
}

/// The lean ReLU and dropout (one-byte masks saved for the backward pass) give Burn's values
/// and gradients; the half-saved matmul with an f32 "half" type is the plain product, its
/// chunked weight gradient the plain `x^T dy`.
#[test]
fn lean_activations_and_the_half_saved_matmul_match_burn() {
    use burn::tensor::FloatDType;
    let hosti = |t: Tensor<NdArray<f64, i64>, 2>| host(Tensor::from_inner(t));
    let dev = Default::default();
    let xv = rnd(53 * 6, 21);
    let x = t2(&xv, 53, 6).require_grad();
    let dy = t2(&rnd(53 * 6, 22), 53, 6);
    let ours = gnn_models::activation::relu(x.clone());
    let g1 = (ours.clone() * dy.clone()).sum().backward();
    let theirs = burn::tensor::activation::relu(x.clone());
    let g2 = (theirs.clone() * dy.clone()).sum().backward();
    assert_eq!(host(ours), host(theirs));
    assert_eq!(hosti(x.grad(&g1).unwrap()), hosti(x.grad(&g2).unwrap()));

    // dropout: the same Bernoulli draws as Burn's for the same seed
    let d = burn::nn::DropoutConfig::new(0.3).init();
    <B as burn::tensor::backend::Backend>::seed(&dev, 5);
    let ours = gnn_models::activation::dropout(&d, x.clone());
    let o = host(ours.clone());
    let g1 = (ours * dy.clone()).sum().backward();
    <B as burn::tensor::backend::Backend>::seed(&dev, 5);
    let theirs = d.forward(x.clone());
    let t = host(theirs.clone());
    let g2 = (theirs * dy.clone()).sum().backward();
    assert!(o.iter().flatten().any(|v| *v == 0.0) && o.iter().flatten().any(|v| *v != 0.0));
    for (a, b) in o.iter().flatten().zip(t.iter().flatten()) {
        assert!((a - b).abs() <= 1e-12 * b.abs(), "{a} vs {b}");
    }
    assert_eq!(hosti(x.grad(&g1).unwrap()), hosti(x.grad(&g2).unwrap()));

    // a half-precision linear layer (half type f64 here: no rounding) equals the plain product
    let w = t2(&rnd(6 * 4, 23), 6, 4).require_grad();
    let dy = t2(&rnd(53 * 4, 24), 53, 4);
    // (one graph at a time: a backward pass consumes every graph sharing x and w)
    let y1 = ops::linear(x.clone(), w.clone(), None, burn_sparse_gnn::dense::LinearPrecision::Half(FloatDType::F64));
    let g1 = (y1.clone() * dy.clone()).sum().backward();
    let y2 = x.clone().matmul(w.clone());
    let g2 = (y2.clone() * dy).sum().backward();
    let close = |p: M, q: M| {
        for (a, b) in p.iter().flatten().zip(q.iter().flatten()) {
            assert!((a - b).abs() <= 1e-12, "{a} vs {b}");
        }
    };
    close(host(y1), host(y2));
    close(hosti(x.grad(&g1).unwrap()), hosti(x.grad(&g2).unwrap()));
    close(hosti(w.grad(&g1).unwrap()), hosti(w.grad(&g2).unwrap()));
}

// ---- edge weights ---------------------------------------------------------------------------

/// Every row's edges `(column, weight)` of an adjacency with weights (1 without).
type Rows = Vec<Vec<(usize, f64)>>;

/// The test graph with edge weights: positive, zero (0 - 4), tiny (1 - 2: 1e-30) and negative
/// (0 - 3: -2.4, so node 3's weighted degree with its self-loop is negative). `directed`: the
/// two directions of an edge carry different weights. Returns the graph, the dense weighted
/// adjacency (`a[i][j]`: the weight of `j -> i`) and every row's edges.
fn weighted_graph(self_loops: bool, directed: bool) -> (Graph<B>, Csr, M, Rows) {
    let (s, d) = edges();
    let w: Vec<f32> = vec![0.7, 1.9, -2.4, 0.0, 2.5, 1e-30, 0.3];
    let (src, dst, w) = if directed {
        let back: Vec<f32> = w.iter().map(|v| v * 0.5 + 0.25).collect();
        ([s.clone(), d.clone()].concat(), [d, s].concat(), [w, back].concat())
    } else {
        (s, d, w)
    };
    let opts = BuildOptions { symmetrize: !directed, add_self_loops: self_loops, dedup: true };
    let adj = Csr::from_edges(N, &src, &dst, Some(&w[..]), opts).unwrap();
    let (a, rows) = dense_weighted(&adj);
    let g = Graph::new(&adj, &Default::default(), GraphOptions::default().with_group_width(2));
    (g, adj, a, rows)
}

fn dense_weighted(adj: &Csr) -> (M, Rows) {
    let mut a = vec![vec![0.0; N]; N];
    let mut rows = vec![Vec::new(); N];
    for (i, row) in rows.iter_mut().enumerate() {
        for e in adj.row_ptr()[i]..adj.row_ptr()[i + 1] {
            let j = adj.col_idx()[e] as usize;
            let w = adj.weights().map_or(1.0, |w| f64::from(w[e]));
            a[i][j] += w;
            row.push((j, w));
        }
    }
    (a, rows)
}

fn unweighted(adj: &Csr) -> Graph<B> {
    let adj = adj.clone().with_weights(None).unwrap();
    Graph::new(&adj, &Default::default(), GraphOptions::default().with_group_width(2))
}

fn reweighted(adj: &Csr, w: Vec<f32>) -> Graph<B> {
    let adj = adj.clone().with_weights(Some(w)).unwrap();
    Graph::new(&adj, &Default::default(), GraphOptions::default().with_group_width(2))
}

/// `d^p` for a positive weighted degree, else 0.
fn factor(d: f64, p: f64) -> f64 {
    if d > 0.0 {
        d.powf(p)
    } else {
        0.0
    }
}

#[test]
fn weighted_gcn_matches_the_weighted_normalised_adjacency() {
    use gnn_models::GcnNorm;
    for directed in [false, true] {
        let (g, _, a, _) = weighted_graph(false, directed);
        let row_sum: Vec<f64> = (0..N).map(|i| a[i].iter().sum::<f64>() + 1.0).collect();
        let col_sum: Vec<f64> = (0..N).map(|j| (0..N).map(|i| a[i][j]).sum::<f64>() + 1.0).collect();
        assert!(row_sum[3] < 0.0, "node 3's weighted degree is negative");
        for norm in [GcnNorm::Symmetric, GcnNorm::Left, GcnNorm::Right, GcnNorm::None] {
            for (d_in, d_out) in [(3, 5), (6, 2)] {
                let conv = GcnConvConfig::new(d_in, d_out).with_norm(norm).init::<B>(&Default::default());
                let conv = gnn_models::GcnConv {
                    bias: Some(Param::from_tensor(Tensor::from_data(
                        TensorData::new(rnd(d_out, 9), [d_out]),
                        &Default::default(),
                    ))),
                    ..conv
                };
                let x = rnd(N * d_in, 1);
                let got = host(conv.forward(&g, &Hidden::Dense(t2(&x, N, d_in)), Precision::F32));
                let (l, r): (Vec<f64>, Vec<f64>) = match norm {
                    GcnNorm::Symmetric => (
                        row_sum.iter().map(|&d| factor(d, -0.5)).collect(),
                        col_sum.iter().map(|&d| factor(d, -0.5)).collect(),
                    ),
                    GcnNorm::Left => (row_sum.iter().map(|&d| factor(d, -1.0)).collect(), vec![1.0; N]),
                    GcnNorm::Right => (vec![1.0; N], col_sum.iter().map(|&d| factor(d, -1.0)).collect()),
                    GcnNorm::None => (vec![1.0; N], vec![1.0; N]),
                };
                let ahat: M = (0..N)
                    .map(|i| (0..N).map(|j| (a[i][j] + if i == j { 1.0 } else { 0.0 }) * l[i] * r[j]).collect())
                    .collect();
                let w = host(conv.linear.weight.val());
                let want =
                    add_row(&matmul(&matmul(&ahat, &rows(&x, d_in)), &w), &host1(conv.bias.as_ref().unwrap().val()));
                assert_close(&got, &want, 1e-9);
            }
        }
    }
}

#[test]
fn weighted_sage_scales_each_message_by_its_weight() {
    let (g, _, _, nb) = weighted_graph(false, true);
    let (d_in, d_out) = (4, 3);
    let x = rnd(N * d_in, 2);
    let xm = rows(&x, d_in);
    for aggr in [SageAggr::Mean, SageAggr::Sum, SageAggr::MaxPool] {
        for d in [(d_in, d_out), (d_in, 6)] {
            let conv = SageConvConfig::new(d.0, d.1).with_aggr(aggr).init::<B>(&Default::default());
            let got = host(conv.forward(&g, &Hidden::Dense(t2(&x, N, d.0)), Precision::F32));
            let msgs = match aggr {
                SageAggr::MaxPool => {
                    let p = conv.lin_pool.as_ref().unwrap();
                    relu(&add_row(&matmul(&xm, &host(p.weight.val())), &host1(p.bias.as_ref().unwrap().val())))
                }
                _ => xm.clone(),
            };
            let agg: M = nb
                .iter()
                .map(|edges| {
                    (0..msgs[0].len())
                        .map(|c| {
                            let m = edges.iter().map(|&(j, w)| w * msgs[j][c]);
                            match (aggr, edges.len()) {
                                (_, 0) => 0.0,
                                (SageAggr::Mean, k) => m.sum::<f64>() / k as f64,
                                (SageAggr::Sum, _) => m.sum::<f64>(),
                                (SageAggr::MaxPool, _) => m.fold(f64::NEG_INFINITY, f64::max),
                            }
                        })
                        .collect()
                })
                .collect();
            assert_close(&got, &sage_reference(&conv, &agg, &xm), 1e-10);
        }
    }
}

#[test]
fn weighted_gin_sums_the_weighted_messages() {
    let (g, _, a, nb) = weighted_graph(false, true);
    for lambda in [None, Some(0.1)] {
        for (d_in, d_out) in [(3, 5), (6, 2)] {
            let conv = GinConvConfig::new(d_in, d_out)
                .with_eps(0.3)
                .with_half_safe_lambda(lambda)
                .init::<B>(&Default::default());
            let x = rnd(N * d_in, 3);
            let xm = rows(&x, d_in);
            let got = host(conv.forward(&g, &Hidden::Dense(t2(&x, N, d_in)), Precision::F32));
            let z: M = (0..N)
                .map(|i| {
                    (0..d_in)
                        .map(|c| {
                            let s: f64 = (0..N).map(|j| a[i][j] * xm[j][c]).sum();
                            let agg = match (lambda, nb[i].len()) {
                                (Some(_), 0) => 0.0,
                                (Some(l), k) => l * s / k as f64,
                                (None, _) => s,
                            };
                            1.3 * xm[i][c] + agg
                        })
                        .collect()
                })
                .collect();
            let h = relu(&add_row(
                &matmul(&z, &host(conv.mlp_in.weight.val())),
                &host1(conv.mlp_in.bias.as_ref().unwrap().val()),
            ));
            let want = add_row(
                &matmul(&h, &host(conv.mlp_out.weight.val())),
                &host1(conv.mlp_out.bias.as_ref().unwrap().val()),
            );
            assert_close(&got, &want, 1e-10);
        }
    }
}

/// GAT on a weighted graph: each attention coefficient times its edge's weight (self-loops
/// added with weight 1).
#[test]
fn weighted_gat_scales_the_attention_by_the_weights() {
    let (g, _, _, nb) = weighted_graph(true, true);
    for concat in [true, false] {
        let conv = GatConvConfig::new(4, 3).with_heads(2).with_concat(concat).init::<B>(&Default::default());
        let x = rnd(N * 4, 4);
        let got = host(conv.forward(&g, &Hidden::Dense(t2(&x, N, 4)), Precision::F32));
        assert_close(&got, &gat_weighted_reference(&conv, &nb, &rows(&x, 4)), 1e-10);
    }
}

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

/// One layer of each kind and configuration, for the weight comparisons below.
enum Layer {
    Gcn(gnn_models::GcnConv<B>),
    Sage(gnn_models::SageConv<B>),
    Gin(gnn_models::GinConv<B>),
    Gat(gnn_models::GatConv<B>),
}

impl Layer {
    fn forward(&self, g: &Graph<B>, x: &Tensor<B, 2>) -> M {
        let h = Hidden::Dense(x.clone());
        host(match self {
            Layer::Gcn(c) => c.forward(g, &h, Precision::F32),
            Layer::Sage(c) => c.forward(g, &h, Precision::F32),
            Layer::Gin(c) => c.forward(g, &h, Precision::F32),
            Layer::Gat(c) => c.forward(g, &h, Precision::F32),
        })
    }
}

fn every_layer() -> Vec<(String, Layer)> {
    let dev = Default::default();
    let mut out = Vec::new();
    for (d_out, norm) in [(3, gnn_models::GcnNorm::Symmetric), (6, gnn_models::GcnNorm::Left)] {
        let gcn = GcnConvConfig::new(4, d_out).with_norm(norm).init::<B>(&dev);
        out.push((format!("gcn {norm:?} -> {d_out}"), Layer::Gcn(gcn)));
    }
    for aggr in [SageAggr::Mean, SageAggr::Sum, SageAggr::MaxPool] {
        for d_out in [3, 6] {
            let sage = SageConvConfig::new(4, d_out).with_aggr(aggr).init::<B>(&dev);
            out.push((format!("sage {aggr:?} -> {d_out}"), Layer::Sage(sage)));
        }
    }
    for lambda in [None, Some(0.5)] {
        let gin = GinConvConfig::new(4, 3).with_half_safe_lambda(lambda).init::<B>(&dev);
        out.push((format!("gin {lambda:?}"), Layer::Gin(gin)));
    }
    out.push(("gat".into(), Layer::Gat(GatConvConfig::new(4, 2).with_heads(2).init::<B>(&dev))));
    out
}

fn max_abs_diff(a: &M, b: &M) -> f64 {
    a.iter().flatten().zip(b.iter().flatten()).map(|(x, y)| (x - y).abs()).fold(0.0, f64::max)
}

/// Random weights change every layer's output; weights of 1 give the unweighted layer.
#[test]
fn weights_change_every_layer_and_unit_weights_do_not() {
    let (_, adj, _, _) = weighted_graph(true, false);
    let x = t2(&rnd(N * 4, 30), N, 4);
    let plain = unweighted(&adj);
    let random: Vec<f32> = rnd(adj.nnz(), 31).iter().map(|v| (v + 1.5) as f32).collect();
    let weighted = reweighted(&adj, random);
    let ones = reweighted(&adj, vec![1.0; adj.nnz()]);
    for (name, layer) in every_layer() {
        let p = layer.forward(&plain, &x);
        let d = max_abs_diff(&p, &layer.forward(&weighted, &x));
        assert!(d > 1e-3, "{name}: random weights leave the output unchanged ({d})");
        let d = max_abs_diff(&p, &layer.forward(&ones, &x));
        assert!(d < 1e-12, "{name}: weights of 1 differ from no weights by {d}");
    }
}

#[test]
fn weighted_layer_gradients_match_finite_differences() {
    let (g, _, _, _) = weighted_graph(false, true);
    let (gl, _, _, _) = weighted_graph(true, true);
    let dev = Default::default();
    for norm in [gnn_models::GcnNorm::Symmetric, gnn_models::GcnNorm::Left] {
        let gcn = GcnConvConfig::new(4, 3).with_norm(norm).init::<B>(&dev);
        check_grad(|x| gcn.forward(&g, &Hidden::Dense(x), Precision::F32), 4, 40);
    }
    for aggr in [SageAggr::Mean, SageAggr::Sum, SageAggr::MaxPool] {
        for d_out in [3, 6] {
            let sage = SageConvConfig::new(4, d_out).with_aggr(aggr).init::<B>(&dev);
            check_grad(|x| sage.forward(&g, &Hidden::Dense(x), Precision::F32), 4, 41);
        }
    }
    for lambda in [None, Some(0.3)] {
        let gin = GinConvConfig::new(4, 3).with_eps(0.2).with_half_safe_lambda(lambda).init::<B>(&dev);
        check_grad(|x| gin.forward(&g, &Hidden::Dense(x), Precision::F32), 4, 42);
    }
    let gat = GatConvConfig::new(4, 2).with_heads(2).init::<B>(&dev);
    check_grad(|x| gat.forward(&gl, &Hidden::Dense(x), Precision::F32), 4, 43);
    // through MaxK: the weighted CBSR SpGEMM forward, its SSpMM backward
    let sage = SageConvConfig::new(6, 3).init::<B>(&dev);
    check_grad(|x| sage.forward(&g, &Hidden::Sparse(ops::maxk(x, 2)), Precision::F32), 6, 44);
    let gcn = GcnConvConfig::new(6, 3).init::<B>(&dev);
    check_grad(|x| gcn.forward(&g, &Hidden::Sparse(ops::maxk(x, 2)), Precision::F32), 6, 45);
}

/// On a weighted graph, MaxK (CBSR) input aggregates as its dense form does.
#[test]
fn weighted_maxk_input_equals_the_dense_top_k_input() {
    let (g, _, _, _) = weighted_graph(false, true);
    let x = t2(&rnd(N * 8, 5), N, 8);
    let sparse = Hidden::Sparse(ops::maxk(x.clone(), 3));
    let dense = Hidden::Dense(ops::maxk(x, 3).to_dense());
    let dev = Default::default();
    for aggr in [SageAggr::Mean, SageAggr::Sum] {
        let conv = SageConvConfig::new(8, 5).with_aggr(aggr).init::<B>(&dev);
        let (s, d) = (conv.forward(&g, &sparse, Precision::F32), conv.forward(&g, &dense, Precision::F32));
        assert_close(&host(s), &host(d), 1e-12);
    }
    let gcn = GcnConvConfig::new(8, 5).init::<B>(&dev);
    assert_close(
        &host(gcn.forward(&g, &sparse, Precision::F32)),
        &host(gcn.forward(&g, &dense, Precision::F32)),
        1e-12,
    );
    let gin = GinConvConfig::new(8, 5).init::<B>(&dev);
    assert_close(
        &host(gin.forward(&g, &sparse, Precision::F32)),
        &host(gin.forward(&g, &dense, Precision::F32)),
        1e-12,
    );
}
