//! A model on a partitioned graph (P logical parts on one CPU device, the halo exchange a
//! copy) equals the model on the whole graph: loss, logits and every parameter gradient, with
//! dropout drawn for the whole graph, for each convolution and activation and P = 1..8.

use crate::common::{graph, max_diff, whole, Grads, Run, B, CLASSES, D_IN, N, RNG};
use burn::backend::NdArray;
use burn::module::Module;
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};
use burn_sparse_gnn::partition::{partition, PartitionMethod, PartitionOptions, PartitionedGraph};
use burn_sparse_gnn::random::random_values;
use burn_sparse_gnn::{Csr, Graph, GraphOptions};
use gnn_models::activation::Nonlinearity;
use gnn_models::partitioned::devices::{partitioned_loss, DistGraph, HaloLayout};
use gnn_models::{ConvKind, GnnModel, GnnModelConfig, NormKind, SageAggr};

fn inputs(dev: &burn::tensor::Device<B>) -> (Tensor<B, 2>, Tensor<B, 1, Int>, Tensor<B, 1>) {
    let x = Tensor::<B, 2>::from_data(TensorData::new(random_values(N * D_IN, 3), [N, D_IN]), dev);
    let labels: Vec<i64> = (0..N).map(|i| ((i * 7 + i / 3) % CLASSES) as i64).collect();
    let train: Vec<f64> = (0..N).map(|i| if i % 3 == 0 { 1.0 } else { 0.0 }).collect();
    let count: f64 = train.iter().sum();
    let w: Vec<f64> = train.iter().map(|t| t / count).collect();
    (
        x,
        Tensor::<B, 1, Int>::from_data(TensorData::new(labels, [N]), dev),
        Tensor::<B, 1>::from_data(TensorData::new(w, [N]), dev),
    )
}

fn parts(model: &GnnModel<B>, adj: &Csr, pg: &PartitionedGraph, seed: u64, layout: HaloLayout) -> Run {
    let dev: burn::tensor::Device<B> = Default::default();
    let (x, y, w) = inputs(&dev);
    let dg = DistGraph::<B>::with_layout(adj, pg, &[dev], GraphOptions::default(), layout).expect("partitioned graph");
    B::seed(&dev, seed);
    let logits = model.forward_partitioned(&dg, dg.scatter(x)).expect("the model runs on this layout");
    let loss = partitioned_loss(&dg, &logits, &dg.scatter(y), &dg.scatter(w));
    let grads = loss.backward();
    let mut v = Grads { grads: &grads, out: Vec::new() };
    model.visit(&mut v);
    Run { loss: loss.into_scalar(), logits: dg.gather(logits).into_data().to_vec::<f64>().expect("f64"), grads: v.out }
}

fn configs() -> Vec<(&'static str, GnnModelConfig)> {
    let base = |conv| GnnModelConfig::new(conv, D_IN, 8, CLASSES).with_layers(3).with_dropout(0.4);
    vec![
        ("gcn classic", base(ConvKind::Gcn).with_linear_io(false).with_input_dropout(0.3)),
        ("gcn maxk", base(ConvKind::Gcn).with_nonlin(Nonlinearity::Maxk { k: 3 })),
        ("sage mean relu", base(ConvKind::Sage).with_norm(NormKind::LayerNorm)),
        ("sage mean maxk", base(ConvKind::Sage).with_nonlin(Nonlinearity::Maxk { k: 3 })),
        ("sage max-pool", base(ConvKind::Sage).with_sage_aggr(SageAggr::MaxPool)),
        ("sage classic", base(ConvKind::Sage).with_linear_io(false)),
        ("sage sum", base(ConvKind::Sage).with_sage_aggr(SageAggr::Sum)),
        ("gin", base(ConvKind::Gin)),
        ("gin classic", base(ConvKind::Gin).with_linear_io(false).with_gin_half_safe_lambda(Some(0.5))),
        ("gat", base(ConvKind::Gat).with_gat_heads(2)),
        ("gat classic", base(ConvKind::Gat).with_gat_heads(2).with_linear_io(false)),
    ]
}

fn check(name: &str, cfg: &GnnModelConfig, adj: &Csr, pg: &PartitionedGraph, label: &str) {
    let dev = Default::default();
    B::seed(&dev, 11);
    let model: GnnModel<B> = cfg.init(&dev).expect("valid model");
    // parameters initialise lazily, on first use: draw them now, not inside the first forward
    model.initialise_parameters();
    let want = whole(&model, adj, inputs(&Default::default()), 5);
    let layouts: &[HaloLayout] =
        if model.splits_halo() { &[HaloLayout::Joined, HaloLayout::Split] } else { &[HaloLayout::Joined] };
    for &layout in layouts {
        // the whole graph's SAGE layer takes the mean's 1 / deg in f32 in its backward pass
        // (`inv_degree_rows`); the split layout scales by the f64 norms: gradients differ at
        // f32 rounding
        let tol = if layout == HaloLayout::Split { 1e-7 } else { 1e-9 };
        compare(name, &want, &parts(&model, adj, pg, 5, layout), &format!("{label}, {layout:?}"), tol);
    }
}

