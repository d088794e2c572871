//! GraphSAINT folders: `adj_full.npz` (scipy CSR), `feats.npy`, `class_map.json`
//! (`{"node": label}`; multi-label maps are rejected) and `role.json` (`{"tr", "va", "te"}`).

use super::{check_graph_memory, check_split, class_count, folder_name, npz};
use crate::error::{AppError, Result};
use crate::host_memory::check_fits;
use crate::npyio::{expect_shape, open_regular, read_floats};
use burn_sparse_gnn::data::MAX_INDEX;
use burn_sparse_gnn::{BuildOptions, Csr, Features, GraphData};
use std::path::Path;

/// Whether `dir` looks like a GraphSAINT folder.
pub fn is_saint(dir: &Path) -> bool {
    dir.join("adj_full.npz").exists()
}

/// Bytes of memory a parsed JSON value takes per byte of text, at most (a map entry
/// `"123": 4,` of 9 bytes becomes a key string, a number value and a tree node).
const JSON_EXPANSION: u64 = 16;

/// Reads a JSON file: a regular file (a FIFO or folder is refused) whose parsed value fits in
/// the host's memory.
fn read_json(path: &Path) -> Result<serde_json::Value> {
    let file = open_regular(path, "GraphSAINT json file")?;
    let len = file.metadata().map_err(|e| AppError::io(path, e))?.len();
    check_fits(len.saturating_mul(JSON_EXPANSION), || format!("{}: JSON of {len} bytes, parsed", path.display()))?;
    serde_json::from_reader(std::io::BufReader::new(file))
        .map_err(|e| AppError::Format { path: path.into(), msg: format!("invalid JSON: {e}") })
}

/// Loads a GraphSAINT folder.
pub fn load(dir: &Path, opts: BuildOptions) -> Result<GraphData> {
    let ap = dir.join("adj_full.npz");
    let mut a = npz::open(&ap)?;
    let shape = npz::ints(&mut a, &ap, "shape")?;
    expect_shape(&ap.join("shape"), &shape.shape, &[Some(2)])?;
    let (n, cols) = (shape.data[0], shape.data[1]);
    if n < 0 || n != cols || n as u64 > MAX_INDEX as u64 {
        return Err(AppError::Format {
            path: ap.join("shape"),
            msg: format!("declares a {n} x {cols} adjacency, expected a square one of at most {MAX_INDEX} nodes"),
        });
    }
    let n = n as usize;
    let indptr = npz::ints(&mut a, &ap, "indptr")?;
    expect_shape(&ap.join("indptr"), &indptr.shape, &[Some(n + 1)])?;
    let indices = npz::ints(&mut a, &ap, "indices")?;
    let stored =
        Csr::new(n, n, &indptr.data, &indices.data, None).map_err(|e| AppError::graph(ap.display().to_string(), e))?;
    let adj = if opts == BuildOptions::default() {
        // GraphSAINT stores symmetric adjacencies: the CSR is used as is
        stored
    } else {
        check_graph_memory(&ap, n, stored.nnz(), opts)?;
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
    check_split(&rp, "tr / va / te", &split, n)?;
    let classes = class_count(&cp, &labels)?;
    GraphData::new(folder_name(dir, "saint"), adj, features, labels, classes, Some(split))
        .map_err(|e| AppError::graph(dir.display().to_string(), e))
}
