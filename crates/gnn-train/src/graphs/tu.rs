//! The TU Dortmund text format of graph classification datasets (`TUDataset`).
//!
//! A dataset `NAME` is a folder of text files, one entry per line, ids 1-based and global over
//! the whole dataset: `NAME_A.txt` (one directed adjacency entry `row, col` per line),
//! `NAME_graph_indicator.txt` (the graph of node `i`), `NAME_graph_labels.txt` (the class of
//! graph `i`), and optionally `NAME_node_labels.txt` (a categorical label per node),
//! `NAME_node_attributes.txt` (comma-separated reals per node) and `NAME_edge_labels.txt` (read
//! by no model here). Fields are split on `,` and trimmed. The node count comes from the graph
//! indicator (isolated nodes appear in no edge); duplicate adjacency lines are merged.
//!
//! Every structural fault is a [`TuError`] naming the file and line: an id out of range, an
//! edge between two graphs, nodes of a graph that are not contiguous, a graph without nodes, a
//! label count that does not match, a field that is not a number.

use burn_sparse_gnn::{BuildOptions, Csr};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use thiserror::Error;

/// A fault in a TU dataset.
#[derive(Debug, Error)]
pub enum TuError {
    /// A file cannot be read.
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    /// A line is malformed or inconsistent with the other files.
    #[error("{path}:{line}: {msg}")]
    Line { path: PathBuf, line: usize, msg: String },
    /// A whole file is inconsistent with the others (wrong number of lines, missing).
    #[error("{path}: {msg}")]
    File { path: PathBuf, msg: String },
    /// The dataset cannot be encoded as asked.
    #[error("{0}")]
    Encoding(String),
}

/// A TU dataset as read: raw ids mapped to 0-based, raw labels kept.
#[derive(Clone, Debug)]
pub struct TuDataset {
    /// The dataset's name (the files' prefix).
    pub name: String,
    /// Node offsets of the graphs, `[graphs + 1]`: graph `g` holds nodes
    /// `graph_ptr[g]..graph_ptr[g + 1]`.
    pub graph_ptr: Vec<usize>,
    /// The adjacency over all nodes (row = destination), duplicates merged.
    pub adjacency: Csr,
    /// The raw class of each graph (`None` for a dataset without `_graph_labels.txt`).
    pub graph_labels: Option<Vec<i64>>,
    /// The raw categorical label of each node.
    pub node_labels: Option<Vec<i64>>,
    /// The attributes of each node, row-major, and their width.
    pub node_attributes: Option<(Vec<f32>, usize)>,
}

/// The files of dataset `name` in `dir`.
fn file(dir: &Path, name: &str, what: &str) -> PathBuf {
    dir.join(format!("{name}_{what}.txt"))
}

/// The dataset's name in `dir`: the folder's own name when `<folder>_A.txt` exists, else the
/// prefix of the one `*_A.txt` file there.
pub fn dataset_name(dir: &Path) -> Result<String, TuError> {
    if let Some(own) = dir.file_name().and_then(|n| n.to_str()) {
        if file(dir, own, "A").is_file() {
            return Ok(own.to_string());
        }
    }
    let entries = std::fs::read_dir(dir).map_err(|source| TuError::Io { path: dir.to_path_buf(), source })?;
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(|f| f.strip_suffix("_A.txt")).map(str::to_string))
        .collect();
    names.sort();
    match names.len() {
        1 => Ok(names.remove(0)),
        0 => Err(TuError::File { path: dir.to_path_buf(), msg: "no TU dataset here (no <NAME>_A.txt file)".into() }),
        _ => Err(TuError::File {
            path: dir.to_path_buf(),
            msg: format!("several TU datasets here ({}); pass the folder of one", names.join(", ")),
        }),
    }
}

/// Whether `dir` holds a TU dataset.
pub fn is_tu_dir(dir: &Path) -> bool {
    dir.is_dir() && dataset_name(dir).is_ok()
}

/// The lines of a file (a final line end is optional; a blank line inside is an error).
struct Lines {
    path: PathBuf,
    lines: Vec<String>,
}

