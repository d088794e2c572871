//! Mini-batch training: blocks with every neighbour and layer-wise inference against the
//! whole-graph forward pass, the loader's batches, and a Cora run through the command line
//! (train, eval, predict) on the CPU backend.

use crate::common::{app, datasets, ok, s, tmp};
use burn::backend::{Autodiff, NdArray};
use burn::data::dataloader::DataLoader;
use burn::tensor::{Tensor, TensorData};
use burn_sparse_gnn::{Graph, GraphOptions};
use gnn_train::minibatch::{
    layerwise_logits, BlockRules, LayerwisePlan, MiniBatchLoader, MiniBatchSource, NeighborSampler, NodeFeatures,
};
use std::sync::Arc;
use train_app::selftest::minibatch::{
    features, hub_ring_graph, minibatch_checks, minibatch_gradient_checks, models, MINIBATCH_TOLERANCE,
};

type B = NdArray;

fn max_diff(a: Tensor<B, 2>, b: Tensor<B, 2>) -> f32 {
    let a = a.into_data().to_vec::<f32>().unwrap();
    let b = b.into_data().to_vec::<f32>().unwrap();
    assert_eq!(a.len(), b.len());
    a.iter().zip(&b).map(|(x, y)| (x - y).abs()).fold(0.0, f32::max)
}

#[test]
fn blocks_and_layerwise_inference_equal_the_whole_graph_forward() {
    let mut checks = minibatch_checks::<B>(&Default::default());
    checks.extend(minibatch_gradient_checks::<Autodiff<B>>(&Default::default()));
    assert_eq!(checks.len(), 3 * models().len());
    for (what, d) in checks {
        assert!(d <= MINIBATCH_TOLERANCE, "{what}: largest difference {d:.2e}");
    }
}

#[test]
fn layerwise_chunks_and_feature_homes_agree() {
    let dev = Default::default();
    let n = 301;
    let cfg = models().remove(1);
    let adj = hub_ring_graph(n, false);
    let x = features(n, 12);
    let model = cfg.init::<B>(&dev).unwrap();
    let whole = model.forward(
        &Graph::<B>::new(&adj, &dev, GraphOptions::default()),
        Tensor::from_data(TensorData::new(x.clone(), [n, 12]), &dev),
    );
    let rules = BlockRules::new(&adj, false, cfg.sums_neighbours(), GraphOptions::default()).unwrap();
    for chunk in [1000, 7] {
        let plan = LayerwisePlan::<B>::new(&adj, &rules, chunk, &dev).unwrap();
        assert_eq!(plan.chunks(), n.div_ceil(chunk));
        let got = layerwise_logits(&model, &plan, &NodeFeatures::upload(&x, 12, &dev)).unwrap();
        let d = max_diff(got, whole.clone());
        assert!(d < 1e-4, "chunk {chunk}: layer-wise differs by {d}");
    }
    assert!(LayerwisePlan::<B>::new(&adj, &rules, 0, &dev).is_err());
    // the blocks chain: a model of three convolutions refuses two blocks
    let sampler = NeighborSampler::<B>::new(&adj, vec![5; 3], 3, rules, &dev).unwrap();
    let source =
        MiniBatchSource { sampler, features: NodeFeatures::upload(&x, 12, &dev), labels: Arc::new(vec![0; n]) };
    let batch = source.batch(&[4, 8], (1, 0)).unwrap();
    assert!(model.forward_blocks(&batch.blocks[1..], batch.x.clone()).is_err());
    assert_eq!(model.forward_blocks(&batch.blocks, batch.x).unwrap().dims(), [2, 5]);
}

#[test]
fn sampled_sums_estimate_the_whole_neighbourhood_and_means_average_the_sample() {
    // one layer, every input row 1: a summing layer's row is the whole degree whatever the
    // sample (each sampled edge weighs degree / sampled); a mean stays 1
    let dev = Default::default();
    let n = 301;
    let adj = hub_ring_graph(n, false);
    let ones = vec![1.0f32; n];
    for (sums, want_hub) in [(true, adj.row_degrees()[0] as f32), (false, 1.0)] {
        let rules = BlockRules::new(&adj, false, sums, GraphOptions::default()).unwrap();
        let sampler = NeighborSampler::<B>::new(&adj, vec![4], 11, rules, &dev).unwrap();
        let source =
            MiniBatchSource { sampler, features: NodeFeatures::upload(&ones, 1, &dev), labels: Arc::new(vec![0; n]) };
        let batch = source.batch(&[0, 1, 300], (1, 0)).unwrap();
        let g = &batch.blocks[0];
        // the hub keeps 4 of its neighbours, node 1 at most 4, the isolated node none
        let deg = adj.row_degrees();
        assert_eq!(g.num_edges(), 4 + deg[1].min(4));
        let reduce = if sums { burn_sparse_gnn::Reduce::Sum } else { burn_sparse_gnn::Reduce::Mean };
        let w = g.weights().cloned();
        let out = match w {
            Some(w) => burn_sparse_gnn::ops::spmm_weighted(g, w, batch.x.clone(), reduce),
            None => burn_sparse_gnn::ops::spmm(g, batch.x.clone(), reduce),
        };
        let v = out.into_data().to_vec::<f32>().unwrap();
        let deg1 = adj.row_degrees()[1] as f32;
        let want = if sums { [want_hub, deg1, 0.0] } else { [1.0, 1.0, 0.0] };
        for (g, w) in v.iter().zip(want) {
            assert!((g - w).abs() < 1e-4, "sums {sums}: got {v:?}, want {want:?}");
        }
    }
}

