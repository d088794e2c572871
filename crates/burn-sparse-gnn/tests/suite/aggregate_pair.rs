//! `ops::aggregate_pair` (a mean / sum aggregation then a SAGE layer's two linear maps, whose
//! backward pass keeps no aggregate) against the same layer composed of `ops::spmm` and
//! `ops::linear_pair`: output and every gradient, on random graphs with a hub, empty rows and
//! duplicate edges, square and with more columns than rows (a part of a partitioned graph:
//! its own rows, then its halo), for narrowing, square and widening maps, with and without a
//! gradient for the input; on the CPU backend and on wgpu (there also in mixed f16).

use crate::compare::{host, normwise};
use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Tensor, TensorData};
use burn_sparse_gnn::dense::LinearPrecision;
use burn_sparse_gnn::ops::{self, LinearTerm};
use burn_sparse_gnn::random::{random_csr, random_values, RandomGraphSpec};
use burn_sparse_gnn::{Graph, GraphOptions, Reduce, SparseGnnAutodiffBackend};

/// Output, dx, dw_neigh, dw_root, db of `sum(layer(x) * r)` through the fused op or the
/// composition.
fn run<B: SparseGnnAutodiffBackend>(
    dev: &B::Device,
    g: &Graph<B>,
    (d, d_out): (usize, usize),
    (reduce, precision): (Reduce, LinearPrecision),
    x_grad: bool,
    fused: bool,
) -> [Vec<f64>; 5] {
    let (n, n_cols) = (g.n_rows(), g.n_cols());
    let salt = (d * 1000 + d_out) as u64;
    let t = |rows: usize, cols: usize, seed: u64| {
        let v: Vec<f32> = random_values(rows * cols, seed + salt).into_iter().map(|v| v as f32).collect();
        Tensor::<B, 2>::from_data(TensorData::new(v, [rows, cols]), dev)
    };
    let x = t(n_cols, d, 1);
    let x = if x_grad { x.require_grad() } else { x };
    let (wn, wr) = (t(d, d_out, 2).require_grad(), t(d, d_out, 3).require_grad());
    let b = t(1, d_out, 4).reshape([d_out]).require_grad();
    let r = t(n, d_out, 5);
    let y = if fused {
        ops::aggregate_pair(g, x.clone(), wn.clone(), wr.clone(), Some(b.clone()), reduce, precision)
    } else {
        let xin = match precision {
            LinearPrecision::Half(h) => x.clone().cast(h),
            _ => x.clone(),
        };
        let neigh = ops::spmm(g, xin.clone(), reduce);
        let root = LinearTerm::new(x.clone().slice([0..n]), wr.clone());
        let root = match precision {
            LinearPrecision::Half(_) => root.with_half(xin.slice([0..n])),
            _ => root,
        };
        ops::linear_pair(LinearTerm::new(neigh, wn.clone()), root, Some(b.clone()), precision)
    };
    let grads = (y.clone() * r).sum().backward();
    let dx = if x_grad { host(x.grad(&grads).expect("dx")) } else { vec![] };
    [
        host(y),
        dx,
        host(wn.grad(&grads).expect("dw_neigh")),
        host(wr.grad(&grads).expect("dw_root")),
        host(b.grad(&grads).expect("db")),
    ]
}

/// Every case: the fused op against the composition within `tol` (normwise).
fn check<B: SparseGnnAutodiffBackend>(dev: &B::Device, precisions: &[LinearPrecision], tol: f64)
where
    B: AutodiffBackend,
{
    let mut cases = 0;
    for (n_rows, n_cols, seed) in [(301usize, 301usize, 7u64), (150, 301, 8)] {
        let spec = RandomGraphSpec {
            n_rows,
            n_cols,
            hub_degree: 2_000,
            self_loops: n_rows == n_cols,
            seed,
            ..Default::default()
        };
        let g = Graph::<B>::new(&random_csr(&spec), dev, GraphOptions::default());
        for shape in [(24usize, 24usize), (40, 24), (24, 40)] {
            for reduce in [Reduce::Mean, Reduce::Sum] {
                for &precision in precisions {
                    for x_grad in [true, false] {
                        let fused = run::<B>(dev, &g, shape, (reduce, precision), x_grad, true);
                        let composed = run::<B>(dev, &g, shape, (reduce, precision), x_grad, false);
                        for (what, a, b) in ["output", "dx", "dw_neigh", "dw_root", "db"]
                            .iter()
                            .zip(&fused)
                            .zip(&composed)
                            .map(|((w, a), b)| (w, a, b))
                        {
                            if a.is_empty() && b.is_empty() {
                                continue;
                            }
                            let err = normwise(a, b);
                            assert!(
                                err <= tol,
                                "{n_rows}x{n_cols} {shape:?} {reduce:?} {precision:?} x_grad={x_grad}: {what} error {err:.2e} over {tol:.0e}"
                            );
                        }
                        cases += 1;
                    }
                }
            }
        }
    }
    assert_eq!(cases, 2 * 3 * 2 * 2 * precisions.len());
}

#[test]
fn fused_aggregate_pair_matches_the_composition_on_the_cpu() {
    check::<Autodiff<NdArray>>(&Default::default(), &[LinearPrecision::F32], 1e-5);
}

#[test]
fn aggregate_pair_refuses_bad_shapes_and_max() {
    type B = Autodiff<NdArray>;
    let dev = Default::default();
    let spec = RandomGraphSpec { n_rows: 20, n_cols: 20, hub_degree: 0, ..Default::default() };
    let g = Graph::<B>::new(&random_csr(&spec), &dev, GraphOptions::default());
    let z = |r: usize, c: usize| Tensor::<B, 2>::zeros([r, c], &dev);
    let err = |r: Result<Tensor<B, 2>, burn_sparse_gnn::OpError>| r.err().expect("an error").to_string();
    let p = LinearPrecision::F32;
    assert!(err(ops::try_aggregate_pair(&g, z(19, 4), z(4, 3), z(4, 3), None, Reduce::Mean, p)).contains("x has shape"));
    assert!(err(ops::try_aggregate_pair(&g, z(20, 4), z(5, 3), z(4, 3), None, Reduce::Mean, p)).contains("w_neigh"));
    assert!(err(ops::try_aggregate_pair(&g, z(20, 4), z(4, 3), z(4, 2), None, Reduce::Mean, p)).contains("w_root"));
    let b = Some(Tensor::<B, 1>::zeros([2], &dev));
    assert!(err(ops::try_aggregate_pair(&g, z(20, 4), z(4, 3), z(4, 3), b, Reduce::Sum, p)).contains("b has shape"));
    assert!(err(ops::try_aggregate_pair(&g, z(20, 4), z(4, 3), z(4, 3), None, Reduce::Max, p)).contains("mean or sum"));
}

#[cfg(feature = "wgpu")]
#[test]
fn fused_aggregate_pair_matches_the_composition_on_wgpu() {
    use burn::tensor::{DType, FloatDType};
    let dev = burn::backend::wgpu::WgpuDevice::DefaultDevice;
    type B = Autodiff<burn_sparse_gnn::Wgpu>;
    check::<B>(&dev, &[LinearPrecision::F32], 1e-4);
    if <burn_sparse_gnn::Wgpu as burn::tensor::backend::Backend>::supports_dtype(&dev, DType::F16) {
        // the fused backward rounds dy (not dy w_neigh^T) to f16 before the transposed SpMM
        check::<B>(&dev, &[LinearPrecision::Half(FloatDType::F16)], 1e-2);
    } else {
        println!("skipped: f16 is not supported by this wgpu device");
    }
}
