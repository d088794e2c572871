//! The bytes a training epoch sends between parts.

use crate::training::TrainConfig;
use burn_sparse_gnn::SparseGnnBackend;
use gnn_models::partitioned::devices::HaloLayout;
use gnn_models::{GnnModel, Nonlinearity};

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
