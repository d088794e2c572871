//! `bench-train`: full-batch training epochs (forward + backward + optimizer step, device
//! synchronised) of a model on a dataset, as PyG's peers are timed; the median epoch and the
//! device memory the process holds.

use crate::bench::{commit, Record};
use crate::error::{AppError, Result};
use crate::training::{FullGraphBatcher, GraphBatch, NodeClassifier, SplitKind, TrainConfig, ADAM_EPSILON};
use burn::data::dataloader::batcher::Batcher;
use burn::module::AutodiffModule;
use burn::optim::{GradientsParams, Optimizer};
use burn_sparse_gnn::optim::FusedAdamConfig;
use burn_sparse_gnn::SparseGnnAutodiffBackend;
use std::time::Instant;

mod minibatch;
pub use minibatch::run_minibatch;

/// One training benchmark.
#[derive(Clone, Debug)]
pub struct TrainBench {
    pub cfg: TrainConfig,
    pub epochs: usize,
    pub warmup: usize,
}

/// Times training epochs of `tb.cfg`; `batcher` holds the prepared graph (uploaded once and
/// shared by every configuration with the same graph options).
pub fn run<B: SparseGnnAutodiffBackend>(
    tb: &TrainBench,
    batcher: &FullGraphBatcher,
    device: &B::Device,
    device_name: &str,
) -> Result<Record> {
    let cfg = &tb.cfg;
    let host = batcher.host();
    let (nodes, edges) = (host.data.num_nodes(), host.data.adjacency().nnz());
    let graph_name = host.data.name.clone();
    let model_cfg = cfg.model_config(host.d_in, host.data.num_classes())?;
    B::seed(device, cfg.seed);
    // the driver's bytes in use before this run's graph and model (context, libraries)
    let used_before = B::device_capacity(device).map(|(free, total)| total.saturating_sub(free));
    let init = model_cfg.init::<B>(device).map_err(|e| AppError::Config(e.to_string()))?;
    // drawn now, as `train` draws them
    init.initialise_parameters();
    let start = Instant::now();
    let batch: GraphBatch<B> = batcher.batch(vec![SplitKind::Train], device);
    B::sync(device).map_err(|e| AppError::Backend { backend: device_name.into(), msg: e.to_string() })?;
    eprintln!(
        "graph and features on the device in {:.1} s{}",
        start.elapsed().as_secs_f64(),
        crate::host_memory::host_resident_note()
    );
    let model = NodeClassifier::new(init, cfg.seed);
    let timed = time_epochs::<B, _>(tb, model, device, device_name, |m| m.classify(&batch).loss)?;
    let graph_shape = batch.graph.shape();
    let size = gnn_models::memory_estimate::GraphSize {
        nodes,
        edges,
        features: host.d_in,
        hot_split: graph_shape.hot_cols > 0 || graph_shape.hot_cols_transpose > 0,
        staging_slots: host.opts.staging_slots(host.data.adjacency()),
    };
    let shape = crate::bench::Shape {
        graph: Some(graph_shape.into()),
        kernels: *batch.graph.kernel_config(),
        spmm_tile_features: None,
        hot_split: None,
        pools: crate::bench::pools_name(),
    };
    let mut rec = epoch_record(cfg, &graph_name, nodes, edges, timed.times.clone(), shape, device_name);
    rec.variant = Some(format!("{} layers{}", cfg.layers, if cfg.atomic { ", atomic sspmm" } else { "" }));
    timed.fill(&mut rec, used_before);
    rec.estimate = Some(gnn_models::memory_estimate::estimate_training(&size, &model_cfg));
    Ok(rec)
}

/// The record of a training-epoch benchmark of `cfg` from its epoch times (ms): median,
/// minimum and 90th percentile; memory, variant and the multi-device fields left for the caller.
pub fn epoch_record(
    cfg: &TrainConfig,
    graph: &str,
    nodes: usize,
    edges: usize,
    mut times: Vec<f64>,
    shape: crate::bench::Shape,
    device_name: &str,
) -> Record {
    times.sort_by(|a, b| a.total_cmp(b));
    let q = |p: f64| quantile(&times, p).unwrap_or(f64::NAN);
    Record {
        op: "train_epoch".into(),
        implementation: "ours".into(),
        graph: graph.into(),
        nodes,
        edges,
        width: cfg.hidden,
        k: None,
        dtype: match cfg.precision {
            gnn_models::Precision::F32 => "f32",
            gnn_models::Precision::Tf32 => "tf32",
            gnn_models::Precision::MixedF16 => "f16",
            gnn_models::Precision::MixedBf16 => "bf16",
        }
        .into(),
        model: Some(cfg.model.name().into()),
        nonlin: Some(cfg.nonlin.replace(':', "")),
        median_ms: q(0.5),
        runs: times.len(),
        peak_bytes: None,
        commit: commit(),
        device: device_name.into(),
        variant: None,
        min_ms: q(0.0),
        p90_ms: q(0.9),
        bytes: None,
        gbps: None,
        check_error: None,
        kept_fraction: None,
        tuning: crate::bench::tuning_string(&shape),
        peak_in_use_bytes: None,
        device_peak_bytes: None,
        hot_stats: None,
        shape: Some(shape),
        devices: None,
        host_ms: None,
        partition: None,
        estimate: None,
        task: None,
        batch_size: None,
        training: None,
        fanouts: None,
    }
}

