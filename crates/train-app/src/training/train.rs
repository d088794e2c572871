//! A training run through burn-train (`SupervisedTraining` + `Learner`): TUI dashboard in a
//! terminal, one plain line per epoch otherwise; checkpoints written atomically; resume from a
//! verified checkpoint; the selected model saved as `model.mpk` and `model.safetensors`; the
//! report as `results.json` and `curves.png`.

use crate::error::{AppError, Result};
use crate::training::checkpoints::{
    best_checkpoint, check_epochs_left, checkpoint_dir, resumable_epoch, verify, BestValidCheckpoints,
};
use crate::training::config::{ModelSelection, TrainConfig};
use crate::training::files::{model_path, safetensors_path};
use crate::training::renderer::{DivergenceGuard, RecordingRenderer};
use crate::training::report::{
    earlier_epochs, history_path, results_path, write_json, DatasetSummary, EpochMetrics, LossScaleSummary, TrainReport,
};
use burn::data::dataloader::batcher::Batcher;
use burn::data::dataloader::{DataLoader, DataLoaderBuilder};
use burn::data::dataset::InMemDataset;
use burn::module::{AutodiffModule, Module};
use burn::optim::lr_scheduler::step::{StepLrScheduler, StepLrSchedulerConfig};
use burn::tensor::backend::AutodiffBackend;
use burn::train::logger::InMemoryMetricLogger;
use burn::train::metric::store::{Aggregate, Direction, Split as MetricSplit};
use burn::train::metric::{AccuracyMetric, LossMetric};
use burn::train::renderer::MetricsRenderer;
use burn::train::{
    ClassificationOutput, InferenceStep, Learner, MetricEarlyStoppingStrategy, StoppingCondition, SupervisedTraining,
    TrainStep,
};
use burn_sparse_gnn::SparseGnnAutodiffBackend;
use gnn_train::{evaluate, Accuracies, AtomicFileRecorder, FullGraphBatcher, HostGraph, NodeClassifier, SplitKind};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Adam's epsilon: PyTorch's default. Burn's default (1e-5) damps the updates of parameters
/// with small gradients, e.g. the first layer over row-normalised bag-of-words features.
pub const ADAM_EPSILON: f32 = 1e-8;

/// What [`run_learner`] hands back: the selected model and the log of the run.
pub(crate) struct Learned<M> {
    pub trained: M,
    pub run: RunLog,
}

/// The log of a run: its epochs, the selection, the timings and how it ended.
pub(crate) struct RunLog {
    /// This run's epochs, in order.
    pub epochs: Vec<EpochMetrics>,
    /// The epochs before the resumed checkpoint (from the run folder's history).
    pub earlier: Vec<EpochMetrics>,
    pub selected_epoch: Option<usize>,
    pub start: Option<usize>,
    pub train_seconds: f64,
    /// Why the divergence guard stopped the run, if it did.
    pub divergence: Option<String>,
    pub graph_setup_seconds: f64,
}

/// What a task measured of its selected model, for its report.
pub(crate) struct Outcome {
    pub final_accuracy: Accuracies,
    pub parameters: usize,
    pub loss_scale: Option<LossScaleSummary>,
    pub link: Option<gnn_train::link::LinkEvaluation>,
}

/// Saves the selected model (`record` as `model.mpk`, `tensors` as `model.safetensors`), writes
/// the run's report and ends the run ([`finish`]).
pub(crate) fn conclude<B: burn::tensor::backend::Backend, M: Module<B>, T: Module<B>>(
    cfg: &TrainConfig,
    stats: &burn_sparse_gnn::DatasetStats,
    backend: &str,
    (record, tensors): (&M, &T),
    run: RunLog,
    outcome: Outcome,
) -> Result<TrainReport> {
    record
        .clone()
        .save_file(model_path(&cfg.out), &AtomicFileRecorder::new())
        .map_err(|e| AppError::Format { path: model_path(&cfg.out).with_extension("mpk"), msg: e.to_string() })?;
    gnn_train::write_safetensors(tensors, &safetensors_path(&cfg.out))?;
    let report = TrainReport {
        config: cfg.clone(),
        dataset: DatasetSummary::from(stats),
        backend: backend.to_string(),
        commit: crate::bench::commit(),
        epochs: all_epochs(run.earlier, run.epochs),
        final_accuracy: outcome.final_accuracy,
        selected_epoch: run.selected_epoch,
        resumed_from: run.start,
        train_seconds: run.train_seconds,
        graph_setup_seconds: run.graph_setup_seconds,
        parameters: outcome.parameters,
        loss_scale: outcome.loss_scale,
        link: outcome.link,
    };
    finish(cfg, report, run.divergence)
}

