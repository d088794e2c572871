//! OGB node-property datasets from their raw folders: `raw/edge.csv.gz`, `raw/node-feat.csv.gz`,
//! `raw/node-label.csv.gz`, `raw/num-node-list.csv.gz` (optional) and
//! `split/<name>/{train,valid,test}.csv.gz`. Read with progress bars; the graph is symmetrised
//! (the usual preprocessing of ogbn-arxiv / products).

use crate::error::{AppError, Result};
use burn_sparse_gnn::{BuildOptions, Csr, Features, GraphData, Split};
use flate2::read::GzDecoder;
use indicatif::{ProgressBar, ProgressStyle};
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
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

/// Reads a gzipped CSV of numbers, one row per line, calling `row` with the fields.
fn read_csv_gz(path: &Path, mut row: impl FnMut(usize, &[&str]) -> Result<()>) -> Result<usize> {
    let file = File::open(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => AppError::Missing { path: path.into(), what: "OGB csv.gz file".into() },
        _ => AppError::io(path, e),
    })?;
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{msg:>24} [{bar:30}] {bytes}/{total_bytes}")
            .expect("template")
            .progress_chars("=> "),
    );
    bar.set_message(path.file_name().map(|s| s.to_string_lossy().to_string()).unwrap_or_default());
    if len < (8 << 20) {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    let reader = BufReader::with_capacity(1 << 20, GzDecoder::new(Counting { inner: file, bar: bar.clone() }));
    let mut n = 0;
    for (i, line) in reader.lines().enumerate() {
        let line = line.map_err(|e| AppError::Format { path: path.into(), msg: format!("line {}: {e}", i + 1) })?;
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(|s| s.trim()).collect();
        row(i + 1, &fields)?;
        n += 1;
    }
    bar.finish_and_clear();
    Ok(n)
}

fn parse<T: std::str::FromStr>(path: &Path, line: usize, s: &str) -> Result<T> {
    s.parse()
        .map_err(|_| AppError::Format { path: path.into(), msg: format!("line {line}: `{s}` is not a valid number") })
}

fn ids(path: &Path) -> Result<Vec<i64>> {
    let mut v = Vec::new();
    read_csv_gz(path, |line, f| {
        v.push(parse(path, line, f[0])?);
        Ok(())
    })?;
    Ok(v)
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

/// Loads an OGB node-property folder.
pub fn load(dir: &Path, opts: BuildOptions) -> Result<GraphData> {
    let raw = dir.join("raw");
    let ep = raw.join("edge.csv.gz");
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    read_csv_gz(&ep, |line, f| {
        if f.len() != 2 {
            return Err(AppError::Format {
                path: ep.clone(),
                msg: format!("line {line}: expected `src,dst`, got {} fields", f.len()),
            });
        }
        src.push(parse(&ep, line, f[0])?);
        dst.push(parse(&ep, line, f[1])?);
        Ok(())
    })?;
    let fp = raw.join("node-feat.csv.gz");
    let mut x: Vec<f32> = Vec::new();
    let mut width = None;
    let n = read_csv_gz(&fp, |line, f| {
        match width {
            None => width = Some(f.len()),
            Some(w) if w != f.len() => {
                return Err(AppError::Format {
                    path: fp.clone(),
                    msg: format!("line {line}: {} features, earlier lines have {w}", f.len()),
                })
            }
            _ => {}
        }
        for v in f {
            x.push(parse(&fp, line, v)?);
        }
        Ok(())
    })?;
    let nn = raw.join("num-node-list.csv.gz");
    if nn.exists() {
        let declared = ids(&nn)?;
        if declared.first().copied() != Some(n as i64) {
            return Err(AppError::Format {
                path: nn,
                msg: format!("declares {:?} nodes but node-feat.csv.gz has {n} rows", declared.first()),
            });
        }
    }
    let lp = raw.join("node-label.csv.gz");
    let labels = ids(&lp)?;
    if labels.len() != n {
        return Err(AppError::Shape {
            path: lp,
            found: vec![labels.len()],
            expected: format!("[{n}] (one label per node)"),
        });
    }
    let opts = BuildOptions { symmetrize: true, dedup: true, ..opts };
    let adj = Csr::from_edges(n, &src, &dst, None, opts).map_err(|e| AppError::graph(ep.display().to_string(), e))?;
    let features =
        Features::dense(n, width.unwrap_or(0), x).map_err(|e| AppError::graph(fp.display().to_string(), e))?;
    let sd = split_dir(dir)?;
    let part = |name: &str| -> Result<Vec<i64>> { ids(&sd.join(format!("{name}.csv.gz"))) };
    let split: Split = GraphData::split_from_i64(&part("train")?, &part("valid")?, &part("test")?, n)
        .map_err(|e| AppError::graph(sd.display().to_string(), e))?;
    let classes = labels.iter().copied().max().unwrap_or(-1) + 1;
    let name = dir.file_name().map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| "ogb".into());
    GraphData::new(name, adj, features, labels, classes.max(0) as usize, Some(split))
        .map_err(|e| AppError::graph(dir.display().to_string(), e))
}
