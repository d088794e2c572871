//! The layers on wgpu (lavapipe in CI): the self test's layer checks (GraphSAGE layers with
//! MaxK and ReLU input, f32 and mixed f16, through `Autodiff<Wgpu>` against the CPU backend,
//! output and every gradient) and the whole self test, in a process of their own: their CPU
//! side runs on the f64 NdArray backend, and Burn keys a device's default dtypes by the device
//! type that NdArray<f32> and NdArray<f64> share, so in this process they would change the
//! dtype of the f32 runs of the other tests. And a hub whose f16 sum overflows.
#![cfg(feature = "wgpu")]

use burn_sparse_gnn::Wgpu;

#[test]
fn the_self_test_passes_on_wgpu_layers_included() {
    let (code, out, err) = crate::common::app(&["selftest", "--backend", "wgpu", "--quick"]);
    let text = format!("{out}{err}");
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("== wgpu: layers against the CPU backend"), "{text}");
    assert!(text.contains("selftest wgpu: all") && text.contains("checks passed"), "{text}");
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
