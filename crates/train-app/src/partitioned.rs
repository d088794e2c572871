//! Full-graph training on a partitioned graph: P parts on one or more devices of the backend
//! (several GPUs of a host through NCCL on CUDA; logical parts on one device elsewhere), the
//! exact model of `gnn_models::distributed`. Used by `train --devices` / `--parts` and
//! `bench-train --devices` / `--parts`.

use crate::bench::{commit, Record};
use crate::error::{AppError, Result};
use crate::training::{HostGraph, TrainConfig, ADAM_EPSILON};
use burn::optim::decay::WeightDecayConfig;
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::backend::Backend;
use burn::tensor::backend::Device as _;
use burn::tensor::{ElementConversion, Int, Tensor, TensorData};
use burn_sparse_gnn::collective::CommStats;
use burn_sparse_gnn::partition::{partition, PartitionMethod, PartitionOptions, PartitionStats, PartitionedGraph};
use burn_sparse_gnn::{SparseGnnAutodiffBackend, SparseGnnBackend};
use gnn_models::distributed::{partitioned_loss, DistGraph, HaloLayout};
use gnn_models::{GnnModel, Hidden, Nonlinearity};
use serde::Serialize;
use std::path::Path;
use std::time::Instant;

/// How a run spreads over devices.
#[derive(Clone, Debug, PartialEq)]
pub struct Spread {
    /// Device indices of the backend (`[0, 1]`: the first two GPUs); parts go round-robin.
    pub devices: Vec<usize>,
    /// Number of parts (at least the number of devices).
    pub parts: usize,
    /// Partitioner.
    pub method: PartitionMethod,
    /// BNS-GCN's boundary-node sampling: the fraction of halo rows that cross per training
    /// step (`gnn_models::distributed::BoundarySampling`); `None`: every row, the exact model.
    pub boundary_sampling: Option<f64>,
    /// How the parts hold their halo columns; `None`: the split layout where the model allows
    /// it ([`Spread::layout_for`]), the joined one otherwise.
    pub layout: Option<HaloLayout>,
}

impl Spread {
    /// Checks the numbers: at least one device, parts >= devices, no repeated device.
    pub fn check(&self) -> Result<()> {
        if self.parts == 0 {
            return Err(AppError::Config("--parts must be >= 1".into()));
        }
        if self.devices.is_empty() {
            return Err(AppError::Config("--devices needs at least one device index".into()));
        }
        let mut d = self.devices.clone();
        d.sort_unstable();
        d.dedup();
        if d.len() != self.devices.len() {
            return Err(AppError::Config(format!("--devices lists a device twice: {:?}", self.devices)));
        }
        if self.parts < self.devices.len() {
            return Err(AppError::Config(format!(
                "--parts {} is fewer than the {} devices: every device needs a part",
                self.parts,
                self.devices.len()
            )));
        }
        if self.devices.iter().any(|&i| i > u16::MAX as usize) {
            return Err(AppError::Config(format!("--devices: index out of range in {:?}", self.devices)));
        }
        if let Some(rate) = self.boundary_sampling {
            if !(rate > 0.0 && rate <= 1.0) {
                return Err(AppError::Config(format!(
                    "--boundary-sampling {rate}: the fraction of halo rows that cross must be in (0, 1]"
                )));
            }
        }
        Ok(())
    }

    /// The halo layout of a run of `cfg`: the one asked for, else the split layout for
    /// GraphSAGE mean / sum on ReLU states, with or without boundary sampling (each convolution
    /// then sums over the own columns while the halo rows move), and the joined one otherwise.
    /// In mixed precision the split layout is the default only over several devices: with
    /// every part on one device (the exchange a copy) its extra element-wise passes cost more
    /// than the joined layout's concatenations, on two GPUs the exchange it hides is worth more
    /// (docs/PERFORMANCE.md). Errors when the split layout is asked for a model or option that
    /// needs the joined one.
    pub fn layout_for(&self, cfg: &TrainConfig) -> Result<HaloLayout> {
        let splits = cfg.model == gnn_models::ConvKind::Sage
            && matches!(cfg.sage_aggr, gnn_models::SageAggr::Mean | gnn_models::SageAggr::Sum)
            && cfg.nonlin == "relu";
        match self.layout {
            None => Ok(if splits && (cfg.precision.half().is_none() || self.devices.len() > 1) {
                HaloLayout::Split
            } else {
                HaloLayout::Joined
            }),
            Some(HaloLayout::Split) if !splits => Err(AppError::Config(
                "--halo-layout split needs a GraphSAGE mean / sum model with --nonlin relu".into(),
            )),
            Some(l) => Ok(l),
        }
    }

    /// Checks that boundary sampling, when asked for, applies to `cfg`'s model: its states
    /// must be dense (ReLU; MaxK and max-pool states are CBSR) and its aggregation linear in
    /// them (GCN, GraphSAGE, GIN; GAT's attention is not).
    pub fn check_sampling(&self, cfg: &TrainConfig) -> Result<()> {
        if self.boundary_sampling.is_none() {
            return Ok(());
        }
        let max_pool = cfg.model == gnn_models::ConvKind::Sage && cfg.sage_aggr == gnn_models::SageAggr::MaxPool;
        if cfg.nonlin != "relu" || cfg.model == gnn_models::ConvKind::Gat || max_pool {
            return Err(AppError::Config(format!(
                "--boundary-sampling needs a ReLU GCN, GraphSAGE (mean or sum) or GIN (got {} with {}{}): MaxK \
                 states are CBSR rows, and GAT's attention and SAGE's max-pool are not linear in the neighbours",
                cfg.model.name(),
                cfg.nonlin,
                if max_pool { ", max-pool aggregation" } else { "" }
            )));
        }
        Ok(())
    }
}

/// Checks device indices (`--devices`) against the GPUs the CUDA backend sees, before
/// anything is uploaded; the CPU and wgpu backends take any index as a logical device.
pub fn check_device_indices<B: Backend>(like: &B::Device, indices: &[usize], backend: &str) -> Result<()> {
    if backend != "cuda" {
        return Ok(());
    }
    let count = B::device_count(like.to_id().type_id);
    match indices.iter().find(|&&i| i >= count) {
        Some(bad) => Err(AppError::Config(format!(
            "--devices {}: there is no GPU {bad}; the cuda backend sees {count} ({})",
            indices.iter().map(usize::to_string).collect::<Vec<_>>().join(","),
            match count {
                0 => "none".to_string(),
                1 => "index 0".to_string(),
                n => format!("indices 0 to {}", n - 1),
            }
        ))),
        None => Ok(()),
    }
}