impl Lines {
    fn read(path: PathBuf) -> Result<Self, TuError> {
        let text = std::fs::read_to_string(&path).map_err(|source| TuError::Io { path: path.clone(), source })?;
        let body = text.trim_end();
        let lines: Vec<String> = match body.is_empty() {
            true => Vec::new(),
            false => body.split('\n').map(|l| l.trim_end_matches('\r').to_string()).collect(),
        };
        if let Some(i) = lines.iter().position(|l| l.trim().is_empty()) {
            return Err(TuError::Line { path, line: i + 1, msg: "blank line".into() });
        }
        Ok(Self { path, lines })
    }

    fn len(&self) -> usize {
        self.lines.len()
    }

    fn line(&self, i: usize) -> &str {
        &self.lines[i]
    }

    fn err(&self, i: usize, msg: impl Into<String>) -> TuError {
        TuError::Line { path: self.path.clone(), line: i + 1, msg: msg.into() }
    }

    fn file_err(&self, msg: impl Into<String>) -> TuError {
        TuError::File { path: self.path.clone(), msg: msg.into() }
    }

    /// Line `i` as comma-separated fields parsed as `T`.
    fn fields<T: std::str::FromStr>(&self, i: usize) -> Result<Vec<T>, TuError> {
        self.line(i)
            .split(',')
            .map(|f| {
                let f = f.trim();
                f.parse::<T>().map_err(|_| self.err(i, format!("`{f}` is not a number of the expected kind")))
            })
            .collect()
    }

    /// Line `i` as one integer.
    fn int(&self, i: usize) -> Result<i64, TuError> {
        match self.fields::<i64>(i)?.as_slice() {
            [v] => Ok(*v),
            f => Err(self.err(i, format!("expected one integer, found {} fields", f.len()))),
        }
    }

    /// Every line as one integer; `expect`: the number of lines there must be, and what they
    /// count.
    fn ints(&self, expect: Option<(usize, &str)>) -> Result<Vec<i64>, TuError> {
        if let Some((n, what)) = expect {
            if self.len() != n {
                return Err(self.file_err(format!("{} lines, but the dataset has {n} {what}", self.len())));
            }
        }
        (0..self.len()).map(|i| self.int(i)).collect()
    }
}