/// The loaders of a run's training and validation batches, built from the epoch it starts
/// after (0, or the resumed checkpoint's).
pub(crate) type Loaders<B, I, V> =
    (Arc<dyn DataLoader<B, I>>, Arc<dyn DataLoader<<B as AutodiffBackend>::InnerBackend, V>>);

/// The training loop of every task: burn-train's `SupervisedTraining` with Adam, the
/// renderer (TUI or plain lines) recording every epoch, the divergence guard, checkpoints and
/// resume, best-validation selection and early stopping. `loaders` builds the data loaders
/// once the starting epoch is known (and reports the seconds its device setup took); `auc`
/// adds ROC-AUC to the metrics (link prediction); `batches_per_epoch`: the training steps of
/// an epoch (the learning rate steps by `cfg.lr_gamma` every `cfg.lr_step` epochs).
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_learner<B, M>(
    cfg: &TrainConfig,
    model: M,
    device: &B::Device,
    resume: Option<usize>,
    tui: bool,
    auc: bool,
    batches_per_epoch: usize,
    loaders: impl FnOnce(Option<usize>) -> Result<(Loaders<B, M::Input, <M::InnerModule as InferenceStep>::Input>, f64)>,
) -> Result<Learned<M::InnerModule>>
where
    B: SparseGnnAutodiffBackend,
    M: TrainStep<Output = ClassificationOutput<B>> + AutodiffModule<B> + std::fmt::Display + 'static,
    M::InnerModule: InferenceStep<Output = ClassificationOutput<B::InnerBackend>>,
{
    let out = &cfg.out;
    let optim = crate::partitioned::run::adam(cfg).init::<B, M>();
    let checkpoints = checkpoint_dir(out);
    let start = match resume {
        Some(n) => {
            Some(resumable_epoch(&checkpoints, n, |e| verify::<B, _, _>(&checkpoints, e, &model, &optim, device))?)
        }
        None => None,
    };
    if let Some(s) = start {
        check_epochs_left(s, cfg.epochs)?;
    }
    write_json(&out.join("config.json"), cfg)?;
    let earlier = start.map(|s| earlier_epochs(out, s)).unwrap_or_default();
    let ((train_loader, valid_loader), graph_setup_seconds) = loaders(start)?;

    let log = Arc::new(Mutex::new(Vec::new()));
    gnn_train::reset_device_memory();
    let mut training = SupervisedTraining::new(out, train_loader, valid_loader)
        .metrics((AccuracyMetric::new(), LossMetric::new()))
        .num_epochs(cfg.epochs)
        .with_application_logger(None)
        // the metrics stay in memory (early stopping reads them there) and reach the run folder
        // through the renderer's `history.json`: no folder of log files per epoch and split
        .with_metric_logger(InMemoryMetricLogger::default());
    if auc {
        training = training
            .metric_train_numeric(gnn_train::link::LinkAucMetric::new())
            .metric_valid_numeric(gnn_train::link::LinkAucMetric::new());
    }
    let interrupter = training.interrupter();
    let tui = tui.then(|| {
        Box::new(burn::train::renderer::tui::TuiMetricsRendererWrapper::new(interrupter, start))
            as Box<dyn MetricsRenderer>
    });
    let mut renderer = RecordingRenderer::new(tui, log.clone(), cfg.epochs, cfg.log_every);
    if cfg.checkpoints {
        renderer.history = Some(history_path(out));
        renderer.earlier = earlier.clone();
    }
    let history_error = renderer.history_error.clone();
    let divergence = Arc::new(Mutex::new(None));
    renderer.guard = Some(DivergenceGuard {
        interrupter: training.interrupter(),
        first: earlier.first().and_then(|e| e.train_loss),
        growth: cfg.task != crate::training::config::Task::Graph,
        reason: divergence.clone(),
    });
    training = training.renderer(renderer);
    let keep_best = cfg.select == ModelSelection::BestValid;
    let recorder = AtomicFileRecorder::new();
    if cfg.checkpoints || keep_best {
        training = training.with_file_checkpointer(recorder.clone());
    }
    if keep_best {
        training = training.with_checkpointing_strategy(BestValidCheckpoints {
            log: log.clone(),
            saved: Vec::new(),
            keep_last: if cfg.checkpoints { 2 } else { 1 },
        });
    }
    if let Some(epoch) = start {
        training = training.checkpoint(epoch);
    }
    if let Some(p) = cfg.patience {
        training = training.early_stopping(MetricEarlyStoppingStrategy::new(
            &LossMetric::<B>::new(),
            Aggregate::Mean,
            Direction::Lowest,
            MetricSplit::Valid,
            StoppingCondition::NoImprovementSince { n_epochs: p },
        ));
    }
    let started = Instant::now();
    let result = training.launch(Learner::new(model, optim, lr_schedule(cfg, batches_per_epoch)?));
    let train_seconds = started.elapsed().as_secs_f64();
    // burn-train stops quietly when a checkpoint cannot be written: the run fails here instead
    if let Some(e) = recorder.errors().first() {
        return Err(AppError::Checkpoint(format!(
            "cannot write checkpoints to {} ({e}); training stopped; fix the folder or pass --checkpoints false",
            checkpoints.display()
        )));
    }
    if let Some(e) = history_error.lock().unwrap_or_else(|e| e.into_inner()).take() {
        eprintln!("warning: the epoch history was not written: {e}");
    }
    let mut epochs = log.lock().unwrap_or_else(|e| e.into_inner()).clone();
    epochs.sort_by_key(|e| e.epoch);
    let mut trained = result.model;
    let mut selected_epoch = epochs.last().map(|e| e.epoch);
    if keep_best {
        if let Some(best) = best_checkpoint(&epochs, &checkpoints) {
            trained = gnn_train::load_checked(trained, &checkpoints.join(format!("model-{best}")), device)?;
            selected_epoch = Some(best);
        }
        if !cfg.checkpoints {
            // remove what this run wrote, not checkpoints an earlier run left in the folder
            for e in &epochs {
                for kind in ["model", "optim", "scheduler"] {
                    let f = checkpoints.join(format!("{kind}-{}.mpk", e.epoch));
                    if f.exists() {
                        std::fs::remove_file(&f).map_err(|err| AppError::io(&f, err))?;
                    }
                }
            }
            let _ = std::fs::remove_dir(&checkpoints); // only if now empty
        }
    }
    let divergence = divergence.lock().unwrap_or_else(|e| e.into_inner()).take();
    let run = RunLog { epochs, earlier, selected_epoch, start, train_seconds, divergence, graph_setup_seconds };
    Ok(Learned { trained, run })
}