/// The backend's devices of the given indices (the same kind as `like`).
pub fn devices_of<B: Backend>(like: &B::Device, indices: &[usize]) -> Vec<B::Device> {
    indices
        .iter()
        .map(|&i| {
            let mut id = like.to_id();
            id.index_id = i as u16;
            B::Device::from_id(id)
        })
        .collect()
}

/// What a partitioned run reports about its partition.
#[derive(Clone, Debug, Serialize)]
pub struct PartitionReport {
    pub parts: usize,
    pub devices: usize,
    pub method: String,
    pub stats: PartitionStats,
    /// Bytes sent between parts per training epoch (forward halo rows and their gradients).
    pub exchanged_bytes_per_epoch: u64,
    /// Seconds to partition (or read the cached partition) and to build the parts.
    pub partition_seconds: f64,
    pub setup_seconds: f64,
    /// Whether the partition came from the cache file.
    pub cached: bool,
    /// The boundary-sampling rate of the training steps (absent: exact).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub boundary_sampling: Option<f64>,
    /// How the parts hold their halo columns (`joined` or `split`).
    pub halo_layout: String,
    /// Processes of a multi-process run (one part each; absent: one process).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub processes: Option<usize>,
    /// What moved the halo rows between the processes (`nccl` or `host`; absent: one process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transport: Option<burn_sparse_gnn::collective::RowTransport>,
}

/// A partitioned graph on its devices with the node data split by part.
pub struct PartitionedData<B: Backend> {
    pub dg: DistGraph<B>,
    pub xs: Vec<Tensor<B, 2>>,
    pub labels: Vec<Tensor<B, 1, Int>>,
    /// Per split (train, valid, test): per part the loss weights (`1 / |split|` on the split).
    pub weights: [Vec<Tensor<B, 1>>; 3],
    pub report: PartitionReport,
}

/// The partition of `adj` that `spread` asks for: read from `cache` when it holds one of this
/// graph with the same parts and method, computed (and written to `cache`) otherwise. Returns
/// whether it came from the cache.
pub fn load_or_partition(
    adj: &burn_sparse_gnn::Csr,
    spread: &Spread,
    cache: Option<&Path>,
) -> Result<(burn_sparse_gnn::partition::Partition, bool)> {
    let cached = cache.filter(|p| p.exists()).and_then(|p| match burn_sparse_gnn::partition::Partition::load(p, adj) {
        Ok(part) if part.parts == spread.parts && part.method == spread.method => Some(part),
        Ok(_) => None,
        Err(e) => {
            eprintln!("partition cache {} not used: {e}", p.display());
            None
        }
    });
    if let Some(p) = cached {
        return Ok((p, true));
    }
    let opts = PartitionOptions { parts: spread.parts, method: spread.method, seed: 1 };
    let p = partition_with_progress(adj, &opts)?;
    if let Some(path) = cache {
        p.save(adj, path).map_err(|e| AppError::Config(format!("partition cache: {e}")))?;
    }
    Ok((p, false))
}

/// Partitions `adj` as `opts` asks, with a spinner and the elapsed time on a terminal (METIS
/// takes minutes on graphs of 100M edges), a line before and after otherwise.
pub fn partition_with_progress(
    adj: &burn_sparse_gnn::Csr,
    opts: &PartitionOptions,
) -> Result<burn_sparse_gnn::partition::Partition> {
    use indicatif::{ProgressBar, ProgressStyle};
    let what = format!(
        "partitioning {} nodes and {} edges into {} parts ({})",
        adj.n_rows(),
        adj.nnz(),
        opts.parts,
        opts.method.as_str()
    );
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} {elapsed}").unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_message(what.clone());
    if bar.is_hidden() {
        eprintln!("{what}");
    }
    bar.enable_steady_tick(std::time::Duration::from_millis(250));
    let start = Instant::now();
    let p = partition(adj, opts);
    bar.finish_and_clear();
    let p = p.map_err(|e| AppError::Config(format!("partition into {}: {e}", opts.parts)))?;
    eprintln!("partitioned into {} parts in {:.1} s", opts.parts, start.elapsed().as_secs_f64());
    Ok(p)
}

/// [`load_or_partition`], then the parts built, timed.
pub fn known_partition(adj: &burn_sparse_gnn::Csr, spread: &Spread, cache: Option<&Path>) -> Result<KnownPartition> {
    let start = Instant::now();
    let (part, cached) = load_or_partition(adj, spread, cache)?;
    let graph = PartitionedGraph::build(adj, &part).map_err(|e| AppError::Config(format!("partition: {e}")))?;
    Ok(KnownPartition { graph, cached, seconds: start.elapsed().as_secs_f64() })
}

/// A partition computed or read before a run's set-up (for its memory estimate): the run uses
/// it and reports how it came.
pub struct KnownPartition {
    pub graph: PartitionedGraph,
    /// Whether it came from the cache file.
    pub cached: bool,
    /// Seconds to compute or read it and to build the parts.
    pub seconds: f64,
}

/// Partitions `host`'s graph (or reads `cache` when it holds a partition of this graph with
/// the same parts and method; or takes `known`) and uploads the parts to `devices`, their halo
/// columns held as `layout` says.
pub fn setup<B: SparseGnnBackend>(
    host: &HostGraph,
    spread: &Spread,
    devices: &[B::Device],
    cache: Option<&Path>,
    layout: HaloLayout,
    known: Option<KnownPartition>,
) -> Result<PartitionedData<B>> {
    spread.check()?;
    let adj = host.data.adjacency();
    let n = host.data.num_nodes();
    let KnownPartition { graph: pg, cached: was_cached, seconds: partition_seconds } = match known {
        Some(k) => k,
        None => known_partition(adj, spread, cache)?,
    };
    let start = Instant::now();
    let dg = DistGraph::<B>::with_layout(adj, &pg, devices, host.opts, layout)
        .map_err(|e| AppError::Config(e.to_string()))?;
    let leader = dg.leader().clone();
    let dtype = <B::FloatElem as burn::tensor::Element>::dtype();
    let x = Tensor::<B, 2>::from_data(
        TensorData::new(host.x.clone(), [n, host.d_in]).convert_dtype(dtype),
        (&leader, dtype),
    );
    let labels: Vec<i64> = host.data.labels().iter().map(|&l| l.max(0)).collect();
    let labels = Tensor::<B, 1, Int>::from_data(TensorData::new(labels, [n]), &leader);
    let weights = split_weights(host)?
        .map(|w| dg.scatter(Tensor::<B, 1>::from_data(TensorData::new(w, [n]).convert_dtype(dtype), (&leader, dtype))));
    let report = PartitionReport {
        parts: spread.parts,
        devices: devices.len(),
        method: format!("{:?}", spread.method).to_lowercase(),
        stats: pg.stats(),
        exchanged_bytes_per_epoch: 0,
        partition_seconds,
        setup_seconds: start.elapsed().as_secs_f64(),
        cached: was_cached,
        boundary_sampling: spread.boundary_sampling,
        halo_layout: format!("{layout:?}").to_lowercase(),
        processes: None,
        transport: None,
    };
    Ok(PartitionedData { xs: dg.scatter(x), labels: dg.scatter(labels), weights, dg, report })
}

