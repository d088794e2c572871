//! Node-classification datasets: node features, labels, classes and train / valid / test
//! splits over a host adjacency ([`Csr`]), validated together.

use super::csr::Csr;
use super::dataset_stats::DatasetStats;
use crate::error::GraphError;
pub use crate::error::SplitIssue;

/// Most classes a dataset may have (class ids are `0..classes`, `classes = max label + 1`).
pub const MAX_CLASSES: usize = 1_000_000;

/// Class counts up to this are always accepted; above it a dataset needs at least as many
/// labeled nodes as classes (see [`class_limit`]).
pub const FREE_CLASSES: usize = 1_000;

/// The largest class count a dataset with `labeled` labeled nodes may declare:
/// `min(MAX_CLASSES, max(FREE_CLASSES, labeled))`. A label id above it is almost surely a
/// corrupt value (one label of 10^9 would make every per-class table a gigabyte); no real
/// single-label benchmark comes near it (ogbn-papers100M has 172 classes).
pub fn class_limit(labeled: usize) -> usize {
    labeled.clamp(FREE_CLASSES, MAX_CLASSES)
}

/// Node features, dense or sparse (CSR).
#[derive(Clone, Debug, PartialEq)]
pub enum Features {
    /// Row-major `[n, f]`.
    Dense {
        /// Nodes (rows).
        n: usize,
        /// Features per node (columns).
        f: usize,
        /// The `n * f` values.
        data: Vec<f32>,
    },
    /// CSR `[n, f]` (bag-of-words style features).
    Sparse {
        /// Nodes (rows).
        n: usize,
        /// Features per node (columns).
        f: usize,
        /// Row pointer (`n + 1` entries).
        indptr: Vec<usize>,
        /// Column of every stored entry.
        indices: Vec<u32>,
        /// Value of every stored entry.
        data: Vec<f32>,
    },
}

impl Features {
    /// Dense features, checked: `data.len() == n * f` and every value finite.
    pub fn dense(n: usize, f: usize, data: Vec<f32>) -> Result<Self, GraphError> {
        if data.len() != n * f {
            return Err(GraphError::FeatureShape(format!("{} values cannot form [{n}, {f}]", data.len())));
        }
        if let Some(p) = data.iter().position(|v| !v.is_finite()) {
            return Err(GraphError::NonFiniteFeature { node: p / f.max(1), feature: p % f.max(1), value: data[p] });
        }
        Ok(Self::Dense { n, f, data })
    }

    /// Sparse features from CSR arrays, checked like an adjacency, plus finite values.
    pub fn sparse(n: usize, f: usize, indptr: &[i64], indices: &[i64], data: Vec<f32>) -> Result<Self, GraphError> {
        let csr = Csr::new(n, f, indptr, indices, None).map_err(|e| GraphError::FeatureShape(e.to_string()))?;
        if data.len() != csr.nnz() {
            return Err(GraphError::FeatureShape(format!("{} values for {} stored entries", data.len(), csr.nnz())));
        }
        if let Some(p) = data.iter().position(|v| !v.is_finite()) {
            let node = csr.row_ptr.partition_point(|&s| s <= p) - 1;
            return Err(GraphError::NonFiniteFeature { node, feature: csr.col_idx[p] as usize, value: data[p] });
        }
        Ok(Self::Sparse { n, f, indptr: csr.row_ptr, indices: csr.col_idx, data })
    }

    /// Number of nodes.
    pub fn n(&self) -> usize {
        match self {
            Self::Dense { n, .. } | Self::Sparse { n, .. } => *n,
        }
    }
    /// Feature width.
    pub fn width(&self) -> usize {
        match self {
            Self::Dense { f, .. } | Self::Sparse { f, .. } => *f,
        }
    }
    /// Bytes of the dense `[n, f]` f32 copy that [`Features::to_dense`] would allocate
    /// (saturating), so that a caller can check it against its memory before densifying.
    pub fn dense_bytes(&self) -> u64 {
        (self.n() as u64).saturating_mul(self.width() as u64).saturating_mul(4)
    }
    /// Row-major dense copy.
    pub fn to_dense(&self) -> Vec<f32> {
        match self {
            Self::Dense { data, .. } => data.clone(),
            Self::Sparse { n, f, indptr, indices, data } => {
                let mut out = vec![0.0f32; n * f];
                for i in 0..*n {
                    for p in indptr[i]..indptr[i + 1] {
                        out[i * f + indices[p] as usize] += data[p];
                    }
                }
                out
            }
        }
    }
}

