//! Atomic file writes: a temporary file in the same folder is written, flushed to disk and
//! renamed over the target, so a reader (or a killed process) never sees a half-written file.

use crate::error::{AppError, Result};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Makes the output folder `dir` given by `--out` (and its parents); the error names the flag.
pub fn make_out_dir(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|source| AppError::OutDir { path: dir.into(), source })
}

/// The files and folders (`true`) a run writes into its folder (partition caches aside).
const RUN_FILES: [(&str, bool); 9] = [
    ("config.json", false),
    ("history.json", false),
    ("results.json", false),
    ("curves.png", false),
    ("model.mpk", false),
    ("model.safetensors", false),
    ("checkpoint", true),
    ("train", true),
    ("valid", true),
];

/// What `train` does for a new (not resumed) run once its input is checked, before the run
/// writes: a run already in `out` is replaced, its files removed first (so a later `--resume` cannot pick up the old
/// run's checkpoints, nor its logs mix with the new ones); says so. Partition caches stay.
pub fn replace_run(out: &Path) -> Result<()> {
    let found: Vec<&str> = RUN_FILES
        .into_iter()
        .filter(|(f, dir)| match dir {
            true => out.join(f).is_dir(),
            false => out.join(f).is_file(),
        })
        .map(|(f, _)| f)
        .collect();
    if found.is_empty() {
        return Ok(());
    }
    eprintln!("replacing the run in {} ({})", out.display(), found.join(", "));
    for f in found {
        let p = out.join(f);
        let removed = if p.is_dir() { std::fs::remove_dir_all(&p) } else { std::fs::remove_file(&p) };
        removed.map_err(|e| AppError::io(&p, e))?;
    }
    Ok(())
}

/// The temporary path used while writing `path` (same folder, so the rename is atomic).
pub fn temporary_path(path: &Path) -> PathBuf {
    let name = path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_else(|| "file".into());
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

/// Writes `path` atomically with `write` (which gets the temporary file). On any error the
/// temporary file is removed and `path` is left as it was.
pub fn write_atomic_with(path: &Path, write: impl FnOnce(File) -> std::io::Result<()>) -> Result<()> {
    let tmp = temporary_path(path);
    let result = (|| {
        let file = File::create(&tmp)?;
        write(file)?;
        // the writer may have buffered: reopen to sync what reached the file
        File::options().write(true).open(&tmp)?.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        AppError::io(path, e)
    })
}

/// Writes `bytes` to `path` atomically.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, |mut f| f.write_all(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temporary() {
        let d = std::env::temp_dir().join(format!("fsutil-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let p = d.join("a.json");
        write_atomic(&p, b"old").unwrap();
        let r = write_atomic_with(&p, |mut f| {
            f.write_all(b"partial")?;
            Err(std::io::Error::other("disk full"))
        });
        assert!(r.is_err());
        assert_eq!(std::fs::read(&p).unwrap(), b"old");
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1);
    }
}