/// The loss weights of train, valid and test over all nodes: `1 / |split|` on the split's
/// nodes, 0 elsewhere (a node listed twice counts twice). Errors without a split.
pub(crate) fn split_weights(host: &HostGraph) -> Result<[Vec<f32>; 3]> {
    let n = host.data.num_nodes();
    let split = host.data.split().ok_or_else(|| AppError::Config("a split is needed to train".into()))?;
    Ok([&split.train, &split.valid, &split.test].map(|ids| {
        let mut w = vec![0.0f32; n];
        let share = 1.0 / ids.len().max(1) as f32;
        for &i in ids {
            w[i as usize] += share;
        }
        w
    }))
}

/// Bytes one training epoch sends between parts: per convolution, the halo rows of the state
/// it reads (f32 values; MaxK / max-pool states also their column ids) forward, and the
/// gradient of the values backward. The input features have no gradient, and where their halo
/// rows are held (`input_halo_held`, the multi-process run) they do not move at all.
pub fn exchanged_bytes_per_epoch(
    cfg: &TrainConfig,
    model: &GnnModel<impl SparseGnnBackend>,
    d_in: usize,
    halo_rows: usize,
    layout: HaloLayout,
    input_halo_held: bool,
) -> u64 {
    // the split layout moves the rows in the aggregations' storage type (half in mixed precision)
    let value = match (layout, model.precision().half()) {
        (HaloLayout::Split, Some(_)) => 2,
        _ => 4,
    };
    let mut total = 0u64;
    for l in 0..model.num_layers() {
        if model.reads_input(l) {
            total += if input_halo_held { 0 } else { (halo_rows * d_in * value) as u64 };
            continue;
        }
        let (values, ids) = match model.nonlinearity() {
            Nonlinearity::Relu => (cfg.hidden * value, 0),
            Nonlinearity::Maxk { k } => (k * 4, if cfg.hidden <= 256 { k.div_ceil(4) * 4 } else { k * 4 }),
            Nonlinearity::Maxpool { .. } => (cfg.hidden * 4, 0),
        };
        total += (halo_rows * (2 * values + ids)) as u64;
    }
    total
}

/// The expected bytes of an epoch whose halo rows cross at `rate` (all of them: `None`).
pub fn sampled_bytes(bytes: u64, rate: Option<f64>) -> u64 {
    match rate {
        Some(r) => (bytes as f64 * r).round() as u64,
        None => bytes,
    }
}

/// One training step on the parts; returns the loss.
/// With boundary sampling (`data.report.boundary_sampling`), the halo rows that cross are
/// drawn from `seed` and `step`.
pub fn train_step<B: SparseGnnAutodiffBackend, O: Optimizer<GnnModel<B>, B>>(
    model: GnnModel<B>,
    optim: &mut O,
    data: &PartitionedData<B>,
    lr: f64,
    seed: u64,
    step: u64,
) -> Result<(GnnModel<B>, Tensor<B, 1>)> {
    let halo = match data.report.boundary_sampling {
        Some(rate) => Some(
            data.dg
                .sample_halo(&gnn_models::BoundarySampling { rate, seed }, step)
                .map_err(|e| AppError::Config(e.to_string()))?,
        ),
        None => None,
    };
    let logits = model
        .forward_partitioned_sampled(&data.dg, data.xs.clone(), halo.as_ref())
        .map_err(|e| AppError::Config(e.to_string()))?;
    let loss = partitioned_loss(&data.dg, &logits, &data.labels, &data.weights[0]);
    let grads = GradientsParams::from_grads(loss.backward(), &model);
    Ok((optim.step(lr, model, grads), loss.detach()))
}

/// Accuracy of `model` (no autodiff) on train, valid and test, and its loss on valid (the
/// validation loss a whole-graph run logs, which `--patience` watches).
pub fn accuracies<B: SparseGnnBackend>(
    model: &GnnModel<B>,
    data: &PartitionedData<B>,
    host: &HostGraph,
) -> Result<([f64; 3], f64)> {
    let plogits = model.forward_partitioned(&data.dg, data.xs.clone()).map_err(|e| AppError::Config(e.to_string()))?;
    let valid_loss = scalar(partitioned_loss(&data.dg, &plogits, &data.labels, &data.weights[1]));
    let logits = data.dg.gather(plogits);
    let pred: Vec<i64> = logits.argmax(1).into_data().convert::<i64>().to_vec().unwrap_or_default();
    let labels = host.data.labels();
    let Some(split) = host.data.split() else { return Ok(([f64::NAN; 3], valid_loss)) };
    let acc = [&split.train, &split.valid, &split.test].map(|ids| {
        let hit = ids.iter().filter(|&&i| pred.get(i as usize) == labels.get(i as usize)).count();
        hit as f64 / ids.len().max(1) as f64
    });
    Ok((acc, valid_loss))
}

/// Synchronises every device of the run.
pub fn sync_all<B: SparseGnnBackend>(dg: &DistGraph<B>) -> Result<()> {
    for p in dg.parts() {
        B::sync(&p.device).map_err(|e| AppError::Backend { backend: "device".into(), msg: e.to_string() })?;
    }
    Ok(())
}

