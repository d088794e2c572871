//! GCN, GraphSAGE, GIN and GAT without edge weights, and MaxK input, against dense references
//! and finite differences.

use super::*;

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
    // a learned eps, a fixed one (a constant scale) and GIN-0's (no scale at all)
    for (lambda, learn, eps) in
        [(None, true, 0.3), (Some(0.1), true, 0.3), (None, false, 0.3), (Some(0.1), false, 0.3), (None, false, 0.0)]
    {
        for (d_in, d_out) in [(3, 5), (6, 2)] {
            let conv = GinConvConfig::new(d_in, d_out)
                .with_eps(eps)
                .with_learn_eps(learn)
                .with_half_safe_lambda(lambda)
                .init::<B>(&Default::default());
            assert_eq!(conv.eps_fixed, (!learn).then_some(eps));
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
                            (1.0 + eps) * xm[i][c] + agg
                        })
                        .collect()
                })
                .collect();
            assert_close(&got, &gin_mlp_reference(&conv, &z), 1e-10);
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
    let gin0 = GinConvConfig::new(4, 3).init::<B>(&dev).with_fixed_eps(0.0);
    let grads = gin0.forward(&g, &Hidden::Dense(x.clone()), Precision::F32).sum().backward();
    assert!(gin0.eps.grad(&grads).is_none(), "GIN-0's eps is not learned");
    assert_eq!(gin0.eps_fixed, Some(0.0));
    let gat = GatConvConfig::new(4, 2).with_heads(2).init::<B>(&dev);
    let grads = gat.forward(&g, &Hidden::Dense(x), Precision::F32).powf_scalar(2.0).sum().backward();
    let ga = gat.att_src.grad(&grads).expect("attention gradient");
    assert!(ga.abs().sum().into_scalar() > 0.0);
}
