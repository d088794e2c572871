//! The npy-folder layout (`../shared/datasets/README.md`), plus two optional files of ours for
//! large generated graphs: `adj_indptr.npy` / `adj_indices.npy` (the adjacency as CSR, row =
//! destination) instead of `edges_sym.npy`, and `feat_dense.npy` (`[N, F]` float32) instead of
//! the CSR feature files.

use crate::error::{AppError, Result};
use crate::npyio::{expect_shape, read_floats, read_ints, write};
use burn_sparse_gnn::{BuildOptions, Csr, Features, GraphData, Split};
use std::path::Path;

/// Reads the adjacency of an npy folder (`adj_indptr` + `adj_indices`, or `edges_sym`).
pub fn read_adjacency(dir: &Path, n: usize, opts: BuildOptions) -> Result<Csr> {
    let indptr = dir.join("adj_indptr.npy");
    if indptr.exists() {
        let rp = read_ints(&indptr)?;
        expect_shape(&indptr, &rp.shape, &[Some(n + 1)])?;
        let ip = dir.join("adj_indices.npy");
        let ci = read_ints(&ip)?;
        expect_shape(&ip, &ci.shape, &[None])?;
        let csr =
            Csr::new(n, n, &rp.data, &ci.data, None).map_err(|e| AppError::graph(format!("{}", dir.display()), e))?;
        if opts == BuildOptions::default() {
            return Ok(csr);
        }
        // apply the options through the edge list
        let (src, dst) = edge_list(&csr);
        return Csr::from_edges(n, &src, &dst, None, opts)
            .map_err(|e| AppError::graph(format!("{}", dir.display()), e));
    }
    let path = dir.join("edges_sym.npy");
    let e = read_ints(&path)?;
    expect_shape(&path, &e.shape, &[Some(2), None])?;
    let m = e.shape[1];
    // row 0 = source, row 1 = target (PyG edge_index)
    Csr::from_edges(n, &e.data[..m], &e.data[m..], None, opts)
        .map_err(|err| AppError::graph(path.display().to_string(), err))
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
    let dense = dir.join("feat_dense.npy");
    if dense.exists() {
        let a = read_floats(&dense)?;
        expect_shape(&dense, &a.shape, &[Some(n), None])?;
        let f = a.shape[1];
        return Features::dense(n, f, a.data).map_err(|e| AppError::graph(dense.display().to_string(), e));
    }
    let shape_path = dir.join("feat_shape.npy");
    let shape = read_ints(&shape_path)?;
    expect_shape(&shape_path, &shape.shape, &[Some(2)])?;
    if shape.data[0] != n as i64 || shape.data[1] < 0 {
        return Err(AppError::Shape {
            path: shape_path,
            found: shape.data.iter().map(|&v| v.max(0) as usize).collect(),
            expected: format!("[{n}, F]"),
        });
    }
    let f = shape.data[1] as usize;
    let ip = dir.join("feat_indptr.npy");
    let indptr = read_ints(&ip)?;
    expect_shape(&ip, &indptr.shape, &[Some(n + 1)])?;
    let ix = dir.join("feat_indices.npy");
    let indices = read_ints(&ix)?;
    expect_shape(&ix, &indices.shape, &[None])?;
    let dp = dir.join("feat_data.npy");
    let data = read_floats(&dp)?;
    expect_shape(&dp, &data.shape, &[Some(indices.data.len())])?;
    Features::sparse(n, f, &indptr.data, &indices.data, data.data)
        .map_err(|e| AppError::graph(format!("{}/feat_*.npy", dir.display()), e))
}

fn read_split(dir: &Path, n: usize) -> Result<Option<Split>> {
    let names = ["train_idx.npy", "val_idx.npy", "test_idx.npy"];
    let present: Vec<bool> = names.iter().map(|f| dir.join(f).exists()).collect();
    if present.iter().all(|p| !p) {
        return Ok(None);
    }
    let mut parts = Vec::new();
    for f in names {
        let p = dir.join(f);
        let a = read_ints(&p)?;
        expect_shape(&p, &a.shape, &[None])?;
        parts.push(a.data);
    }
    GraphData::split_from_i64(&parts[0], &parts[1], &parts[2], n)
        .map(Some)
        .map_err(|e| AppError::graph(dir.display().to_string(), e))
}

