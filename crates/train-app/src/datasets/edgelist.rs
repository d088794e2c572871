//! Edge-list folders: the simplest layout to write from pandas or numpy (`docs/DATASETS.md`).
//!
//! | file | content |
//! |---|---|
//! | `edges.csv`, `edges.tsv` or `edge_index.npy` (exactly one) | CSV / TSV: `source,target[,weight]` per line, header optional, `#` comments; npy: PyG's `edge_index`, integers `[2, E]` |
//! | `labels.csv` or `labels.npy` | one class id per node (`-1` = unlabeled): their count is the node count N |
//! | `features.csv` or `features.npy` (optional) | `[N, F]` numbers, row i = node i; without, one-hot node ids (sparse) |
//! | `train_idx`, `val_idx`, `test_idx` `.csv` or `.npy` (optional, all three) | node ids, or a mask of N entries (bool, or 0 / 1) |
//!
//! Edges are used as listed (source -> target, duplicates kept): an undirected graph lists both
//! directions (as PyG's `edge_index` does), or is symmetrised with `train --symmetrize`.

use super::npy::read_edge_index;
use super::text::{self, delimiter_of, for_each_record, is_header, open_text, Blank};
use super::{check_graph_memory, check_split, class_count, folder_name, split_ids};
use crate::error::{AppError, Result};
use crate::host_memory::push_checked;
use crate::npyio::{expect_shape, read_floats, read_ints, read_ints_or_bools};
use burn_sparse_gnn::data::MAX_INDEX;
use burn_sparse_gnn::{BuildOptions, Csr, Features, GraphData, Split};
use std::path::{Path, PathBuf};

/// The edge files, one of which a folder holds.
const EDGES: [&str; 3] = ["edges.csv", "edges.tsv", "edge_index.npy"];
const LABELS: [&str; 2] = ["labels.csv", "labels.npy"];
const FEATURES: [&str; 2] = ["features.csv", "features.npy"];
const SPLIT: [&str; 3] = ["train_idx", "val_idx", "test_idx"];

/// Whether `dir` looks like an edge-list folder: an edge file and a label file.
pub fn is_edgelist(dir: &Path) -> bool {
    EDGES.iter().any(|f| dir.join(f).exists()) && LABELS.iter().any(|f| dir.join(f).exists())
}

/// The one file of `names` that `dir` holds, `None` without any; two is an error.
fn one_of(dir: &Path, names: &[&str], what: &str) -> Result<Option<PathBuf>> {
    let found: Vec<PathBuf> = names.iter().map(|f| dir.join(f)).filter(|p| p.exists()).collect();
    if found.len() > 1 {
        let list: Vec<String> =
            found.iter().map(|p| p.file_name().unwrap_or_default().to_string_lossy().to_string()).collect();
        return Err(AppError::Format {
            path: dir.into(),
            msg: format!("holds {} for the {what}: keep one", list.join(" and ")),
        });
    }
    Ok(found.into_iter().next())
}

fn is_npy(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "npy")
}

/// Reads the records of a text table, skipping a header (a first record without any number).
fn read_table(path: &Path, what: &str, blank: Blank, mut row: impl FnMut(usize, &[&str]) -> Result<()>) -> Result<()> {
    let reader = open_text(path, what)?;
    let mut first = true;
    for_each_record(path, reader, delimiter_of(path), blank, |line, fields| {
        if std::mem::take(&mut first) && is_header(fields) {
            return Ok(());
        }
        row(line, fields)
    })?;
    Ok(())
}

/// A growing array of `path`, for a memory error.
fn growing(path: &Path, what: &str, len: usize) -> String {
    format!("{}: {what} after {len} values", path.display())
}

/// Refuses a record of the wrong number of fields.
fn expect_fields(path: &Path, line: usize, fields: &[&str], allowed: &[usize], what: &str) -> Result<()> {
    if allowed.contains(&fields.len()) {
        return Ok(());
    }
    Err(AppError::Format { path: path.into(), msg: format!("line {line}: {} fields, expected {what}", fields.len()) })
}

