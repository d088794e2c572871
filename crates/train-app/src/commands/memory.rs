//! The device memory of a `train` run: the `--memory-budget` size and the estimate it is
//! checked against.

use train_app::error::{AppError, Result};
use train_app::training::TrainConfig;

/// Parses a byte size: a number with an optional unit (B, KB, MB, GB, KiB, MiB, GiB, TiB).
pub(super) fn parse_bytes(s: &str) -> Result<u64> {
    let t = s.trim();
    let split = t.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || AppError::Config(format!("--memory-budget: `{s}` is not a size like 20GiB or 512MB"));
    let v: f64 = num.trim().parse().map_err(|_| bad())?;
    let scale = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => (1u64 << 30) as f64,
        "tib" => (1u64 << 40) as f64,
        _ => return Err(bad()),
    };
    if !(v.is_finite() && v > 0.0) {
        return Err(bad());
    }
    Ok((v * scale) as u64)
}

/// The device memory estimate of a run: the whole graph on one device, or, for a spread run,
/// the device that needs the most: the parts it holds (their rows and edges, plus the halo rows
/// they receive for every convolution, and the halo layout's tensors at the peak).
pub(super) fn estimate(
    cfg: &TrainConfig,
    host: &train_app::training::HostGraph,
    spread: Option<(&burn_sparse_gnn::partition::PartitionedGraph, &train_app::partitioned::Spread)>,
) -> Result<gnn_models::memory_estimate::MemoryEstimate> {
    use gnn_models::memory_estimate::{estimate_training, GraphSize};
    let Some((pg, spread)) = spread else {
        let model = cfg.model_config(host.d_in, host.data.num_classes())?;
        let size = GraphSize {
            nodes: host.data.num_nodes(),
            edges: host.data.adjacency().nnz(),
            features: host.d_in,
            hot_split: host.opts.splits_hot_columns(host.data.adjacency()),
            staging_slots: host.opts.staging_slots(host.data.adjacency()),
        };
        if cfg.training == train_app::training::Training::Minibatch {
            use gnn_models::memory_estimate::{estimate_minibatch, BatchSize};
            let batch = BatchSize::bound(cfg.seed_batch(), &cfg.hop_fanouts(), size.nodes, cfg.prefetch + 1);
            let on_device = cfg.features_on == train_app::training::FeatureHome::Device;
            eprintln!("full-graph training would need about {}", estimate_training(&size, &model));
            return Ok(estimate_minibatch(&size, &model, &batch, on_device));
        }
        return Ok(estimate_training(&size, &model));
    };
    train_app::partitioned::estimate_per_device(cfg, host, pg, spread)
}
