//! The self test's layer check on wgpu (lavapipe in CI): GraphSAGE layers (MaxK and ReLU input,
//! f32 and mixed f16) through `Autodiff<Wgpu>` against the CPU backend, output and every
//! gradient.
#![cfg(feature = "wgpu")]

use burn::backend::Autodiff;
use burn_sparse_gnn::Wgpu;
use train_app::selftest::layer_checks;

#[test]
fn sage_layers_on_wgpu_match_the_cpu_backend() {
    use burn::tensor::backend::Backend;
    let dev = burn::backend::wgpu::WgpuDevice::DefaultDevice;
    let checks = layer_checks::<Autodiff<Wgpu>>(&dev);
    // MaxK and narrowing ReLU input at two group widths, square and widening ReLU input, and
    // the square one in mixed f16 where the device has f16
    let mixed = <Wgpu as Backend>::supports_dtype(&dev, burn::tensor::DType::F16);
    assert_eq!(checks.len(), 30 + if mixed { 5 } else { 0 });
    for (what, err, bound) in &checks {
        println!("{what}: {err:.2e}");
        assert!(*err <= *bound, "{what}: error {err:.2e} over {bound:.0e}");
    }
}

#[test]
fn maxk_mean_in_f16_holds_a_hub_whose_sum_overflows_f16() {
    use burn::tensor::backend::Backend;
    use burn::tensor::{DType, Tensor};
    use burn_sparse_gnn::{ops, BuildOptions, Csr, Graph, GraphOptions, Reduce};
    use gnn_models::{aggregate, Hidden, Precision};
    let dev = burn::backend::wgpu::WgpuDevice::DefaultDevice;
    if !<Wgpu as Backend>::supports_dtype(&dev, DType::F16) {
        return;
    }
    // a hub of 6,000 neighbours whose kept values are 20: their sum (120,000) is past f16's
    // largest value (65,504), their mean is 20
    let leaves = 6_000i64;
    let src: Vec<i64> = (1..=leaves).collect();
    let dst = vec![0i64; leaves as usize];
    let adj = Csr::from_edges(leaves as usize + 1, &src, &dst, None, BuildOptions::undirected()).unwrap();
    let g = Graph::<Wgpu>::new(&adj, &dev, GraphOptions::default());
    let x = Tensor::<Wgpu, 2>::full([leaves as usize + 1, 8], 20.0, &dev);
    for precision in [Precision::F32, Precision::MixedF16] {
        let y = aggregate(&g, &Hidden::Sparse(ops::maxk(x.clone(), 2)), Reduce::Mean, precision);
        let hub = y.slice([0..1]).into_data().to_vec::<f32>().unwrap();
        assert!(hub.iter().all(|v| v.is_finite()), "{precision:?}: {hub:?}");
        let sum: f32 = hub.iter().sum();
        assert!((sum - 40.0).abs() < 0.1, "{precision:?}: the hub's row sums to {sum}, expected 2 x 20");
    }
}
