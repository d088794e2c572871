//! `ops::split_pair` (the second half of a GraphSAGE mean / sum layer on a part whose halo
//! columns are held apart: the halo sum, the mean by given degrees and both maps in one op)
//! against the same layer composed of `ops::spmm`, an addition, a row scaling and
//! `ops::linear_pair`: output and the gradients of the own rows, the halo rows and the
//! parameters, on random graphs with a hub and empty rows, with and without a halo; on the CPU
//! backend and on wgpu (there also in mixed f16).

use crate::compare::{host, normwise};
use burn::backend::{Autodiff, NdArray};
use burn::tensor::{Tensor, TensorData};
use burn_sparse_gnn::dense::LinearPrecision;
use burn_sparse_gnn::ops::{self, LinearTerm};
use burn_sparse_gnn::random::{random_csr, random_values, RandomGraphSpec};
use burn_sparse_gnn::{Graph, GraphOptions, Reduce, SparseGnnAutodiffBackend};

/// Output, d_own, d_halo, dw_neigh, dw_root, db of `sum(layer * r)` through the op or the
/// composition.
fn run<B: SparseGnnAutodiffBackend>(
    dev: &B::Device,
    (own_g, halo_g): (&Graph<B>, Option<&Graph<B>>),
    mean: bool,
    precision: LinearPrecision,
    fused: bool,
) -> [Vec<f64>; 6] {
    let (n, d, d_out) = (own_g.n_rows(), 24, 16);
    let t = |rows: usize, cols: usize, seed: u64| {
        let v: Vec<f32> = random_values(rows * cols, seed).into_iter().map(|v| v as f32).collect();
        Tensor::<B, 2>::from_data(TensorData::new(v, [rows, cols]), dev)
    };
    let own = t(n, d, 1).require_grad();
    let halo = halo_g.map(|g| t(g.n_cols(), d, 2).require_grad());
    let (wn, wr) = (t(d, d_out, 3).require_grad(), t(d, d_out, 4).require_grad());
    let b = t(1, d_out, 5).reshape([d_out]).require_grad();
    let r = t(n, d_out, 6);
    // 1 / deg by another graph's degrees (the whole graph's)
    let inv: Vec<f32> = (0..n).map(|i| 1.0 / (1 + i % 7) as f32).collect();
    let inv = Tensor::<B, 1>::from_data(TensorData::new(inv, [n]), dev);
    let half = |x: Tensor<B, 2>| match precision {
        LinearPrecision::Half(h) => x.cast(h),
        _ => x,
    };
    let own_in = half(own.clone());
    let halo_in = halo.clone().map(half);
    let own_sum = ops::spmm(own_g, own_in.clone(), Reduce::Sum);
    let own_half = matches!(precision, LinearPrecision::Half(_)).then(|| own_in.clone());
    let y = if fused {
        let h = halo_g.zip(halo_in);
        ops::try_split_pair(
            own_sum,
            h,
            mean.then(|| inv.clone()),
            own.clone(),
            own_half,
            wn.clone(),
            wr.clone(),
            Some(b.clone()),
            precision,
        )
        .expect("shapes agree")
    } else {
        let s = match halo_g.zip(halo_in) {
            Some((g, h)) => own_sum + ops::spmm(g, h, Reduce::Sum),
            None => own_sum,
        };
        let agg = if mean { s.clone() * inv.clone().cast(s.dtype()).unsqueeze_dim::<2>(1) } else { s };
        let root = LinearTerm::new(own.clone(), wr.clone());
        let root = match own_half {
            Some(h) => root.with_half(h),
            None => root,
        };
        ops::linear_pair(LinearTerm::new(agg, wn.clone()), root, Some(b.clone()), precision)
    };
    let grads = (y.clone() * r).sum().backward();
    [
        host(y),
        host(own.grad(&grads).expect("d_own")),
        halo.map(|h| host(h.grad(&grads).expect("d_halo"))).unwrap_or_default(),
        host(wn.grad(&grads).expect("dw_neigh")),
        host(wr.grad(&grads).expect("dw_root")),
        host(b.grad(&grads).expect("db")),
    ]
}