/// Reads the labels: one per node, so their count is the node count.
fn read_labels(dir: &Path) -> Result<(PathBuf, Vec<i64>)> {
    let path = one_of(dir, &LABELS, "labels")?.ok_or_else(|| AppError::Missing {
        path: dir.join(LABELS[0]),
        what: "labels: labels.csv or labels.npy".into(),
    })?;
    let labels = if is_npy(&path) {
        let a = read_ints(&path)?;
        if !matches!(a.shape.as_slice(), [_] | [_, 1]) {
            return Err(AppError::Shape { path, found: a.shape, expected: "[N] (one label per node)".into() });
        }
        a.data
    } else {
        let mut v = Vec::new();
        read_table(&path, "labels csv", Blank::AtEnd, |line, f| {
            expect_fields(&path, line, f, &[1], "one label per line")?;
            let len = v.len();
            push_checked(&mut v, text::label(&path, line, f[0])?, || growing(&path, "labels", len))
        })?;
        v
    };
    if labels.len() > MAX_INDEX {
        return Err(AppError::Format {
            path,
            msg: format!("{} labels: more nodes than {MAX_INDEX} (node ids are 32-bit)", labels.len()),
        });
    }
    Ok((path, labels))
}

/// A node id of an edge file, checked against the node count the labels give.
fn node_id(path: &Path, line: usize, field: &str, n: usize, labels: &Path) -> Result<i64> {
    let id = text::int(path, line, field, "node id")?;
    if id < 0 || id as u64 >= n as u64 {
        let name = labels.file_name().unwrap_or_default().to_string_lossy();
        return Err(AppError::Format {
            path: path.into(),
            msg: format!("line {line}: node {id} is outside 0..{n} ({name} lists {n} nodes)"),
        });
    }
    Ok(id)
}

/// Edges as sources, targets and optional weights.
type EdgeList = (Vec<i64>, Vec<i64>, Option<Vec<f32>>);

/// Reads a CSV / TSV edge list: `source,target` or `source,target,weight` on every line.
fn read_edge_table(path: &Path, n: usize, labels: &Path) -> Result<EdgeList> {
    let (mut src, mut dst, mut w) = (Vec::new(), Vec::new(), Vec::new());
    let mut width = None;
    read_table(path, "edge list", Blank::Skip, |line, f| {
        expect_fields(path, line, f, &[2, 3], "source, target and an optional weight")?;
        let first = *width.get_or_insert(f.len());
        if first != f.len() {
            return Err(AppError::Format {
                path: path.into(),
                msg: format!("line {line}: {} fields, earlier lines have {first}", f.len()),
            });
        }
        let len = src.len();
        push_checked(&mut src, node_id(path, line, f[0], n, labels)?, || growing(path, "sources", len))?;
        push_checked(&mut dst, node_id(path, line, f[1], n, labels)?, || growing(path, "targets", len))?;
        if let Some(x) = f.get(2) {
            let v = text::float(path, line, x, "weight")?;
            if !v.is_finite() {
                return Err(AppError::Format {
                    path: path.into(),
                    msg: format!("line {line}: weight {v} is not finite"),
                });
            }
            push_checked(&mut w, v, || growing(path, "weights", len))?;
        }
        Ok(())
    })?;
    Ok((src, dst, (width == Some(3)).then_some(w)))
}

