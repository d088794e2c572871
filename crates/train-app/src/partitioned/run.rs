//! The epoch loop of a partitioned run, one for both kinds: parts on devices of one process
//! (`devices::train`) and one part per process (`processes::train`). They differ only in how
//! an epoch trains and evaluates (how the rows and the gradients move, how the loss and the
//! accuracies are gathered: [`Epoch`]) and in who writes the run folder (rank 0 of several
//! processes: the [`RunKeeper`]'s `writes` and [`finish`]'s caller). Everything else is here:
//! the dropout seed of each epoch, the divergence guard, the progress bar and log lines, the
//! checkpoints and early stopping, and the files a run leaves.

use crate::error::{AppError, Result};
use crate::partitioned::checkpoints::RunKeeper;
use crate::partitioned::report::{write_outputs, PartitionReport, PartitionedEpoch, PartitionedReport, RunOutcome};
use crate::training::report::LossScaleSummary;
use crate::training::{TrainConfig, ADAM_EPSILON};
use burn::module::AutodiffModule;
use burn::optim::Optimizer;
use burn::tensor::backend::Backend;
use burn::tensor::{ElementConversion, Tensor};
use burn_sparse_gnn::collective::CommStats;
use burn_sparse_gnn::optim::FusedAdamConfig;
use burn_sparse_gnn::SparseGnnAutodiffBackend;
use gnn_models::GnnModel;
use std::time::Instant;

/// The loss as a float.
pub fn scalar<B: Backend>(loss: Tensor<B, 1>) -> f64 {
    loss.into_scalar().elem()
}

/// Adam as `train` configures it (one fused kernel per parameter tensor).
pub fn adam(cfg: &TrainConfig) -> FusedAdamConfig {
    FusedAdamConfig::new().with_epsilon(ADAM_EPSILON).with_weight_decay(cfg.weight_decay as f32)
}

/// What an epoch measured over the whole graph: the training step's loss, the accuracies of
/// the model after the step (train, valid, test, without dropout) and its loss on valid.
pub(crate) struct Measured {
    pub loss: f64,
    pub accuracies: [f64; 3],
    pub valid_loss: f64,
}

/// How one epoch of a partitioned run trains and evaluates: what differs between parts on the
/// devices of one process and one part per process.
pub(crate) trait Epoch<B: SparseGnnAutodiffBackend, O> {
    /// The training step of `epoch` (its dropout seed already set from `cfg.seed` and the
    /// epoch on the device [`Epoch::device`]) and the evaluation of the updated model, over the
    /// whole graph; returns the updated model and what the epoch measured.
    fn train_and_evaluate(
        &mut self,
        model: GnnModel<B>,
        optim: &mut O,
        epoch: usize,
    ) -> Result<(GnnModel<B>, Measured)>;

    /// What the exchange moved in this epoch where it is measured (between processes), since
    /// the last call.
    fn exchange(&mut self) -> Option<CommStats>;

    /// The device whose seed draws the epoch's dropout masks.
    fn device(&self) -> &B::Device;
}

/// Where the epoch loop starts and what it shows.
pub(crate) struct Start {
    /// Epochs already trained (a resumed run's history; empty otherwise).
    pub epochs: Vec<PartitionedEpoch>,
    /// The epoch a resumed run continues from.
    pub resumed_from: Option<usize>,
    /// Megabytes the exchange moves per epoch by the model's count (shown where the exchange
    /// is not measured).
    pub exchanged_mb: f64,
    /// Whether this process shows the progress bar and the log lines (rank 0 of several).
    pub shows: bool,
}

/// Trains the epochs after `start.resumed_from` up to `cfg.epochs` with `run`'s epochs:
/// seeds each epoch's dropout draws from `cfg.seed` and the epoch, stops with an error when
/// the loss diverges, shows the epoch on a progress bar (and a line every `cfg.log_every`
/// epochs), and after each epoch lets `keeper` write the checkpoints and decide on early
/// stopping. Returns the model, the optimizer, every epoch and the training seconds.
pub(crate) fn train_epochs<B, O, E>(
    cfg: &TrainConfig,
    run: &mut E,
    mut model: GnnModel<B>,
    mut optim: O,
    keeper: &mut RunKeeper,
    start: Start,
) -> Result<(GnnModel<B>, O, Vec<PartitionedEpoch>, f64)>
where
    B: SparseGnnAutodiffBackend,
    O: Optimizer<GnnModel<B>, B>,
    E: Epoch<B, O>,
{
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    let Start { mut epochs, resumed_from, exchanged_mb, shows } = start;
    let first = resumed_from.map_or(1, |e| e + 1);
    let bar = ProgressBar::new(cfg.epochs as u64);
    bar.set_position(first as u64 - 1);
    if !shows {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    bar.set_style(
        ProgressStyle::with_template("{bar:30} epoch {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let abandon = |e: AppError| {
        bar.abandon();
        e
    };
    let started = Instant::now();
    let mut first_loss: Option<f64> = None;
    for epoch in first..=cfg.epochs {
        let t = Instant::now();
        B::seed(run.device(), cfg.seed.wrapping_mul(1_000_003).wrapping_add(epoch as u64));
        let (next, measured) = run.train_and_evaluate(model, &mut optim, epoch).map_err(abandon)?;
        model = next;
        let Measured { loss, accuracies: [train, valid, test], valid_loss } = measured;
        let first = *first_loss.get_or_insert(loss);
        if let Some(reason) = crate::training::renderer::diverged(Some(first).filter(|_| epoch > 1), epoch, loss) {
            return Err(abandon(AppError::Diverged(format!(
                "{reason} in {}; the run stopped there{}",
                crate::training::config::name_of(&cfg.precision),
                cfg.divergence_hint()
            ))));
        }
        let exchange = run.exchange();
        let seconds = t.elapsed().as_secs_f64();
        let e = PartitionedEpoch { epoch, loss, train, valid, valid_loss, test, seconds, exchange };
        show_epoch(&bar, cfg, &e, exchanged_mb, shows);
        epochs.push(e);
        // rank 0 writes the checkpoint; every rank stops on the same (summed) validation loss
        keeper.after_epoch(&model, &optim, &epochs).map_err(abandon)?;
        if keeper.should_stop(&epochs) {
            break;
        }
    }
    bar.finish();
    Ok((model, optim, epochs, started.elapsed().as_secs_f64()))
}

/// Ends a run that trained `epochs` (rank 0's part of a multi-process run; the third argument:
/// the epoch it resumed from, its training seconds, its loss scaling): the model of the
/// selected epoch ([`RunKeeper::finish`]) and the files a partitioned run leaves in `cfg.out`
/// ([`write_outputs`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn finish<B: SparseGnnAutodiffBackend>(
    cfg: &TrainConfig,
    keeper: &mut RunKeeper,
    model: GnnModel<B>,
    epochs: Vec<PartitionedEpoch>,
    partition: PartitionReport,
    backend: &str,
    (resumed_from, train_seconds, loss_scale): (Option<usize>, f64, Option<LossScaleSummary>),
    device: &B::Device,
) -> Result<PartitionedReport> {
    let selected_epoch = keeper.selected_epoch(&epochs);
    let trained = keeper.finish(model.valid(), &epochs, device)?;
    let run = RunOutcome { selected_epoch, resumed_from, train_seconds, loss_scale };
    write_outputs(cfg, trained, epochs, partition, backend, run)
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
