//! The files of a run folder that training writes and `eval` / `predict` read.

use std::path::{Path, PathBuf};

/// `<out>/model` (Burn record, `.mpk`).
pub fn model_path(dir: &Path) -> PathBuf {
    dir.join("model")
}

/// `<out>/model.safetensors`.
pub fn safetensors_path(dir: &Path) -> PathBuf {
    dir.join("model.safetensors")
}