/// The device memory estimate of training `cfg` over `pg`'s parts on `spread`'s devices, for
/// the device that needs the most: per part it holds, the part's share of the one-device
/// estimate (its rows and edges), the halo rows of every convolution's input, and at the peak
/// the halo rows' gradient and the halo layout's tensors.
pub fn estimate_per_device(
    cfg: &TrainConfig,
    host: &HostGraph,
    pg: &PartitionedGraph,
    spread: &Spread,
) -> Result<gnn_models::memory::MemoryEstimate> {
    use gnn_models::memory::{estimate_training, GraphSize, MemoryEstimate};
    let model = cfg.model_config(host.d_in, host.data.num_classes())?;
    let devices = spread.devices.len().max(1);
    let split = spread.layout_for(cfg)? == HaloLayout::Split;
    let mut per_device = vec![MemoryEstimate::default(); devices];
    for (i, p) in pg.parts.iter().enumerate() {
        let hot_split = host.opts.splits_hot_columns(&p.adj);
        let staging_slots = host.opts.staging_slots(&p.adj);
        let size =
            GraphSize { nodes: p.owned.len(), edges: p.adj.nnz(), features: host.d_in, hot_split, staging_slots };
        let e = estimate_training(&size, &model);
        let d = &mut per_device[i % devices];
        d.graph += e.graph;
        d.node_data += e.node_data;
        d.parameters = e.parameters;
        d.saved_activations += e.saved_activations + partitioned_saved_bytes(cfg, p.halo.len());
        d.working_set =
            d.working_set.max(e.working_set + partitioned_working_bytes(cfg, p.owned.len(), p.halo.len(), split));
    }
    let mut worst = MemoryEstimate::default();
    for mut d in per_device {
        d.total = d.graph + d.node_data + d.parameters + d.saved_activations + d.working_set;
        if d.total > worst.total {
            worst = d;
        }
    }
    Ok(worst)
}

/// What a part keeps for the backward pass beyond its own rows' share of the one-device
/// estimate: the halo rows of every convolution's input state (f32).
fn partitioned_saved_bytes(cfg: &TrainConfig, halo: usize) -> u64 {
    (halo * cfg.hidden * 4 * cfg.layers) as u64
}

/// What a part holds at its peak beyond its own rows' share of the one-device working set:
/// the halo rows' gradient while it moves back to their owners, and the layout's tensors of
/// the convolution running then: the split layout's two partial sums over the own and the
/// halo columns, or the joined layout's `[own; halo]` rows and their gradient (rows of the
/// hidden width, f32 or half as the rows move). On the products-scale R-MAT graph (GraphSAGE
/// 4x256 and 4x768 f32) the reserved peak of two H100s was 1.18-1.38x the estimate without
/// them and 0.94-1.01x with them (1.07x for a 3M-node SBM graph); on four, whose parts have
/// more halo rows than own rows, 0.78-0.81x (docs/PERFORMANCE.md).
fn partitioned_working_bytes(cfg: &TrainConfig, owned: usize, halo: usize, split: bool) -> u64 {
    let value = if cfg.precision.half().is_some() { 2 } else { 4 };
    let rows = if split { halo + 2 * owned } else { halo + 2 * (owned + halo) };
    (rows * cfg.hidden * value) as u64
}

/// Seconds of one halo exchange of a dense `[rows, width]` f32 state (no autodiff), the
/// median of `runs`: the achieved exchange bandwidth is the halo bytes over this time.
pub fn time_exchange<B: SparseGnnBackend>(dg: &DistGraph<B>, width: usize, runs: usize) -> Result<f64> {
    let states: Vec<Hidden<B>> =
        dg.parts().iter().map(|p| Hidden::Dense(Tensor::<B, 2>::ones([p.owned, width], &p.device))).collect();
    let mut times = Vec::new();
    for _ in 0..runs + 1 {
        sync_all(dg)?;
        let start = Instant::now();
        let full = dg.exchange(&states);
        sync_all(dg)?;
        times.push(start.elapsed().as_secs_f64());
        drop(full);
    }
    times.remove(0);
    times.sort_by(|a, b| a.total_cmp(b));
    Ok(times[times.len() / 2])
}

/// The loss as a float.
pub fn scalar<B: Backend>(loss: Tensor<B, 1>) -> f64 {
    loss.into_scalar().elem()
}

/// Adam as `train` configures it.
pub fn adam(cfg: &TrainConfig) -> AdamConfig {
    AdamConfig::new()
        .with_epsilon(ADAM_EPSILON)
        .with_weight_decay((cfg.weight_decay > 0.0).then(|| WeightDecayConfig::new(cfg.weight_decay as f32)))
}

