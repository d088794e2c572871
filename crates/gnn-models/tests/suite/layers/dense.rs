//! The dense pieces of the layers: the bias op, the lean ReLU and dropout, and the half-saved
//! product, against Burn's own ops and hand-computed sums.

use super::*;

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

/// A training-mode batch normalisation moves its running statistics a `momentum` of the way to
/// the batch's means and biased variances (both in one op), as Burn's `BatchNorm` does.
#[test]
fn batch_norm_moves_its_running_statistics_toward_the_batch() {
    let dev = Default::default();
    let bn = gnn_models::norm::BatchNorm::<B>::new(2, &dev);
    // column means 2 and 6, biased variances 1 and 4; running statistics start at 0 and 1
    let x = Tensor::<B, 2>::from_data(TensorData::new(vec![1.0, 4.0, 3.0, 8.0], [2, 2]), &dev);
    let _ = bn.forward(x);
    let read = |t: Tensor<B, 1>| t.to_data().convert::<f64>().to_vec::<f64>().unwrap();
    let (m, v) = (read(bn.running_mean.value_sync()), read(bn.running_var.value_sync()));
    for (got, want) in m.iter().chain(&v).zip([0.2, 0.6, 1.0, 1.3]) {
        assert!((got - want).abs() < 1e-6, "{m:?} {v:?}");
    }
}
