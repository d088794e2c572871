//! Summary statistics of a dataset ([`crate::graph::dataset::GraphData::stats`]) and their
//! text form.

/// Summary statistics of a dataset (`Display` prints a table; `Serialize` a JSON object).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DatasetStats {
    /// Name of the dataset.
    pub name: String,
    /// Number of nodes.
    pub nodes: usize,
    /// Number of edges (directed adjacency entries).
    pub edges: usize,
    /// Features per node.
    pub features: usize,
    /// Number of classes.
    pub classes: usize,
    /// Nodes with a label.
    pub labeled: usize,
    /// Smallest in-degree (row length).
    pub degree_min: usize,
    /// Median in-degree.
    pub degree_median: usize,
    /// 99th percentile of the in-degree.
    pub degree_p99: usize,
    /// Largest in-degree.
    pub degree_max: usize,
    /// Mean in-degree (edges / nodes).
    pub degree_mean: f64,
    /// Nodes of in-degree 0.
    pub isolated: usize,
    /// Number of self-loops.
    pub self_loops: usize,
    /// Whether the adjacency is symmetric.
    pub symmetric: bool,
    /// Fraction of edges (between labeled nodes) whose endpoints share a label.
    pub edge_homophily: f64,
    /// Labeled nodes per class.
    pub class_counts: Vec<usize>,
    /// Train / valid / test sizes.
    pub split_sizes: Option<[usize; 3]>,
}

impl std::fmt::Display for DatasetStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "dataset      {}", self.name)?;
        writeln!(f, "nodes        {} ({} labeled, {} isolated)", self.nodes, self.labeled, self.isolated)?;
        writeln!(
            f,
            "edges        {} (directed entries; {}, {} self-loops)",
            self.edges,
            if self.symmetric { "symmetric" } else { "not symmetric" },
            self.self_loops
        )?;
        writeln!(
            f,
            "degree       min {}  median {}  mean {:.2}  p99 {}  max {}",
            self.degree_min, self.degree_median, self.degree_mean, self.degree_p99, self.degree_max
        )?;
        writeln!(f, "features     {}", self.features)?;
        writeln!(f, "classes      {}  counts {}", self.classes, class_summary(&self.class_counts))?;
        writeln!(f, "homophily    {:.4} (edge)", self.edge_homophily)?;
        match self.split_sizes {
            Some([t, v, e]) => write!(f, "split        train {t}  valid {v}  test {e}"),
            None => write!(f, "split        none (train with --split per-class:T,V or random:T,V)"),
        }
    }
}

/// Class counts printed in full up to this many classes; above, the largest ones and a total.
pub const SHOWN_CLASSES: usize = 20;

/// The class counts for the text summary: all of them (`[a, b, c]`) up to [`SHOWN_CLASSES`]
/// classes, else the largest [`SHOWN_CLASSES`] as `class:count` and what the rest hold, so the
/// text stays a line long whatever the class count.
fn class_summary(counts: &[usize]) -> String {
    if counts.len() <= SHOWN_CLASSES {
        return format!("{counts:?}");
    }
    let mut order: Vec<usize> = (0..counts.len()).collect();
    order.sort_by_key(|&c| (std::cmp::Reverse(counts[c]), c));
    let top: Vec<String> = order[..SHOWN_CLASSES].iter().map(|&c| format!("{c}:{}", counts[c])).collect();
    let rest: usize = order[SHOWN_CLASSES..].iter().map(|&c| counts[c]).sum();
    format!("largest [{}] and {} more classes with {rest} nodes", top.join(", "), counts.len() - SHOWN_CLASSES)
}