/// Times training epochs of `tb.cfg` on a partitioned graph (`spread`): the same epoch as
/// [`crate::trainbench::run`] with a halo exchange before every convolution. The record carries `devices` and
/// `partition` (cut edges, halo rows, bytes exchanged per epoch, the achieved exchange rate).
pub fn bench<B: SparseGnnAutodiffBackend>(
    tb: &crate::trainbench::TrainBench,
    host: &crate::training::HostGraph,
    spread: &crate::partitioned::Spread,
    cache: Option<&Path>,
    device: &B::Device,
    device_name: &str,
) -> Result<Record> {
    use crate::partitioned as part;
    let cfg = &tb.cfg;
    spread.check_sampling(cfg)?;
    let devices = part::devices_of::<B>(device, &spread.devices);
    let known = part::known_partition(host.data.adjacency(), spread, cache)?;
    let estimate = part::estimate_per_device(cfg, host, &known.graph, spread)?;
    let mut data = part::setup::<B>(host, spread, &devices, cache, spread.layout_for(cfg)?, Some(known))?;
    let leader = data.dg.leader().clone();
    let model_cfg = cfg.model_config(host.d_in, host.data.num_classes())?;
    B::seed(&leader, cfg.seed);
    let mut model = model_cfg.init::<B>(&leader).map_err(|e| AppError::Config(e.to_string()))?;
    // drawn now, as the whole-graph run draws them
    model.initialise_parameters();
    data.report.exchanged_bytes_per_epoch = part::sampled_bytes(
        part::exchanged_bytes_per_epoch(cfg, &model, host.d_in, data.dg.halo_rows(), data.dg.layout(), false),
        spread.boundary_sampling,
    );
    let mut optim = part::adam(cfg).init();
    let mut times = Vec::new();
    let (mut peak, mut peak_in_use) = (0u64, 0u64);
    // the largest reserved bytes after an epoch, per device
    let mut per_device: Vec<(String, u64)> = Vec::new();
    let total = tb.warmup + tb.epochs;
    for epoch in 0..total {
        part::sync_all(&data.dg)?;
        let start = Instant::now();
        B::seed(&leader, cfg.seed.wrapping_mul(1_000_003).wrapping_add(epoch as u64 + 1));
        let (next, loss) = part::train_step(model, &mut optim, &data, cfg.lr, cfg.seed, epoch as u64)?;
        model = next;
        part::sync_all(&data.dg)?;
        let ms = start.elapsed().as_secs_f64() * 1e3;
        let l = part::scalar(loss);
        if !l.is_finite() {
            return Err(AppError::Diverged(format!("loss {l} at epoch {epoch}{}", cfg.divergence_hint())));
        }
        if epoch == 0 {
            for p in data.dg.parts() {
                B::memory_cleanup(&p.device);
            }
        }
        if epoch >= tb.warmup {
            times.push(ms);
        }
        for p in data.dg.parts() {
            if let Some((reserved, in_use)) = B::device_memory(&p.device) {
                peak = peak.max(reserved);
                peak_in_use = peak_in_use.max(in_use);
                let key = format!("{:?}", p.device);
                match per_device.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, r)) => *r = (*r).max(reserved),
                    None => per_device.push((key, reserved)),
                }
            }
        }
    }
    let groups_before = burn_sparse_gnn::exchange::grouped_transfers();
    // the exchange timed on its own needs `[own; halo]` rows the epochs may never have held:
    // where the device has no room left for them, the epochs' record is kept without it
    let exchange_s =
        match crate::device_memory::catch_out_of_memory(|| part::time_exchange(&data.dg.inner(), cfg.hidden, 5)) {
            Ok(r) => Some(r?),
            Err(m) => {
                eprintln!("the exchange alone was not timed: the device ran out of memory ({m})");
                None
            }
        };
    let grouped = burn_sparse_gnn::exchange::grouped_transfers() > groups_before;
    let exchange_bytes = (data.dg.halo_rows() * cfg.hidden * 4) as f64;
    let mut partition = serde_json::to_value(&data.report).unwrap_or_default();
    if let Some(obj) = partition.as_object_mut() {
        if let Some(exchange_s) = exchange_s {
            obj.insert("exchange_ms_dense_f32".into(), serde_json::json!(exchange_s * 1e3));
            obj.insert("exchange_gbps_dense_f32".into(), serde_json::json!(exchange_bytes / exchange_s / 1e9));
            // one NCCL group per exchange (both directions at once), or tensors moved one by one
            obj.insert("exchange_path".into(), serde_json::json!(if grouped { "nccl-group" } else { "one-by-one" }));
        }
        obj.insert(
            "reserved_bytes_per_device".into(),
            serde_json::json!(per_device.iter().map(|(_, r)| *r).collect::<Vec<_>>()),
        );
    }
    let shape = crate::bench::Shape {
        graph: None,
        kernels: *data.dg.parts()[0].graph.kernel_config(),
        spmm_tile_features: None,
        hot_split: None,
        pools: crate::bench::pools_name(),
    };
    let mut rec = crate::trainbench::epoch_record(
        cfg,
        &host.data.name,
        host.data.num_nodes(),
        host.data.adjacency().nnz(),
        times,
        shape,
        device_name,
    );
    rec.variant = Some(format!(
        "{} layers, {} parts{}",
        cfg.layers,
        spread.parts,
        spread.boundary_sampling.map(|r| format!(", boundary sampling {r}")).unwrap_or_default()
    ));
    rec.peak_bytes = (peak > 0).then_some(peak);
    rec.peak_in_use_bytes = (peak_in_use > 0).then_some(peak_in_use);
    rec.devices = Some(spread.devices.len());
    rec.partition = Some(partition);
    // the estimate of the device that needs the most, to compare with the largest of
    // `partition.reserved_bytes_per_device`
    rec.estimate = Some(estimate);
    Ok(rec)
}