impl TuDataset {
    /// Reads the dataset in `dir` ([`dataset_name`]). Without `_graph_labels.txt` the graphs
    /// are unlabeled (for prediction).
    pub fn load(dir: &Path) -> Result<Self, TuError> {
        let name = dataset_name(dir)?;
        let indicator = Lines::read(file(dir, &name, "graph_indicator"))?;
        let n = indicator.len();
        if n == 0 {
            return Err(indicator.file_err("no nodes"));
        }
        // graph ids: contiguous runs, 1, 2, ... in order
        let mut graph_of = Vec::with_capacity(n);
        let mut graph_ptr = vec![0usize];
        for i in 0..n {
            let g = indicator.int(i)?;
            let current = graph_ptr.len() as i64 - 1; // graphs started so far
            if g == current + 1 {
                graph_ptr.push(i);
            } else if g != current {
                return Err(indicator.err(
                    i,
                    match g < current && g >= 1 {
                        true => format!(
                            "graph {g} continues after graph {current} began: the nodes of a graph must be contiguous"
                        ),
                        false => format!(
                            "graph id {g} after graph {current}: graph ids must run 1, 2, 3, ... (each graph at least one node)"
                        ),
                    },
                ));
            }
            graph_of.push(graph_ptr.len() - 2);
        }
        graph_ptr.remove(0);
        graph_ptr.push(n);
        let graphs = graph_ptr.len() - 1;

        let a = Lines::read(file(dir, &name, "A"))?;
        let mut src = Vec::with_capacity(a.len());
        let mut dst = Vec::with_capacity(a.len());
        for i in 0..a.len() {
            let f = a.fields::<i64>(i)?;
            let [r, c] = f.as_slice() else {
                return Err(a.err(i, format!("expected two node ids `row, col`, found {} fields", f.len())));
            };
            for v in [*r, *c] {
                if v < 1 || v as usize > n {
                    return Err(a.err(i, format!("node id {v} is out of range 1..={n} (the graph indicator's nodes)")));
                }
            }
            let (r, c) = (*r as usize - 1, *c as usize - 1);
            if graph_of[r] != graph_of[c] {
                return Err(a.err(
                    i,
                    format!(
                        "the edge joins node {} of graph {} and node {} of graph {}: edges must stay within a graph",
                        r + 1,
                        graph_of[r] + 1,
                        c + 1,
                        graph_of[c] + 1
                    ),
                ));
            }
            src.push(r as i64);
            dst.push(c as i64);
        }
        let opts = BuildOptions { symmetrize: false, add_self_loops: false, dedup: true };
        let adjacency = Csr::from_edges(n, &src, &dst, None, opts).map_err(|e| a.file_err(e.to_string()))?;

        let labels_path = file(dir, &name, "graph_labels");
        let graph_labels = match labels_path.is_file() {
            true => Some(Lines::read(labels_path)?.ints(Some((graphs, "graphs in the graph indicator")))?),
            false => None,
        };
        let node_labels_path = file(dir, &name, "node_labels");
        let node_labels = match node_labels_path.is_file() {
            true => Some(Lines::read(node_labels_path)?.ints(Some((n, "nodes in the graph indicator")))?),
            false => None,
        };
        let attr_path = file(dir, &name, "node_attributes");
        let node_attributes = match attr_path.is_file() {
            true => {
                let lines = Lines::read(attr_path)?;
                if lines.len() != n {
                    return Err(lines.file_err(format!("{} lines, but the dataset has {n} nodes", lines.len())));
                }
                let mut values = Vec::new();
                let mut width = 0;
                for i in 0..n {
                    let f = lines.fields::<f32>(i)?;
                    if i == 0 {
                        width = f.len();
                    } else if f.len() != width {
                        return Err(lines.err(i, format!("{} attributes, line 1 has {width}", f.len())));
                    }
                    if let Some(v) = f.iter().find(|v| !v.is_finite()) {
                        return Err(lines.err(i, format!("attribute {v} is not finite")));
                    }
                    values.extend(f);
                }
                Some((values, width))
            }
            false => None,
        };
        Ok(Self { name, graph_ptr, adjacency, graph_labels, node_labels, node_attributes })
    }

    /// Number of graphs.
    pub fn num_graphs(&self) -> usize {
        self.graph_ptr.len() - 1
    }

    /// Number of nodes over all graphs.
    pub fn num_nodes(&self) -> usize {
        self.adjacency.n_rows()
    }
}

/// Which node data become the features.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "kebab-case")]
pub enum TuFeatures {
    /// One-hot node labels where the dataset has them, else the attributes, else one-hot
    /// degrees (PyG's `TUDataset` default, `OneHotDegree` for the social datasets, as the GIN
    /// paper).
    #[default]
    Auto,
    /// One-hot node labels followed by the attributes (both where present; degrees where neither).
    LabelsAndAttributes,
    /// One-hot degrees, whatever else the dataset has.
    Degree,
}

/// How a dataset's nodes become features and its labels classes: fitted on the training
/// dataset and saved with the model, so that new graphs are encoded the same way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TuEncoding {
    /// The raw node label of each one-hot column (empty: no label columns). A node label not in
    /// the list gets no column set.
    pub node_label_values: Vec<i64>,
    /// Number of attribute columns after the label columns (0: none).
    pub attributes: usize,
    /// One-hot degree columns `0..=max` (degrees above `max` set the last column), where
    /// neither labels nor attributes are used.
    pub degree_max: Option<usize>,
    /// The raw class of each class index.
    pub class_values: Vec<i64>,
}

