//! Dataset loaders from local paths. A dataset is named by a path (the format is detected from
//! its files) or by a built-in name (`sbm`). `docs/DATASETS.md` describes every layout.
//!
//! Every loader reads its `.npy` / `.npz` arrays through [`crate::npyio`] (headers checked
//! against the file and the host's memory, Fortran order honoured) and its text files through
//! [`text`] (regular files only, bounded lines), refuses a class count beyond
//! [`burn_sparse_gnn::data::class_limit`] ([`class_count`]) and a split whose parts are empty
//! or overlap ([`check_split`]), each error naming the file.

pub mod edgelist;
pub mod npy;
pub mod npz;
pub mod ogb;
pub mod saint;
pub mod text;

use crate::error::{AppError, Result};
use crate::gen::{sbm, SbmSpec};
use crate::host_memory::check_fits;
use burn_sparse_gnn::data::{class_limit, FREE_CLASSES, MAX_CLASSES};
use burn_sparse_gnn::{BuildOptions, GraphData, Split};
use std::path::Path;

/// The split of a dataset that has none of its own and no `--split`.
pub const DEFAULT_SPLIT: &str = "per-class:20,30";

/// Loads `spec`: `sbm` (the built-in synthetic default), an npy folder, a gnn-benchmark or
/// heterophilous `.npz`, an OGB node-property folder, a GraphSAINT folder or an edge-list
/// folder (CSV / TSV / `edge_index.npy` with labels).
pub fn load(spec: &str, opts: BuildOptions) -> Result<GraphData> {
    if spec == "sbm" {
        let d = sbm(&SbmSpec::default())?;
        return rebuild(d, opts);
    }
    let path = Path::new(spec);
    if !path.exists() {
        return Err(AppError::Missing {
            path: path.into(),
            what: "dataset (a folder or file, or the built-in `sbm`)".into(),
        });
    }
    if path.is_dir() {
        if path.join("num_nodes.npy").exists() {
            return npy::load(path, opts);
        }
        if ogb::is_ogb(path) {
            return ogb::load(path, opts);
        }
        if saint::is_saint(path) {
            return saint::load(path, opts);
        }
        if edgelist::is_edgelist(path) {
            return edgelist::load(path, opts);
        }
    } else if path.extension().is_some_and(|e| e == "npz") {
        return npz::load(path, opts);
    }
    Err(AppError::Format {
        path: path.into(),
        msg: "unrecognised dataset (expected an npy folder with num_nodes.npy, a .npz, an OGB folder with \
              raw/edge.csv.gz, a GraphSAINT folder with adj_full.npz, or an edge-list folder with \
              edges.csv / edges.tsv / edge_index.npy and labels.csv / labels.npy; see docs/DATASETS.md)"
            .into(),
    })
}

/// Rebuilds the adjacency of a dataset with `opts` (symmetrise, self-loops, dedup). Edge
/// weights follow their edges: a reversed edge has its edge's weight, an added self-loop weight
/// 1, and merged duplicates the sum of their weights ([`burn_sparse_gnn::Csr::from_edges`]).
pub fn rebuild(d: GraphData, opts: BuildOptions) -> Result<GraphData> {
    if opts == BuildOptions::default() {
        return Ok(d);
    }
    let adj = d.adjacency();
    let mut src = Vec::with_capacity(adj.nnz());
    let mut dst = Vec::with_capacity(adj.nnz());
    for i in 0..adj.n_rows() {
        for &c in &adj.col_idx()[adj.row_ptr()[i]..adj.row_ptr()[i + 1]] {
            src.push(c as i64);
            dst.push(i as i64);
        }
    }
    let new = burn_sparse_gnn::Csr::from_edges(adj.n_rows(), &src, &dst, adj.weights(), opts)
        .map_err(|e| AppError::graph(&d.name, e))?;
    let name = d.name.clone();
    d.with_adjacency(new).map_err(|e| AppError::graph(name, e))
}

/// The `k`-th alternative split of a dataset (`mask:K`).
pub fn mask_split(data: &GraphData, k: usize) -> Result<burn_sparse_gnn::Split> {
    data.alternative_splits().get(k).cloned().ok_or_else(|| {
        AppError::Config(format!(
            "split mask:{k}: the dataset has {} alternative splits",
            data.alternative_splits().len()
        ))
    })
}