/// The learning rate of every step: `cfg.lr`, times `cfg.lr_gamma` every `cfg.lr_step` epochs
/// (burn-train steps the schedule once per batch).
fn lr_schedule(cfg: &TrainConfig, batches_per_epoch: usize) -> Result<StepLrScheduler> {
    let step = match cfg.lr_step {
        Some(epochs) => epochs.saturating_mul(batches_per_epoch.max(1)),
        None => i32::MAX as usize,
    };
    StepLrSchedulerConfig::new(cfg.lr, step).with_gamma(cfg.lr_gamma).init().map_err(AppError::Config)
}

/// Writes a finished run's report (`results.json`, `history.json`, `curves.png`) and turns a
/// diverged run into its error.
pub(crate) fn finish(cfg: &TrainConfig, report: TrainReport, divergence: Option<String>) -> Result<TrainReport> {
    let out = &cfg.out;
    let path = results_path(out);
    write_json(&path, &report)?;
    if cfg.checkpoints {
        write_json(&history_path(out), &report.epochs)?;
    }
    let chart = out.join("curves.png");
    if let Err(e) = crate::charts::write_curves(&chart, &report.epochs) {
        eprintln!("warning: no chart written to {}: {e}", chart.display());
    }
    let finite = |v: Option<f64>| v.is_none_or(f64::is_finite);
    let hint = cfg.divergence_hint();
    if let Some(reason) = divergence {
        return Err(AppError::Diverged(format!(
            "{reason} in {}; the run stopped there (see {}){hint}",
            crate::training::config::name_of(&cfg.precision),
            path.display()
        )));
    }
    if let Some(e) = report.epochs.iter().find(|e| !finite(e.train_loss) || !finite(e.valid_loss)) {
        return Err(AppError::Diverged(format!(
            "loss train {:?} / valid {:?} at epoch {} (see {}){hint}",
            e.train_loss,
            e.valid_loss,
            e.epoch,
            path.display()
        )));
    }
    if !report.final_accuracy.test_loss.is_finite() {
        return Err(AppError::Diverged(format!("test loss {}{hint}", report.final_accuracy.test_loss)));
    }
    Ok(report)
}

