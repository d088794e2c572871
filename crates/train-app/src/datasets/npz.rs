//! `.npz` datasets: gnn-benchmark (Shchur et al.: `adj_*`, `attr_*`, `labels`) and
//! heterophilous (Platonov et al.: `node_features`, `node_labels`, `edges`, `*_masks`).

use super::{check_declared_width, check_graph_memory, check_split, class_count};
use crate::error::{AppError, Result};
use crate::npyio::{expect_shape, floats_from, ints_from, Array};
use burn_sparse_gnn::data::MAX_INDEX;
use burn_sparse_gnn::{BuildOptions, Csr, Features, GraphData, Split};
use npyz::npz::NpzArchive;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

type Archive = NpzArchive<BufReader<File>>;

/// Opens an npz archive.
pub fn open(path: &Path) -> Result<Archive> {
    let file = crate::npyio::open_regular(path, "npz archive")?;
    NpzArchive::new(BufReader::new(file))
        .map_err(|e| AppError::Format { path: path.into(), msg: format!("not a valid .npz archive: {e}") })
}

/// Names of the arrays of an archive.
pub fn names(a: &Archive) -> Vec<String> {
    a.array_names().map(|s| s.to_string()).collect()
}

/// The npy entry `name` of an archive, its header checked against the entry's size and the
/// host's memory (`out_elem` bytes per decoded element), read by `read`.
macro_rules! read_entry {
    ($a:expr, $path:expr, $name:expr, $out_elem:expr, $read:path) => {{
        let (a, path, name) = ($a, $path, $name);
        if !names(a).iter().any(|n| n == name) {
            return Err(AppError::Format { path: path.into(), msg: format!("missing array `{name}`") });
        }
        let entry = a
            .zip_archive()
            .by_name(&npyz::npz::file_name_from_array_name(name))
            .map_err(|e| AppError::Format { path: path.into(), msg: format!("array `{name}`: {e}") })?;
        // the entry's declared size bounds both the header's shape and what is inflated: an
        // archive whose data inflates beyond it is cut there (and then fails as truncated)
        let size = entry.size();
        let npy = crate::npyio::npy_from(&path.join(name), std::io::Read::take(entry, size), Some(size), $out_elem)?;
        $read(&path.join(name), npy)
    }};
}

/// Reads integer array `name`.
pub fn ints(a: &mut Archive, path: &Path, name: &str) -> Result<Array<i64>> {
    read_entry!(a, path, name, 8, ints_from)
}

/// Reads float array `name`.
pub fn floats(a: &mut Archive, path: &Path, name: &str) -> Result<Array<f32>> {
    read_entry!(a, path, name, 4, floats_from)
}

fn graph_err(path: &Path) -> impl Fn(burn_sparse_gnn::GraphError) -> AppError + '_ {
    move |e| AppError::graph(path.display().to_string(), e)
}

/// A `shape` array of two non-negative sizes, as `(rows, cols)`.
fn dims(path: &Path, name: &str, a: &Array<i64>) -> Result<(usize, usize)> {
    let p = path.join(name);
    expect_shape(&p, &a.shape, &[Some(2)])?;
    let (r, c) = (a.data[0], a.data[1]);
    if r < 0 || c < 0 || r as u64 > MAX_INDEX as u64 || c as u64 > MAX_INDEX as u64 {
        return Err(AppError::Format {
            path: p,
            msg: format!("declares shape [{r}, {c}]: sizes must be in 0..={MAX_INDEX} (32-bit ids)"),
        });
    }
    Ok((r as usize, c as usize))
}

fn stem(path: &Path) -> String {
    path.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| "npz".into())
}

/// Loads a gnn-benchmark archive. The stored adjacency (row = source) is turned into our
/// convention (row = destination), symmetrised and deduplicated unless `opts` says otherwise.
pub fn load_gnn_benchmark(path: &Path, opts: BuildOptions) -> Result<GraphData> {
    let mut a = open(path)?;
    let (n, cols) = dims(path, "adj_shape", &ints(&mut a, path, "adj_shape")?)?;
    if cols != n {
        return Err(AppError::Format {
            path: path.join("adj_shape"),
            msg: format!("declares a {n} x {cols} adjacency: a graph's adjacency is square"),
        });
    }
    let indptr = ints(&mut a, path, "adj_indptr")?;
    expect_shape(&path.join("adj_indptr"), &indptr.shape, &[Some(n + 1)])?;
    let indices = ints(&mut a, path, "adj_indices")?;
    let stored = Csr::new(n, n, &indptr.data, &indices.data, None).map_err(graph_err(path))?;
    check_graph_memory(path, n, stored.nnz(), opts)?;
    let (mut src, mut dst) = (Vec::with_capacity(stored.nnz()), Vec::with_capacity(stored.nnz()));
    for i in 0..n {
        for &j in &stored.col_idx()[stored.row_ptr()[i]..stored.row_ptr()[i + 1]] {
            src.push(i as i64);
            dst.push(j as i64);
        }
    }
    let adj = Csr::from_edges(n, &src, &dst, None, opts).map_err(graph_err(path))?;
    let names = names(&a);
    let features = if names.iter().any(|s| s == "attr_indptr") {
        let (rows, width) = dims(path, "attr_shape", &ints(&mut a, path, "attr_shape")?)?;
        if rows != n {
            return Err(AppError::Format {
                path: path.join("attr_shape"),
                msg: format!("declares features for {rows} nodes, the adjacency has {n}"),
            });
        }
        let ip = ints(&mut a, path, "attr_indptr")?;
        expect_shape(&path.join("attr_indptr"), &ip.shape, &[Some(n + 1)])?;
        let ix = ints(&mut a, path, "attr_indices")?;
        let dt = floats(&mut a, path, "attr_data")?;
        check_declared_width(&path.join("attr_shape"), n, width, &ix.data)?;
        Features::sparse(n, width, &ip.data, &ix.data, dt.data).map_err(graph_err(path))?
    } else if names.iter().any(|s| s == "attr_matrix") {
        let m = floats(&mut a, path, "attr_matrix")?;
        expect_shape(&path.join("attr_matrix"), &m.shape, &[Some(n), None])?;
        Features::dense(n, m.shape[1], m.data).map_err(graph_err(path))?
    } else {
        // no attributes (e.g. polblogs): one-hot node ids, kept sparse (n = 200,000 would be
        // 160 GB dense: `Features::dense_bytes` tells a trainer before it densifies)
        let ip: Vec<i64> = (0..=n as i64).collect();
        let ix: Vec<i64> = (0..n as i64).collect();
        Features::sparse(n, n, &ip, &ix, vec![1.0; n]).map_err(graph_err(path))?
    };
    let labels = ints(&mut a, path, "labels")?;
    expect_shape(&path.join("labels"), &labels.shape, &[Some(n)])?;
    let classes = class_count(&path.join("labels"), &labels.data)?;
    GraphData::new(stem(path), adj, features, labels.data, classes, None).map_err(graph_err(path))
}