fn compare(name: &str, want: &Run, got: &Run, label: &str, tol: f64) {
    assert!(
        (want.loss - got.loss).abs() < tol * want.loss.abs().max(1.0),
        "{name} {label}: loss {} vs {}",
        got.loss,
        want.loss
    );
    let d = max_diff(&want.logits, &got.logits);
    assert!(d < tol, "{name} {label}: logits differ by {d}");
    assert_eq!(want.grads.len(), got.grads.len());
    for (k, (a, b)) in want.grads.iter().zip(&got.grads).enumerate() {
        assert!(!a.is_empty(), "{name}: parameter {k} has no gradient");
        let d = max_diff(a, b);
        assert!(d < tol, "{name} {label}: gradient of parameter {k} differs by {d}");
    }
}

#[test]
fn every_model_on_parts_equals_the_whole_graph() {
    let _turn = RNG.lock().unwrap_or_else(|e| e.into_inner());
    let adj = graph(1);
    for (p, method) in [
        (1, PartitionMethod::Contiguous),
        (2, PartitionMethod::Metis),
        (3, PartitionMethod::Greedy),
        (4, PartitionMethod::Metis),
        (8, PartitionMethod::Metis),
    ] {
        let part = partition(&adj, &PartitionOptions { parts: p, method, seed: 7 }).expect("partition");
        let pg = PartitionedGraph::build(&adj, &part).expect("parts");
        assert!(p == 1 || pg.parts.iter().any(|l| !l.halo.is_empty()), "P = {p} has no halo: nothing is exchanged");
        for (name, cfg) in configs() {
            check(name, &cfg, &adj, &pg, &format!("P = {p} ({method:?})"));
        }
    }
}

/// On a graph with edge weights (some negative) every model on parts equals the model on the
/// whole graph: the parts keep their edges' weights and the whole graph's weighted degrees.
#[test]
fn every_weighted_model_on_parts_equals_the_whole_graph() {
    let _turn = RNG.lock().unwrap_or_else(|e| e.into_inner());
    let adj = graph(1);
    let w: Vec<f32> = random_values(adj.nnz(), 17).iter().map(|v| (v + 0.6) as f32).collect();
    let adj = adj.with_weights(Some(w)).expect("one weight per edge");
    for (p, method) in [(3, PartitionMethod::Greedy), (4, PartitionMethod::Metis)] {
        let part = partition(&adj, &PartitionOptions { parts: p, method, seed: 7 }).expect("partition");
        let pg = PartitionedGraph::build(&adj, &part).expect("parts");
        assert!(pg.parts.iter().all(|l| l.adj.weights().is_some()), "the parts keep the weights");
        for (name, cfg) in configs() {
            check(name, &cfg, &adj, &pg, &format!("weighted, P = {p} ({method:?})"));
        }
    }
}

#[test]
fn inference_is_exact() {
    // without autodiff (inference), dropout is off
    type I = NdArray<f64, i64>;
    let _turn = RNG.lock().unwrap_or_else(|e| e.into_inner());
    let adj = graph(2);
    let dev = Default::default();
    let cfg = GnnModelConfig::new(ConvKind::Sage, D_IN, 8, CLASSES).with_dropout(0.5);
    let model: GnnModel<I> = cfg.init(&dev).expect("model");
    let x = Tensor::<I, 2>::from_data(TensorData::new(random_values(N * D_IN, 3), [N, D_IN]), &dev);
    let want = model.forward(&Graph::<I>::new(&adj, &dev, GraphOptions::default()), x.clone());
    let part = partition(&adj, &PartitionOptions { parts: 3, method: PartitionMethod::Greedy, seed: 1 }).expect("p");
    let pg = PartitionedGraph::build(&adj, &part).expect("parts");
    let dg = DistGraph::<I>::new(&adj, &pg, &[dev], GraphOptions::default()).expect("dg");
    let got = dg.gather(model.forward_partitioned(&dg, dg.scatter(x.clone())).expect("joined layout"));
    let want: Vec<f64> = want.into_data().to_vec().unwrap();
    let d = max_diff(&want, &got.into_data().to_vec::<f64>().unwrap());
    assert!(d < 1e-9, "inference logits differ by {d}");
    let split = DistGraph::<I>::with_layout(&adj, &pg, &[dev], GraphOptions::default(), HaloLayout::Split).expect("dg");
    let got = split.gather(model.forward_partitioned(&split, split.scatter(x)).expect("split layout"));
    let d = max_diff(&want, &got.into_data().to_vec::<f64>().unwrap());
    assert!(d < 1e-9, "split layout: inference logits differ by {d}");
}