/// Train / validation / test node ids.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// Training nodes.
    pub train: Vec<u32>,
    /// Validation nodes.
    pub valid: Vec<u32>,
    /// Test nodes.
    pub test: Vec<u32>,
}

impl Split {
    /// The parts with their names, in the order train, valid, test.
    pub fn parts(&self) -> [(&'static str, &[u32]); 3] {
        [("train", &self.train), ("valid", &self.valid), ("test", &self.test)]
    }

    /// Checks that train, valid and test are non-empty, list each node once and are
    /// disjoint (ids at or above `n_nodes` are left to the range check of
    /// [`GraphData::new`]). Reports the first problem, naming the split and a node.
    pub fn check(&self, n_nodes: usize) -> Result<(), SplitIssue> {
        for (split, ids) in self.parts() {
            if ids.is_empty() {
                return Err(SplitIssue::Empty { split });
            }
        }
        // which part (1, 2, 3) holds each node; 0 = none
        let mut owner = vec![0u8; n_nodes];
        for (k, (split, ids)) in self.parts().into_iter().enumerate() {
            let mark = k as u8 + 1;
            let mut first: Option<(u8, u32)> = None;
            let mut repeats = 0usize;
            for &node in ids {
                let Some(slot) = owner.get_mut(node as usize) else { continue };
                if *slot != 0 {
                    repeats += (*slot == mark) as usize;
                    first.get_or_insert((*slot, node));
                } else {
                    *slot = mark;
                }
            }
            if let Some((other, node)) = first {
                let names = ["train", "valid", "test"];
                return Err(if other == mark {
                    SplitIssue::Repeated { split, node, repeats }
                } else {
                    let shared = ids.iter().filter(|&&i| owner.get(i as usize).is_some_and(|&o| o != mark)).count();
                    SplitIssue::Overlap { first: names[other as usize - 1], second: split, node, shared }
                });
            }
        }
        Ok(())
    }
}

/// Checks the ids of one split against the graph: in range and labeled.
fn check_split_nodes(split: &Split, labels: &[i64]) -> Result<(), GraphError> {
    let n = labels.len();
    for (name, ids) in split.parts() {
        for &node in ids {
            match labels.get(node as usize) {
                None => return Err(GraphError::SplitOutOfRange { split: name, node: node as i64, n_nodes: n }),
                Some(&l) if l < 0 => return Err(GraphError::UnlabeledSplitNode { split: name, node: node as usize }),
                _ => {}
            }
        }
    }
    Ok(())
}

/// Checks a split completely: ids (range, labels), then non-empty disjoint parts.
fn check_split(split: &Split, labels: &[i64]) -> Result<(), GraphError> {
    check_split_nodes(split, labels)?;
    split.check(labels.len()).map_err(GraphError::Split)
}

/// Checks that `num_classes` is within [`class_limit`] of the labeled nodes. A label at or
/// above the limit is reported as out of range (with the limit as the class count).
fn check_class_count(labels: &[i64], num_classes: usize) -> Result<(), GraphError> {
    let labeled = labels.iter().filter(|&&l| l >= 0).count();
    let limit = class_limit(labeled);
    if num_classes <= limit {
        return Ok(());
    }
    if let Some((node, &label)) = labels.iter().enumerate().find(|(_, &l)| l >= limit as i64) {
        return Err(GraphError::LabelOutOfRange { node, label, classes: limit });
    }
    // no node uses the surplus classes: the declared count itself is the problem
    Err(GraphError::TooManyClasses { classes: num_classes, limit, max: MAX_CLASSES, labeled })
}

/// A node-classification dataset: adjacency, features, labels (`-1` = unlabeled), classes and
/// an optional split. Built only through [`GraphData::new`], which validates everything.
#[derive(Clone, Debug, PartialEq)]
pub struct GraphData {
    /// Name shown in logs and results.
    pub name: String,
    adj: Csr,
    features: Features,
    labels: Vec<i64>,
    num_classes: usize,
    split: Option<Split>,
    alternatives: Vec<Split>,
}

impl GraphData {
    /// Checks that features and labels cover every node, labels are `-1` or in
    /// `0..num_classes`, `num_classes` is within [`class_limit`], and split ids are in range
    /// and labeled, and the split's parts are non-empty and disjoint ([`Split::check`]).
    pub fn new(
        name: impl Into<String>,
        adj: Csr,
        features: Features,
        labels: Vec<i64>,
        num_classes: usize,
        split: Option<Split>,
    ) -> Result<Self, GraphError> {
        let n = adj.n_rows();
        if adj.n_cols() != n {
            return Err(GraphError::NodeCount { what: "adjacency columns", got: adj.n_cols(), nodes: n });
        }
        if features.n() != n {
            return Err(GraphError::NodeCount { what: "features", got: features.n(), nodes: n });
        }
        if labels.len() != n {
            return Err(GraphError::LabelCount { got: labels.len(), nodes: n });
        }
        for (node, &label) in labels.iter().enumerate() {
            if label < -1 || label >= num_classes as i64 {
                return Err(GraphError::LabelOutOfRange { node, label, classes: num_classes });
            }
        }
        check_class_count(&labels, num_classes)?;
        if let Some(s) = &split {
            check_split(s, &labels)?;
        }
        Ok(Self { name: name.into(), adj, features, labels, num_classes, split, alternatives: Vec::new() })
    }

