//! Mini-batch training against the whole-graph forward pass on one backend: layer-wise
//! inference over row chunks, and blocks sampled with every neighbour (fan-outs above the
//! largest degree) for a batch of seeds, for every convolution.

use burn::tensor::{Tensor, TensorData};
use burn_sparse_gnn::{BuildOptions, Csr, Graph, GraphOptions, SparseGnnBackend};
use gnn_models::{ConvKind, GnnModelConfig, SageAggr};
use gnn_train::minibatch::{
    layerwise_logits, BlockRules, LayerwisePlan, MiniBatchSource, NeighborSampler, NodeFeatures,
};
use std::sync::Arc;

/// Bound of the largest difference of a logit (magnitudes about 1, f32 sums in another order).
pub const MINIBATCH_TOLERANCE: f64 = 1e-4;

/// A graph of `n` nodes: a hub (node 0) linked to a third of the nodes, a ring over the others,
/// chords, three isolated nodes at the end; undirected, with self-loops where `self_loops`.
pub fn hub_ring_graph(n: usize, self_loops: bool) -> Csr {
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    let ring = n - 3;
    for i in 1..ring {
        src.push(i as i64);
        dst.push(((i % (ring - 1)) + 1) as i64);
        if i % 3 == 0 {
            src.push(0);
            dst.push(i as i64);
        }
        if i % 7 == 0 {
            src.push(i as i64);
            dst.push(((i * 5) % ring) as i64);
        }
    }
    let o = BuildOptions { symmetrize: true, add_self_loops: self_loops, dedup: true };
    Csr::from_edges(n, &src, &dst, None, o).expect("a valid graph")
}

/// Deterministic features in [-0.5, 0.5), `[n, d]` row-major.
pub fn features(n: usize, d: usize) -> Vec<f32> {
    (0..n * d).map(|i| (((i * 7919) % 97) as f32 / 97.0) - 0.5).collect()
}

/// The models checked: classic 3-layer stacks of every convolution, GraphSAGE's sum, and a
/// linear-io GraphSAGE (12 features, width 16, 5 classes, no dropout).
pub fn models() -> Vec<GnnModelConfig> {
    let base = |conv| GnnModelConfig::new(conv, 12, 16, 5).with_layers(3).with_linear_io(false).with_dropout(0.0);
    vec![
        base(ConvKind::Gcn),
        base(ConvKind::Sage),
        base(ConvKind::Sage).with_sage_aggr(SageAggr::Sum),
        base(ConvKind::Gin),
        base(ConvKind::Gat),
        base(ConvKind::Sage).with_linear_io(true),
    ]
}

/// `sage sum linear-io` and the like.
fn model_name(cfg: &GnnModelConfig) -> String {
    let sum = cfg.sage_aggr == SageAggr::Sum && cfg.conv == ConvKind::Sage;
    format!("{}{}{}", cfg.conv.name(), if sum { " sum" } else { "" }, if cfg.linear_io { " linear-io" } else { "" })
}

fn max_diff<B: SparseGnnBackend>(a: Tensor<B, 2>, b: Tensor<B, 2>) -> f64 {
    let a = a.into_data().convert::<f32>().to_vec::<f32>().unwrap_or_default();
    let b = b.into_data().convert::<f32>().to_vec::<f32>().unwrap_or_default();
    if a.len() != b.len() {
        return f64::INFINITY;
    }
    a.iter().zip(&b).map(|(x, y)| f64::from((x - y).abs())).fold(0.0, f64::max)
}