/// The split layout refuses what it cannot run: models other than GraphSAGE mean / sum on ReLU
/// states.
#[test]
fn split_layout_refuses_other_models() {
    use gnn_models::partitioned::devices::DistError;
    type I = NdArray<f64, i64>;
    let adj = graph(2);
    let dev = Default::default();
    let part = partition(&adj, &PartitionOptions { parts: 2, method: PartitionMethod::Greedy, seed: 1 }).expect("p");
    let pg = PartitionedGraph::build(&adj, &part).expect("parts");
    let split = DistGraph::<I>::with_layout(&adj, &pg, &[dev], GraphOptions::default(), HaloLayout::Split).expect("dg");
    assert_eq!(split.layout(), HaloLayout::Split);
    assert!(split.parts().iter().any(|p| p.halo_graph.is_some()), "two parts of this graph read each other");
    let x = Tensor::<I, 2>::from_data(TensorData::new(random_values(N * D_IN, 3), [N, D_IN]), &dev);
    for cfg in [
        GnnModelConfig::new(ConvKind::Gat, D_IN, 8, CLASSES).with_gat_heads(2),
        GnnModelConfig::new(ConvKind::Sage, D_IN, 8, CLASSES).with_nonlin(Nonlinearity::Maxk { k: 3 }),
        GnnModelConfig::new(ConvKind::Sage, D_IN, 8, CLASSES).with_sage_aggr(SageAggr::MaxPool),
    ] {
        let model: GnnModel<I> = cfg.init(&dev).expect("model");
        assert!(!model.splits_halo());
        let err = model.forward_partitioned(&split, split.scatter(x.clone())).expect_err("needs the joined layout");
        assert!(matches!(err, DistError::Layout(_)), "{err}");
    }
}

/// Boundary sampling on the split layout moves the rows the joined layout moves: the same
/// loss, logits and gradients for the same draws (at rate 1 the exact model's), on 3 parts.
#[test]
fn boundary_sampling_on_the_split_layout_equals_the_joined_layout() {
    use gnn_models::partitioned::devices::BoundarySampling;
    let _turn = RNG.lock().unwrap_or_else(|e| e.into_inner());
    let adj = graph(2);
    let dev: burn::tensor::Device<B> = Default::default();
    let part = partition(&adj, &PartitionOptions { parts: 3, method: PartitionMethod::Greedy, seed: 3 }).expect("p");
    let pg = PartitionedGraph::build(&adj, &part).expect("parts");
    for aggr in [SageAggr::Mean, SageAggr::Sum] {
        let cfg =
            GnnModelConfig::new(ConvKind::Sage, D_IN, 8, CLASSES).with_layers(3).with_dropout(0.4).with_sage_aggr(aggr);
        B::seed(&dev, 11);
        let model: GnnModel<B> = cfg.init(&dev).expect("valid model");
        model.initialise_parameters();
        let run = |layout: HaloLayout, rate: f64| -> Run {
            let dg =
                DistGraph::<B>::with_layout(&adj, &pg, &[dev], GraphOptions::default(), layout).expect("partitioned");
            let halo = dg.sample_halo(&BoundarySampling { rate, seed: 9 }, 4).expect("rate");
            let (x, y, w) = inputs(&dev);
            B::seed(&dev, 5);
            let logits = model.forward_partitioned_sampled(&dg, dg.scatter(x), Some(&halo)).expect("layout");
            let loss = partitioned_loss(&dg, &logits, &dg.scatter(y), &dg.scatter(w));
            let grads = loss.backward();
            let mut v = Grads { grads: &grads, out: Vec::new() };
            model.visit(&mut v);
            Run { loss: loss.into_scalar(), logits: dg.gather(logits).into_data().to_vec().expect("f64"), grads: v.out }
        };
        let exact = parts(&model, &adj, &pg, 5, HaloLayout::Split);
        for rate in [0.5, 1.0] {
            let (joined, split) = (run(HaloLayout::Joined, rate), run(HaloLayout::Split, rate));
            let what = format!("{aggr:?} at rate {rate}");
            // the joined layout's SAGE mean takes 1 / deg in f32 in its backward pass, the split
            // layout the f64 norms (as in the exact comparison above)
            compare("sage", &joined, &split, &format!("{what}, split against joined"), 1e-7);
            let d = max_diff(&split.logits, &exact.logits);
            match rate == 1.0 {
                true => assert!(d < 1e-9, "{what}: every row crosses, the exact model ({d})"),
                false => assert!(d > 1e-6, "{what}: a sample of the halo is not the exact model"),
            }
        }
    }
}

