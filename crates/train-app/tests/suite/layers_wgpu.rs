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

/// Every parameter's gradient, flattened in module order.
fn flat_gradients<M: burn::module::AutodiffModule<burn::backend::Autodiff<Wgpu>>>(
    model: &M,
    grads: &burn::optim::GradientsParams,
) -> Vec<f32> {
    use burn::module::{ModuleVisitor, Param};
    use burn::tensor::Tensor;
    struct Flat<'a>(&'a burn::optim::GradientsParams, Vec<f32>);
    impl ModuleVisitor<burn::backend::Autodiff<Wgpu>> for Flat<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<burn::backend::Autodiff<Wgpu>, D>>) {
            if let Some(g) = self.0.get::<Wgpu, D>(param.id) {
                self.1.extend(g.into_data().convert::<f32>().to_vec::<f32>().unwrap());
            }
        }
    }
    let mut flat = Flat(grads, Vec::new());
    model.visit(&mut flat);
    flat.1
}

/// The cause of mixed f16's divergence on large graphs, at a size CI runs: the loss is a mean
/// over the training nodes, so the logits' gradient is about `1 / |train|` per entry, and on its
/// way back through the half-precision aggregations it falls into f16's subnormal range (below
/// 6.1e-5) where it keeps a few bits or none. Here every node weighs what one of the 153,000
/// training nodes of the reddit-scale graph weighs: without loss scaling the mixed-f16
/// gradients are far from f32's; with the loss times 65,536 (and the gradients divided back,
/// as `gnn_train::LossScaler` does) they match.
#[test]
fn mixed_f16_gradients_of_a_large_training_set_match_f32_only_with_the_loss_scaled() {
    use burn::backend::Autodiff;
    use burn::tensor::backend::Backend;
    use burn::tensor::{DType, Int, Tensor, TensorData};
    use burn_sparse_gnn::loss::{cross_entropy_rows, sum_terms};
    use burn_sparse_gnn::{BuildOptions, Csr, Graph, GraphOptions};
    use gnn_models::{ConvKind, GnnModelConfig, Precision};
    type A = Autodiff<Wgpu>;
    let dev = burn::backend::wgpu::WgpuDevice::DefaultDevice;
    if !<Wgpu as Backend>::supports_dtype(&dev, DType::F16) {
        return;
    }
    // a hub linked to every node, and a ring
    let (n, d, classes) = (300usize, 32usize, 5usize);
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    for i in 1..n as i64 {
        src.extend([0, i]);
        dst.extend([i, if i + 1 < n as i64 { i + 1 } else { 1 }]);
    }
    let adj = Csr::from_edges(n, &src, &dst, None, BuildOptions::undirected()).unwrap();
    let g = Graph::<A>::new(&adj, &dev, GraphOptions::default());
    let xs: Vec<f32> = (0..n * d).map(|i| ((i * 7919 % 101) as f32) / 101.0).collect();
    let x = Tensor::<A, 2>::from_data(TensorData::new(xs, [n, d]), &dev);
    let labels: Vec<i64> = (0..n as i64).map(|i| i % classes as i64).collect();
    let labels = Tensor::<A, 1, Int>::from_data(TensorData::new(labels, [n]), &dev);
    let weights = Tensor::<A, 1>::full([n], 1.0 / 153_000.0, &dev);
    let gradients = |precision: Precision, scale: f32| {
        <Wgpu as Backend>::seed(&dev, 7);
        let model = GnnModelConfig::new(ConvKind::Sage, d, 64, classes)
            .with_linear_io(false)
            .with_dropout(0.0)
            .with_precision(precision)
            .init::<A>(&dev)
            .unwrap();
        model.initialise_parameters();
        let terms =
            cross_entropy_rows(model.forward(&g, x.clone()), labels.clone(), weights.clone(), g.kernel_config())
                .unwrap();
        let grads = burn::optim::GradientsParams::from_grads(sum_terms(terms).mul_scalar(scale).backward(), &model);
        flat_gradients(&model, &grads).into_iter().map(|v| v / scale).collect::<Vec<f32>>()
    };
    let reference = gradients(Precision::F32, 1.0);
    let norm = |v: &[f32]| v.iter().map(|a| (*a as f64).powi(2)).sum::<f64>().sqrt();
    let error = |v: &[f32]| {
        let diff: Vec<f32> = v.iter().zip(&reference).map(|(a, b)| a - b).collect();
        norm(&diff) / norm(&reference)
    };
    let unscaled = error(&gradients(Precision::MixedF16, 1.0));
    let scaled = error(&gradients(Precision::MixedF16, 65536.0));
    println!("mixed f16 gradients against f32 (relative): {unscaled:.4} unscaled, {scaled:.5} with the loss scaled");
    assert!(scaled < 0.01, "loss-scaled mixed f16 gradients differ from f32's by {scaled} (relative)");
    assert!(unscaled > 10.0 * scaled, "unscaled {unscaled} against scaled {scaled}");
}

