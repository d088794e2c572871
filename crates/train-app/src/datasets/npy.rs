//! The npy-folder layout (`../shared/datasets/README.md`, `docs/DATASETS.md`), plus optional
//! files of ours: `adj_indptr.npy` / `adj_indices.npy` (the adjacency as CSR, row =
//! destination) or PyG's `edge_index.npy` instead of `edges_sym.npy`, and `feat_dense.npy`
//! (`[N, F]`) instead of the CSR feature files.
//!
//! A folder must hold one layout of each part: two (say `feat_dense.npy` next to
//! `feat_shape.npy`, the leftover of an earlier export) is an error, not a silent choice.
//! [`save`] removes the files of the layouts it does not write, so it never leaves two.

use super::{check_declared_width, check_graph_memory, check_split, class_count, folder_name, split_ids};
use crate::error::{AppError, Result};
use crate::host_memory::check_fits;
use crate::npyio::{expect_shape, peek_int_shape, read_floats, read_ids, read_ints, read_ints_or_bools, write};
use burn_sparse_gnn::data::MAX_INDEX;
use burn_sparse_gnn::{BuildOptions, Csr, Features, GraphData, Split};
use std::path::Path;

/// The adjacency as CSR (row = destination).
const ADJ_CSR: &[&str] = &["adj_indptr.npy", "adj_indices.npy"];
/// The adjacency as the shared datasets' `[2, E]` edge list (both directions stored).
const ADJ_SYM: &[&str] = &["edges_sym.npy"];
/// The adjacency as PyG's `edge_index` `[2, E]`.
const ADJ_PYG: &[&str] = &["edge_index.npy"];
/// Dense features.
const FEAT_DENSE: &[&str] = &["feat_dense.npy"];
/// Features as CSR.
const FEAT_CSR: &[&str] = &["feat_shape.npy", "feat_indptr.npy", "feat_indices.npy", "feat_data.npy"];
/// The split's node ids.
const SPLIT: &[&str] = &["train_idx.npy", "val_idx.npy", "test_idx.npy"];

/// Bytes per node that loading a dataset needs at least (labels, row pointers, CSR features'
/// row pointer, split masks): used to check a declared node count before anything is read.
const BYTES_PER_NODE: u64 = 48;

/// The files of `names` present in `dir`.
fn present<'a>(dir: &Path, names: &[&'a str]) -> Vec<&'a str> {
    names.iter().copied().filter(|f| dir.join(f).exists()).collect()
}

/// Refuses a folder holding files of more than one of `layouts` (of the `what`).
fn one_layout(dir: &Path, what: &str, layouts: &[&[&str]]) -> Result<()> {
    let found: Vec<Vec<&str>> = layouts.iter().map(|l| present(dir, l)).filter(|p| !p.is_empty()).collect();
    if found.len() > 1 {
        let list: Vec<String> = found.iter().map(|f| f.join(" + ")).collect();
        return Err(AppError::Format {
            path: dir.into(),
            msg: format!(
                "holds two {what} layouts ({}): one is probably left over from an earlier export; remove the \
                 files that are not current",
                list.join(" and ")
            ),
        });
    }
    Ok(())
}

/// Reads a PyG-style `edge_index` array `[2, E]` of integers: row 0 the sources, row 1 the
/// targets. An `[E, 2]` array is refused with a hint (transpose it).
pub fn read_edge_index(path: &Path) -> Result<(Vec<i64>, Vec<i64>)> {
    let e = read_ints(path)?;
    if let [rows, 2] = e.shape.as_slice() {
        if *rows != 2 {
            return Err(AppError::Shape {
                path: path.into(),
                found: e.shape.clone(),
                expected: "[2, E] (sources in row 0, targets in row 1): this looks like [E, 2], save its \
                           transpose (edge_index.T)"
                    .into(),
            });
        }
    }
    expect_shape(path, &e.shape, &[Some(2), None])?;
    let m = e.shape[1];
    let mut data = e.data;
    let dst = data.split_off(m);
    Ok((data, dst))
}