    /// Adds the further splits a file provides (e.g. the ten masks of the heterophilous
    /// benchmarks), each checked like the main split (range, labels, non-empty, disjoint).
    pub fn with_alternative_splits(mut self, splits: Vec<Split>) -> Result<Self, GraphError> {
        for s in &splits {
            check_split(s, &self.labels)?;
        }
        self.alternatives = splits;
        Ok(self)
    }

    /// The further splits of the file (see [`GraphData::with_alternative_splits`]).
    pub fn alternative_splits(&self) -> &[Split] {
        &self.alternatives
    }

    /// Converts split ids given as i64 (as files store them), checking their range.
    pub fn split_from_i64(train: &[i64], valid: &[i64], test: &[i64], n_nodes: usize) -> Result<Split, GraphError> {
        let conv = |name: &'static str, v: &[i64]| -> Result<Vec<u32>, GraphError> {
            v.iter()
                .map(|&node| {
                    if node < 0 || node as usize >= n_nodes {
                        Err(GraphError::SplitOutOfRange { split: name, node, n_nodes })
                    } else {
                        Ok(node as u32)
                    }
                })
                .collect()
        };
        Ok(Split { train: conv("train", train)?, valid: conv("valid", valid)?, test: conv("test", test)? })
    }

    /// The adjacency.
    pub fn adjacency(&self) -> &Csr {
        &self.adj
    }
    /// Replaces the adjacency (same number of nodes).
    pub fn with_adjacency(mut self, adj: Csr) -> Result<Self, GraphError> {
        if adj.n_rows() != self.num_nodes() || adj.n_cols() != self.num_nodes() {
            return Err(GraphError::NodeCount { what: "new adjacency", got: adj.n_rows(), nodes: self.num_nodes() });
        }
        self.adj = adj;
        Ok(self)
    }
    /// Node features.
    pub fn features(&self) -> &Features {
        &self.features
    }
    /// Labels, `-1` for unlabeled nodes.
    pub fn labels(&self) -> &[i64] {
        &self.labels
    }
    /// Number of classes.
    pub fn num_classes(&self) -> usize {
        self.num_classes
    }
    /// Number of nodes.
    pub fn num_nodes(&self) -> usize {
        self.adj.n_rows()
    }
    /// The split, if the dataset has one.
    pub fn split(&self) -> Option<&Split> {
        self.split.as_ref()
    }
    /// Sets the split (checked like in [`GraphData::new`]).
    pub fn with_split(self, split: Split) -> Result<Self, GraphError> {
        let GraphData { name, adj, features, labels, num_classes, alternatives, .. } = self;
        let mut d = GraphData::new(name, adj, features, labels, num_classes, Some(split))?;
        d.alternatives = alternatives;
        Ok(d)
    }

