//! Link prediction's negative sampling and the pairs' row gather: the kernels (wgpu) and the
//! host implementation (NdArray) against the CPU reference, exactly; and the negatives'
//! statistics.

use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Distribution, FloatDType, Int, Tensor, TensorData};
use burn_sparse_gnn::conformance::{link_checks, pair_rows_checks};
use burn_sparse_gnn::link::{negative_pairs, pair_rows, permute_rows, PairEnd};
use burn_sparse_gnn::{BuildOptions, Csr, Graph, GraphOptions, SparseGnnBackend};

fn assert_exact(checks: &[(String, Option<f64>)]) {
    assert_eq!(checks.len(), 5 * 3 * 2 + 2 * 2);
    for (what, diff) in checks {
        println!("{what}: {diff:?}");
        assert_eq!(*diff, Some(0.0), "{what}");
    }
}

#[test]
fn host_implementation_matches_the_reference() {
    assert_exact(&link_checks::<Autodiff<NdArray>>(&Default::default()));
}

#[cfg(feature = "wgpu")]
#[test]
fn kernels_match_the_reference_on_wgpu() {
    let device = burn::backend::wgpu::WgpuDevice::DefaultDevice;
    assert_exact(&link_checks::<Autodiff<burn_sparse_gnn::Wgpu>>(&device));
}

/// The rows a negative permutation picks, and their gradient (a gather by the inverse
/// permutation), equal `select` and its scatter-add backward exactly, on a node count that is
/// not a power of two.
fn permuted_rows_match_select<B: AutodiffBackend + SparseGnnBackend>(device: &B::Device) {
    let n = 1_031usize;
    let src: Vec<i64> = (0..n as i64 - 1).collect();
    let dst: Vec<i64> = (1..n as i64).collect();
    let adj = Csr::from_edges(n, &src, &dst, None, BuildOptions::undirected()).unwrap();
    let g = Graph::<B>::new(&adj, device, GraphOptions::default());
    let x = Tensor::<B, 2>::random([n, 5], Distribution::Uniform(-1.0, 1.0), device);
    let w = Tensor::<B, 2>::random([n, 5], Distribution::Uniform(-1.0, 1.0), device);
    for seed in [3u64, 1 << 33] {
        let neg = negative_pairs(&g, &g, seed).unwrap();
        let (xa, xb) = (x.clone().detach().require_grad(), x.clone().detach().require_grad());
        let ya = permute_rows(xa.clone(), neg.rows.clone(), neg.rows_inverse.clone());
        let yb = xb.clone().select(0, neg.rows.clone());
        ya.to_data().assert_eq(&yb.to_data(), true);
        let (ga, gb) = ((ya * w.clone()).sum().backward(), (yb * w.clone()).sum().backward());
        xa.grad(&ga).unwrap().to_data().assert_eq(&xb.grad(&gb).unwrap().to_data(), true);
    }
}

#[test]
fn permuted_rows_match_select_on_the_host() {
    permuted_rows_match_select::<Autodiff<NdArray>>(&Default::default());
}

#[cfg(feature = "wgpu")]
#[test]
fn permuted_rows_match_select_on_wgpu() {
    permuted_rows_match_select::<Autodiff<burn_sparse_gnn::Wgpu>>(&burn::backend::wgpu::WgpuDevice::DefaultDevice);
}

/// Every relabelled pair is uniform over the ordered pairs: over many seeds, the image of a
/// node under each permutation spreads evenly over the nodes (chi-square against uniform at the
/// 0.1 % level), and a kept pair is never an edge nor a node with itself. (The pairs of one epoch
/// are not independent: the pairs of a row all share its image.)
#[test]
fn negatives_are_uniform_over_the_nodes_and_never_edges() {
    type B = NdArray;
    let dev = Default::default();
    let n = 50usize;
    // a star (hub 0) plus a path: very uneven degrees
    let mut src: Vec<i64> = (1..n as i64).collect();
    let mut dst: Vec<i64> = vec![0; n - 1];
    src.extend(1..n as i64 - 1);
    dst.extend(2..n as i64);
    let adj = Csr::from_edges(n, &src, &dst, None, BuildOptions::undirected()).unwrap();
    let g = Graph::<B>::new(&adj, &dev, GraphOptions::default());
    let (mut hub_src, mut leaf_dst) = (vec![0usize; n], vec![0usize; n]);
    let rows: Vec<usize> =
        (0..n).flat_map(|r| std::iter::repeat_n(r, adj.row_ptr()[r + 1] - adj.row_ptr()[r])).collect();
    let seeds = 2_000u64;
    for seed in 0..seeds {
        let neg = negative_pairs(&g, &g, seed).unwrap();
        let pa = neg.rows.into_data().convert::<i64>().into_vec::<i64>().unwrap();
        let pb = neg.cols.into_data().convert::<i64>().into_vec::<i64>().unwrap();
        let mask = neg.mask.into_data().convert::<i64>().into_vec::<i64>().unwrap();
        for (e, &m) in mask.iter().enumerate() {
            let (u, v) = (pa[rows[e]] as usize, pb[adj.col_idx()[e] as usize] as usize);
            let edge = adj.col_idx()[adj.row_ptr()[u]..adj.row_ptr()[u + 1]].contains(&(v as u32));
            assert_eq!(m == 1, u != v && !edge, "pair {e} ({u}, {v}) seed {seed}");
        }
        hub_src[pa[0] as usize] += 1;
        leaf_dst[pb[n - 1] as usize] += 1;
    }
    for (what, counts) in [("the hub's image", &hub_src), ("a leaf's image", &leaf_dst)] {
        let expect = seeds as f64 / n as f64;
        let chi2: f64 = counts.iter().map(|&c| (c as f64 - expect).powi(2) / expect).sum();
        // 49 degrees of freedom: the 0.1 % critical value is 85.35
        assert!(chi2 < 85.35, "{what}: chi-square {chi2:.1} over {n} nodes");
    }
}