/// Normwise differences between a model on the whole graph (first device) and the same
/// model on `parts` parts spread over `devices`: loss, logits and all parameter gradients,
/// for each convolution, MaxK and mixed precision: `(what, difference)`. On one device the
/// parts share it (the exchange is a copy); on several, the exchange crosses devices.
pub fn equality_checks<B: SparseGnnAutodiffBackend>(devices: &[B::Device], parts: usize) -> Result<Vec<(String, f64)>> {
    use burn::module::{Module, ModuleVisitor, Param};
    use burn_sparse_gnn::random::{random_csr, random_values, RandomGraphSpec};
    use burn_sparse_gnn::{BuildOptions, Csr, Graph, GraphOptions};
    use gnn_models::{ConvKind, GnnModelConfig, Precision};

    struct Grads<'a, B: burn::tensor::backend::AutodiffBackend> {
        grads: &'a B::Gradients,
        out: Vec<f64>,
    }
    impl<B: burn::tensor::backend::AutodiffBackend> ModuleVisitor<B> for Grads<'_, B> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            if let Some(g) = param.val().grad(self.grads) {
                self.out.extend(g.into_data().convert::<f64>().to_vec::<f64>().unwrap_or_default());
            }
        }
    }
    fn normwise(a: &[f64], b: &[f64]) -> f64 {
        if a.len() != b.len() {
            return f64::INFINITY;
        }
        let num: f64 = a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum();
        let den: f64 = b.iter().map(|y| y * y).sum();
        (num / den.max(1e-30)).sqrt()
    }

    let leader = devices.first().ok_or_else(|| AppError::Config("no device".into()))?.clone();
    let (n, d_in, classes) = (3_001usize, 24usize, 5usize);
    let r = random_csr(&RandomGraphSpec {
        n_rows: n,
        n_cols: n,
        avg_degree: 8,
        hub_degree: 1_500,
        empty_fraction: 0.05,
        self_loops: true,
        duplicates: false,
        seed: 3,
    });
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    for i in 0..n {
        for &j in &r.col_idx()[r.row_ptr()[i]..r.row_ptr()[i + 1]] {
            src.push(j as i64);
            dst.push(i as i64);
        }
    }
    let adj = Csr::from_edges(n, &src, &dst, None, BuildOptions::undirected())
        .map_err(|e| AppError::Config(format!("equality graph: {e}")))?;
    let part = partition(&adj, &PartitionOptions { parts, method: PartitionMethod::Metis, seed: 1 })
        .or_else(|_| partition(&adj, &PartitionOptions { parts, method: PartitionMethod::Greedy, seed: 1 }))
        .map_err(|e| AppError::Config(format!("partition: {e}")))?;
    let pg = PartitionedGraph::build(&adj, &part).map_err(|e| AppError::Config(format!("partition: {e}")))?;
    let dg = DistGraph::<B>::new(&adj, &pg, devices, GraphOptions::default())
        .map_err(|e| AppError::Config(e.to_string()))?;
    let dg_split = DistGraph::<B>::with_layout(&adj, &pg, devices, GraphOptions::default(), HaloLayout::Split)
        .map_err(|e| AppError::Config(e.to_string()))?;
    let g = Graph::<B>::new(&adj, &leader, GraphOptions::default());
    let xv: Vec<f32> = random_values(n * d_in, 5).into_iter().map(|v| v as f32).collect();
    let x = Tensor::<B, 2>::from_data(TensorData::new(xv, [n, d_in]), &leader);
    let y: Vec<i64> = (0..n).map(|i| ((i * 13 + i / 7) % classes) as i64).collect();
    let y = Tensor::<B, 1, Int>::from_data(TensorData::new(y, [n]), &leader);
    let train = n.div_ceil(2);
    let w: Vec<f32> = (0..n).map(|i| if i % 2 == 0 { 1.0 / train as f32 } else { 0.0 }).collect();
    let w = Tensor::<B, 1>::from_data(TensorData::new(w, [n]), &leader);
    let half_ok = B::supports_dtype(&leader, burn::tensor::DType::F16);
    let base = |conv| GnnModelConfig::new(conv, d_in, 32, classes).with_layers(3).with_dropout(0.3);
    let mut models = vec![
        ("sage relu", base(ConvKind::Sage)),
        ("sage maxk:8", base(ConvKind::Sage).with_nonlin(Nonlinearity::Maxk { k: 8 })),
        ("gcn classic", base(ConvKind::Gcn).with_linear_io(false).with_input_dropout(0.2)),
        ("gin", base(ConvKind::Gin)),
        ("gat 4 heads", base(ConvKind::Gat).with_gat_heads(4)),
    ];
    if half_ok {
        models.push(("sage relu, mixed f16", base(ConvKind::Sage).with_precision(Precision::MixedF16)));
        models.push((
            "sage maxk:8, mixed f16",
            base(ConvKind::Sage).with_nonlin(Nonlinearity::Maxk { k: 8 }).with_precision(Precision::MixedF16),
        ));
    }
    let (xs, ys, ws) = (dg.scatter(x.clone()), dg.scatter(y.clone()), dg.scatter(w.clone()));
    let mut out = Vec::new();
    for (name, cfg) in models {
        B::seed(&leader, 17);
        let model = cfg.init::<B>(&leader).map_err(|e| AppError::Config(e.to_string()))?;
        // parameters initialise lazily: draw them before the dropout draws of both passes
        model.initialise_parameters();
        // whole graph
        B::seed(&leader, 23);
        let logits = model.forward(&g, x.clone());
        // the loss the parts use (the fused weighted cross-entropy, checked against f64 on its
        // own), so the difference is the partitioning's alone
        let loss = burn_sparse_gnn::loss::sum_terms(
            burn_sparse_gnn::loss::cross_entropy_rows(logits.clone(), y.clone(), w.clone(), g.kernel_config())
                .map_err(|e| AppError::Config(e.to_string()))?,
        );
        let grads = loss.backward();
        let mut gw = Grads::<B> { grads: &grads, out: Vec::new() };
        model.visit(&mut gw);
        let want_logits: Vec<f64> = logits.into_data().convert::<f64>().to_vec().unwrap_or_default();
        let want_loss = scalar(loss);
        // parts, in every halo layout the model runs on
        let layouts: &[(&DistGraph<B>, &str)] =
            if model.splits_halo() { &[(&dg, ""), (&dg_split, ", split halo")] } else { &[(&dg, "")] };
        for &(dg, tag) in layouts {
            B::seed(&leader, 23);
            let plogits = model.forward_partitioned(dg, xs.clone()).map_err(|e| AppError::Config(e.to_string()))?;
            let ploss = partitioned_loss(dg, &plogits, &ys, &ws);
            let pgrads = ploss.backward();
            let mut gp = Grads::<B> { grads: &pgrads, out: Vec::new() };
            model.visit(&mut gp);
            let got_logits: Vec<f64> = dg.gather(plogits).into_data().convert::<f64>().to_vec().unwrap_or_default();
            let got_loss = scalar(ploss);
            out.push((format!("{name}{tag}: loss"), (got_loss - want_loss).abs() / want_loss.abs().max(1e-12)));
            out.push((format!("{name}{tag}: logits"), normwise(&got_logits, &want_logits)));
            out.push((format!("{name}{tag}: gradients"), normwise(&gp.out, &gw.out)));
        }
    }
    Ok(out)
}

/// What `train --devices` / `--parts` writes to `results.json`.
#[derive(Clone, Debug, Serialize)]
pub struct PartitionedReport {
    pub config: TrainConfig,
    pub backend: String,
    pub commit: String,
    pub partition: PartitionReport,
    /// Per epoch: loss, accuracies (train, valid, test) and seconds.
    pub epochs: Vec<PartitionedEpoch>,
    pub train_seconds: f64,
    /// Accuracy of the model the run ends with (the fields a whole-graph run's
    /// `final_accuracy` has, less its test loss).
    pub final_accuracy: SplitAccuracy,
    /// The epoch whose model the run saved (the last, or the best by validation accuracy
    /// with `--select best-valid`).
    pub selected_epoch: Option<usize>,
    /// The checkpoint epoch the run resumed from, if it did.
    pub resumed_from: Option<usize>,
}

/// Accuracy on the train, valid and test splits.
#[derive(Clone, Copy, Debug, Serialize, serde::Deserialize, PartialEq)]
pub struct SplitAccuracy {
    pub train: f64,
    pub valid: f64,
    pub test: f64,
}

/// One epoch of a partitioned run (in `results.json` under the names a whole-graph run's
/// epochs have: `train_loss`, `train_accuracy`, `valid_loss`, `valid_accuracy`, and
/// `test_accuracy`).
#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct PartitionedEpoch {
    pub epoch: usize,
    /// The training step's loss.
    #[serde(rename = "train_loss")]
    pub loss: f64,
    /// Accuracies of the model after the step, evaluated without dropout (a whole-graph run's
    /// per-epoch train accuracy is that of the training step's forward pass, with dropout).
    #[serde(rename = "train_accuracy")]
    pub train: f64,
    #[serde(rename = "valid_accuracy")]
    pub valid: f64,
    /// The loss on the valid split, without dropout.
    pub valid_loss: f64,
    #[serde(rename = "test_accuracy")]
    pub test: f64,
    pub seconds: f64,
    /// What the collectives between processes moved in this epoch, measured on this rank
    /// (multi-process runs, rank 0: the training step and the evaluation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exchange: Option<CommStats>,
}

