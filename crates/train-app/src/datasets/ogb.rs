//! OGB node-property datasets from their raw folders: `raw/edge.csv.gz`, `raw/node-feat.csv.gz`,
//! `raw/node-label.csv.gz`, `raw/num-node-list.csv.gz` (optional) and
//! `split/<name>/{train,valid,test}.csv.gz`. Read with progress bars; the graph is symmetrised
//! (the usual preprocessing of ogbn-arxiv / products).
//!
//! The files are gzipped, so their length says nothing of what they inflate to: lines are
//! capped ([`text::MAX_LINE_BYTES`]) and every array grows only after a check against the
//! host's available memory.

use super::text::{self, for_each_record, Blank};
use super::{check_graph_memory, check_split, class_count, folder_name};
use crate::error::{AppError, Result};
use crate::host_memory::push_checked;
use crate::npyio::open_regular;
use burn_sparse_gnn::{BuildOptions, Csr, Features, GraphData};
use flate2::read::GzDecoder;
use indicatif::{ProgressBar, ProgressStyle};
use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

/// Counts the compressed bytes read (for the progress bar).
struct Counting<R> {
    inner: R,
    bar: ProgressBar,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bar.inc(n as u64);
        Ok(n)
    }
}

fn progress_bar(path: &Path, len: u64) -> ProgressBar {
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template("{msg:>24} [{bar:30}] {bytes}/{total_bytes}") {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(path.file_name().map(|s| s.to_string_lossy().to_string()).unwrap_or_default());
    if len < (8 << 20) {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    bar
}

/// Reads a gzipped CSV of numbers, one row per line, calling `row` with the fields.
fn read_csv_gz(path: &Path, blank: Blank, row: impl FnMut(usize, &[&str]) -> Result<()>) -> Result<usize> {
    let file = open_regular(path, "OGB csv.gz file")?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let bar = progress_bar(path, len);
    let reader = BufReader::with_capacity(1 << 20, GzDecoder::new(Counting { inner: file, bar: bar.clone() }));
    let n = for_each_record(path, reader, b',', blank, row)?;
    bar.finish_and_clear();
    Ok(n)
}

/// What a growing array of `path` is, for a memory error.
fn growing(path: &Path, what: &str, len: usize) -> String {
    format!("{}: {what} after {len} rows", path.display())
}

/// Reads a file of one integer per line (node ids, counts; labels with `labels`, which also
/// reads `nan` as unlabeled).
fn one_per_line(path: &Path, labels: bool) -> Result<Vec<i64>> {
    let mut v = Vec::new();
    read_csv_gz(path, if labels { Blank::AtEnd } else { Blank::Skip }, |line, f| {
        if f.len() != 1 {
            return Err(AppError::Format {
                path: path.into(),
                msg: format!(
                    "line {line}: {} values, expected one per line (multi-label datasets are not supported)",
                    f.len()
                ),
            });
        }
        let value = if labels { text::label(path, line, f[0])? } else { text::int(path, line, f[0], "value")? };
        let len = v.len();
        push_checked(&mut v, value, || growing(path, "values", len))
    })?;
    Ok(v)
}

fn ids(path: &Path) -> Result<Vec<i64>> {
    one_per_line(path, false)
}

/// Whether `dir` looks like an OGB dataset folder.
pub fn is_ogb(dir: &Path) -> bool {
    dir.join("raw").join("edge.csv.gz").exists()
}

fn split_dir(dir: &Path) -> Result<PathBuf> {
    let base = dir.join("split");
    let entries = std::fs::read_dir(&base).map_err(|e| AppError::io(&base, e))?;
    let mut names: Vec<PathBuf> = entries.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_dir()).collect();
    names.sort();
    names
        .into_iter()
        .next()
        .ok_or_else(|| AppError::Missing { path: base, what: "a split folder (e.g. split/time)".into() })
}

/// Reads `raw/edge.csv.gz`: `src,dst` per line.
fn read_edges(ep: &Path) -> Result<(Vec<i64>, Vec<i64>)> {
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    read_csv_gz(ep, Blank::Skip, |line, f| {
        if f.len() != 2 {
            return Err(AppError::Format {
                path: ep.into(),
                msg: format!("line {line}: expected `src,dst`, got {} fields", f.len()),
            });
        }
        let len = src.len();
        push_checked(&mut src, text::int(ep, line, f[0], "source node")?, || growing(ep, "edge sources", len))?;
        push_checked(&mut dst, text::int(ep, line, f[1], "target node")?, || growing(ep, "edge targets", len))
    })?;
    Ok((src, dst))
}

/// Reads `raw/node-feat.csv.gz`: one row of `width` numbers per node. Returns the values,
/// the width and the number of rows.
fn read_features(fp: &Path) -> Result<(Vec<f32>, usize, usize)> {
    let mut x: Vec<f32> = Vec::new();
    let mut width = None;
    let n = read_csv_gz(fp, Blank::AtEnd, |line, f| {
        match width {
            None => width = Some(f.len()),
            Some(w) if w != f.len() => {
                return Err(AppError::Format {
                    path: fp.into(),
                    msg: format!("line {line}: {} features, earlier lines have {w}", f.len()),
                })
            }
            _ => {}
        }
        for v in f {
            let len = x.len();
            push_checked(&mut x, text::float(fp, line, v, "feature")?, || growing(fp, "features", len))?;
        }
        Ok(())
    })?;
    Ok((x, width.unwrap_or(0), n))
}

/// Loads an OGB node-property folder.
pub fn load(dir: &Path, opts: BuildOptions) -> Result<GraphData> {
    let raw = dir.join("raw");
    let ep = raw.join("edge.csv.gz");
    let (src, dst) = read_edges(&ep)?;
    let fp = raw.join("node-feat.csv.gz");
    let (x, width, n) = read_features(&fp)?;
    let nn = raw.join("num-node-list.csv.gz");
    if nn.exists() {
        let declared = ids(&nn)?;
        if declared.first().copied() != Some(n as i64) {
            let said = declared.first().map_or("no".to_string(), |d| d.to_string());
            return Err(AppError::Format {
                path: nn,
                msg: format!("declares {said} nodes but node-feat.csv.gz has {n} rows"),
            });
        }
    }
    let lp = raw.join("node-label.csv.gz");
    let labels = one_per_line(&lp, true)?;
    if labels.len() != n {
        return Err(AppError::Shape {
            path: lp,
            found: vec![labels.len()],
            expected: format!("[{n}] (one label per node)"),
        });
    }
    let classes = class_count(&lp, &labels)?;
    let opts = BuildOptions { symmetrize: true, dedup: true, ..opts };
    check_graph_memory(&ep, n, src.len(), opts)?;
    let adj = Csr::from_edges(n, &src, &dst, None, opts).map_err(|e| AppError::graph(ep.display().to_string(), e))?;
    drop((src, dst));
    let features = Features::dense(n, width, x).map_err(|e| AppError::graph(fp.display().to_string(), e))?;
    let sd = split_dir(dir)?;
    let part = |name: &str| -> Result<Vec<i64>> { ids(&sd.join(format!("{name}.csv.gz"))) };
    let split = GraphData::split_from_i64(&part("train")?, &part("valid")?, &part("test")?, n)
        .map_err(|e| AppError::graph(format!("{}/{{train,valid,test}}.csv.gz", sd.display()), e))?;
    check_split(&sd, "train.csv.gz / valid.csv.gz / test.csv.gz", &split, n)?;
    GraphData::new(folder_name(dir, "ogb"), adj, features, labels, classes, Some(split))
        .map_err(|e| AppError::graph(dir.display().to_string(), e))
}