/// Reads the adjacency of an npy folder (`adj_indptr` + `adj_indices`, `edges_sym` or
/// `edge_index`).
pub fn read_adjacency(dir: &Path, n: usize, opts: BuildOptions) -> Result<Csr> {
    one_layout(dir, "adjacency", &[ADJ_CSR, ADJ_SYM, ADJ_PYG])?;
    let indptr = dir.join("adj_indptr.npy");
    if indptr.exists() {
        let rp = read_ints(&indptr)?;
        expect_shape(&indptr, &rp.shape, &[Some(n + 1)])?;
        let ip = dir.join("adj_indices.npy");
        let ci = read_ids(&ip)?;
        expect_shape(&ip, &ci.shape, &[None])?;
        let context = || format!("{}/adj_indptr.npy + adj_indices.npy", dir.display());
        let csr = Csr::from_columns(n, n, &rp.data, ci.data, None).map_err(|e| AppError::graph(context(), e))?;
        if opts == BuildOptions::default() {
            return Ok(csr);
        }
        // apply the options through the edge list
        let (src, dst) = edge_list(&csr);
        check_graph_memory(&indptr, n, src.len(), opts)?;
        return Csr::from_edges(n, &src, &dst, None, opts).map_err(|e| AppError::graph(context(), e));
    }
    let Some(path) = [ADJ_SYM[0], ADJ_PYG[0]].iter().map(|f| dir.join(f)).find(|p| p.exists()) else {
        return Err(AppError::Missing {
            path: dir.join(ADJ_SYM[0]),
            what: "the adjacency: edges_sym.npy, edge_index.npy or adj_indptr.npy + adj_indices.npy".into(),
        });
    };
    let (src, dst) = read_edge_index(&path)?;
    check_graph_memory(&path, n, src.len(), opts)?;
    Csr::from_edges(n, &src, &dst, None, opts).map_err(|err| AppError::graph(path.display().to_string(), err))
}

fn edge_list(csr: &Csr) -> (Vec<i64>, Vec<i64>) {
    let mut src = Vec::with_capacity(csr.nnz());
    let mut dst = Vec::with_capacity(csr.nnz());
    for i in 0..csr.n_rows() {
        for &c in &csr.col_idx()[csr.row_ptr()[i]..csr.row_ptr()[i + 1]] {
            src.push(c as i64);
            dst.push(i as i64);
        }
    }
    (src, dst)
}

fn read_features(dir: &Path, n: usize) -> Result<Features> {
    one_layout(dir, "feature", &[FEAT_DENSE, FEAT_CSR])?;
    let dense = dir.join(FEAT_DENSE[0]);
    if dense.exists() {
        let a = read_floats(&dense)?;
        expect_shape(&dense, &a.shape, &[Some(n), None])?;
        let f = a.shape[1];
        return Features::dense(n, f, a.data).map_err(|e| AppError::graph(dense.display().to_string(), e));
    }
    let shape_path = dir.join("feat_shape.npy");
    let shape = read_ints(&shape_path)?;
    expect_shape(&shape_path, &shape.shape, &[Some(2)])?;
    let (rows, f) = (shape.data[0], shape.data[1]);
    if rows != n as i64 || f < 0 || f as u64 > MAX_INDEX as u64 {
        return Err(AppError::Format {
            path: shape_path,
            msg: format!(
                "declares features of shape [{rows}, {f}], expected [{n}, F] with 0 <= F <= {MAX_INDEX} \
                 ({n} nodes, 32-bit feature ids)"
            ),
        });
    }
    let f = f as usize;
    let ip = dir.join("feat_indptr.npy");
    let indptr = read_ints(&ip)?;
    expect_shape(&ip, &indptr.shape, &[Some(n + 1)])?;
    let ix = dir.join("feat_indices.npy");
    let indices = read_ints(&ix)?;
    expect_shape(&ix, &indices.shape, &[None])?;
    let dp = dir.join("feat_data.npy");
    let data = read_floats(&dp)?;
    expect_shape(&dp, &data.shape, &[Some(indices.data.len())])?;
    check_declared_width(&shape_path, n, f, &indices.data)?;
    Features::sparse(n, f, &indptr.data, &indices.data, data.data)
        .map_err(|e| AppError::graph(format!("{}/feat_*.npy", dir.display()), e))
}