/// Boundary sampling: at rate 1 every halo row crosses and the step equals the exact one; at
/// rate 1/2 about half the halo rows cross, each scaled by 2, the others are zeros; a rate
/// outside (0, 1] is an error.
#[test]
fn boundary_sampling_keeps_a_scaled_sample_of_the_halo() {
    use gnn_models::partitioned::devices::BoundarySampling;
    use gnn_models::Hidden;
    let _turn = RNG.lock().unwrap_or_else(|e| e.into_inner());
    let adj = graph(2);
    let dev: burn::tensor::Device<B> = Default::default();
    let part = partition(&adj, &PartitionOptions { parts: 3, method: PartitionMethod::Greedy, seed: 3 }).expect("p");
    let pg = PartitionedGraph::build(&adj, &part).expect("parts");
    let dg = DistGraph::<B>::new(&adj, &pg, &[dev], GraphOptions::default()).expect("partitioned graph");
    let halo_total: usize = pg.parts.iter().map(|l| l.halo.len()).sum();
    assert!(halo_total > 20, "the test graph needs a halo ({halo_total} rows)");

    // rate 1: the sampled step is the exact step
    let cfg = GnnModelConfig::new(ConvKind::Sage, D_IN, 8, CLASSES).with_layers(3).with_dropout(0.4);
    B::seed(&dev, 11);
    let model: GnnModel<B> = cfg.init(&dev).expect("valid model");
    model.initialise_parameters();
    let exact = parts(&model, &adj, &pg, 5, HaloLayout::Joined);
    let (x, y, w) = inputs(&dev);
    let all = dg.sample_halo(&BoundarySampling { rate: 1.0, seed: 9 }, 0).expect("rate 1");
    assert_eq!(all.rows(), halo_total);
    B::seed(&dev, 5);
    let logits = model.forward_partitioned_sampled(&dg, dg.scatter(x.clone()), Some(&all)).expect("joined layout");
    let loss = partitioned_loss(&dg, &logits, &dg.scatter(y), &dg.scatter(w));
    let grads = loss.backward();
    let mut v = Grads { grads: &grads, out: Vec::new() };
    model.visit(&mut v);
    assert!((loss.into_scalar() - exact.loss).abs() < 1e-9 * exact.loss.abs().max(1.0));
    for (a, b) in v.out.iter().zip(&exact.grads) {
        assert!(max_diff(a, b) < 1e-9, "rate 1: a gradient differs by {}", max_diff(a, b));
    }

    // rate 1/2: the rows that cross are doubled, the others zero, in every part's halo block
    let half = dg.sample_halo(&BoundarySampling { rate: 0.5, seed: 9 }, 4).expect("rate 1/2");
    assert!(half.rows() > halo_total / 5 && half.rows() < halo_total * 4 / 5, "{} of {halo_total}", half.rows());
    let other = dg.sample_halo(&BoundarySampling { rate: 0.5, seed: 9 }, 5).expect("next step");
    let states: Vec<Hidden<B>> = dg.parts().iter().zip(dg.scatter(x)).map(|(_, xp)| Hidden::Dense(xp)).collect();
    let exact_full = dg.exchange(&states);
    let sampled = dg.exchange_sampled(&states, &half).expect("dense states");
    let again = dg.exchange_sampled(&states, &other).expect("dense states");
    let mut crossed = 0;
    let mut differs = false;
    for (p, part) in dg.parts().iter().enumerate() {
        let e: Vec<f64> = exact_full[p].dense().into_data().to_vec().expect("f64");
        let s: Vec<f64> = sampled[p].dense().into_data().to_vec().expect("f64");
        let t: Vec<f64> = again[p].dense().into_data().to_vec().expect("f64");
        assert_eq!(e.len(), s.len());
        // own rows untouched
        assert_eq!(e[..part.owned * D_IN], s[..part.owned * D_IN]);
        for r in part.owned..part.owned + part.halo {
            let (er, sr) = (&e[r * D_IN..(r + 1) * D_IN], &s[r * D_IN..(r + 1) * D_IN]);
            if sr.iter().all(|&v| v == 0.0) && er.iter().any(|&v| v != 0.0) {
                continue;
            }
            crossed += 1;
            for (a, b) in er.iter().zip(sr) {
                assert_eq!(2.0 * a, *b, "part {p} halo row {r}: a row that crosses is scaled by 1 / rate");
            }
        }
        differs |= s != t;
    }
    assert_eq!(crossed, half.rows(), "the rows that cross are the sampled ones");
    assert!(differs, "another step draws other rows");
    for rate in [0.0, -0.5, 1.5, f64::NAN] {
        assert!(dg.sample_halo(&BoundarySampling { rate, seed: 1 }, 0).is_err(), "rate {rate}");
    }
}
