//! Training, checkpointing and resuming gives the same final model as an uninterrupted run, and
//! a saved model evaluates to the accuracies its run reported.

use crate::common::tmp;
use burn::backend::Autodiff;
use burn_sparse_gnn::{BuildOptions, Cpu};
use train_app::training::{eval, prepare, train, ModelSelection, TrainConfig};

fn config(dir: &std::path::Path, epochs: usize) -> TrainConfig {
    TrainConfig {
        dataset: "sbm".into(),
        hidden: 32,
        epochs,
        dropout: 0.5,
        out: dir.to_path_buf(),
        log_every: 0,
        ..Default::default()
    }
}

/// The CPU backend's random generator is process-wide and both training (initialisation,
/// dropout) and `eval` (a model is initialised before its record is loaded) draw from it: the
/// tests of this file run one at a time so that they do not perturb each other's seeded draws.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn run(cfg: &TrainConfig, resume: Option<usize>) -> train_app::training::TrainReport {
    let data = train_app::datasets::load(&cfg.dataset, BuildOptions::default()).unwrap();
    let host = prepare(cfg, data).unwrap();
    train::<Autodiff<Cpu>>(cfg, host, &Default::default(), "cpu", resume, false).unwrap()
}

#[test]
fn resumed_training_matches_an_uninterrupted_run() {
    let _one = one_at_a_time();
    let a = tmp("resume-a");
    let full = run(&config(&a, 6), None);
    let b = tmp("resume-b");
    let first = run(&config(&b, 3), None);
    assert_eq!(first.epochs.len(), 3);
    let resumed = run(&config(&b, 6), Some(3));
    // identical accuracies; losses equal up to f32 round-off across the checkpoint boundary
    let close = |x: Option<f64>, y: Option<f64>| (x.unwrap() - y.unwrap()).abs() <= 1e-5 * (1.0 + x.unwrap().abs());
    let (fa, ra) = (&full.final_accuracy, &resumed.final_accuracy);
    assert_eq!((fa.train, fa.valid, fa.test), (ra.train, ra.valid, ra.test), "final accuracies");
    assert!(close(Some(fa.test_loss), Some(ra.test_loss)), "test loss {} vs {}", fa.test_loss, ra.test_loss);
    let (fl, rl) = (full.epochs.last().unwrap(), resumed.epochs.last().unwrap());
    assert_eq!(fl.epoch, 6);
    assert_eq!(rl.epoch, 6);
    assert!(close(fl.train_loss, rl.train_loss), "train loss {:?} vs {:?}", fl.train_loss, rl.train_loss);
    assert!(close(fl.valid_loss, rl.valid_loss), "valid loss {:?} vs {:?}", fl.valid_loss, rl.valid_loss);

    // the saved model evaluates to what the run reported
    let (_, acc) = eval::<Cpu>(&a, None, &Default::default()).unwrap();
    assert_eq!(acc, full.final_accuracy);
    // results file written
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(a.join("results.json")).unwrap()).unwrap();
    assert_eq!(results["epochs"].as_array().unwrap().len(), 6);
    assert!(results["final_accuracy"]["test"].as_f64().unwrap() > 0.5);
    // and the PNG chart of the curves
    let png = std::fs::read(a.join("curves.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    assert!(png.len() > 10_000, "chart of {} bytes", png.len());
}

#[test]
fn best_valid_selection_keeps_the_model_of_the_best_validation_epoch() {
    let _one = one_at_a_time();
    let dir = tmp("best-valid");
    let cfg = TrainConfig {
        select: ModelSelection::BestValid,
        checkpoints: false,
        dropout: 0.8,
        lr: 0.05,
        ..config(&dir, 8)
    };
    let report = run(&cfg, None);
    let best = report
        .epochs
        .iter()
        .fold(None::<&train_app::training::EpochMetrics>, |b, e| match b {
            Some(b) if b.valid_accuracy.unwrap() >= e.valid_accuracy.unwrap() => Some(b),
            _ => Some(e),
        })
        .unwrap();
    assert_eq!(report.selected_epoch, Some(best.epoch));
    // the reported validation accuracy is the one logged at that epoch (same model, same nodes)
    let logged = best.valid_accuracy.unwrap();
    assert!((report.final_accuracy.valid - logged).abs() < 1e-9, "{} vs {logged}", report.final_accuracy.valid);
    // the checkpoints it needed are gone, the saved model is the selected one
    assert!(!dir.join("checkpoint").exists());
    let (_, acc) = eval::<Cpu>(&dir, None, &Default::default()).unwrap();
    assert_eq!(acc, report.final_accuracy);
}

#[test]
fn best_valid_without_checkpoints_removes_only_what_the_run_wrote() {
    let _one = one_at_a_time();
    let dir = tmp("best-valid-keep");
    let earlier = dir.join("checkpoint").join("model-99.mpk");
    std::fs::create_dir_all(earlier.parent().unwrap()).unwrap();
    std::fs::write(&earlier, b"an earlier run's checkpoint").unwrap();
    let cfg = TrainConfig { select: ModelSelection::BestValid, checkpoints: false, ..config(&dir, 3) };
    let report = run(&cfg, None);
    assert!(report.selected_epoch.is_some());
    assert_eq!(std::fs::read(&earlier).unwrap(), b"an earlier run's checkpoint");
    let left: Vec<_> = std::fs::read_dir(dir.join("checkpoint")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, vec![std::ffi::OsString::from("model-99.mpk")]);
}