use burn::tensor::ElementConversion;

/// What [`time_epochs`] measured.
pub struct Timed {
    /// The timed epochs, ms.
    pub times: Vec<f64>,
    /// The largest reserve of the pools after an epoch.
    pub peak: u64,
    /// The live-tensor peak of the probe epoch.
    pub peak_in_use: u64,
    /// The driver's bytes in use at the probe epoch's peak.
    pub device_peak: u64,
    /// The timed epochs' host times (the step queued), ms.
    pub host_times: Vec<f64>,
}

impl Timed {
    /// The memory fields of `rec` (`used_before`: the driver's bytes in use before the run).
    pub fn fill(&self, rec: &mut Record, used_before: Option<u64>) {
        rec.peak_bytes = (self.peak > 0).then_some(self.peak);
        rec.peak_in_use_bytes = (self.peak_in_use > 0).then_some(self.peak_in_use);
        rec.device_peak_bytes =
            used_before.filter(|_| self.device_peak > 0).map(|before| self.device_peak.saturating_sub(before));
        rec.host_ms = median(&self.host_times);
    }
}

/// Times `tb.warmup + tb.epochs` training steps of `model` (forward through `loss_of`, backward
/// with the run's loss scaling, Adam step, device synchronised) and one more that samples the
/// live-tensor peak.
pub fn time_epochs<B: SparseGnnAutodiffBackend, M: AutodiffModule<B>>(
    tb: &TrainBench,
    mut model: M,
    device: &B::Device,
    device_name: &str,
    loss_of: impl Fn(&M) -> burn::tensor::Tensor<B, 1>,
) -> Result<Timed> {
    let cfg = &tb.cfg;
    let mut scaler = cfg.loss_scale.config(cfg.precision).map(gnn_train::LossScaler::new);
    let mut optim = FusedAdamConfig::new().with_epsilon(ADAM_EPSILON).init::<B, M>();
    let (mut times, mut host_times) = (Vec::new(), Vec::new());
    let mut peak = 0u64;
    let mut peak_in_use = 0u64;
    let mut device_peak = 0u64;
    // one more epoch after the timed ones samples the live-tensor peak
    let total = tb.warmup + tb.epochs + 1;
    for epoch in 0..total {
        B::sync(device).map_err(|e| AppError::Backend { backend: device_name.into(), msg: e.to_string() })?;
        // the live-tensor peak: sampled at every sparse kernel, dense product and row pass
        // (forward and backward) and at the end of the forward and backward passes, in the extra untimed epoch (a query per kernel)
        let probe = epoch + 1 == total;
        if probe {
            burn_sparse_gnn::memory::start_peak_sampling();
        }
        let start = Instant::now();
        let out_loss = loss_of(&model);
        // live tensors peak around the end of the forward pass (everything saved for backward)
        let mut sample = || {
            if let Some((_, in_use)) = B::device_memory(device) {
                peak_in_use = peak_in_use.max(in_use);
            }
        };
        sample();
        let loss = out_loss.clone();
        let raw = match &scaler {
            Some(s) => loss.mul_scalar(s.scale()).backward(),
            None => loss.backward(),
        };
        sample();
        let mut grads = GradientsParams::from_grads(raw, &model);
        if let Some(s) = &mut scaler {
            s.unscale::<B, M>(&mut grads, &model);
        }
        model = optim.step(cfg.lr, model, grads);
        let host_ms = start.elapsed().as_secs_f64() * 1e3;
        B::sync(device).map_err(|e| AppError::Backend { backend: device_name.into(), msg: e.to_string() })?;
        let ms = start.elapsed().as_secs_f64() * 1e3;
        if probe {
            peak_in_use = peak_in_use.max(burn_sparse_gnn::memory::stop_peak_sampling());
            device_peak = burn_sparse_gnn::memory::device_peak();
        }
        let l: f64 = out_loss.into_scalar().elem();
        if !l.is_finite() {
            return Err(AppError::Diverged(format!("loss {l} at epoch {epoch}{}", cfg.divergence_hint())));
        }
        if epoch == 0 {
            // what the first epoch allocated only once (set-up, compilation) goes back to the
            // device; later epochs allocate the same sizes again
            B::memory_cleanup(device);
        }
        if epoch >= tb.warmup && !probe {
            times.push(ms);
            host_times.push(host_ms);
        }
        let kind = if epoch < tb.warmup {
            "warm-up"
        } else if probe {
            "memory probe"
        } else {
            "timed"
        };
        eprintln!(
            "epoch {}/{total} ({kind}): {ms:.1} ms (host {host_ms:.1} ms), loss {l:.4}{}",
            epoch + 1,
            crate::host_memory::host_resident_note()
        );
        if let Some((reserved, _)) = B::device_memory(device) {
            peak = peak.max(reserved);
        }
    }
    Ok(Timed { times, peak, peak_in_use, device_peak, host_times })
}

