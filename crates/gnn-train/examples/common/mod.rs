// A small random graph with class-correlated features and a split, shared by the examples.

use burn_sparse_gnn::random::{random_csr, random_values, RandomGraphSpec};
use burn_sparse_gnn::{BuildOptions, Csr, Features, GraphData, Split};

/// `n` nodes in `classes` classes; features are a noisy one-hot of the class.
pub fn toy_graph(n: usize, classes: usize) -> GraphData {
    let r = random_csr(&RandomGraphSpec {
        n_rows: n,
        n_cols: n,
        avg_degree: 4,
        hub_degree: 40,
        seed: 7,
        ..Default::default()
    });
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    for i in 0..n {
        for &j in &r.col_idx()[r.row_ptr()[i]..r.row_ptr()[i + 1]] {
            src.push(j as i64);
            dst.push(i as i64);
        }
    }
    let adj = Csr::from_edges(n, &src, &dst, None, BuildOptions::undirected()).expect("valid edges");
    let labels: Vec<i64> = (0..n).map(|i| (i % classes) as i64).collect();
    let noise = random_values(n * classes, 3);
    let x: Vec<f32> = (0..n * classes)
        .map(|k| if (k % classes) as i64 == labels[k / classes] { 1.0 } else { 0.0 } + 0.8 * noise[k] as f32)
        .collect();
    let ids = |r: std::ops::Range<usize>| (0..n).filter(|i| r.contains(&(i % 10))).map(|i| i as u32).collect();
    let split = Split { train: ids(0..6), valid: ids(6..8), test: ids(8..10) };
    GraphData::new("toy", adj, Features::dense(n, classes, x).expect("shape"), labels, classes, Some(split))
        .expect("valid data")
}
