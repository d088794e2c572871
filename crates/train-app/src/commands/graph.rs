//! `train --task graph`: the run (one split or the folds) and its summary lines.

use burn_sparse_gnn::SparseGnnAutodiffBackend;
use train_app::error::{AppError, Result};
use train_app::fsutil::RunFolder;
use train_app::training::config::name_of;
use train_app::training::graph::{train_graph, CrossValidation, GraphOutcome};
use train_app::training::TrainConfig;

/// How `train --task graph` runs in this process.
pub struct GraphRun {
    /// The checkpoint epoch to resume from.
    pub resume: Option<usize>,
    pub dry_run: bool,
    /// Options that spread a run over devices or processes were given (refused).
    pub partitioned: bool,
    /// One fold of a `--fold-jobs` run (its parent holds the run folder).
    pub fold_worker: bool,
}

/// Trains graph classification on one device (`folder`: the claimed run folder, `None` for
/// `--dry-run` and a fold of a `--fold-jobs` run).
pub fn run<B: SparseGnnAutodiffBackend>(
    cfg: &TrainConfig,
    how: GraphRun,
    device: B::Device,
    backend: &str,
    folder: Option<RunFolder>,
) -> Result<()> {
    let GraphRun { resume, dry_run, partitioned, fold_worker } = how;
    if partitioned {
        return Err(AppError::Config(
            "--task graph trains on one device; --devices / --processes partition node classification only".into(),
        ));
    }
    if dry_run {
        let data = train_app::training::graph::load_tu(&cfg.dataset)?;
        println!(
            "{}: {} graphs, {} nodes, {} edges",
            data.name,
            data.num_graphs(),
            data.num_nodes(),
            data.adjacency.nnz()
        );
        return Ok(());
    }
    if let (Some(f), None) = (&folder, resume) {
        f.start_new_run()?;
    }
    let tui = std::io::IsTerminal::is_terminal(&std::io::stdout()) && std::env::var_os("SGNN_PLAIN_LOG").is_none();
    match train_graph::<B>(cfg, &device, backend, resume, tui, fold_worker)? {
        GraphOutcome::Split(report) => {
            let a = &report.final_accuracy;
            println!(
                "{} graph classification on {} ({backend}, {}): {} epochs in {:.1} s; test acc {:.4} \
                 (train {:.4}, valid {:.4})",
                cfg.model.name(),
                report.dataset.name,
                name_of(&cfg.precision),
                report.epochs.len(),
                report.train_seconds,
                a.test,
                a.train,
                a.valid
            );
            println!("results: {}", cfg.out.join("results.json").display());
        }
        GraphOutcome::Folds(cv) if cfg.fold.is_some() => {
            let f = cfg.fold.unwrap_or(1);
            println!(
                "{} graph classification on {} ({backend}), fold {f}/{} x {} epochs in {:.1} s: final test acc {:.4}",
                cfg.model.name(),
                cv.dataset,
                cfg.folds,
                cv.epochs,
                cv.seconds,
                cv.final_accuracy.first().copied().unwrap_or(f64::NAN)
            );
            let dir = train_app::training::graph::fold_dir(&cfg.out, f - 1);
            println!("results: {}", dir.join("results.json").display());
        }
        GraphOutcome::Folds(cv) => print_cross_validation(cfg, &cv, backend),
    }
    Ok(())
}

/// The summary lines of a cross-validation run.
pub fn print_cross_validation(cfg: &TrainConfig, cv: &CrossValidation, backend: &str) {
    println!(
        "{} graph classification on {} ({backend}, {}), {} folds x {} epochs in {:.1} s: test acc {:.4} \
         ± {:.4} at epoch {} (best mean over the folds); last epoch {:.4}",
        cfg.model.name(),
        cv.dataset,
        name_of(&cfg.precision),
        cv.folds,
        cv.epochs,
        cv.seconds,
        cv.mean_accuracy,
        cv.std_accuracy,
        cv.best_epoch,
        cv.last_epoch_mean
    );
    println!("results: {}", cfg.out.join(train_app::training::graph::CROSS_VALIDATION).display());
}
