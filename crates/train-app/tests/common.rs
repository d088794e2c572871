//! Shared helpers of the integration tests.
#![allow(dead_code)]

use std::path::PathBuf;

/// `../shared/datasets` of the repository (override with `SGNN_DATASETS`). The tests that read
/// real datasets fail with this message when it is missing.
pub fn datasets() -> PathBuf {
    let p = std::env::var("SGNN_DATASETS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/datasets"));
    assert!(p.join("npy/cora/num_nodes.npy").exists(), "datasets not found at {} (set SGNN_DATASETS)", p.display());
    p
}

/// A fresh temporary directory for one test.
pub fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("sgnn-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}