/// Times link-prediction training steps of `tb.cfg` (encoder, decoder over every positive
/// training pair and as many device-drawn negatives per positive as configured, binary
/// cross-entropy, backward, Adam step) on the graph and split of `batcher`.
pub fn run_link<B: SparseGnnAutodiffBackend>(
    tb: &TrainBench,
    batcher: &gnn_train::link::LinkBatcher,
    graph_name: &str,
    device: &B::Device,
    device_name: &str,
) -> Result<Record> {
    let cfg = &tb.cfg;
    let host = batcher.host();
    let model_cfg = cfg.model_config(host.d_in, cfg.embedding)?;
    B::seed(device, cfg.seed);
    let used_before = B::device_capacity(device).map(|(free, total)| total.saturating_sub(free));
    let init = model_cfg.init::<B>(device).map_err(|e| AppError::Config(e.to_string()))?;
    init.initialise_parameters();
    let model = gnn_train::link::LinkPredictor::new(init, cfg.decoder, cfg.embedding, cfg.seed, device);
    let start = Instant::now();
    let batch = batcher.try_batch::<B>(SplitKind::Train, device)?;
    B::sync(device).map_err(|e| AppError::Backend { backend: device_name.into(), msg: e.to_string() })?;
    eprintln!("graph, features and training pairs on the device in {:.1} s", start.elapsed().as_secs_f64());
    // over parts (`--devices`): the leader's step waits for every part (the parameters' gradients
    // come back to it), so synchronising the leader times the whole step
    let (graph, parts) = match &batch.encoder {
        gnn_train::link::Encoder::Whole { graph, .. } => (graph.clone(), None),
        gnn_train::link::Encoder::Parts { graph, .. } => (
            graph.parts()[0].graph.clone(),
            Some((
                graph.parts().len(),
                graph.halo_rows(),
                graph.parts().iter().map(|p| p.graph.num_edges()).sum::<usize>(),
            )),
        ),
    };
    let timed = time_epochs::<B, _>(tb, model, device, device_name, |m| m.train_output(&batch).loss)?;
    let shape = crate::bench::Shape {
        graph: Some(graph.shape().into()),
        kernels: *graph.kernel_config(),
        spmm_tile_features: None,
        hot_split: None,
        pools: crate::bench::pools_name(),
    };
    let nodes = host.split.num_nodes;
    let edges = parts.map(|(_, _, e)| e).unwrap_or_else(|| graph.num_edges());
    let mut rec = epoch_record(cfg, graph_name, nodes, edges, timed.times.clone(), shape, device_name);
    rec.variant = Some(format!(
        "{} layers, link, {} decoder, {} negative(s) per positive, {} positive pairs",
        cfg.layers,
        crate::training::config::name_of(&cfg.decoder),
        cfg.negatives,
        batch.pairs.pattern.num_edges()
    ));
    if let (Some((n, halo, _)), Some(v)) = (parts, rec.variant.as_mut()) {
        v.push_str(&format!(", encoder on {n} parts"));
        rec.partition = Some(serde_json::json!({ "parts": n, "halo_total": halo }));
    }
    rec.devices = host.parts.as_ref().map(|p| p.devices.len());
    rec.task = Some("link".into());
    timed.fill(&mut rec, used_before);
    Ok(rec)
}

