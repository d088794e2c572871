//! Dataset loaders from local paths. A dataset is named by a path (the format is detected from
//! its files) or by a built-in name (`sbm`).

pub mod npy;

use crate::error::{AppError, Result};
use crate::gen::{sbm, SbmSpec};
use burn_sparse_gnn::{BuildOptions, GraphData};
use std::path::Path;

/// Loads `spec`: `sbm` (built-in synthetic default) or a path to an npy folder.
pub fn load(spec: &str, opts: BuildOptions) -> Result<GraphData> {
    if spec == "sbm" {
        let d = sbm(&SbmSpec::default())?;
        return apply_options(d, opts);
    }
    let path = Path::new(spec);
    if !path.exists() {
        return Err(AppError::Missing {
            path: path.into(),
            what: "dataset (a folder or file, or the built-in `sbm`)".into(),
        });
    }
    if path.is_dir() && path.join("num_nodes.npy").exists() {
        return npy::load(path, opts);
    }
    Err(AppError::Format {
        path: path.into(),
        msg: "unrecognised dataset format (expected an npy folder with num_nodes.npy)".into(),
    })
}

fn apply_options(d: GraphData, opts: BuildOptions) -> Result<GraphData> {
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
