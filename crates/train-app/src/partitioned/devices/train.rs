//! `train --devices` / `--parts`: a run on the parts of a partitioned graph in one process.

use super::setup::inner;
use super::{accuracies, setup, train_step, PartitionedData};
use crate::error::{AppError, Result};
use crate::partitioned::checkpoints::RunKeeper;
use crate::partitioned::run::{finish, train_epochs, Epoch, Measured, Start};
use crate::partitioned::{
    adam, devices_of, exchanged_bytes_per_epoch, sampled_bytes, scalar, KnownPartition, PartitionedEpoch,
    PartitionedReport, Spread,
};
use crate::training::{HostGraph, TrainConfig};
use burn::module::AutodiffModule;
use burn::optim::Optimizer;
use burn_sparse_gnn::collective::CommStats;
use burn_sparse_gnn::SparseGnnAutodiffBackend;
use gnn_models::GnnModel;
use gnn_train::LossScaler;
use std::path::Path;

/// Trains `cfg` on the partitioned graph (`spread`), evaluating every epoch, with a progress
/// bar that shows the exchange (and a plain line every `cfg.log_every` epochs); writes
/// `config.json`, `history.json`, `results.json`, `curves.png`, the checkpoints a whole-graph
/// run writes (`crate::partitioned::checkpoints`) and the trained model (`model.mpk`,
/// `model.safetensors`: the whole-graph model's records, which `eval` and `predict` read) into
/// `cfg.out`, each atomically. `resume` continues from a checkpoint epoch of `cfg.out` (the
/// latest complete one at or before it). The partition is `known`, or read from or written to
/// `cache`.
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
    let mut keeper = RunKeeper::new(cfg, true);
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
    let exchanged_mb = data.report.exchanged_bytes_per_epoch as f64 / 1e6;
    // the parts and their rows without autodiff, for the evaluation after every step
    let eval_data = inner(&data);
    let scaler = cfg.loss_scale.config(cfg.precision).map(LossScaler::new);
    let mut run = PartsEpoch { cfg, host, data: &data, eval_data, scaler };
    let start = Start { epochs, resumed_from, exchanged_mb, shows: true };
    let (model, _, epochs, train_seconds) = train_epochs(cfg, &mut run, model, optim, &mut keeper, start)?;
    let loss_scale = run.scaler.as_ref().map(Into::into);
    finish(
        cfg,
        &mut keeper,
        model,
        epochs,
        data.report.clone(),
        backend,
        (resumed_from, train_seconds, loss_scale),
        &leader,
    )
}

/// An epoch on the parts: the training step ([`train_step`]), then the accuracies and the
/// valid loss of the updated model on the parts without autodiff ([`accuracies`]).
struct PartsEpoch<'a, B: SparseGnnAutodiffBackend> {
    cfg: &'a TrainConfig,
    host: &'a HostGraph,
    data: &'a PartitionedData<B>,
    eval_data: PartitionedData<B::InnerBackend>,
    /// Loss scaling (mixed f16).
    scaler: Option<LossScaler>,
}

impl<B: SparseGnnAutodiffBackend, O: Optimizer<GnnModel<B>, B>> Epoch<B, O> for PartsEpoch<'_, B> {
    fn train_and_evaluate(
        &mut self,
        model: GnnModel<B>,
        optim: &mut O,
        epoch: usize,
    ) -> Result<(GnnModel<B>, Measured)> {
        let (model, loss) =
            train_step(model, optim, self.data, self.cfg.lr, self.cfg.seed, epoch as u64, self.scaler.as_mut())?;
        let loss = scalar(loss);
        let (accuracies, valid_loss) = accuracies(&model.valid(), &self.eval_data, self.host)?;
        Ok((model, Measured { loss, accuracies, valid_loss }))
    }

    fn exchange(&mut self) -> Option<CommStats> {
        None
    }

    fn device(&self) -> &B::Device {
        self.data.dg.leader()
    }
}