/// Times graph-classification epochs of `tb.cfg`: one pass over every graph of `set` in
/// shuffled batches of `batch_size` (each batch gathered on the host, uploaded, forward,
/// backward, Adam step), the device synchronised at the end of the epoch, as PyG's
/// `DataLoader` + model are timed.
pub fn run_graph<B: SparseGnnAutodiffBackend>(
    tb: &TrainBench,
    set: &gnn_train::graphs::GraphSet,
    batch_size: usize,
    device: &B::Device,
    device_name: &str,
) -> Result<Record> {
    use rand::seq::SliceRandom;
    use rand::SeedableRng;
    let cfg = &tb.cfg;
    let model_cfg = crate::training::graph::graph_model_config(cfg, set.d_in, set.num_classes())?;
    B::seed(device, cfg.seed);
    let used_before = B::device_capacity(device).map(|(free, total)| total.saturating_sub(free));
    let model = model_cfg.init::<B>(device).map_err(|e| AppError::Config(e.to_string()))?;
    let mut model = gnn_train::graphs::GraphClassifier::new(model);
    let mut optim =
        FusedAdamConfig::new().with_epsilon(ADAM_EPSILON).init::<B, gnn_train::graphs::GraphClassifier<B>>();
    let sync = || B::sync(device).map_err(|e| AppError::Backend { backend: device_name.into(), msg: e.to_string() });
    let mut ids: Vec<usize> = (0..set.num_graphs()).collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(cfg.seed);
    let mut times = Vec::new();
    let mut peak = 0u64;
    for epoch in 0..tb.warmup + tb.epochs {
        ids.shuffle(&mut rng);
        sync()?;
        let start = Instant::now();
        let mut last = None;
        for chunk in ids.chunks(batch_size) {
            let batch = set.batch::<B>(chunk, device);
            let loss = model.classify(&batch).loss;
            let grads = GradientsParams::from_grads(loss.backward(), &model);
            model = optim.step(cfg.lr, model, grads);
            last = Some(loss);
        }
        sync()?;
        let ms = start.elapsed().as_secs_f64() * 1e3;
        let l: f64 = last.map(|l| l.into_scalar().elem()).unwrap_or(f64::NAN);
        if !l.is_finite() {
            return Err(AppError::Diverged(format!("loss {l} at epoch {epoch}")));
        }
        if epoch >= tb.warmup {
            times.push(ms);
        }
        if let Some((reserved, _)) = B::device_memory(device) {
            peak = peak.max(reserved);
        }
        eprintln!(
            "epoch {}/{}: {ms:.1} ms ({:.0} graphs/s), last batch loss {l:.4}",
            epoch + 1,
            tb.warmup + tb.epochs,
            set.num_graphs() as f64 / (ms / 1e3)
        );
    }
    // one more epoch, synchronised after every phase: where a step's time goes
    let mut phases = [0f64; 5];
    let mut mark = Instant::now();
    let mut lap = |i: usize, phases: &mut [f64; 5]| -> Result<()> {
        sync()?;
        phases[i] += mark.elapsed().as_secs_f64() * 1e3;
        mark = Instant::now();
        Ok(())
    };
    for chunk in ids.chunks(batch_size) {
        let host = set.gather(chunk);
        lap(0, &mut phases)?;
        drop(host);
        let batch = set.batch::<B>(chunk, device);
        lap(1, &mut phases)?;
        let loss = model.classify(&batch).loss;
        lap(2, &mut phases)?;
        let grads = GradientsParams::from_grads(loss.backward(), &model);
        lap(3, &mut phases)?;
        model = optim.step(cfg.lr, model, grads);
        lap(4, &mut phases)?;
    }
    eprintln!(
        "phases of one synchronised epoch, ms: host gather {:.1}, batch on the device (gather, graphs, upload) {:.1}, \
         forward {:.1}, backward {:.1}, optimizer {:.1}",
        phases[0], phases[1], phases[2], phases[3], phases[4]
    );
    let shape = crate::bench::Shape {
        graph: None,
        kernels: Default::default(),
        spmm_tile_features: None,
        hot_split: None,
        pools: crate::bench::pools_name(),
    };
    let mut rec = epoch_record(cfg, &set.name, set.adjacency.n_rows(), set.adjacency.nnz(), times, shape, device_name);
    rec.variant = Some(format!(
        "{} layers, {} readout, {} graphs per epoch, batch {batch_size}",
        cfg.layers,
        cfg.readout.name(),
        set.num_graphs()
    ));
    rec.task = Some("graph".into());
    rec.batch_size = Some(batch_size);
    let timed = Timed { times: Vec::new(), peak, peak_in_use: 0, device_peak: 0, host_times: Vec::new() };
    timed.fill(&mut rec, used_before);
    Ok(rec)
}

/// The `p` quantile of the ascending `sorted` (the nearest rank; `None` when empty).
fn quantile(sorted: &[f64], p: f64) -> Option<f64> {
    sorted.get(((sorted.len().max(1) - 1) as f64 * p).round() as usize).copied()
}

/// The median of `times` as the records' `median_ms` takes it (`None` when empty).
pub fn median(times: &[f64]) -> Option<f64> {
    let mut t = times.to_vec();
    t.sort_by(|a, b| a.total_cmp(b));
    quantile(&t, 0.5)
}
