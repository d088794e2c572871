//! Dataset loaders from local paths. A dataset is named by a path (the format is detected from
//! its files) or by a built-in name (`sbm`).

pub mod npy;
pub mod npz;
pub mod ogb;
pub mod saint;

use crate::error::{AppError, Result};
use crate::gen::{sbm, SbmSpec};
use burn_sparse_gnn::{BuildOptions, GraphData};
use std::path::Path;

/// Loads `spec`: `sbm` (the built-in synthetic default), an npy folder, a gnn-benchmark or
/// heterophilous `.npz`, an OGB node-property folder or a GraphSAINT folder.
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
    } else if path.extension().is_some_and(|e| e == "npz") {
        return npz::load(path, opts);
    }
    Err(AppError::Format {
        path: path.into(),
        msg: "unrecognised dataset (expected an npy folder with num_nodes.npy, a .npz, an OGB folder with raw/edge.csv.gz or a GraphSAINT folder with adj_full.npz)".into(),
    })
}

/// Rebuilds the adjacency of a dataset with `opts` (symmetrise, self-loops, dedup).
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
    let new = burn_sparse_gnn::Csr::from_edges(adj.n_rows(), &src, &dst, None, opts)
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
