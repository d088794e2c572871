//! GraphSAINT folders: `adj_full.npz` (scipy CSR), `feats.npy`, `class_map.json`
//! (`{"node": label}`; multi-label maps are rejected) and `role.json` (`{"tr", "va", "te"}`).

use crate::datasets::npz;
use crate::error::{AppError, Result};
use crate::npyio::{expect_shape, read_floats};
use burn_sparse_gnn::{BuildOptions, Csr, Features, GraphData};
use std::path::Path;

/// Whether `dir` looks like a GraphSAINT folder.
pub fn is_saint(dir: &Path) -> bool {
    dir.join("adj_full.npz").exists()
}

fn read_json(path: &Path) -> Result<serde_json::Value> {
    let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => AppError::Missing { path: path.into(), what: "GraphSAINT json file".into() },
        _ => AppError::io(path, e),
    })?;
    serde_json::from_str(&text).map_err(|e| AppError::Format { path: path.into(), msg: format!("invalid JSON: {e}") })
}

/// Loads a GraphSAINT folder.
pub fn load(dir: &Path, opts: BuildOptions) -> Result<GraphData> {
    let ap = dir.join("adj_full.npz");
    let mut a = npz::open(&ap)?;
    let shape = npz::ints(&mut a, &ap, "shape")?;
    expect_shape(&ap.join("shape"), &shape.shape, &[Some(2)])?;
    let n = shape.data[0].max(0) as usize;
    let indptr = npz::ints(&mut a, &ap, "indptr")?;
    let indices = npz::ints(&mut a, &ap, "indices")?;
    let stored = Csr::new(n, shape.data[1].max(0) as usize, &indptr.data, &indices.data, None)
        .map_err(|e| AppError::graph(ap.display().to_string(), e))?;
    let adj = if opts == BuildOptions::default() {
        // GraphSAINT stores symmetric adjacencies: the CSR is used as is
        stored
    } else {
        let (mut src, mut dst) = (Vec::new(), Vec::new());
        for i in 0..n {
            for &j in &stored.col_idx()[stored.row_ptr()[i]..stored.row_ptr()[i + 1]] {
                src.push(j as i64);
                dst.push(i as i64);
            }
        }
        Csr::from_edges(n, &src, &dst, None, opts).map_err(|e| AppError::graph(ap.display().to_string(), e))?
    };
    let fp = dir.join("feats.npy");
    let x = read_floats(&fp)?;
    expect_shape(&fp, &x.shape, &[Some(n), None])?;
    let features = Features::dense(n, x.shape[1], x.data).map_err(|e| AppError::graph(fp.display().to_string(), e))?;
    let cp = dir.join("class_map.json");
    let class_map = read_json(&cp)?;
    let obj = class_map
        .as_object()
        .ok_or_else(|| AppError::Format { path: cp.clone(), msg: "expected an object {node: label}".into() })?;
    let mut labels = vec![-1i64; n];
    for (k, v) in obj {
        let node: usize = k
            .parse()
            .map_err(|_| AppError::Format { path: cp.clone(), msg: format!("node id `{k}` is not an integer") })?;
        if node >= n {
            return Err(AppError::Format { path: cp.clone(), msg: format!("node {node} outside 0..{n}") });
        }
        labels[node] = match v {
            serde_json::Value::Number(l) => l.as_i64().ok_or_else(|| AppError::Format {
                path: cp.clone(),
                msg: format!("label of node {node} is not an integer"),
            })?,
            serde_json::Value::Array(_) => {
                return Err(AppError::Format {
                    path: cp.clone(),
                    msg: "multi-label class maps are not supported (single-label node classification)".into(),
                })
            }
            _ => {
                return Err(AppError::Format { path: cp.clone(), msg: format!("label of node {node} is not a number") })
            }
        };
    }
    let rp = dir.join("role.json");
    let role = read_json(&rp)?;
    let part = |key: &str| -> Result<Vec<i64>> {
        role.get(key)
            .and_then(|v| v.as_array())
            .ok_or_else(|| AppError::Format { path: rp.clone(), msg: format!("missing list `{key}`") })?
            .iter()
            .map(|v| {
                v.as_i64()
                    .ok_or_else(|| AppError::Format { path: rp.clone(), msg: format!("`{key}` holds a non-integer") })
            })
            .collect()
    };
    let split = GraphData::split_from_i64(&part("tr")?, &part("va")?, &part("te")?, n)
        .map_err(|e| AppError::graph(rp.display().to_string(), e))?;
    let classes = labels.iter().copied().max().unwrap_or(-1) + 1;
    let name = dir.file_name().map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| "saint".into());
    GraphData::new(name, adj, features, labels, classes.max(0) as usize, Some(split))
        .map_err(|e| AppError::graph(dir.display().to_string(), e))
}