/// GAT in mixed f16 stores its whole edge chain (scores, softmax, attention dropout,
/// coefficients) in half precision, which halves its largest tensors; the SDDMM and the softmax
/// accumulate in f32, so the logits and every gradient stay within half-precision rounding of
/// f32's. On a graph with a hub of 299 neighbours (its coefficients, about 1/300 each, are f16
/// normals), with and without edge weights.
#[test]
fn gat_in_mixed_f16_matches_f32_with_its_edge_chain_in_half() {
    use burn::backend::Autodiff;
    use burn::tensor::backend::Backend;
    use burn::tensor::{DType, Int, Tensor, TensorData};
    use burn_sparse_gnn::loss::{cross_entropy_rows, sum_terms};
    use burn_sparse_gnn::{BuildOptions, Csr, Graph, GraphOptions};
    use gnn_models::{ConvKind, GnnModelConfig, Precision};
    type A = Autodiff<Wgpu>;
    let dev = burn::backend::wgpu::WgpuDevice::DefaultDevice;
    if !<Wgpu as Backend>::supports_dtype(&dev, DType::F16) {
        return;
    }
    let (n, d, classes) = (300usize, 24usize, 5usize);
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    for i in 1..n as i64 {
        src.extend([0, i]);
        dst.extend([i, if i + 1 < n as i64 { i + 1 } else { 1 }]);
    }
    let opts = BuildOptions { symmetrize: true, add_self_loops: true, dedup: true };
    let plain = Csr::from_edges(n, &src, &dst, None, opts).unwrap();
    let weights: Vec<f32> = (0..plain.nnz()).map(|e| 0.25 + (e * 37 % 11) as f32 / 8.0).collect();
    let weighted = plain.clone().with_weights(Some(weights)).unwrap();
    let xs: Vec<f32> = (0..n * d).map(|i| ((i * 7919 % 101) as f32) / 101.0 - 0.5).collect();
    let x = Tensor::<A, 2>::from_data(TensorData::new(xs, [n, d]), &dev);
    let labels: Vec<i64> = (0..n as i64).map(|i| i % classes as i64).collect();
    let labels = Tensor::<A, 1, Int>::from_data(TensorData::new(labels, [n]), &dev);
    let loss_weights = Tensor::<A, 1>::full([n], 1.0 / n as f32, &dev);
    for (what, adj) in [("no edge weights", &plain), ("edge weights", &weighted)] {
        let g = Graph::<A>::new(adj, &dev, GraphOptions::default());
        let run = |precision: Precision| {
            <Wgpu as Backend>::seed(&dev, 7);
            let model = GnnModelConfig::new(ConvKind::Gat, d, 32, classes)
                .with_gat_heads(4)
                .with_linear_io(false)
                .with_dropout(0.0)
                .with_precision(precision)
                .init::<A>(&dev)
                .unwrap();
            model.initialise_parameters();
            let logits = model.forward(&g, x.clone());
            let out = logits.clone().inner().into_data().convert::<f32>().to_vec::<f32>().unwrap();
            let terms = cross_entropy_rows(logits, labels.clone(), loss_weights.clone(), g.kernel_config()).unwrap();
            let scale = 1024.0;
            let grads = burn::optim::GradientsParams::from_grads(sum_terms(terms).mul_scalar(scale).backward(), &model);
            let grads: Vec<f32> = flat_gradients(&model, &grads).into_iter().map(|v| v / scale).collect();
            (out, grads)
        };
        let (out32, grad32) = run(Precision::F32);
        let (out16, grad16) = run(Precision::MixedF16);
        let relative = |a: &[f32], b: &[f32]| {
            assert_eq!(a.len(), b.len());
            let diff: f64 = a.iter().zip(b).map(|(x, y)| ((x - y) as f64).powi(2)).sum::<f64>().sqrt();
            diff / b.iter().map(|y| (*y as f64).powi(2)).sum::<f64>().sqrt()
        };
        let (e_out, e_grad) = (relative(&out16, &out32), relative(&grad16, &grad32));
        println!("GAT mixed f16 against f32, {what}: logits {e_out:.5}, gradients {e_grad:.5} (relative)");
        assert!(out16.iter().chain(&grad16).all(|v| v.is_finite()), "{what}: non-finite values in mixed f16");
        assert!(e_out < 0.01, "{what}: mixed f16 logits differ from f32's by {e_out} (relative)");
        assert!(e_grad < 0.02, "{what}: mixed f16 gradients differ from f32's by {e_grad} (relative)");
    }
}

/// `train` in mixed f16 scales its loss by default and says what the scaling did in
/// results.json; `--loss-scale off` and f32 runs do not scale.
#[test]
fn mixed_f16_runs_report_their_loss_scale() {
    use burn::tensor::backend::Backend;
    use burn::tensor::DType;
    let dev = burn::backend::wgpu::WgpuDevice::DefaultDevice;
    if !<Wgpu as Backend>::supports_dtype(&dev, DType::F16) {
        return;
    }
    let dir = std::env::temp_dir().join(format!("sgnn-test-{}-loss-scale", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    train_app::datasets::npy::save(&crate::common::tiny_data(false), &dir.join("data")).unwrap();
    let data = dir.join("data");
    let run = |name: &str, extra: &[&str]| {
        let out = dir.join(name);
        let mut args = vec!["train", "--backend", "wgpu", "--dataset", data.to_str().unwrap()];
        args.extend_from_slice(&["--epochs", "3", "--checkpoints", "false", "--log-every", "0"]);
        args.extend_from_slice(&["--out", out.to_str().unwrap()]);
        args.extend_from_slice(extra);
        crate::common::ok(crate::common::app(&args));
        let text = std::fs::read_to_string(out.join("results.json")).unwrap();
        serde_json::from_str::<serde_json::Value>(&text).unwrap()["loss_scale"].clone()
    };
    let scaled = run("mixed", &["--precision", "mixedf16"]);
    assert_eq!(scaled["scale"], 65536.0, "{scaled}");
    assert_eq!(scaled["skipped_steps"], 0, "{scaled}");
    assert!(run("off", &["--precision", "mixedf16", "--loss-scale", "off"]).is_null());
    assert!(run("f32", &[]).is_null());
    let _ = std::fs::remove_dir_all(&dir);
}