#[test]
fn pair_rows_gradient_matches_the_reference_on_the_host() {
    let checks = pair_rows_checks::<NdArray>(&Default::default(), &[FloatDType::F32]);
    assert_eq!(checks.len(), 6);
    for (what, diff) in checks {
        assert_eq!(diff, Some(0.0), "{what}");
    }
}

#[cfg(feature = "wgpu")]
#[test]
fn pair_rows_gradient_matches_the_reference_on_wgpu() {
    let device = burn::backend::wgpu::WgpuDevice::DefaultDevice;
    let checks = pair_rows_checks::<burn_sparse_gnn::Wgpu>(&device, &[FloatDType::F32, FloatDType::F16]);
    assert_eq!(checks.len(), 12);
    for (what, diff) in checks {
        println!("{what}: {diff:?}");
        assert_eq!(diff, Some(0.0), "{what}");
    }
}

/// The rows each pair of a pattern reads at either end, and their gradients, equal `select` and
/// its scatter-add backward exactly (values are multiples of 1/64, so every order of the sums
/// gives the same value), on a pattern with a hub row, empty rows and duplicate pairs.
fn pair_rows_match_select<B: AutodiffBackend + SparseGnnBackend>(device: &B::Device) {
    let n = 517usize;
    let mut src: Vec<i64> = (0..n as i64).map(|i| (i * 7 + 3) % n as i64).collect();
    let mut dst: Vec<i64> = (0..n as i64).map(|i| (i * 11) % (n as i64 - 40)).collect();
    // a hub destination, and a duplicate pair
    src.extend(0..300);
    dst.extend(std::iter::repeat_n(5, 300));
    src.push(src[0]);
    dst.push(dst[0]);
    let opts = BuildOptions { symmetrize: false, add_self_loops: false, dedup: false };
    let p = Csr::from_edges(n, &src, &dst, None, opts).unwrap();
    let g = Graph::<B>::new(&p, device, GraphOptions::default());
    let rows: Vec<i64> =
        (0..n).flat_map(|r| std::iter::repeat_n(r as i64, p.row_ptr()[r + 1] - p.row_ptr()[r])).collect();
    let cols: Vec<i64> = p.col_idx().iter().map(|&c| c as i64).collect();
    let ints = |v: &[i64]| Tensor::<B, 1, Int>::from_data(TensorData::new(v.to_vec(), [v.len()]), device);
    let grid = |rows: usize, salt: usize| {
        let v: Vec<f32> = (0..rows * 6).map(|i| ((i * 37 + salt * 11) % 257) as f32 / 64.0 - 2.0).collect();
        Tensor::<B, 2>::from_data(TensorData::new(v, [rows, 6]), device)
    };
    let x = grid(n, 1);
    let w = grid(p.nnz(), 2);
    for (end, ids) in [(PairEnd::Destination, &rows), (PairEnd::Source, &cols)] {
        let (xa, xb) = (x.clone().require_grad(), x.clone().require_grad());
        let ya = pair_rows(&g, xa.clone(), end, ints(ids)).unwrap();
        let yb = xb.clone().select(0, ints(ids));
        ya.to_data().assert_eq(&yb.to_data(), true);
        let (ga, gb) = ((ya * w.clone()).sum().backward(), (yb * w.clone()).sum().backward());
        xa.grad(&ga).unwrap().to_data().assert_eq(&xb.grad(&gb).unwrap().to_data(), true);
    }
    // ids that do not name every pair are refused
    assert!(pair_rows(&g, x.clone(), PairEnd::Source, ints(&cols[1..])).is_err());
    assert!(pair_rows(&g, x.slice([0..n - 1]), PairEnd::Source, ints(&cols)).is_err());
}

#[test]
fn pair_rows_match_select_on_the_host() {
    pair_rows_match_select::<Autodiff<NdArray>>(&Default::default());
}

#[cfg(feature = "wgpu")]
#[test]
fn pair_rows_match_select_on_wgpu() {
    pair_rows_match_select::<Autodiff<burn_sparse_gnn::Wgpu>>(&burn::backend::wgpu::WgpuDevice::DefaultDevice);
}