fn masks_to_splits(
    path: &Path,
    train: &Array<i64>,
    valid: &Array<i64>,
    test: &Array<i64>,
    n: usize,
) -> Result<Vec<Split>> {
    let rows = |m: &Array<i64>, name: &str| -> Result<usize> {
        match m.shape.as_slice() {
            [r, c] if *c == n => Ok(*r),
            [c] if *c == n => Ok(1),
            s => Err(AppError::Shape { path: path.join(name), found: s.to_vec(), expected: format!("[splits, {n}]") }),
        }
    };
    let k = rows(train, "train_masks")?;
    if rows(valid, "val_masks")? != k || rows(test, "test_masks")? != k {
        return Err(AppError::Format {
            path: path.into(),
            msg: "train / val / test masks have different split counts".into(),
        });
    }
    let pick = |m: &Array<i64>, s: usize| -> Vec<u32> {
        (0..n).filter(|&i| m.data[s * n + i] != 0).map(|i| i as u32).collect()
    };
    let splits: Vec<Split> =
        (0..k).map(|s| Split { train: pick(train, s), valid: pick(valid, s), test: pick(test, s) }).collect();
    for (s, split) in splits.iter().enumerate() {
        check_split(path, &format!("split {s} of train_masks / val_masks / test_masks"), split, n)?;
    }
    Ok(splits)
}

/// Whether a heterophilous file name marks a directed graph: `directed` as a word of the name
/// (`chameleon_directed`), not inside another (`undirected`).
fn is_directed_name(stem: &str) -> bool {
    stem.split(|c: char| !c.is_ascii_alphanumeric()).any(|w| w.eq_ignore_ascii_case("directed"))
}

/// Loads a heterophilous-benchmark archive: `edges` `[E, 2]` (symmetrised unless the file name
/// says `directed`), ten splits from the masks (the first is the default, all are alternatives
/// for `mask:K`).
pub fn load_heterophilous(path: &Path, opts: BuildOptions) -> Result<GraphData> {
    let mut a = open(path)?;
    let x = floats(&mut a, path, "node_features")?;
    expect_shape(&path.join("node_features"), &x.shape, &[None, None])?;
    let (n, f) = (x.shape[0], x.shape[1]);
    let labels = ints(&mut a, path, "node_labels")?;
    expect_shape(&path.join("node_labels"), &labels.shape, &[Some(n)])?;
    let e = ints(&mut a, path, "edges")?;
    expect_shape(&path.join("edges"), &e.shape, &[None, Some(2)])?;
    let src: Vec<i64> = e.data.iter().step_by(2).copied().collect();
    let dst: Vec<i64> = e.data.iter().skip(1).step_by(2).copied().collect();
    let directed = is_directed_name(&stem(path));
    let opts = BuildOptions { symmetrize: opts.symmetrize || !directed, dedup: true, ..opts };
    check_graph_memory(&path.join("edges"), n, src.len(), opts)?;
    let adj = Csr::from_edges(n, &src, &dst, None, opts).map_err(graph_err(path))?;
    let features = Features::dense(n, f, x.data).map_err(graph_err(path))?;
    let classes = class_count(&path.join("node_labels"), &labels.data)?;
    let train = ints(&mut a, path, "train_masks")?;
    let valid = ints(&mut a, path, "val_masks")?;
    let test = ints(&mut a, path, "test_masks")?;
    let splits = masks_to_splits(path, &train, &valid, &test, n)?;
    let first = splits.first().cloned();
    GraphData::new(stem(path), adj, features, labels.data, classes, first)
        .and_then(|d| d.with_alternative_splits(splits))
        .map_err(graph_err(path))
}

/// Loads either kind of archive, by its keys.
pub fn load(path: &Path, opts: BuildOptions) -> Result<GraphData> {
    let keys = names(&open(path)?);
    if keys.iter().any(|k| k == "adj_indptr") {
        load_gnn_benchmark(path, BuildOptions { symmetrize: true, dedup: true, ..opts })
    } else if keys.iter().any(|k| k == "node_features") {
        load_heterophilous(path, opts)
    } else {
        Err(AppError::Format { path: path.into(), msg: format!("unknown npz layout (arrays: {})", keys.join(", ")) })
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn directed_is_a_word_of_the_name() {
        assert!(super::is_directed_name("chameleon_directed"));
        assert!(super::is_directed_name("squirrel_filtered_directed"));
        assert!(!super::is_directed_name("texas_undirected"));
        assert!(!super::is_directed_name("chameleon"));
    }
}
