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

/// The file that marks a folder as a run folder of this program: written first, before any
/// other file of a run. Only folders that carry it (or hold nothing a run did not write) are
/// ever replaced by a new run.
pub const RUN_MARKER: &str = ".train-app-run";

/// The lock file of a run folder: held (an exclusive advisory lock, released when the process
/// ends, however it ends) while a run writes the folder; it holds the writer's process id.
pub const RUN_LOCK: &str = ".train-app-lock";

/// The files and folders (`true`) a run writes into its folder (partition caches aside).
const RUN_FILES: [(&str, bool); 14] = [
    ("config.json", false),
    ("history.json", false),
    ("results.json", false),
    ("metrics.jsonl", false),
    ("curves.png", false),
    ("model.mpk", false),
    ("model.safetensors", false),
    ("checkpoint", true),
    ("train", true),
    ("valid", true),
    ("link-split", true),
    ("graph-data.json", false),
    ("cross-validation.json", false),
    ("folds", true),
];

/// Entries a folder may hold and still count as free for a new run: the marker, the lock and
/// partition caches (`train-app partition --cache` may write one there before the run).
fn is_free_entry(name: &str) -> bool {
    name == RUN_MARKER || name == RUN_LOCK || name.ends_with(".part")
}

/// A run folder held by this process: the lock is released when it is dropped (or when the
/// process ends).
#[derive(Debug)]
pub struct RunFolder {
    path: PathBuf,
    _lock: File,
}

impl RunFolder {
    /// The folder.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for RunFolder {
    fn drop(&mut self) {
        // the lock itself goes with the file handle; the file is tidied away
        let _ = std::fs::remove_file(self.path.join(RUN_LOCK));
    }
}

/// Takes the run folder `out` for a run of this process, before anything else is written there:
///
/// - a folder that holds files of something else (no [`RUN_MARKER`], entries other than
///   partition caches) is refused with an error that names what is there; nothing is written;
/// - a folder another process is writing (its [`RUN_LOCK`] locked) is refused with that
///   process's id.
///
/// A resumed run (`resume`) may continue a run folder that has no marker yet. Nothing is
/// removed here: [`RunFolder::start_new_run`] does that once the run's input is checked.
pub fn claim_run_folder(out: &Path, resume: bool) -> Result<RunFolder> {
    let marked = out.join(RUN_MARKER).is_file();
    if !marked && !resume && out.is_dir() {
        let mut foreign: Vec<String> = std::fs::read_dir(out)
            .map_err(|e| AppError::io(out, e))?
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().to_string())
            .filter(|n| !is_free_entry(n))
            .collect();
        if !foreign.is_empty() {
            foreign.sort();
            let count = foreign.len();
            foreign.truncate(5);
            let more = if count > 5 { format!(" and {} more", count - 5) } else { String::new() };
            return Err(AppError::Config(format!(
                "--out {}: the folder holds files that train-app did not write ({}{more}); a run only \
                 replaces a folder that is empty or holds a run of train-app (one with a {RUN_MARKER} \
                 file); choose another --out or empty the folder",
                out.display(),
                foreign.join(", ")
            )));
        }
    }
    make_out_dir(out)?;
    let lock = lock_folder(out)?;
    if !marked {
        write_atomic(&out.join(RUN_MARKER), b"a run folder of train-app\n")?;
    }
    Ok(RunFolder { path: out.to_path_buf(), _lock: lock })
}

impl RunFolder {
    /// A new (not resumed) run starts in this folder: the files of a run already there are
    /// removed (it says so), so a later `--resume` cannot pick up the old run's checkpoints, nor
    /// its logs mix with the new ones. Partition caches and files the runs did not write stay.
    pub fn start_new_run(&self) -> Result<()> {
        remove_run_files(&self.path)
    }
}

/// Locks `out`'s [`RUN_LOCK`] (created if needed) and writes this process's id into it; a
/// lock held by another process is an error naming it.
fn lock_folder(out: &Path) -> Result<File> {
    let path = out.join(RUN_LOCK);
    let mut file = File::options()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| AppError::io(&path, e))?;
    match file.try_lock() {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            let holder = holder.trim();
            let who = if holder.is_empty() { "another process".to_string() } else { format!("process {holder}") };
            return Err(AppError::Config(format!(
                "--out {}: {who} is writing a run in this folder ({} is locked); wait for it to end \
                 or choose another --out",
                out.display(),
                path.display()
            )));
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(AppError::io(&path, e)),
    }
    let written = (|| {
        file.set_len(0)?;
        file.write_all(format!("{}\n", std::process::id()).as_bytes())?;
        file.flush()
    })();
    written.map_err(|e| AppError::io(&path, e))?;
    Ok(file)
}

/// Removes the files of a run from `out` (partition caches, the marker and the lock stay); says
/// what it removed.
fn remove_run_files(out: &Path) -> Result<()> {
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