fn read_split(dir: &Path, n: usize) -> Result<Option<Split>> {
    let found = present(dir, SPLIT);
    if found.is_empty() {
        return Ok(None);
    }
    let mut parts = Vec::new();
    for f in SPLIT {
        let p = dir.join(f);
        if !p.exists() {
            return Err(AppError::Missing {
                path: p,
                what: format!("split file: {} is there, and the three split files go together", found.join(", ")),
            });
        }
        let (a, bools) = read_ints_or_bools(&p)?;
        expect_shape(&p, &a.shape, &[None])?;
        parts.push(split_ids(&p, a.data, bools, n)?);
    }
    let split = GraphData::split_from_i64(&parts[0], &parts[1], &parts[2], n)
        .map_err(|e| AppError::graph(format!("{}/{{train,val,test}}_idx.npy", dir.display()), e))?;
    check_split(dir, &SPLIT.join(" / "), &split, n)?;
    Ok(Some(split))
}

/// Number of nodes of an npy folder (`num_nodes.npy`: a non-negative integer scalar that fits
/// 32-bit node ids).
pub fn read_num_nodes(dir: &Path) -> Result<usize> {
    let p = dir.join("num_nodes.npy");
    let a = read_ints(&p)?;
    if a.data.len() != 1 || a.data[0] < 0 {
        return Err(AppError::Shape { path: p, found: a.shape, expected: "a non-negative scalar".into() });
    }
    let n = a.data[0];
    if n as u64 > MAX_INDEX as u64 {
        return Err(AppError::Format {
            path: p,
            msg: format!("declares {n} nodes, more than {MAX_INDEX} (node ids are 32-bit)"),
        });
    }
    Ok(n as usize)
}

/// Checks a declared node count before anything is sized by it: `labels.npy` (which every
/// dataset folder has) must declare `[n]` in its header, and the host must hold `n` nodes.
fn check_node_count(dir: &Path, n: usize) -> Result<()> {
    let lp = dir.join("labels.npy");
    let shape = peek_int_shape(&lp)?;
    if shape != [n] {
        return Err(AppError::Shape {
            path: lp,
            found: shape,
            expected: format!("[{n}]: one label per node, as num_nodes.npy declares {n} nodes"),
        });
    }
    check_fits((n as u64).saturating_mul(BYTES_PER_NODE), || {
        format!("{}: {n} nodes", dir.join("num_nodes.npy").display())
    })
}

/// Loads a whole dataset from an npy folder.
pub fn load(dir: &Path, opts: BuildOptions) -> Result<GraphData> {
    if !dir.is_dir() {
        return Err(AppError::Missing { path: dir.into(), what: "npy dataset folder".into() });
    }
    let n = read_num_nodes(dir)?;
    check_node_count(dir, n)?;
    let adj = read_adjacency(dir, n, opts)?;
    let features = read_features(dir, n)?;
    let lp = dir.join("labels.npy");
    let labels = read_ints(&lp)?;
    expect_shape(&lp, &labels.shape, &[Some(n)])?;
    let classes = class_count(&lp, &labels.data)?;
    let split = read_split(dir, n)?;
    GraphData::new(folder_name(dir, "npy"), adj, features, labels.data, classes, split)
        .map_err(|e| AppError::graph(dir.display().to_string(), e))
}

/// Removes the files `names` of `dir` that exist.
fn remove_files(dir: &Path, names: &[&str]) -> Result<()> {
    for name in names {
        let p = dir.join(name);
        match std::fs::remove_file(&p) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(AppError::io(p, e)),
            _ => {}
        }
    }
    Ok(())
}

/// How [`save`] stores features.
enum FeatureLayout {
    /// `feat_dense.npy` as u8 (small non-negative integers, when that is smaller).
    DenseU8,
    /// `feat_dense.npy` as f32.
    Dense,
    /// `feat_shape` / `feat_indptr` / `feat_indices` / `feat_data`.
    Csr,
}

fn feature_layout(feats: &Features) -> FeatureLayout {
    let (stored, values) = match feats {
        Features::Dense { data, .. } => (data.len() as u64 * 4, data),
        Features::Sparse { data, .. } => (data.len() as u64 * 8, data),
    };
    let small_ints = values.iter().all(|&x| (0.0..=255.0).contains(&x) && x.fract() == 0.0);
    if small_ints && (feats.n() as u64).saturating_mul(feats.width() as u64) < stored {
        FeatureLayout::DenseU8
    } else if matches!(feats, Features::Dense { .. }) {
        FeatureLayout::Dense
    } else {
        FeatureLayout::Csr
    }
}

