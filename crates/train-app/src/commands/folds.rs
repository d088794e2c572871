//! `train --task graph --folds K --fold-jobs N`: the folds of a cross-validation trained N at a
//! time, each by a process of this program (`--fold F --fold-worker`) on the same device, its
//! output in its fold's folder (`train.log`); this process holds the run folder, writes the
//! folds before any fold starts and the summary once all have ended.
//!
//! Small graphs leave a GPU mostly idle while one process launches their kernels, so folds
//! in parallel processes shorten a cross-validation about as many times as there are host
//! cores to launch from. Processes, not threads: each fold keeps the seed, the device stream and
//! the memory pools of a run of its own, and trains exactly what a `--fold F` run trains.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};
use train_app::error::{AppError, Result};
use train_app::training::folds::{collect_folds, fold_dir, read_fold};
use train_app::training::graph::prepare_folds;
use train_app::training::TrainConfig;

/// Runs the folds of `cfg` (`cfg.fold_jobs` at a time) and prints the cross-validation.
pub fn launch(cfg: &TrainConfig, resume: Option<usize>) -> Result<()> {
    if resume.is_some() {
        return Err(AppError::Config(
            "a cross-validation run is not resumed; run it again, or resume one fold's run folder".into(),
        ));
    }
    cfg.check()?;
    let folder = train_app::fsutil::claim_run_folder(&cfg.out, false)?;
    folder.start_new_run()?;
    let started = Instant::now();
    let k = prepare_folds(cfg)?;
    let jobs = cfg.fold_jobs.min(k);
    let exe = std::env::current_exe().map_err(|e| AppError::Config(format!("cannot find this program: {e}")))?;
    // the command line is where the arguments are read; each fold adds its own
    let base: Vec<_> = std::env::args_os().skip(1).collect();
    eprintln!(
        "{k} folds, {jobs} at a time, one process each (their output: {})",
        fold_dir(&cfg.out, 0).with_file_name("fold-NN").join("train.log").display()
    );
    let mut running = Vec::with_capacity(jobs);
    let trained = train_folds(cfg, k, jobs, (&exe, &base), &mut running);
    if trained.is_err() {
        // a fold failed, or one could not start or be read: the others stop too
        stop(&mut running);
    }
    trained?;
    let cv = collect_folds(cfg, started.elapsed().as_secs_f64())?;
    super::graph::print_cross_validation(cfg, &cv, &cv.backend);
    drop(folder);
    Ok(())
}

/// A fold's process, its fold (0-based) and when it started.
type Running = (usize, Child, Instant);

/// Runs the `k` folds `jobs` at a time, each a process of `exe` with the arguments `base` and
/// its fold's, and prints each as it ends; the first failure ends it (`running`: the processes
/// still running then).
fn train_folds(
    cfg: &TrainConfig,
    k: usize,
    jobs: usize,
    (exe, base): (&Path, &[std::ffi::OsString]),
    running: &mut Vec<Running>,
) -> Result<()> {
    let mut waiting = (0..k).collect::<std::collections::VecDeque<_>>();
    let mut done = 0;
    while done < k {
        while running.len() < jobs {
            let Some(f) = waiting.pop_front() else { break };
            running.push((f, start_fold(exe, base, cfg, f)?, Instant::now()));
        }
        std::thread::sleep(Duration::from_millis(100));
        let mut i = 0;
        while i < running.len() {
            let status = match running[i].1.try_wait() {
                Ok(None) => {
                    i += 1;
                    continue;
                }
                Ok(Some(status)) => Ok(status),
                Err(e) => Err(e),
            };
            let (f, _, t) = running.swap_remove(i);
            match status {
                Ok(status) if status.success() => {
                    done += 1;
                    let report = read_fold(&cfg.out, f)?;
                    println!(
                        "fold {}/{k}: test acc {:.4} ({:.1} s; {done} of {k} folds done)",
                        f + 1,
                        report.final_accuracy.test.unwrap_or(f64::NAN),
                        t.elapsed().as_secs_f64()
                    );
                }
                failed => {
                    let status = match failed {
                        Ok(s) => s.to_string(),
                        Err(e) => e.to_string(),
                    };
                    let log = log_path(cfg, f);
                    let output = tail(&log, 20);
                    return Err(AppError::Fold { fold: f + 1, status, log, output });
                }
            }
        }
    }
    Ok(())
}

/// The output file of fold `f` (0-based).
fn log_path(cfg: &TrainConfig, f: usize) -> std::path::PathBuf {
    fold_dir(&cfg.out, f).join("train.log")
}

/// Starts the process of fold `f` (0-based), its output into the fold's `train.log`.
fn start_fold(exe: &Path, base: &[std::ffi::OsString], cfg: &TrainConfig, f: usize) -> Result<Child> {
    let dir = fold_dir(&cfg.out, f);
    train_app::fsutil::make_out_dir(&dir)?;
    let path = log_path(cfg, f);
    let log = std::fs::File::create(&path).map_err(|e| AppError::io(&path, e))?;
    let err = log.try_clone().map_err(|e| AppError::io(&path, e))?;
    Command::new(exe)
        .args(base)
        .args(["--fold", &(f + 1).to_string(), "--fold-worker"])
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err)
        .spawn()
        .map_err(|e| AppError::Config(format!("cannot start the process of fold {}: {e}", f + 1)))
}

/// Stops the folds still running.
fn stop(running: &mut Vec<Running>) {
    for (_, c, _) in running.iter_mut() {
        let _ = c.kill();
        let _ = c.wait();
    }
    running.clear();
}

/// The last `n` lines of a file (empty where it cannot be read).
fn tail(path: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