impl TuEncoding {
    /// Fits the encoding to `data` (which must have graph labels).
    pub fn fit(data: &TuDataset, features: TuFeatures) -> Result<Self, TuError> {
        let labels = data.graph_labels.as_ref().ok_or_else(|| {
            TuError::Encoding(format!("{}: the dataset has no graph labels (_graph_labels.txt) to train on", data.name))
        })?;
        let class_values = sorted_distinct(labels);
        if class_values.len() < 2 {
            return Err(TuError::Encoding(format!(
                "{}: every graph has the label {}: at least two classes are needed",
                data.name,
                class_values.first().copied().unwrap_or_default()
            )));
        }
        let use_labels = features != TuFeatures::Degree && data.node_labels.is_some();
        let use_attributes = match features {
            TuFeatures::Auto => !use_labels,
            TuFeatures::LabelsAndAttributes => true,
            TuFeatures::Degree => false,
        } && data.node_attributes.is_some();
        let node_label_values = match (use_labels, &data.node_labels) {
            (true, Some(l)) => sorted_distinct(l),
            _ => Vec::new(),
        };
        let attributes = match (use_attributes, &data.node_attributes) {
            (true, Some((_, w))) => *w,
            _ => 0,
        };
        let degree_max = (node_label_values.is_empty() && attributes == 0)
            .then(|| data.adjacency.row_degrees().into_iter().max().unwrap_or(0));
        Ok(Self { node_label_values, attributes, degree_max, class_values })
    }

    /// The feature width.
    pub fn width(&self) -> usize {
        self.node_label_values.len() + self.attributes + self.degree_max.map_or(0, |m| m + 1)
    }

    /// Number of classes.
    pub fn classes(&self) -> usize {
        self.class_values.len()
    }

    /// What the features are, in words.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.node_label_values.is_empty() {
            parts.push(format!("one-hot node labels ({})", self.node_label_values.len()));
        }
        if self.attributes > 0 {
            parts.push(format!("node attributes ({})", self.attributes));
        }
        if let Some(m) = self.degree_max {
            parts.push(format!("one-hot degrees 0..={m}"));
        }
        parts.join(" + ")
    }

    /// The features `[nodes, width]` of `data`, row-major.
    pub fn features(&self, data: &TuDataset) -> Result<Vec<f32>, TuError> {
        let n = data.num_nodes();
        let w = self.width();
        let mut x = vec![0f32; n * w];
        if !self.node_label_values.is_empty() {
            let labels = data.node_labels.as_ref().ok_or_else(|| {
                TuError::Encoding(format!(
                    "{}: the model reads node labels, but the dataset has no _node_labels.txt",
                    data.name
                ))
            })?;
            for (i, l) in labels.iter().enumerate() {
                if let Ok(c) = self.node_label_values.binary_search(l) {
                    x[i * w + c] = 1.0;
                }
            }
        }
        if self.attributes > 0 {
            let (values, width) = data.node_attributes.as_ref().ok_or_else(|| {
                TuError::Encoding(format!(
                    "{}: the model reads node attributes, but the dataset has no _node_attributes.txt",
                    data.name
                ))
            })?;
            if *width != self.attributes {
                return Err(TuError::Encoding(format!(
                    "{}: the nodes have {width} attributes, the model reads {}",
                    data.name, self.attributes
                )));
            }
            let off = self.node_label_values.len();
            for i in 0..n {
                x[i * w + off..i * w + off + width].copy_from_slice(&values[i * width..(i + 1) * width]);
            }
        }
        if let Some(max) = self.degree_max {
            for (i, d) in data.adjacency.row_degrees().into_iter().enumerate() {
                x[i * w + d.min(max)] = 1.0;
            }
        }
        Ok(x)
    }

    /// The class index of every graph of `data` (`None` when it has no labels); a label the
    /// model does not know is an error.
    pub fn classes_of(&self, data: &TuDataset) -> Result<Option<Vec<i64>>, TuError> {
        let Some(labels) = &data.graph_labels else { return Ok(None) };
        labels
            .iter()
            .enumerate()
            .map(|(g, l)| {
                self.class_values.binary_search(l).map(|c| c as i64).map_err(|_| {
                    TuError::Encoding(format!(
                        "{}: graph {} has the label {l}, which is not one of the model's classes {:?}",
                        data.name,
                        g + 1,
                        self.class_values
                    ))
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }
}

fn sorted_distinct(v: &[i64]) -> Vec<i64> {
    let mut s = v.to_vec();
    s.sort_unstable();
    s.dedup();
    s
}
