//! The device memory estimate of a partitioned run, per device.

use crate::error::Result;
use crate::training::{HostGraph, TrainConfig};
use burn_sparse_gnn::partition::PartitionedGraph;
use gnn_models::partitioned::devices::HaloLayout;

use crate::partitioned::spread::Spread;

/// The device memory estimate of training `cfg` over `pg`'s parts on `spread`'s devices, for
/// the device that needs the most: per part it holds, the part's share of the one-device
/// estimate (its rows and edges), the halo rows of every convolution's input, and at the peak
/// the halo rows' gradient and the halo layout's tensors.
pub fn estimate_per_device(
    cfg: &TrainConfig,
    host: &HostGraph,
    pg: &PartitionedGraph,
    spread: &Spread,
) -> Result<gnn_models::memory_estimate::MemoryEstimate> {
    use gnn_models::memory_estimate::{estimate_training, GraphSize, MemoryEstimate};
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