    /// Statistics for `info` and result files.
    pub fn stats(&self) -> DatasetStats {
        let deg = self.adj.row_degrees();
        let n = self.num_nodes();
        let mut sorted = deg.clone();
        sorted.sort_unstable();
        let pct = |p: f64| {
            if n == 0 {
                0
            } else {
                sorted[((n - 1) as f64 * p).round() as usize]
            }
        };
        let (mut same, mut labeled_edges) = (0usize, 0usize);
        for i in 0..n {
            for &j in &self.adj.col_idx()[self.adj.row_ptr()[i]..self.adj.row_ptr()[i + 1]] {
                let (a, b) = (self.labels[i], self.labels[j as usize]);
                if a >= 0 && b >= 0 {
                    labeled_edges += 1;
                    same += (a == b) as usize;
                }
            }
        }
        let mut class_counts = vec![0usize; self.num_classes];
        for &l in &self.labels {
            if l >= 0 {
                class_counts[l as usize] += 1;
            }
        }
        DatasetStats {
            name: self.name.clone(),
            nodes: n,
            edges: self.adj.nnz(),
            features: self.features.width(),
            classes: self.num_classes,
            labeled: self.labels.iter().filter(|&&l| l >= 0).count(),
            degree_min: sorted.first().copied().unwrap_or(0),
            degree_median: pct(0.5),
            degree_p99: pct(0.99),
            degree_max: sorted.last().copied().unwrap_or(0),
            degree_mean: if n == 0 { 0.0 } else { self.adj.nnz() as f64 / n as f64 },
            isolated: deg.iter().filter(|&&d| d == 0).count(),
            self_loops: self.adj.self_loops(),
            symmetric: self.adj.is_symmetric(),
            edge_homophily: if labeled_edges == 0 { f64::NAN } else { same as f64 / labeled_edges as f64 },
            class_counts,
            split_sizes: self.split.as_ref().map(|s| [s.train.len(), s.valid.len(), s.test.len()]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::graph::csr::BuildOptions;
    /// A path graph of `n` nodes with one feature, labels `i % 2`.
    fn data(n: usize, split: Option<Split>) -> Result<GraphData, GraphError> {
        let src: Vec<i64> = (0..n as i64 - 1).collect();
        let dst: Vec<i64> = (1..n as i64).collect();
        let adj = Csr::from_edges(n, &src, &dst, None, BuildOptions::undirected()).unwrap();
        let x = Features::dense(n, 1, vec![1.0; n]).unwrap();
        GraphData::new("g", adj, x, (0..n as i64).map(|i| i % 2).collect(), 2, split)
    }

    fn split(train: &[u32], valid: &[u32], test: &[u32]) -> Split {
        Split { train: train.to_vec(), valid: valid.to_vec(), test: test.to_vec() }
    }

    #[test]
    fn overlapping_splits_are_refused_naming_the_splits_and_a_node() {
        let e = data(6, Some(split(&[0, 1], &[2, 3], &[0, 1]))).unwrap_err().to_string();
        assert!(e.contains("the train and test splits overlap: node 0 is in both (2 shared nodes)"), "{e}");
        let e = data(6, Some(split(&[0, 1], &[1, 2], &[4, 5]))).unwrap_err().to_string();
        assert!(e.contains("the train and valid splits overlap: node 1"), "{e}");
        let e = data(6, Some(split(&[0, 1], &[2, 3], &[3, 4]))).unwrap_err().to_string();
        assert!(e.contains("the valid and test splits overlap: node 3"), "{e}");
        let e = data(6, Some(split(&[0, 1, 0], &[2], &[3]))).unwrap_err().to_string();
        assert!(e.contains("the train split lists node 0 more than once"), "{e}");
        assert_eq!(
            split(&[0, 1], &[2, 3], &[0, 1]).check(6),
            Err(SplitIssue::Overlap { first: "train", second: "test", node: 0, shared: 2 })
        );
        assert_eq!(split(&[0], &[1], &[2]).check(6), Ok(()));
    }

    #[test]
    fn empty_train_valid_or_test_splits_are_refused() {
        for (s, name) in
            [(split(&[], &[2], &[3]), "train"), (split(&[0], &[], &[3]), "valid"), (split(&[0], &[2], &[]), "test")]
        {
            assert_eq!(s.check(6), Err(SplitIssue::Empty { split: name }));
            let e = data(6, Some(s)).unwrap_err().to_string();
            assert!(e.contains(&format!("the {name} split is empty")), "{e}");
        }
    }

    #[test]
    fn with_split_and_alternative_splits_are_checked_too() {
        let d = data(6, None).unwrap();
        let e = d.clone().with_split(split(&[0, 1], &[2], &[2, 3])).unwrap_err().to_string();
        assert!(e.contains("the valid and test splits overlap: node 2"), "{e}");
        let good = split(&[0, 1], &[2], &[3, 4]);
        let e = d.clone().with_alternative_splits(vec![good.clone(), split(&[0], &[1], &[])]).unwrap_err();
        assert!(e.to_string().contains("the test split is empty"), "{e}");
        assert_eq!(d.with_alternative_splits(vec![good.clone()]).unwrap().alternative_splits(), &[good]);
    }

    #[test]
    fn class_counts_beyond_the_limit_are_refused() {
        assert_eq!(class_limit(10), 1_000);
        assert_eq!(class_limit(5_000), 5_000);
        assert_eq!(class_limit(10_000_000), MAX_CLASSES);
        let adj = Csr::from_edges(3, &[0], &[1], None, BuildOptions::default()).unwrap();
        let x = Features::dense(3, 1, vec![0.0; 3]).unwrap();
        let e = GraphData::new("g", adj.clone(), x.clone(), vec![0, 1_000_000_000, -1], 1_000_000_001, None);
        assert_eq!(e, Err(GraphError::LabelOutOfRange { node: 1, label: 1_000_000_000, classes: 1_000 }));
        // a declared count nobody uses is refused too
        let e = GraphData::new("g", adj.clone(), x.clone(), vec![0, 1, -1], 5_000, None).unwrap_err().to_string();
        assert!(e.contains("5000 classes declared, more than the limit 1000"), "{e}");
        assert!(GraphData::new("g", adj, x, vec![0, 999, -1], 1_000, None).is_ok());
    }

    #[test]
    fn dense_bytes_of_features() {
        assert_eq!(Features::dense(3, 2, vec![0.0; 6]).unwrap().dense_bytes(), 24);
        // one-hot ids of 200,000 nodes: 1.6 MB stored, 160 GB dense
        let n = 200_000usize;
        let ip: Vec<i64> = (0..=n as i64).collect();
        let ix: Vec<i64> = (0..n as i64).collect();
        let f = Features::sparse(n, n, &ip, &ix, vec![1.0; n]).unwrap();
        assert_eq!(f.dense_bytes(), 160_000_000_000);
    }

    #[test]
    fn the_text_summary_of_many_classes_stays_short() {
        let n = 5_000usize;
        let adj = Csr::from_edges(n, &[], &[], None, BuildOptions::default()).unwrap();
        let x = Features::dense(n, 1, vec![0.0; n]).unwrap();
        // class c has one node, class 7 has two more
        let mut labels: Vec<i64> = (0..n as i64).collect();
        labels[0] = 7;
        labels[1] = 7;
        let d = GraphData::new("many", adj, x, labels, n, None).unwrap();
        let text = d.stats().to_string();
        let line = text.lines().find(|l| l.starts_with("classes")).unwrap();
        assert!(line.len() < 400, "{line}");
        assert!(line.contains("largest [7:3, 2:1, 3:1"), "{line}");
        assert!(line.contains("and 4980 more classes with 4978 nodes"), "{line}");
        assert_eq!(d.stats().class_counts.len(), n);
        // a few classes: all counts, as before
        let small = data(6, None).unwrap().stats().to_string();
        assert!(small.contains("classes      2  counts [3, 3]"), "{small}");
    }
}