fn check<B: SparseGnnAutodiffBackend>(dev: &B::Device, precisions: &[LinearPrecision], tol: f64) {
    let mut cases = 0;
    let graph = |n_rows, n_cols, seed| {
        let spec = RandomGraphSpec {
            n_rows,
            n_cols,
            hub_degree: 2_000,
            self_loops: n_rows == n_cols,
            seed,
            ..Default::default()
        };
        Graph::<B>::new(&random_csr(&spec), dev, GraphOptions::default())
    };
    let own_g = graph(301, 301, 7);
    let halo_g = graph(301, 157, 8);
    for halo in [Some(&halo_g), None] {
        for mean in [true, false] {
            for &precision in precisions {
                let fused = run::<B>(dev, (&own_g, halo), mean, precision, true);
                let composed = run::<B>(dev, (&own_g, halo), mean, precision, false);
                for (what, (a, b)) in
                    ["output", "d_own", "d_halo", "dw_neigh", "dw_root", "db"].iter().zip(fused.iter().zip(&composed))
                {
                    assert_eq!(a.is_empty(), b.is_empty(), "{what}");
                    if a.is_empty() {
                        continue;
                    }
                    let err = normwise(a, b);
                    let label = format!("halo={} mean={mean} {precision:?}", halo.is_some());
                    assert!(err <= tol, "{label}: {what} error {err:.2e} over {tol:.0e}");
                }
                cases += 1;
            }
        }
    }
    assert_eq!(cases, 4 * precisions.len());
}

#[test]
fn split_pair_matches_the_composition_on_the_cpu() {
    check::<Autodiff<NdArray>>(&Default::default(), &[LinearPrecision::F32], 1e-5);
}

#[test]
fn split_pair_refuses_bad_shapes() {
    type B = Autodiff<NdArray>;
    let dev = Default::default();
    let spec = RandomGraphSpec { n_rows: 20, n_cols: 12, hub_degree: 0, ..Default::default() };
    let halo_g = Graph::<B>::new(&random_csr(&spec), &dev, GraphOptions::default());
    let z = |r: usize, c: usize| Tensor::<B, 2>::zeros([r, c], &dev);
    let err = |r: Result<Tensor<B, 2>, burn_sparse_gnn::OpError>| r.err().expect("an error").to_string();
    let p = LinearPrecision::F32;
    let inv = |n: usize| Some(Tensor::<B, 1>::ones([n], &dev));
    assert!(err(ops::try_split_pair(z(20, 4), None, None, z(19, 4), None, z(4, 3), z(4, 3), None, p)).contains("own"));
    assert!(err(ops::try_split_pair(
        z(20, 4),
        Some((&halo_g, z(11, 4))),
        None,
        z(20, 4),
        None,
        z(4, 3),
        z(4, 3),
        None,
        p
    ))
    .contains("halo"));
    assert!(err(ops::try_split_pair(z(20, 4), None, inv(19), z(20, 4), None, z(4, 3), z(4, 3), None, p))
        .contains("inv_degree"));
    assert!(
        err(ops::try_split_pair(z(20, 4), None, None, z(20, 4), None, z(4, 3), z(4, 2), None, p)).contains("weights")
    );
    let b = Some(Tensor::<B, 1>::zeros([2], &dev));
    assert!(
        err(ops::try_split_pair(z(20, 4), None, None, z(20, 4), None, z(4, 3), z(4, 3), b, p)).contains("b has shape")
    );
    let ok =
        ops::try_split_pair(z(20, 4), Some((&halo_g, z(12, 4))), inv(20), z(20, 4), None, z(4, 3), z(4, 3), None, p);
    assert_eq!(ok.expect("valid shapes").dims(), [20, 3]);
}

#[cfg(feature = "wgpu")]
#[test]
fn split_pair_matches_the_composition_on_wgpu() {
    use burn::tensor::{DType, FloatDType};
    let dev = burn::backend::wgpu::WgpuDevice::DefaultDevice;
    type B = Autodiff<burn_sparse_gnn::Wgpu>;
    check::<B>(&dev, &[LinearPrecision::F32], 1e-4);
    if <burn_sparse_gnn::Wgpu as burn::tensor::backend::Backend>::supports_dtype(&dev, DType::F16) {
        // the op rounds dy / deg (not (dy w_neigh^T) / deg) to f16
        check::<B>(&dev, &[LinearPrecision::Half(FloatDType::F16)], 1e-2);
    } else {
        println!("skipped: f16 is not supported by this wgpu device");
    }
}