fn write_features(feats: &Features, layout: &FeatureLayout, dir: &Path) -> Result<()> {
    match (layout, feats) {
        (FeatureLayout::DenseU8, _) => {
            let dense: Vec<u8> = feats.to_dense().iter().map(|&v| v as u8).collect();
            write(&dir.join("feat_dense.npy"), &[feats.n(), feats.width()], &dense)
        }
        (_, Features::Dense { n, f, data }) => write(&dir.join("feat_dense.npy"), &[*n, *f], data),
        (_, Features::Sparse { n, f, indptr, indices, data }) => {
            write(&dir.join("feat_shape.npy"), &[2], &[*n as i64, *f as i64])?;
            write(&dir.join("feat_indptr.npy"), &[n + 1], &indptr.iter().map(|&v| v as i64).collect::<Vec<_>>())?;
            write(
                &dir.join("feat_indices.npy"),
                &[indices.len()],
                &indices.iter().map(|&v| v as i32).collect::<Vec<_>>(),
            )?;
            write(&dir.join("feat_data.npy"), &[data.len()], data)
        }
    }
}

/// Writes a dataset as an npy folder: adjacency as CSR; features dense u8 when they are small
/// non-negative integers and that is smaller, else dense f32 or CSR as stored; the split when
/// there is one.
///
/// Every file is written atomically. The folder afterwards holds exactly this dataset: the
/// files of ours that it does not use (the other adjacency and feature layouts, split files of
/// a dataset without a split) are removed first, and `num_nodes.npy`, which marks an npy
/// folder, is removed first and written last, so a save that fails half-way leaves a folder
/// that is not mistaken for a dataset. Other files in the folder are left alone.
pub fn save(data: &GraphData, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| AppError::io(dir, e))?;
    let feats = data.features();
    let layout = feature_layout(feats);
    remove_files(dir, &["num_nodes.npy"])?;
    remove_files(dir, ADJ_SYM)?;
    remove_files(dir, ADJ_PYG)?;
    remove_files(dir, if matches!(layout, FeatureLayout::Csr) { FEAT_DENSE } else { FEAT_CSR })?;
    if data.split().is_none() {
        remove_files(dir, SPLIT)?;
    }
    write_adjacency(data.adjacency(), dir)?;
    write_features(feats, &layout, dir)?;
    let n = data.num_nodes();
    write(&dir.join("labels.npy"), &[n], data.labels())?;
    if let Some(s) = data.split() {
        for (name, ids) in SPLIT.iter().zip([&s.train, &s.valid, &s.test]) {
            write(&dir.join(name), &[ids.len()], &ids.iter().map(|&v| v as i64).collect::<Vec<_>>())?;
        }
    }
    write(&dir.join("num_nodes.npy"), &[], &[n as i64])
}

/// Writes the adjacency of a structure-only npy folder (`num_nodes.npy` + the adjacency, as
/// `gen rmat --features 0` writes for benchmarks) as `adj_indptr.npy` (int64) and
/// `adj_indices.npy` (int32), atomically. Removes the other adjacency layouts and the feature,
/// label and split files an earlier save left in `dir`, so they cannot be read with the new
/// graph; `num_nodes.npy` is the caller's.
pub fn save_adjacency(adj: &Csr, dir: &Path) -> Result<()> {
    for names in [ADJ_SYM, ADJ_PYG, FEAT_DENSE, FEAT_CSR, &["labels.npy"][..], SPLIT] {
        remove_files(dir, names)?;
    }
    write_adjacency(adj, dir)
}

fn write_adjacency(adj: &Csr, dir: &Path) -> Result<()> {
    let rp: Vec<i64> = adj.row_ptr().iter().map(|&v| v as i64).collect();
    write(&dir.join("adj_indptr.npy"), &[rp.len()], &rp)?;
    let ci: Vec<i32> = adj.col_idx().iter().map(|&v| v as i32).collect();
    write(&dir.join("adj_indices.npy"), &[ci.len()], &ci)
}
