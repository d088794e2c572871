//! The dense products of the layers against f64, on the chosen device.

use crate::bench::host;
use burn::tensor::{Tensor, TensorData};
use burn_sparse_gnn::conformance::normwise_error;
use burn_sparse_gnn::random::random_values;

/// Normwise error bound of each dense product arithmetic against f64 in [`product_checks`]
/// (sums of 300 products of values in [-1, 1]): f32 rounds at 2^-24, TF32 inputs at 2^-11, f16
/// at 2^-11 and bf16 at 2^-8, with f32 accumulation.
pub fn product_tolerance(name: &str) -> f64 {
    match name {
        "f32" => 1e-5,
        "tf32" | "f16" => 5e-3,
        _ => 3e-2,
    }
}

/// The dense products ([`burn_sparse_gnn::SparseGnnBackend::dense_product`],
/// `dense_product_half` on half inputs, and `dense_product_bias` untransposed) in every
/// arithmetic and orientation against f64 on the host: `(what, error, tolerance)`, `None`
/// where the device lacks the half type. Shapes are odd (a wiring error in the leading
/// dimensions or transposes shows as an error of order 1).
pub fn product_checks<B: burn_sparse_gnn::SparseGnnBackend>(device: &B::Device) -> Vec<(String, Option<f64>, f64)> {
    use burn::tensor::FloatDType;
    use burn_sparse_gnn::dense::ProductMath;
    let (m, k, n) = (1_031usize, 300usize, 37usize);
    let f = |len: usize, seed: u64| random_values(len, seed).into_iter().map(|v| v as f32).collect::<Vec<f32>>();
    let mut out = Vec::new();
    for (name, math, half) in [
        ("f32", ProductMath::F32, None),
        ("tf32", ProductMath::Tf32, None),
        ("f16", ProductMath::F32, Some(FloatDType::F16)),
        ("bf16", ProductMath::F32, Some(FloatDType::BF16)),
    ] {
        for (ta, tb) in [(false, false), (false, true), (true, false)] {
            let what = format!(
                "dense product {name}{}{}",
                if ta { ", a transposed" } else { "" },
                if tb { ", b transposed" } else { "" }
            );
            if let Some(h) = half {
                if !B::supports_dtype(device, h.into()) {
                    out.push((what, None, product_tolerance(name)));
                    continue;
                }
            }
            let (ar, ac) = if ta { (k, m) } else { (m, k) };
            let (br, bc) = if tb { (n, k) } else { (k, n) };
            let round = |v: Vec<f32>| -> Vec<f32> {
                match half {
                    Some(FloatDType::F16) => v.into_iter().map(|x| half::f16::from_f32(x).to_f32()).collect(),
                    Some(_) => v.into_iter().map(|x| half::bf16::from_f32(x).to_f32()).collect(),
                    None => v,
                }
            };
            let (av, bv) = (round(f(ar * ac, 31)), round(f(br * bc, 32)));
            let t = |v: &[f32], r: usize, c: usize| {
                let t = Tensor::<B, 2>::from_data(TensorData::new(v.to_vec(), [r, c]), device);
                match half {
                    Some(h) => t.cast(h),
                    None => t,
                }
            };
            let y = B::dense_product(
                t(&av, ar, ac).into_primitive().tensor(),
                t(&bv, br, bc).into_primitive().tensor(),
                ta,
                tb,
                math,
            );
            let y = host(Tensor::<B, 2>::from_primitive(burn::tensor::TensorPrimitive::Float(y)));
            let a_at = |i: usize, t2: usize| if ta { av[t2 * m + i] } else { av[i * k + t2] } as f64;
            let b_at = |t2: usize, j: usize| if tb { bv[j * k + t2] } else { bv[t2 * n + j] } as f64;
            let want: Vec<f64> = (0..m)
                .flat_map(|i| (0..n).map(move |j| (i, j)))
                .map(|(i, j)| (0..k).map(|t2| a_at(i, t2) * b_at(t2, j)).sum())
                .collect();
            out.push((what.clone(), Some(normwise_error(&y, &want)), product_tolerance(name)));
            if half.is_some() {
                // the product in the half type (f32 accumulation, one rounding)
                let y = B::dense_product_half(
                    t(&av, ar, ac).into_primitive().tensor(),
                    t(&bv, br, bc).into_primitive().tensor(),
                    ta,
                    tb,
                );
                let y = Tensor::<B, 2>::from_primitive(burn::tensor::TensorPrimitive::Float(y));
                let err = if y.dtype() == burn::tensor::DType::from(half.expect("half")) {
                    normwise_error(&host(y.cast(FloatDType::F32)), &want)
                } else {
                    f64::INFINITY
                };
                out.push((format!("{what}, half output"), Some(err), product_tolerance(name)));
            }
            if !ta && !tb {
                // the same product with a bias added to every row (cuBLASLt's epilogue on CUDA)
                let bias_v = f(n, 33);
                let bias = Tensor::<B, 1>::from_data(TensorData::new(bias_v.clone(), [n]), device);
                let y = B::dense_product_bias(
                    t(&av, ar, ac).into_primitive().tensor(),
                    t(&bv, br, bc).into_primitive().tensor(),
                    bias.into_primitive().tensor(),
                    math,
                );
                let y = host(Tensor::<B, 2>::from_primitive(burn::tensor::TensorPrimitive::Float(y)));
                let want_b: Vec<f64> = want.iter().enumerate().map(|(i, w)| w + bias_v[i % n] as f64).collect();
                out.push((format!("{what} + bias"), Some(normwise_error(&y, &want_b)), product_tolerance(name)));
            }
        }
    }
    out
}
