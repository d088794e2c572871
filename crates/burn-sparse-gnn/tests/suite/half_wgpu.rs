//! Half precision on wgpu (lavapipe in CI): the conformance suite with f16 storage, bf16 skipped
//! where the device lacks it, and HalfGNN's overflow case: a hub row of 70,000 edges with
//! features near 1.0, where a naive f16 reduction overflows and ours returns the f32 result.
#![cfg(feature = "wgpu")]

use burn::backend::Autodiff;
use burn::tensor::{DType, FloatDType, Tensor, TensorData};
use burn_sparse_gnn::conformance::{run, ConformanceConfig};
use burn_sparse_gnn::dense::LinearPrecision;
use burn_sparse_gnn::{ops, Csr, Graph, GraphOptions, Reduce, Wgpu};
use rand::{Rng, SeedableRng};

fn device() -> burn::backend::wgpu::WgpuDevice {
    burn::backend::wgpu::WgpuDevice::DefaultDevice
}

#[test]
fn conformance_in_f16_and_bf16() {
    let f16 = ConformanceConfig {
        dtype: Some(FloatDType::F16),
        tolerance: 1e-2,
        hub_degree: 4_000,
        widths: vec![7, 64],
        ..Default::default()
    };
    let report = run::<Autodiff<Wgpu>>(&device(), &f16);
    println!("{}", report.table());
    if <Wgpu as burn::tensor::backend::Backend>::supports_dtype(&device(), DType::F16) {
        assert!(report.results.iter().all(|r| r.skipped.is_none()), "f16 ran");
        assert!(report.passed(), "failures: {:#?}", report.failures());
    } else {
        println!("skipped: f16 is not supported by this wgpu device");
    }
    let bf16 = ConformanceConfig { dtype: Some(FloatDType::BF16), filter: Some("spmm".into()), ..f16 };
    let report = run::<Autodiff<Wgpu>>(&device(), &bf16);
    if <Wgpu as burn::tensor::backend::Backend>::supports_dtype(&device(), DType::BF16) {
        assert!(report.passed(), "failures: {:#?}", report.failures());
    } else {
        let why = report.results[0].skipped.clone().expect("skipped, with the reason");
        println!("skipped: {why}");
        assert!(why.contains("BF16"));
    }
}

#[test]
fn hub_of_70000_edges_does_not_overflow_in_f16() {
    let dev = device();
    if !<Wgpu as burn::tensor::backend::Backend>::supports_dtype(&dev, DType::F16) {
        println!("skipped: f16 is not supported by this wgpu device");
        return;
    }
    let (n, hub, f) = (5_000usize, 70_000usize, 8usize);
    let mut rng = rand::rngs::StdRng::seed_from_u64(3);
    let mut row_ptr = vec![0i64];
    let mut cols: Vec<i64> = (0..hub).map(|_| rng.random_range(0..n as i64)).collect();
    cols.sort_unstable();
    row_ptr.push(hub as i64);
    for i in 1..n {
        cols.push(((i * 7) % n) as i64);
        row_ptr.push(row_ptr[i] + 1);
    }
    let adj = Csr::new(n, n, &row_ptr, &cols, None).unwrap();
    let x: Vec<f32> = (0..n * f).map(|_| half::f16::from_f32(0.9 + 0.2 * rng.random::<f32>()).to_f32()).collect();

    // naive f16 aggregation of the hub row, sum in f16 then divide: a parallel (tree) reduction
    // overflows to INF; a sequential one stalls at 4096 (f16 spacing 4 there)
    let vals: Vec<half::f16> = cols[..hub].iter().map(|&c| half::f16::from_f32(x[c as usize * f])).collect();
    fn tree(v: &[half::f16]) -> half::f16 {
        if v.len() == 1 {
            v[0]
        } else {
            let m = v.len() / 2;
            tree(&v[..m]) + tree(&v[m..])
        }
    }
    let tree_mean = tree(&vals) / half::f16::from_f32(hub as f32);
    // the sum overflows to INF and the degree (70,000 > 65,504) too: INF / INF = NaN
    assert!(!tree_mean.is_finite(), "tree-reduced f16 mean is not finite ({tree_mean})");
    let seq = vals.iter().fold(half::f16::ZERO, |a, &b| a + b);
    let true_sum: f64 = vals.iter().map(|v| v.to_f64()).sum();
    assert!((seq.to_f64() - true_sum).abs() > 0.9 * true_sum, "sequential f16 sum stalls ({seq} vs {true_sum})");

    // ours, f16 storage
    let g = Graph::<Wgpu>::new(&adj, &dev, GraphOptions::default());
    let xt = Tensor::<Wgpu, 2>::from_data(TensorData::new(x.clone(), [n, f]), &dev).cast(FloatDType::F16);
    let out = ops::spmm(&g, xt.clone(), Reduce::Mean).cast(FloatDType::F32).into_data().to_vec::<f32>().unwrap();
    for c in 0..f {
        let want: f64 = cols[..hub].iter().map(|&j| x[j as usize * f + c] as f64).sum::<f64>() / hub as f64;
        let got = out[c] as f64;
        assert!(got.is_finite(), "feature {c}: {got}");
        assert!((got - want).abs() <= 1e-3 * want.abs(), "feature {c}: {got} vs {want}");
    }
    // a GCN-style normalised sum (edge weights 1 / deg) is finite too
    let w: Vec<f32> = (0..adj.nnz()).map(|e| if e < hub { 1.0 / hub as f32 } else { 1.0 }).collect();
    let wt = Tensor::<Wgpu, 1>::from_data(TensorData::new(w, [adj.nnz()]), &dev).cast(FloatDType::F16);
    let norm = ops::spmm_weighted(&g, wt, xt, Reduce::Sum).cast(FloatDType::F32).into_data().to_vec::<f32>().unwrap();
    assert!(norm.iter().all(|v| v.is_finite()));
    assert!((norm[0] as f64 - 1.0).abs() < 0.1);
}

