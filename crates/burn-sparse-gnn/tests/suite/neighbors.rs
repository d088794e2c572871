//! Neighbour sampling: the host implementation (NdArray) and the kernel (wgpu) against the CPU
//! reference entry for entry, the uniformity of their draws, and the errors of bad arguments.

use burn::backend::NdArray;
use burn::tensor::{Int, Tensor};
use burn_sparse_gnn::conformance::{
    block_checks, block_norm_checks, block_structure_checks, neighbor_checks, neighbor_uniformity,
    NEIGHBOR_CHI_SQUARE_BOUND,
};
use burn_sparse_gnn::ops::neighbors::{sample_block, sample_neighbors, step_key};
use burn_sparse_gnn::{BuildOptions, Csr, Graph, GraphOptions};

fn assert_exact(checks: &[(String, Option<f64>)], cases: usize) {
    assert_eq!(checks.len(), cases);
    for (what, differ) in checks {
        println!("{what}: {differ:?} entries differ");
        assert_eq!(*differ, Some(0.0), "{what}");
    }
}

#[test]
fn host_sampler_matches_the_reference_and_is_uniform() {
    let device = Default::default();
    assert_exact(&neighbor_checks::<NdArray>(&device), 10);
    assert_exact(&block_checks::<NdArray>(&device), 9);
    assert_exact(&block_norm_checks::<NdArray>(&device), 4);
    let chi2 = neighbor_uniformity::<NdArray>(&device);
    assert!(chi2 < NEIGHBOR_CHI_SQUARE_BOUND, "chi-square {chi2}");
}

#[cfg(feature = "wgpu")]
#[test]
fn sampler_kernel_matches_the_reference_and_is_uniform_on_wgpu() {
    let device = burn::backend::wgpu::WgpuDevice::DefaultDevice;
    assert_exact(&neighbor_checks::<burn_sparse_gnn::Wgpu>(&device), 10);
    assert_exact(&block_checks::<burn_sparse_gnn::Wgpu>(&device), 9);
    // the structure kernels (edge groups, radix-sorted transpose, self-loops) against the host
    assert_exact(&block_structure_checks::<burn_sparse_gnn::Wgpu>(&device), 18);
    // the degree normalisations in one launch against the host
    assert_exact(&block_norm_checks::<burn_sparse_gnn::Wgpu>(&device), 4);
    let chi2 = neighbor_uniformity::<burn_sparse_gnn::Wgpu>(&device);
    println!("chi-square {chi2}");
    assert!(chi2 < NEIGHBOR_CHI_SQUARE_BOUND, "chi-square {chi2}");
}

#[test]
fn bad_seeds_and_fanouts_are_errors() {
    type B = NdArray;
    let dev = Default::default();
    let csr = Csr::from_edges(3, &[1, 2], &[0, 0], None, BuildOptions::default()).expect("a graph");
    let g = Graph::<B>::new(&csr, &dev, GraphOptions::default());
    let key = step_key(1, 0, 0);
    let e = sample_neighbors(&g, Tensor::<B, 1, Int>::from_ints([0, 3], &dev), 2, key).expect_err("seed 3");
    assert!(e.to_string().contains("seed 3 is not a node"), "{e}");
    let e = sample_neighbors(&g, Tensor::<B, 1, Int>::from_ints([-1], &dev), 2, key).expect_err("seed -1");
    assert!(e.to_string().contains("seed -1"), "{e}");
    let e = sample_neighbors(&g, Tensor::<B, 1, Int>::from_ints([0], &dev), 0, key).expect_err("fan-out 0");
    assert!(e.to_string().contains("fan-out"), "{e}");
    let e = sample_block(&g, Tensor::<B, 1, Int>::from_ints([1, 0, 1], &dev), 2, key).expect_err("twice");
    assert!(e.to_string().contains("node 1 is a destination twice"), "{e}");
    let e = sample_block(&g, Tensor::<B, 1, Int>::from_ints([5], &dev), 2, key).expect_err("node 5");
    assert!(e.to_string().contains("node 5 is not a node"), "{e}");
    let e = sample_block(&g, Tensor::<B, 1, Int>::from_ints([0], &dev), 0, key).expect_err("fan-out 0");
    assert!(e.to_string().contains("fan-out"), "{e}");
    let rect = Csr::new(2, 3, &[0, 1, 2], &[2, 1], None).expect("a 2 x 3 graph");
    let gr = Graph::<B>::new(&rect, &dev, GraphOptions::default());
    let e = sample_block(&gr, Tensor::<B, 1, Int>::from_ints([0], &dev), 2, key).expect_err("2 x 3");
    assert!(e.to_string().contains("square"), "{e}");
    let empty = sample_block(&g, Tensor::<B, 1, Int>::from_ints([0; 0], &dev), 2, key).expect("no destinations");
    assert_eq!((empty.n_dst, empty.n_src, empty.row_ptr.dims()), (0, 0, [1]));
    let none = sample_neighbors(&g, Tensor::<B, 1, Int>::from_ints([0; 0], &dev), 2, key).expect("no seeds");
    assert_eq!(none.picks.dims(), [0, 2]);
}