#[test]
fn the_loader_shuffles_every_seed_once_per_epoch_ahead_of_the_step() {
    let dev = Default::default();
    let n = 301;
    let adj = hub_ring_graph(n, false);
    let labels: Vec<i64> = (0..n as i64).collect();
    let make = |prefetch: usize| {
        let rules = BlockRules::new(&adj, false, false, GraphOptions::default()).unwrap();
        let sampler = NeighborSampler::<Autodiff<B>>::new(&adj, vec![3, 2], 5, rules, &dev).unwrap();
        let source = MiniBatchSource {
            sampler,
            features: NodeFeatures::Host { x: Arc::new(features(n, 4)), width: 4 },
            labels: Arc::new(labels.clone()),
        };
        MiniBatchLoader::new(Arc::new(source), (0..250).collect(), 64, 9, 0, prefetch).unwrap()
    };
    let (inline, ahead) = (make(0), make(2));
    assert_eq!(inline.batches(), 4);
    let mut epochs = Vec::new();
    for _ in 0..2 {
        let a: Vec<_> = inline.iter().collect();
        let b: Vec<_> = ahead.iter().collect();
        assert_eq!(a.len(), 4);
        let mut seen = Vec::new();
        for (x, y) in a.iter().zip(&b) {
            let la = x.labels.clone().into_data().convert::<i64>().to_vec::<i64>().unwrap();
            assert_eq!(
                la,
                y.labels.clone().into_data().convert::<i64>().to_vec::<i64>().unwrap(),
                "same seeds with and without prefetch"
            );
            assert_eq!(x.x.clone().into_data(), y.x.clone().into_data(), "same sampled features");
            seen.extend(la);
        }
        let mut sorted = seen.clone();
        sorted.sort();
        assert_eq!(sorted, (0..250).collect::<Vec<i64>>(), "every seed once");
        epochs.push(seen);
    }
    assert_ne!(epochs[0], epochs[1], "a new order every epoch");
    // bad seeds are refused when the loader is made
    let rules = BlockRules::new(&adj, false, false, GraphOptions::default()).unwrap();
    let sampler = NeighborSampler::<B>::new(&adj, vec![3], 5, rules, &dev).unwrap();
    let source = Arc::new(MiniBatchSource {
        sampler,
        features: NodeFeatures::upload(&[0.0; 301], 1, &dev),
        labels: Arc::new(labels),
    });
    assert!(MiniBatchLoader::new(source.clone(), vec![1, 400], 8, 1, 0, 0).is_err());
    assert!(MiniBatchLoader::new(source.clone(), vec![1, 1], 8, 1, 0, 0).is_err());
    assert!(MiniBatchLoader::new(source, vec![1], 0, 1, 0, 0).is_err());
}

/// Test accuracy of GraphSAGE 2x64 trained on Cora's 140 training nodes in batches of 32 seeds
/// (fan-outs 10,5), 30 epochs on the CPU backend, at the best validation epoch: 0.807, 0.822 and
/// 0.814 measured with seeds 1, 2 and 3; the bound leaves room for other machines' round-off.
const CORA_MINIBATCH_TEST_BOUND: f64 = 0.78;

#[test]
fn cora_trains_in_minibatches_and_eval_and_predict_infer_layer_wise() {
    let out = tmp("minibatch-cora");
    let run = out.join("run");
    let cora = datasets().join("npy/cora");
    let text = ok(app(&[
        "train",
        "--backend",
        "cpu",
        "--dataset",
        s(&cora),
        "--model",
        "sage",
        "--hidden",
        "64",
        "--normalize-features",
        "true",
        "--dropout",
        "0.5",
        "--epochs",
        "30",
        "--lr",
        "0.01",
        "--weight-decay",
        "5e-4",
        "--training",
        "minibatch",
        "--batch-size",
        "32",
        "--fanouts",
        "10,5",
        "--select",
        "best-valid",
        "--checkpoints",
        "false",
        "--seed",
        "1",
        "--log-every",
        "10",
        "--out",
        s(&run),
    ]));
    assert!(text.contains("full-graph training would need"), "{text}");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).unwrap()).unwrap();
    let test = results["final_accuracy"]["test"].as_f64().unwrap();
    assert!(test >= CORA_MINIBATCH_TEST_BOUND, "test accuracy {test}");
    assert_eq!(results["config"]["training"], "minibatch");
    // eval infers layer-wise, as training did: the same accuracy
    let eval = ok(app(&["eval", "--backend", "cpu", s(&run)]));
    assert!(eval.contains(&format!("{test:.4}")), "eval must report test {test:.4}:\n{eval}");
    let pred = out.join("pred");
    ok(app(&["predict", "--backend", "cpu", s(&run), "--out", s(&pred)]));
    assert!(pred.join("predictions.npy").exists() && pred.join("probabilities.npy").exists());
    // options that do not fit the mode are refused before anything is written
    let bad = app(&[
        "train",
        "--backend",
        "cpu",
        "--dataset",
        s(&cora),
        "--training",
        "minibatch",
        "--layers",
        "2",
        "--fanouts",
        "10,5,5",
        "--out",
        s(&out.join("bad")),
    ]);
    crate::common::fails(bad, "one fan-out per layer");
    crate::common::fails(
        app(&["train", "--backend", "cpu", "--dataset", s(&cora), "--fanouts", "10,5", "--out", s(&out.join("bad2"))]),
        "--training minibatch",
    );
    let _ = std::fs::remove_dir_all(&out);
}