/// Reads the features: `[N, F]` from `features.npy` or `features.csv`, one-hot ids without.
fn read_features(dir: &Path, n: usize) -> Result<Features> {
    let Some(path) = one_of(dir, &FEATURES, "features")? else {
        let ip: Vec<i64> = (0..=n as i64).collect();
        let ix: Vec<i64> = (0..n as i64).collect();
        return Features::sparse(n, n, &ip, &ix, vec![1.0; n])
            .map_err(|e| AppError::graph(dir.display().to_string(), e));
    };
    let (x, f) = if is_npy(&path) {
        let a = read_floats(&path)?;
        expect_shape(&path, &a.shape, &[Some(n), None])?;
        let f = a.shape[1];
        (a.data, f)
    } else {
        let (mut x, mut width, mut rows) = (Vec::new(), None, 0usize);
        read_table(&path, "features csv", Blank::AtEnd, |line, fields| {
            let first = *width.get_or_insert(fields.len());
            if first != fields.len() {
                return Err(AppError::Format {
                    path: path.clone(),
                    msg: format!("line {line}: {} features, earlier lines have {first}", fields.len()),
                });
            }
            for v in fields {
                let len = x.len();
                push_checked(&mut x, text::float(&path, line, v, "feature")?, || growing(&path, "features", len))?;
            }
            rows += 1;
            Ok(())
        })?;
        if rows != n {
            return Err(AppError::Shape {
                path,
                found: vec![rows, width.unwrap_or(0)],
                expected: format!("[{n}, F]: one row per node, as the labels give {n} nodes"),
            });
        }
        (x, width.unwrap_or(0))
    };
    Features::dense(n, f, x).map_err(|e| AppError::graph(path.display().to_string(), e))
}

/// Reads one split file of node ids (`.npy` 1-D, or `.csv` one id per line), or a mask of one
/// entry per node of the `n` (see [`split_ids`]).
fn read_ids(path: &Path, n: usize) -> Result<Vec<i64>> {
    if is_npy(path) {
        let (a, bools) = read_ints_or_bools(path)?;
        expect_shape(path, &a.shape, &[None])?;
        return split_ids(path, a.data, bools, n);
    }
    let mut v = Vec::new();
    read_table(path, "split csv", Blank::Skip, |line, f| {
        expect_fields(path, line, f, &[1], "one node id per line")?;
        let len = v.len();
        push_checked(&mut v, text::int(path, line, f[0], "node id")?, || growing(path, "ids", len))
    })?;
    split_ids(path, v, false, n)
}

/// Reads the split: all three of `train_idx`, `val_idx`, `test_idx` (`.npy` or `.csv`) or none.
fn read_split(dir: &Path, n: usize) -> Result<Option<Split>> {
    let mut files = Vec::new();
    for part in SPLIT {
        files.push(one_of(dir, &[&format!("{part}.csv"), &format!("{part}.npy")], part)?);
    }
    if files.iter().all(Option::is_none) {
        return Ok(None);
    }
    let mut parts = Vec::new();
    for (part, file) in SPLIT.iter().zip(&files) {
        let path = file.as_ref().ok_or_else(|| AppError::Missing {
            path: dir.join(format!("{part}.npy")),
            what: format!("split file {part}.npy or {part}.csv (the three split files go together)"),
        })?;
        parts.push(read_ids(path, n)?);
    }
    let split = GraphData::split_from_i64(&parts[0], &parts[1], &parts[2], n)
        .map_err(|e| AppError::graph(format!("{}/{{train,val,test}}_idx", dir.display()), e))?;
    check_split(dir, "train_idx / val_idx / test_idx", &split, n)?;
    Ok(Some(split))
}

/// Loads an edge-list folder.
pub fn load(dir: &Path, opts: BuildOptions) -> Result<GraphData> {
    let (lp, labels) = read_labels(dir)?;
    let n = labels.len();
    let classes = class_count(&lp, &labels)?;
    let ep = one_of(dir, &EDGES, "edges")?.ok_or_else(|| AppError::Missing {
        path: dir.join(EDGES[0]),
        what: "edges.csv, edges.tsv or edge_index.npy".into(),
    })?;
    let (src, dst, weights) = if is_npy(&ep) {
        let (s, d) = read_edge_index(&ep)?;
        (s, d, None)
    } else {
        read_edge_table(&ep, n, &lp)?
    };
    check_graph_memory(&ep, n, src.len(), opts)?;
    let adj = Csr::from_edges(n, &src, &dst, weights.as_deref(), opts)
        .map_err(|e| AppError::graph(ep.display().to_string(), e))?;
    drop((src, dst, weights));
    let features = read_features(dir, n)?;
    let split = read_split(dir, n)?;
    GraphData::new(folder_name(dir, "edgelist"), adj, features, labels, classes, split)
        .map_err(|e| AppError::graph(dir.display().to_string(), e))
}
