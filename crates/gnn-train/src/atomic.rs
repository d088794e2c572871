//! Files written atomically: a temporary file in the same folder, synced, then renamed.

use crate::error::TrainError;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The temporary path used while writing `path`: a hidden file in the same folder (so that the
/// rename is atomic), named after the process.
pub fn temporary_path(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_else(|| "file".into());
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Writes `bytes` to `path` through a temporary file that is flushed to disk and renamed over
/// `path`: a reader, or a process killed mid-write, never sees a partial file under `path`.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), TrainError> {
    let tmp = temporary_path(path);
    let result = (|| {
        let mut file = std::fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        TrainError::Write { path: path.to_path_buf(), msg: e.to_string() }
    })
}
