//! The layers on graphs with edge weights (positive, zero, tiny and negative) against weighted
//! dense references and finite differences.

use super::*;

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
            assert_close(&got, &gin_mlp_reference(&conv, &z), 1e-10);
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