/// Number of nodes of an npy folder.
pub fn read_num_nodes(dir: &Path) -> Result<usize> {
    let p = dir.join("num_nodes.npy");
    let a = read_ints(&p)?;
    if a.data.len() != 1 || a.data[0] < 0 {
        return Err(AppError::Shape { path: p, found: a.shape, expected: "a non-negative scalar".into() });
    }
    Ok(a.data[0] as usize)
}

/// Loads a whole dataset from an npy folder.
pub fn load(dir: &Path, opts: BuildOptions) -> Result<GraphData> {
    if !dir.is_dir() {
        return Err(AppError::Missing { path: dir.into(), what: "npy dataset folder".into() });
    }
    let n = read_num_nodes(dir)?;
    let adj = read_adjacency(dir, n, opts)?;
    let features = read_features(dir, n)?;
    let lp = dir.join("labels.npy");
    let labels = read_ints(&lp)?;
    expect_shape(&lp, &labels.shape, &[Some(n)])?;
    let classes = labels.data.iter().copied().max().unwrap_or(-1).max(-1) + 1;
    let split = read_split(dir, n)?;
    let name = dir.file_name().map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| "npy".into());
    GraphData::new(name, adj, features, labels.data, classes as usize, split)
        .map_err(|e| AppError::graph(dir.display().to_string(), e))
}

/// Writes a dataset as an npy folder: adjacency as CSR; features dense u8 when they are small
/// non-negative integers and that is smaller, else dense f32 or CSR as stored.
pub fn save(data: &GraphData, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| AppError::io(dir, e))?;
    let n = data.num_nodes();
    write(&dir.join("num_nodes.npy"), &[], &[n as i64])?;
    save_adjacency(data.adjacency(), dir)?;
    let feats = data.features();
    let (n_f, w_f) = (feats.n(), feats.width());
    let (stored, values) = match feats {
        Features::Dense { data, .. } => (data.len() * 4, data),
        Features::Sparse { data, .. } => (data.len() * 8, data),
    };
    let small_ints = values.iter().all(|&x| (0.0..=255.0).contains(&x) && x.fract() == 0.0);
    if small_ints && n_f * w_f < stored {
        let dense: Vec<u8> = feats.to_dense().iter().map(|&v| v as u8).collect();
        write(&dir.join("feat_dense.npy"), &[n_f, w_f], &dense)?;
    } else {
        match feats {
            Features::Dense { n, f, data } => write(&dir.join("feat_dense.npy"), &[*n, *f], data)?,
            Features::Sparse { n, f, indptr, indices, data } => {
                write(&dir.join("feat_shape.npy"), &[2], &[*n as i64, *f as i64])?;
                write(&dir.join("feat_indptr.npy"), &[n + 1], &indptr.iter().map(|&v| v as i64).collect::<Vec<_>>())?;
                write(
                    &dir.join("feat_indices.npy"),
                    &[indices.len()],
                    &indices.iter().map(|&v| v as i32).collect::<Vec<_>>(),
                )?;
                write(&dir.join("feat_data.npy"), &[data.len()], data)?;
            }
        }
    }
    write(&dir.join("labels.npy"), &[n], data.labels())?;
    if let Some(s) = data.split() {
        for (name, ids) in [("train_idx.npy", &s.train), ("val_idx.npy", &s.valid), ("test_idx.npy", &s.test)] {
            write(&dir.join(name), &[ids.len()], &ids.iter().map(|&v| v as i64).collect::<Vec<_>>())?;
        }
    }
    Ok(())
}

/// Writes an adjacency as `adj_indptr.npy` (int64) and `adj_indices.npy` (int32).
pub fn save_adjacency(adj: &Csr, dir: &Path) -> Result<()> {
    let rp: Vec<i64> = adj.row_ptr().iter().map(|&v| v as i64).collect();
    write(&dir.join("adj_indptr.npy"), &[rp.len()], &rp)?;
    let ci: Vec<i32> = adj.col_idx().iter().map(|&v| v as i32).collect();
    write(&dir.join("adj_indices.npy"), &[ci.len()], &ci)
}
