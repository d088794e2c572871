//! How a run spreads over devices and parts, and the checks of its options against the model.

use crate::error::{AppError, Result};
use crate::training::TrainConfig;
use burn::tensor::backend::Backend;
use burn::tensor::backend::Device as _;
use burn_sparse_gnn::partition::PartitionMethod;
use gnn_models::partitioned::devices::HaloLayout;

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
    /// step (`gnn_models::partitioned::devices::BoundarySampling`); `None`: every row, the exact model.
    pub boundary_sampling: Option<f64>,
    /// How the parts hold their halo columns; `None`: the split layout where the model allows
    /// it ([`Spread::layout_for`]), the joined one otherwise.
    pub layout: Option<HaloLayout>,
    /// How the halo rows move between the GPUs of this process (one NCCL group by default;
    /// see `burn_sparse_gnn::exchange::DeviceLinks`).
    pub links: burn_sparse_gnn::exchange::DeviceLinks,
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
        let splits = cfg.nonlin == "relu" && cfg.model.supports_split_halo(&conv_options(cfg));
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
        if cfg.nonlin != "relu" || !cfg.model.supports_boundary_sampling(&conv_options(cfg)) {
            let max_pool = cfg.model == gnn_models::ConvKind::Sage && cfg.sage_aggr == gnn_models::SageAggr::MaxPool;
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
    gnn_models::partitioned::devices::devices_of(like, indices)
}

/// The options `cfg`'s convolutions read ([`gnn_models::ConvOptions`]).
fn conv_options(cfg: &TrainConfig) -> gnn_models::ConvOptions {
    gnn_models::ConvOptions {
        hidden: cfg.hidden,
        gcn_norm: cfg.gcn_norm,
        sage_aggr: cfg.sage_aggr,
        gat_heads: cfg.heads,
        gat_attention_dropout: cfg.attention_dropout,
        gin_half_safe_lambda: cfg.gin_lambda,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spread(layout: Option<HaloLayout>, boundary_sampling: Option<f64>) -> Spread {
        Spread {
            devices: vec![0, 1],
            parts: 2,
            method: PartitionMethod::Metis,
            boundary_sampling,
            layout,
            links: Default::default(),
        }
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