/// Trains `cfg` on the partitioned graph (`spread`), evaluating every epoch, with a progress
/// bar that shows the exchange (and a plain line every `cfg.log_every` epochs); writes
/// `config.json`, `history.json`, `results.json`, `curves.png`, the checkpoints a whole-graph
/// run writes (`crate::keeper`) and the trained model (`model.mpk`, `model.safetensors`: the
/// whole-graph model's records, which `eval` and `predict` read) into `cfg.out`, each
/// atomically. `resume` continues from a checkpoint epoch of `cfg.out` (the latest complete
/// one at or before it). The partition is `known`, or read from or written to `cache`.
#[allow(clippy::too_many_arguments)]
pub fn train<B: SparseGnnAutodiffBackend>(
    cfg: &TrainConfig,
    host: &HostGraph,
    spread: &Spread,
    cache: &Path,
    known: Option<KnownPartition>,
    device: &B::Device,
    backend: &str,
    resume: Option<usize>,
) -> Result<PartitionedReport> {
    use indicatif::{ProgressBar, ProgressStyle};
    crate::fsutil::make_out_dir(&cfg.out)?;
    spread.check_sampling(cfg)?;
    let devices = devices_of::<B>(device, &spread.devices);
    let mut data = setup::<B>(host, spread, &devices, Some(cache), spread.layout_for(cfg)?, known)?;
    let leader = data.dg.leader().clone();
    let model_cfg = cfg.model_config(host.d_in, host.data.num_classes())?;
    B::seed(&leader, cfg.seed);
    let mut model = model_cfg.init::<B>(&leader).map_err(|e| AppError::Config(e.to_string()))?;
    // drawn now, as the whole-graph run draws them
    model.initialise_parameters();
    let mut optim = adam(cfg).init();
    let mut keeper = crate::keeper::RunKeeper::new(cfg, true);
    let mut epochs = Vec::new();
    if let Some(requested) = resume {
        let r = keeper.resume(requested, model, optim, &leader)?;
        crate::training::checkpoints::check_epochs_left(r.epoch, cfg.epochs)?;
        (model, optim, epochs) = (r.model, r.optim, r.epochs);
    }
    let resumed_from = resume.and(epochs.last().map(|e: &PartitionedEpoch| e.epoch));
    data.report.exchanged_bytes_per_epoch = sampled_bytes(
        exchanged_bytes_per_epoch(cfg, &model, host.d_in, data.dg.halo_rows(), data.dg.layout(), false),
        spread.boundary_sampling,
    );
    let st = &data.report.stats;
    eprintln!(
        "partition: {} parts ({}) on {} device(s): cut edges {} ({:.1} %), halo rows {}, {:.1} MB exchanged per epoch{}",
        st.parts,
        spread.method.as_str(),
        devices.len(),
        st.cut_edges,
        100.0 * st.cut_fraction,
        st.halo_total,
        data.report.exchanged_bytes_per_epoch as f64 / 1e6,
        if data.report.cached { " (cached partition)" } else { "" }
    );
    crate::training::report::write_json(&cfg.out.join("config.json"), cfg)?;
    let first = resumed_from.map_or(1, |e| e + 1);
    let bar = ProgressBar::new(cfg.epochs as u64);
    bar.set_position(first as u64 - 1);
    bar.set_style(
        ProgressStyle::with_template("{bar:30} epoch {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let abandon = |e: AppError| {
        bar.abandon();
        e
    };
    let exchanged_mb = data.report.exchanged_bytes_per_epoch as f64 / 1e6;
    // the parts and their rows without autodiff, for the evaluation after every step
    let eval_data = inner(&data);
    let start = Instant::now();
    let mut first_loss: Option<f64> = None;
    for epoch in first..=cfg.epochs {
        let t = Instant::now();
        B::seed(&leader, cfg.seed.wrapping_mul(1_000_003).wrapping_add(epoch as u64));
        let (next, loss) = train_step(model, &mut optim, &data, cfg.lr, cfg.seed, epoch as u64).map_err(abandon)?;
        model = next;
        let loss = scalar(loss);
        let first = *first_loss.get_or_insert(loss);
        if let Some(reason) = crate::training::renderer::diverged(Some(first).filter(|_| epoch > 1), epoch, loss) {
            return Err(abandon(AppError::Diverged(format!(
                "{reason} in {}; the run stopped there{}",
                crate::training::config::name_of(&cfg.precision),
                cfg.divergence_hint()
            ))));
        }
        let ([train, valid, test], valid_loss) =
            accuracies(&burn::module::AutodiffModule::valid(&model), &eval_data, host).map_err(abandon)?;
        let seconds = t.elapsed().as_secs_f64();
        let e = PartitionedEpoch { epoch, loss, train, valid, valid_loss, test, seconds, exchange: None };
        show_epoch(&bar, cfg, &e, exchanged_mb, true);
        epochs.push(e);
        keeper.after_epoch(&model, &optim, &epochs).map_err(abandon)?;
        if keeper.should_stop(&epochs) {
            break;
        }
    }
    bar.finish();
    let train_seconds = start.elapsed().as_secs_f64();
    let selected_epoch = keeper.selected_epoch(&epochs);
    let trained = keeper.finish(burn::module::AutodiffModule::valid(&model), &epochs, &leader)?;
    let run = RunOutcome { selected_epoch, resumed_from, train_seconds };
    write_outputs(cfg, trained, epochs, data.report.clone(), backend, run)
}

/// How a run ended: the epoch whose model it keeps, the epoch it resumed from, its training
/// time.
pub(crate) struct RunOutcome {
    pub selected_epoch: Option<usize>,
    pub resumed_from: Option<usize>,
    pub train_seconds: f64,
}

/// Shows epoch `e` on the progress bar and, every `cfg.log_every` epochs and at the last, as a
/// line (printed also when the bar is hidden, not a terminal) when `log`.
pub(crate) fn show_epoch(
    bar: &indicatif::ProgressBar,
    cfg: &TrainConfig,
    e: &PartitionedEpoch,
    exchanged_mb: f64,
    log: bool,
) {
    let PartitionedEpoch { epoch, loss, train, valid, seconds, .. } = *e;
    // measured where the exchange goes between processes, the model's count otherwise
    let exchanged = match &e.exchange {
        Some(x) => {
            format!("{:.1} MB exchanged in {:.0} ms", (x.bytes_sent + x.bytes_received) as f64 / 1e6, x.seconds() * 1e3)
        }
        None => format!("{exchanged_mb:.1} MB exchanged"),
    };
    bar.set_message(format!("loss {loss:.4} valid {valid:.4} ({:.0} ms, {exchanged})", seconds * 1e3));
    bar.inc(1);
    if log && cfg.log_every > 0 && (epoch % cfg.log_every == 0 || epoch == cfg.epochs) {
        bar.suspend(|| {
            eprintln!(
                "epoch {epoch:>4}/{}  train loss {loss:.4} acc {train:.4}  valid acc {valid:.4}  {seconds:.3} s  \
                 {exchanged}",
                cfg.epochs
            )
        });
    }
}

/// Writes what a partitioned run leaves in `cfg.out`, each file atomically: the trained model
/// (`model.mpk`, `model.safetensors`: the whole-graph model's records, which `eval` and
/// `predict` read), `history.json`, `curves.png` and `results.json`; returns the report.
pub(crate) fn write_outputs<B: SparseGnnBackend>(
    cfg: &TrainConfig,
    model: GnnModel<B>,
    epochs: Vec<PartitionedEpoch>,
    partition: PartitionReport,
    backend: &str,
    run: RunOutcome,
) -> Result<PartitionedReport> {
    // the trained parameters, as the whole-graph run saves them
    let trained = gnn_train::NodeClassifier::new(model, cfg.seed);
    let model_file = crate::training::train::model_path(&cfg.out);
    burn::module::Module::save_file(trained.clone(), model_file.clone(), &gnn_train::AtomicFileRecorder::new())
        .map_err(|e| AppError::Format { path: model_file.with_extension("mpk"), msg: e.to_string() })?;
    gnn_train::write_safetensors(&trained.model, &crate::training::train::safetensors_path(&cfg.out))?;
    let history = crate::keeper::history(&epochs);
    crate::training::report::write_json(&crate::training::report::history_path(&cfg.out), &history)?;
    let chart = cfg.out.join("curves.png");
    if let Err(e) = crate::charts::write_curves(&chart, &history) {
        eprintln!("warning: no chart written to {}: {e}", chart.display());
    }
    let selected = epochs.iter().find(|e| Some(e.epoch) == run.selected_epoch).or(epochs.last());
    let final_accuracy = selected.map_or(SplitAccuracy { train: f64::NAN, valid: f64::NAN, test: f64::NAN }, |e| {
        SplitAccuracy { train: e.train, valid: e.valid, test: e.test }
    });
    let report = PartitionedReport {
        config: cfg.clone(),
        backend: backend.to_string(),
        commit: commit(),
        partition,
        epochs,
        train_seconds: run.train_seconds,
        final_accuracy,
        selected_epoch: run.selected_epoch,
        resumed_from: run.resumed_from,
    };
    let text = serde_json::to_string_pretty(&report).map_err(|e| AppError::Config(e.to_string()))?;
    crate::fsutil::write_atomic(&cfg.out.join("results.json"), text.as_bytes())?;
    Ok(report)
}

/// The node data of `data` without autodiff (evaluation).
fn inner<B: SparseGnnAutodiffBackend>(data: &PartitionedData<B>) -> PartitionedData<B::InnerBackend> {
    PartitionedData {
        dg: data.dg.inner(),
        xs: data.xs.iter().map(|t| t.clone().inner()).collect(),
        labels: data.labels.iter().map(|t| t.clone().inner()).collect(),
        weights: [0, 1, 2].map(|s| data.weights[s].iter().map(|t| t.clone().inner()).collect()),
        report: data.report.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spread(layout: Option<HaloLayout>, boundary_sampling: Option<f64>) -> Spread {
        Spread { devices: vec![0, 1], parts: 2, method: PartitionMethod::Metis, boundary_sampling, layout }
    }

    #[test]
    fn auto_layout_splits_sage_and_mixed_precision_over_several_devices() {
        let sage = TrainConfig { model: gnn_models::ConvKind::Sage, nonlin: "relu".into(), ..Default::default() };
        assert_eq!(spread(None, None).layout_for(&sage).expect("auto"), HaloLayout::Split);
        let tf32 = TrainConfig { precision: gnn_models::Precision::Tf32, ..sage.clone() };
        assert_eq!(spread(None, None).layout_for(&tf32).expect("auto"), HaloLayout::Split);
        let mixed = TrainConfig { precision: gnn_models::Precision::MixedF16, ..sage.clone() };
        // mixed precision: split over several devices, joined with every part on one
        assert_eq!(spread(None, None).layout_for(&mixed).expect("auto"), HaloLayout::Split);
        let one_device = Spread { devices: vec![0], ..spread(None, None) };
        assert_eq!(one_device.layout_for(&mixed).expect("auto"), HaloLayout::Joined);
        assert_eq!(one_device.layout_for(&sage).expect("auto"), HaloLayout::Split);
        assert_eq!(spread(Some(HaloLayout::Split), None).layout_for(&mixed).expect("asked"), HaloLayout::Split);
        // boundary sampling runs on the split layout too
        assert_eq!(spread(None, Some(0.5)).layout_for(&sage).expect("sampling"), HaloLayout::Split);
        assert_eq!(spread(Some(HaloLayout::Split), Some(0.5)).layout_for(&sage).expect("asked"), HaloLayout::Split);
        assert_eq!(spread(Some(HaloLayout::Joined), None).layout_for(&sage).expect("asked"), HaloLayout::Joined);
        let gat = TrainConfig { model: gnn_models::ConvKind::Gat, ..sage.clone() };
        assert_eq!(spread(None, None).layout_for(&gat).expect("auto"), HaloLayout::Joined);
        let maxk = TrainConfig { nonlin: "maxk:8".into(), ..sage.clone() };
        for cfg in [&gat, &maxk] {
            let err = spread(Some(HaloLayout::Split), None).layout_for(cfg).expect_err("needs the joined layout");
            assert!(err.to_string().contains("--halo-layout split"), "{err}");
        }
    }
}
