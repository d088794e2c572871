//! `bench-train --training minibatch`: sampling, batch assembly and mini-batch epochs.

use super::{epoch_record, TrainBench};
use crate::bench::Record;
use crate::error::{AppError, Result};
use crate::training::{TrainConfig, ADAM_EPSILON};
use burn::optim::{GradientsParams, Optimizer};
use burn::tensor::ElementConversion;
use burn_sparse_gnn::optim::FusedAdamConfig;
use burn_sparse_gnn::SparseGnnAutodiffBackend;
use std::time::Instant;

/// The median, minimum and 90th percentile of `times` (ms) as a record of `op` for mini-batch
/// training (`"training": "minibatch"`).
fn minibatch_record(
    cfg: &TrainConfig,
    op: &str,
    (graph, nodes, edges): (&str, usize, usize),
    times: Vec<f64>,
    device_name: &str,
) -> Record {
    let shape = crate::bench::Shape {
        graph: None,
        kernels: Default::default(),
        spmm_tile_features: None,
        hot_split: None,
        pools: crate::bench::pools_name(),
    };
    let mut rec = epoch_record(cfg, graph, nodes, edges, times, shape, device_name);
    rec.op = op.into();
    rec.training = Some("minibatch".into());
    rec.batch_size = Some(cfg.seed_batch());
    rec.fanouts = Some(cfg.hop_fanouts());
    rec
}

/// Mini-batch training timed on `host`'s graph (`bench-train --training minibatch`): the
/// device sampling of one batch's blocks (`"op": "sample"`, each timed to a device
/// synchronisation), one batch assembled (`"op": "batch"`: the sampling, the blocks read back and
/// uploaded as device graphs, the features gathered) and training epochs (`"op":
/// "train_epoch"`: every training node once in shuffled batches, the next batch built ahead as
/// `train` builds it, forward, backward and Adam per batch, the device synchronised at the end).
pub fn run_minibatch<B: SparseGnnAutodiffBackend>(
    tb: &TrainBench,
    host: &gnn_train::HostGraph,
    device: &B::Device,
    device_name: &str,
) -> Result<Vec<Record>> {
    use burn::data::dataloader::DataLoader;
    use gnn_train::minibatch::{MiniBatchClassifier, MiniBatchLoader, MiniBatchSource, NeighborSampler};
    let cfg = &tb.cfg;
    let adj = host.data.adjacency();
    let at = (host.data.name.as_str(), host.data.num_nodes(), adj.nnz());
    let model_cfg = cfg.model_config(host.d_in, host.data.num_classes())?;
    let rules = crate::training::minibatch::block_rules(cfg, &model_cfg, adj)?;
    let train: Vec<u32> = host.data.split().map(|s| s.train.clone()).unwrap_or_default();
    if train.is_empty() {
        return Err(AppError::Config(format!("{}: no training nodes", host.data.name)));
    }
    let sync = || B::sync(device).map_err(|e| AppError::Backend { backend: device_name.into(), msg: e.to_string() });
    let start = Instant::now();
    let sampler = NeighborSampler::<B>::new(adj, cfg.hop_fanouts(), cfg.seed, rules, device)?;
    let x = std::sync::Arc::new(host.x.clone());
    let features = crate::training::minibatch::node_features::<B>(cfg, &x, host.d_in, device);
    let source = std::sync::Arc::new(MiniBatchSource {
        sampler,
        features,
        labels: std::sync::Arc::new(host.data.labels().to_vec()),
    });
    sync()?;
    eprintln!("graph and features on the device in {:.1} s", start.elapsed().as_secs_f64());
    let loader = MiniBatchLoader::new(source.clone(), train, cfg.seed_batch(), cfg.seed, 0, cfg.prefetch)?;
    let batches = loader.epoch_batches(1);
    // 30 timed batches after at least 3 untimed ones
    let warmup = tb.warmup.max(3);
    let (mut sample, mut batch, mut sizes) = (Vec::new(), Vec::new(), (0usize, 0usize));
    for i in 0..warmup + 30 {
        let seeds = &batches[i % batches.len()];
        sync()?;
        let t = Instant::now();
        let blocks = source.sampler.sample_device(seeds, i as u64)?;
        sync()?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let b = source.batch(seeds, (0, i))?;
        sync()?;
        let assembled = t.elapsed().as_secs_f64() * 1e3;
        if i >= warmup {
            sample.push(ms);
            batch.push(assembled);
            sizes = (b.input_nodes, b.blocks.iter().map(|g| g.num_edges()).sum());
        }
        drop(blocks);
    }
    eprintln!("a batch: {} input nodes, {} edges over its blocks", sizes.0, sizes.1);
    let mut out = vec![
        minibatch_record(cfg, "sample", at, sample, device_name),
        minibatch_record(cfg, "batch", at, batch, device_name),
    ];
    B::seed(device, cfg.seed);
    let init = model_cfg.init::<B>(device).map_err(|e| AppError::Config(e.to_string()))?;
    init.initialise_parameters();
    let mut model = MiniBatchClassifier::new(init, cfg.seed);
    let mut optim = FusedAdamConfig::new().with_epsilon(ADAM_EPSILON).init::<B, MiniBatchClassifier<B>>();
    let mut times = Vec::new();
    for epoch in 0..tb.warmup + tb.epochs {
        sync()?;
        let t = Instant::now();
        let (mut loss_sum, mut steps) = (0.0, 0usize);
        let mut last = None;
        for b in loader.iter() {
            let loss = model.classify(&b).loss;
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            model = optim.step(cfg.lr, model, grads);
            steps += 1;
            last = Some(loss);
            if steps % 64 == 0 {
                if let Some(l) = last.take() {
                    loss_sum += l.into_scalar().elem::<f64>();
                }
            }
        }
        sync()?;
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if let Some(l) = last {
            loss_sum += l.into_scalar().elem::<f64>();
        }
        let kind = if epoch < tb.warmup { "warm-up" } else { "timed" };
        eprintln!(
            "epoch {}/{} ({kind}): {ms:.1} ms, {steps} batches, loss of sampled batches {loss_sum:.3}",
            epoch + 1,
            tb.warmup + tb.epochs
        );
        if epoch >= tb.warmup {
            times.push(ms);
        }
    }
    let mut rec = minibatch_record(cfg, "train_epoch", at, times, device_name);
    rec.variant = Some(format!("{} layers, {} batches of {} seeds", cfg.layers, loader.batches(), cfg.seed_batch()));
    if let Some((reserved, in_use)) = B::device_memory(device) {
        rec.peak_bytes = Some(reserved);
        rec.peak_in_use_bytes = Some(in_use);
    }
    out.push(rec);
    Ok(out)
}