/// A half-precision linear layer (`ops::linear` with `LinearPrecision::Half`) multiplies its
/// input rounded per row (rows scaled by their largest magnitude) by the rounded weight and keeps
/// the half copy for the backward pass: its output and weight gradient equal those of the
/// composed path `((x / s).cast(f16).cast(f32) * s).matmul(round(w))` (the weight gradient
/// summed over row chunks, so within f32 rounding), its input gradient is the f32 `dy w^T` of
/// the unrounded weight, and inputs beyond the f16 range stay finite.
#[test]
fn half_precision_linear_matches_the_composed_f16_path() {
    let dev = device();
    if !<Wgpu as burn::tensor::backend::Backend>::supports_dtype(&dev, DType::F16) {
        println!("skipped: f16 is not supported by this wgpu device");
        return;
    }
    type A = Autodiff<Wgpu>;
    let (n, a, b) = (1_037usize, 24usize, 9usize);
    let mut rng = rand::rngs::StdRng::seed_from_u64(11);
    let xv: Vec<f32> = (0..n * a).map(|_| rng.random_range(-2.0f32..2.0)).collect();
    let wv: Vec<f32> = (0..a * b).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let dyv: Vec<f32> = (0..n * b).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let run = |path: u8| {
        let x = Tensor::<A, 2>::from_data(TensorData::new(xv.clone(), [n, a]), &dev).require_grad();
        let w = Tensor::<A, 2>::from_data(TensorData::new(wv.clone(), [a, b]), &dev).require_grad();
        let dy = Tensor::<A, 2>::from_data(TensorData::new(dyv.clone(), [n, b]), &dev);
        let y = match path {
            0 => ops::linear(x.clone(), w.clone(), None, LinearPrecision::Half(FloatDType::F16)),
            1 => {
                let s = x.clone().abs().max_dim(1).detach();
                // the weight rounded forward, its gradient exact (straight through)
                let wr = w.clone() + (w.clone().cast(FloatDType::F16).cast(FloatDType::F32) - w.clone()).detach();
                ((x.clone() / s.clone()).cast(FloatDType::F16).cast(FloatDType::F32) * s).matmul(wr)
            }
            _ => x.clone().matmul(w.clone()),
        };
        assert_eq!(y.dtype(), DType::F32);
        let grads = (y.clone() * dy).sum().backward();
        let v = |t: Tensor<Wgpu, 2>| t.into_data().to_vec::<f32>().unwrap();
        (v(y.inner()), v(x.grad(&grads).unwrap()), v(w.grad(&grads).unwrap()))
    };
    let (y1, dx1, dw1) = run(0);
    let (y0, _, dw0) = run(1);
    let (exact, dx0, _) = run(2);
    let close = |p: &[f32], q: &[f32], what: &str| {
        let scale = q.iter().fold(1.0f32, |m, v| m.max(v.abs()));
        for (i, (u, v)) in p.iter().zip(q).enumerate() {
            assert!((u - v).abs() <= 1e-5 * scale, "{what}[{i}]: {u} vs {v}");
        }
    };
    close(&y1, &y0, "y");
    close(&dx1, &dx0, "dx");
    close(&dw1, &dw0, "dw");
    // the input really is rounded: the result differs from the f32 product
    assert!(exact.iter().zip(&y1).any(|(u, v)| u != v));
    // values far beyond f16's 65,504 stay finite and close to the f32 product
    let big =
        Tensor::<Wgpu, 2>::from_data(TensorData::new(xv.iter().map(|v| v * 1e6).collect::<Vec<f32>>(), [n, a]), &dev);
    let w = Tensor::<Wgpu, 2>::from_data(TensorData::new(wv.clone(), [a, b]), &dev);
    let y = ops::linear(big.clone(), w.clone(), None, LinearPrecision::Half(FloatDType::F16))
        .into_data()
        .to_vec::<f32>()
        .unwrap();
    let want = big.matmul(w).into_data().to_vec::<f32>().unwrap();
    let scale = want.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    for (u, v) in y.iter().zip(&want) {
        assert!(u.is_finite() && (u - v).abs() <= 2e-3 * scale, "{u} vs {v}");
    }
}

#[test]
fn one_pass_half_rows_equal_the_composed_ops() {
    let halves = [FloatDType::F16, FloatDType::BF16];
    let checks = burn_sparse_gnn::conformance::half_rows_checks::<Wgpu>(
        &device(),
        &halves,
        &[1, 7, 33, 256, 602],
        &burn_sparse_gnn::KernelConfig::default(),
    );
    assert_eq!(checks.len(), 10);
    let f16_ran = <Wgpu as burn::tensor::backend::Backend>::supports_dtype(&device(), DType::F16);
    for (what, diff) in &checks {
        println!("{what}: {diff:?}");
        assert!(diff.is_none() || *diff == Some(0.0), "{what}: {diff:?}");
        if what.starts_with("half rows F16") {
            assert_eq!(diff.is_some(), f16_ran, "{what}");
        }
    }
}

#[test]
fn one_pass_inverse_degree_rows_equal_the_composed_ops() {
    let checks =
        burn_sparse_gnn::conformance::inv_degree_checks::<Wgpu>(&device(), &[FloatDType::F16], &[1, 7, 33, 256, 602]);
    assert_eq!(checks.len(), 2 * 2 * 5);
    for (what, diff) in &checks {
        println!("{what}: {diff:?}");
        assert!(diff.is_none() || *diff == Some(0.0), "{what}: {diff:?}");
        if what.contains("F32") {
            assert!(diff.is_some(), "{what}");
        }
    }
}