/// The class count of `labels` read from `path`: the largest label + 1. Refuses a label below
/// -1 and a count beyond [`class_limit`] (`min(1,000,000, max(1,000, labeled nodes))`),
/// naming the node and its label: a label of 10^9 would otherwise make every per-class table
/// (statistics, per-class splits) gigabytes long.
pub fn class_count(path: &Path, labels: &[i64]) -> Result<usize> {
    if let Some((node, &label)) = labels.iter().enumerate().find(|(_, &l)| l < -1) {
        return Err(AppError::Format {
            path: path.into(),
            msg: format!("node {node} has label {label}: labels are class ids 0, 1, 2, ... or -1 for unlabeled"),
        });
    }
    let labeled = labels.iter().filter(|&&l| l >= 0).count();
    let limit = class_limit(labeled);
    let Some((node, &max)) = labels.iter().enumerate().max_by_key(|(i, &l)| (l, std::cmp::Reverse(*i))) else {
        return Ok(0);
    };
    if max >= limit as i64 {
        return Err(AppError::Format {
            path: path.into(),
            msg: format!(
                "node {node} has label {max}: class ids must be below {limit} (at most max({FREE_CLASSES}, \
                 labeled nodes = {labeled}) classes, {MAX_CLASSES} in all; classes are counted as the largest \
                 label + 1)"
            ),
        });
    }
    Ok((max + 1).max(0) as usize)
}

/// Checks that the parts of a split read from `path` are non-empty and disjoint (see
/// [`Split::check`]); `what` says which files or which mask it came from.
pub fn check_split(path: &Path, what: &str, split: &Split, n_nodes: usize) -> Result<()> {
    split.check(n_nodes).map_err(|issue| AppError::Format {
        path: path.into(),
        msg: format!(
            "{what}: {issue}; fix the dataset's split or remove it (a dataset without a split of its own \
             trains on --split, by default {})",
            DEFAULT_SPLIT
        ),
    })
}

/// The node ids of one part of a split as stored in a one-dimensional `.npy` (`path`) or read
/// from a text file (`ids`, `bools`: whether the `.npy` stores numpy bools): a list of node
/// ids, or a mask of one entry per node (PyG's `train_mask` saved as is: numpy bools, or 0 / 1
/// integers that repeat, which no list of distinct ids does), read as the ids of its nodes
/// that are set. A bool array of another length than the `n` nodes is an error.
pub fn split_ids(path: &Path, ids: Vec<i64>, bools: bool, n: usize) -> Result<Vec<i64>> {
    let binary = ids.iter().all(|&v| v == 0 || v == 1);
    let ones = ids.iter().filter(|&&v| v == 1).count();
    let repeats = ones > 1 || ids.len() - ones > 1;
    if bools && ids.len() != n {
        return Err(AppError::Format {
            path: path.into(),
            msg: format!(
                "a boolean mask of {} entries, but the dataset has {n} nodes: a mask holds one entry per node \
                 (or save the node ids: mask.nonzero())",
                ids.len()
            ),
        });
    }
    if bools || (ids.len() == n && binary && repeats) {
        return Ok(ids.iter().enumerate().filter(|(_, &v)| v == 1).map(|(i, _)| i as i64).collect());
    }
    Ok(ids)
}

/// Checks that building the CSR of `edges` edges over `n` nodes (as [`Csr::from_edges`] does:
/// an edge-tuple list, sorted, possibly doubled by symmetrisation, then the row pointer and
/// the columns) fits in the host's memory.
///
/// [`Csr::from_edges`]: burn_sparse_gnn::Csr::from_edges
pub fn check_graph_memory(path: &Path, n: usize, edges: usize, opts: BuildOptions) -> Result<()> {
    let directed = (edges as u64).saturating_mul(1 + opts.symmetrize as u64);
    let need = (n as u64 + 1).saturating_mul(8).saturating_add(directed.saturating_mul(28));
    check_fits(need, || format!("{}: a graph of {n} nodes and {directed} edges", path.display()))
}

/// Checks a feature width declared by `path` (`feat_shape.npy`, `attr_shape`) for CSR features:
/// a width beyond the stored columns (`max index + 1`) is accepted only while the dense
/// `[n, width]` f32 matrix that training builds fits in the host's memory, so a corrupt width
/// (say 2e9 for 1,433 used columns) is refused here, naming the file.
pub fn check_declared_width(path: &Path, n: usize, width: usize, indices: &[i64]) -> Result<()> {
    let used = indices.iter().copied().max().map_or(0, |m| m.max(-1) + 1) as u64;
    if (width as u64) <= used {
        return Ok(());
    }
    let dense = (n as u64).saturating_mul(width as u64).saturating_mul(4);
    check_fits(dense, || {
        format!(
            "{}: features of shape [{n}, {width}] (the stored columns use only {used}) as the dense matrix that \
             training builds",
            path.display()
        )
    })
}

/// The name of a folder dataset: the folder's name.
pub fn folder_name(dir: &Path, fallback: &str) -> String {
    dir.file_name().map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| fallback.into())
}
