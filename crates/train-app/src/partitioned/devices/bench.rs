//! `bench-train --devices` / `--parts`: timed training epochs on the parts, and the halo
//! exchange timed alone.

use crate::bench::Record;
use crate::error::{AppError, Result};
use burn::tensor::Tensor;
use burn_sparse_gnn::{SparseGnnAutodiffBackend, SparseGnnBackend};
use gnn_models::partitioned::devices::DistGraph;
use gnn_models::Hidden;
use std::path::Path;
use std::time::Instant;

use super::{setup, train_step};

/// Synchronises every device of the run.
pub fn sync_all<B: SparseGnnBackend>(dg: &DistGraph<B>) -> Result<()> {
    for p in dg.parts() {
        B::sync(&p.device).map_err(|e| AppError::Backend { backend: "device".into(), msg: e.to_string() })?;
    }
    Ok(())
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
    let mut data = setup::<B>(host, spread, &devices, cache, spread.layout_for(cfg)?, Some(known))?;
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
    let mut scaler = cfg.loss_scale.config(cfg.precision).map(gnn_train::LossScaler::new);
    let (mut times, mut host_times) = (Vec::new(), Vec::new());
    let (mut peak, mut peak_in_use) = (0u64, 0u64);
    // the largest reserved bytes after an epoch, per device
    let mut per_device: Vec<(String, u64)> = Vec::new();
    let total = tb.warmup + tb.epochs;
    for epoch in 0..total {
        sync_all(&data.dg)?;
        let start = Instant::now();
        B::seed(&leader, cfg.seed.wrapping_mul(1_000_003).wrapping_add(epoch as u64 + 1));
        let (next, loss) = train_step(model, &mut optim, &data, cfg.lr, cfg.seed, epoch as u64, scaler.as_mut())?;
        model = next;
        let host_ms = start.elapsed().as_secs_f64() * 1e3;
        sync_all(&data.dg)?;
        let ms = start.elapsed().as_secs_f64() * 1e3;
        let l = part::scalar(loss);
        eprintln!("epoch {}/{total}: {ms:.1} ms (host {host_ms:.1} ms), loss {l:.4}", epoch + 1);
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
            host_times.push(host_ms);
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
    let copies_before = burn_sparse_gnn::exchange::peer_copy_groups();
    // the exchange timed on its own needs `[own; halo]` rows the epochs may never have held:
    // where the device has no room left for them, the epochs' record is kept without it
    let exchange_s = match crate::out_of_memory::catch_out_of_memory(|| time_exchange(&data.dg.inner(), cfg.hidden, 5))
    {
        Ok(r) => Some(r?),
        Err(m) => {
            eprintln!("the exchange alone was not timed: the device ran out of memory ({m})");
            None
        }
    };
    let path = if burn_sparse_gnn::exchange::peer_copy_groups() > copies_before {
        "peer-copies"
    } else if burn_sparse_gnn::exchange::grouped_transfers() > groups_before {
        "nccl-group"
    } else {
        "one-by-one"
    };
    let exchange_bytes = (data.dg.halo_rows() * cfg.hidden * 4) as f64;
    let mut partition = serde_json::to_value(&data.report).unwrap_or_default();
    if let Some(obj) = partition.as_object_mut() {
        if let Some(exchange_s) = exchange_s {
            obj.insert("exchange_ms_dense_f32".into(), serde_json::json!(exchange_s * 1e3));
            obj.insert("exchange_gbps_dense_f32".into(), serde_json::json!(exchange_bytes / exchange_s / 1e9));
            // peer-to-peer copies or one NCCL group per exchange (both directions at once), or
            // tensors moved one by one
            obj.insert("exchange_path".into(), serde_json::json!(path));
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
    rec.host_ms = crate::trainbench::median(&host_times);
    rec.partition = Some(partition);
    // the estimate of the device that needs the most, to compare with the largest of
    // `partition.reserved_bytes_per_device`
    rec.estimate = Some(estimate);
    Ok(rec)
}
