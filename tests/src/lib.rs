//! End-to-end tests live in `tests/`; this library holds their shared helpers.

use burn::backend::Autodiff;
use burn_sparse_gnn::{BuildOptions, Cpu};
use std::path::PathBuf;
use train_app::training::{prepare, train, TrainConfig, TrainReport};

/// `../shared/datasets` (override with `SGNN_DATASETS`); panics with a clear message if absent.
pub fn datasets() -> PathBuf {
    let p = std::env::var("SGNN_DATASETS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/datasets"));
    assert!(p.join("npy/cora/num_nodes.npy").exists(), "datasets not found at {} (set SGNN_DATASETS)", p.display());
    p
}

/// One training at a time: the CPU backend's random generator (dropout) is process-wide, so
/// concurrent trainings would perturb each other's draws and the seeded results.
static TRAINING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Trains `cfg` on the CPU backend and returns the report.
pub fn train_cpu(cfg: &TrainConfig) -> TrainReport {
    let _one_at_a_time = TRAINING.lock().unwrap_or_else(|e| e.into_inner());
    let data = train_app::datasets::load(&cfg.dataset, BuildOptions::default()).expect("dataset loads");
    let host = prepare(cfg, data).expect("data prepared");
    train::<Autodiff<Cpu>>(cfg, host, &Default::default(), "cpu", None, false).expect("training runs")
}