/// For every model of [`models`] on a 301-node [`hub_ring_graph`]: the largest difference of
/// layer-wise inference (chunks of 64 rows, features on the host) from the whole-graph logits,
/// and of a sampled batch of eight seeds (fan-outs 500: every neighbour) from the seeds' rows.
pub fn minibatch_checks<B: SparseGnnBackend>(device: &B::Device) -> Vec<(String, f64)> {
    let n = 301;
    let x = features(n, 12);
    let seeds: Vec<u32> = vec![0, 5, 9, 33, 120, 299, 300, 2];
    let mut out = Vec::new();
    for cfg in models() {
        let name = model_name(&cfg);
        let adj = hub_ring_graph(n, cfg.needs_self_loops());
        let Ok(model) = cfg.init::<B>(device) else {
            out.push((format!("{name}: the model builds"), f64::INFINITY));
            continue;
        };
        let whole = model.forward(
            &Graph::<B>::new(&adj, device, GraphOptions::default()),
            Tensor::from_data(TensorData::new(x.clone(), [n, 12]), device),
        );
        let rules = match BlockRules::for_model(&adj, &cfg, GraphOptions::default()) {
            Ok(r) => r,
            Err(e) => {
                out.push((format!("{name}: block rules ({e})"), f64::INFINITY));
                continue;
            }
        };
        let layerwise = LayerwisePlan::<B>::new(&adj, &rules, 64, device).and_then(|plan| {
            layerwise_logits(&model, &plan, &NodeFeatures::Host { x: Arc::new(x.clone()), width: 12 })
        });
        out.push((
            format!("{name}: layer-wise inference against the whole graph"),
            layerwise.map_or(f64::INFINITY, |l| max_diff(l, whole.clone())),
        ));
        let ids: Vec<i64> = seeds.iter().map(|&s| s as i64).collect();
        let want = whole.select(0, Tensor::from_data(TensorData::new(ids, [seeds.len()]), device));
        let batch = NeighborSampler::<B>::new(&adj, vec![500; 3], 3, rules, device).and_then(|sampler| {
            let source = MiniBatchSource {
                sampler,
                features: NodeFeatures::upload(&x, 12, device),
                labels: Arc::new(vec![0; n]),
            };
            source.batch(&seeds, (1, 0))
        });
        let got = batch.ok().and_then(|b| model.forward_blocks(&b.blocks, b.x).ok());
        out.push((
            format!("{name}: blocks with every neighbour against the seeds' rows"),
            got.map_or(f64::INFINITY, |g| max_diff(g, want)),
        ));
    }
    out
}

/// For every model of [`models`] on the 301-node [`hub_ring_graph`]: the largest difference of
/// the features' gradient of a weighted sum of eight seeds' logits, through blocks sampled with
/// every neighbour against through the whole graph: the backward pass over the blocks'
/// transposes and edge weights.
pub fn minibatch_gradient_checks<B: burn_sparse_gnn::SparseGnnAutodiffBackend>(
    device: &B::Device,
) -> Vec<(String, f64)> {
    let n = 301;
    let x = features(n, 12);
    let seeds: Vec<u32> = vec![0, 5, 9, 33, 120, 299, 300, 2];
    let ids: Vec<i64> = seeds.iter().map(|&s| s as i64).collect();
    let weights: Vec<f32> = (0..seeds.len() * 5).map(|i| ((i * 37 % 11) as f32 - 5.0) / 5.0).collect();
    let mut out = Vec::new();
    for cfg in models() {
        let name = model_name(&cfg);
        let adj = hub_ring_graph(n, cfg.needs_self_loops());
        let (Ok(model), Ok(rules)) =
            (cfg.init::<B>(device), BlockRules::for_model(&adj, &cfg, GraphOptions::default()))
        else {
            out.push((format!("{name}: gradients (the model or its rules do not build)"), f64::INFINITY));
            continue;
        };
        let w = Tensor::<B, 2>::from_data(TensorData::new(weights.clone(), [seeds.len(), 5]), device);
        let seed_ids =
            Tensor::<B, 1, burn::tensor::Int>::from_data(TensorData::new(ids.clone(), [seeds.len()]), device);
        let grad_of = |use_blocks: bool| -> Option<Vec<f32>> {
            let xt = Tensor::<B, 2>::from_data(TensorData::new(x.clone(), [n, 12]), device).require_grad();
            let logits = if use_blocks {
                let sampler = NeighborSampler::<B>::new(&adj, vec![500; 3], 3, rules.clone(), device).ok()?;
                let hops = sampler.sample_device(&seeds, 0).ok()?;
                let spec = rules.device_spec::<B>(device);
                let blocks: Vec<Graph<B>> =
                    hops.iter().rev().map(|b| burn_sparse_gnn::ops::neighbors::block_graph(b, 500, &spec)).collect();
                let xb = xt.clone().select(0, hops.last()?.src.clone());
                model.forward_blocks(&blocks, xb).ok()?
            } else {
                model
                    .forward(&Graph::<B>::new(&adj, device, GraphOptions::default()), xt.clone())
                    .select(0, seed_ids.clone())
            };
            let grads = (logits * w.clone()).sum().backward();
            xt.grad(&grads)?.into_data().convert::<f32>().to_vec::<f32>().ok()
        };
        let d = match (grad_of(true), grad_of(false)) {
            (Some(a), Some(b)) if a.len() == b.len() => {
                a.iter().zip(&b).map(|(p, q)| f64::from((p - q).abs())).fold(0.0, f64::max)
            }
            _ => f64::INFINITY,
        };
        out.push((format!("{name}: feature gradients through blocks against the whole graph"), d));
    }
    out
}