/// The whole history: the epochs before the resumed checkpoint, then this run's.
pub(crate) fn all_epochs(earlier: Vec<EpochMetrics>, epochs: Vec<EpochMetrics>) -> Vec<EpochMetrics> {
    let mut all = earlier;
    all.retain(|e| !epochs.iter().any(|n| n.epoch == e.epoch));
    all.extend(epochs);
    all.sort_by_key(|e| e.epoch);
    all
}

/// Trains node classification on backend `B`; `resume` continues from a checkpoint epoch of
/// `cfg.out` (the latest complete one at or before it).
/// `tui`: the terminal dashboard (else plain epoch lines).
pub fn train<B: SparseGnnAutodiffBackend>(
    cfg: &TrainConfig,
    host: HostGraph,
    device: &B::Device,
    backend: &str,
    resume: Option<usize>,
    tui: bool,
) -> Result<TrainReport> {
    cfg.check()?;
    cfg.check_device::<B>(device, backend)?;
    let stats = host.data.stats();
    if backend != "cuda" {
        // activations live in host memory on the CPU and lavapipe backends; on CUDA the
        // device estimate of `train` decides
        cfg.check_size(host.data.num_nodes(), host.d_in, host.data.num_classes())?;
    }
    let model_cfg = cfg.model_config(host.d_in, host.data.num_classes())?;
    crate::fsutil::make_out_dir(&cfg.out)?;
    B::seed(device, cfg.seed);
    let model = model_cfg.init::<B>(device).map_err(|e| AppError::Config(e.to_string()))?;
    // every parameter drawn now, from `cfg.seed` alone (not on first use, between the first
    // epoch's dropout draws): a run on a partitioned graph starts from the same parameters
    model.initialise_parameters();
    let model = NodeClassifier::new(model, cfg.seed).with_loss_scale(cfg.loss_scale.config(cfg.precision));
    let parameters = model.num_params();
    let host = Arc::new(host);
    let batcher_slot: Arc<Mutex<Option<FullGraphBatcher>>> = Arc::new(Mutex::new(None));
    let slot = batcher_slot.clone();
    let learned = run_learner::<B, _>(cfg, model, device, resume, tui, false, 1, |start| {
        let batcher = FullGraphBatcher::new(host.clone(), start.unwrap_or(0));
        let setup = Instant::now();
        let _ = batcher.resident::<B>(device);
        let seconds = setup.elapsed().as_secs_f64();
        *slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(batcher.clone());
        Ok((loaders::<B, _, _, _>(batcher, device), seconds))
    })?;
    let batcher = batcher_slot.lock().unwrap_or_else(|e| e.into_inner()).take();
    let batcher = batcher.ok_or_else(|| AppError::Config("the training data was never prepared".into()))?;
    let Learned { trained, run } = learned;
    let loss_scale = trained.loss_scaler().as_ref().map(LossScaleSummary::from);
    let final_accuracy = evaluate(&trained, &batcher, device);
    let outcome = Outcome { final_accuracy, parameters, loss_scale, link: None };
    conclude(cfg, &stats, backend, (&trained, &trained.model), run, outcome)
}

/// burn-train's loaders over a full-graph batcher: one batch per epoch and split.
pub(crate) fn loaders<B, T, O, V>(batcher: T, device: &B::Device) -> Loaders<B, O, V>
where
    B: SparseGnnAutodiffBackend,
    T: Batcher<B, SplitKind, O> + Batcher<B::InnerBackend, SplitKind, V> + Clone + Send + Sync + 'static,
    O: Send + Clone + std::fmt::Debug + 'static,
    V: Send + Clone + std::fmt::Debug + 'static,
{
    let train = DataLoaderBuilder::new(batcher.clone())
        .batch_size(1)
        .set_device(device.clone())
        .build(InMemDataset::new(vec![SplitKind::Train]));
    let valid = DataLoaderBuilder::new(batcher)
        .batch_size(1)
        .set_device(device.clone())
        .build(InMemDataset::new(vec![SplitKind::Valid]));
    (train, valid)
}
