//! Records written atomically and loaded with their shapes checked.

use crate::error::TrainError;
use crate::export::param_shapes;
use burn::module::Module;
use burn::prelude::Backend;
use burn::record::{FileRecorder, FullPrecisionSettings, NamedMpkFileRecorder, Recorder, RecorderError};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use crate::atomic::{temporary_path, write_atomic};

/// Burn's default file format (named MessagePack, full precision, `.mpk`) written atomically:
/// the record is encoded in memory, written to a temporary file in the same folder, synced and
/// renamed, so an interrupted write never leaves a truncated file under the final name.
///
/// burn-train's checkpointer stops training quietly when a save fails; this recorder also keeps
/// every error it returned, so that the caller can tell after `fit` (see
/// [`AtomicFileRecorder::errors`]). Clones share the error list.
#[derive(Clone, Debug, Default)]
pub struct AtomicFileRecorder {
    errors: Arc<Mutex<Vec<String>>>,
}

impl AtomicFileRecorder {
    pub fn new() -> Self {
        Self::default()
    }

    /// The save errors met so far, oldest first.
    pub fn errors(&self) -> Vec<String> {
        self.errors.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl<B: Backend> Recorder<B> for AtomicFileRecorder {
    type Settings = FullPrecisionSettings;
    type RecordArgs = PathBuf;
    type RecordOutput = ();
    type LoadArgs = PathBuf;

    fn save_item<I: Serialize>(&self, item: I, mut file: PathBuf) -> Result<(), RecorderError> {
        file.set_extension(<Self as FileRecorder<B>>::file_extension());
        let result = (|| {
            let mut bytes = Vec::new();
            rmp_serde::encode::write_named(&mut bytes, &item).map_err(|e| e.to_string())?;
            if let Some(parent) = file.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
            }
            write_atomic(&file, &bytes).map_err(|e| e.to_string())
        })();
        result.map_err(|msg| {
            self.errors.lock().unwrap_or_else(|e| e.into_inner()).push(msg.clone());
            RecorderError::Unknown(msg)
        })
    }

    fn load_item<I: DeserializeOwned>(&self, file: &mut PathBuf) -> Result<I, RecorderError> {
        <NamedMpkFileRecorder<FullPrecisionSettings> as Recorder<B>>::load_item(&NamedMpkFileRecorder::new(), file)
    }
}

impl<B: Backend> FileRecorder<B> for AtomicFileRecorder {
    fn file_extension() -> &'static str {
        "mpk"
    }
}

/// Runs `f` with the panic message silenced; `None` if it panicked.
fn without_panic<T>(f: impl FnOnce() -> T) -> Option<T> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).ok();
    std::panic::set_hook(hook);
    r
}

/// Loads the record at `path` (`.mpk` added) into `model`, refusing (never panicking on) a
/// record whose structure or parameter shapes differ from the model's: the error names the
/// first parameter that differs and both shapes.
pub fn load_checked<B: Backend, M: Module<B>>(model: M, path: &Path, device: &B::Device) -> Result<M, TrainError> {
    let file = path.with_extension("mpk");
    let record: M::Record = Recorder::<B>::load(&AtomicFileRecorder::new(), file.clone(), device)
        .map_err(|e| TrainError::Load { path: file.clone(), msg: recorder_message(&e) })?;
    let expected = param_shapes::<B, M>(&model);
    let mismatch = |msg: String| TrainError::Mismatch { path: file.clone(), msg };
    let loaded = without_panic(|| model.load_record(record))
        .ok_or_else(|| mismatch("its layers differ from the model's (another depth, architecture or model)".into()))?;
    let found = param_shapes::<B, M>(&loaded);
    for (e, f) in expected.iter().zip(&found) {
        if e.path != f.path {
            return Err(mismatch(format!("holds parameter {} where the model has {}", f.path, e.path)));
        }
        if e.shape != f.shape {
            return Err(mismatch(format!(
                "parameter {} has shape {:?}, the model needs {:?}",
                e.path, f.shape, e.shape
            )));
        }
    }
    if expected.len() != found.len() {
        return Err(mismatch(format!("holds {} parameters, the model has {}", found.len(), expected.len())));
    }
    Ok(loaded)
}

/// A recorder error in words.
pub fn recorder_message(e: &RecorderError) -> String {
    match e {
        RecorderError::FileNotFound(m) => format!("file not found ({m})"),
        RecorderError::DeserializeError(m) | RecorderError::Unknown(m) => {
            // Burn appends its metadata comparison; the first line says what failed
            let first = m.lines().find(|l| l.starts_with("Error:")).unwrap_or_else(|| m.lines().next().unwrap_or(""));
            format!("not a complete record ({})", first.trim_start_matches("Error: "))
        }
    }
}
