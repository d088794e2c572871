//! Synthetic graphs: a stochastic block model with class-correlated features (the built-in,
//! learnable default dataset) and R-MAT graphs at any scale for performance work (written to
//! an npy folder so that the peer scripts read the identical graph).
//!
//! By graph: [`sbm`](mod@sbm) (with the per-class and random splits) and [`rmat`](mod@rmat),
//! and here the node data of a graph that has none.

mod rmat;
mod sbm;
#[cfg(test)]
mod tests;

pub use rmat::{rmat, RmatSpec};
pub use sbm::{per_class_split, random_split, sbm, SbmSpec};

use crate::error::{AppError, Result};
use crate::host_memory::check_fits;
use burn_sparse_gnn::data::{class_limit, MAX_INDEX};
use burn_sparse_gnn::{Csr, Features, GraphData, Split};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;

fn config(msg: String) -> AppError {
    AppError::Config(msg)
}

/// Refuses a node count that 32-bit node ids cannot address.
fn check_nodes(kind: &str, nodes: usize) -> Result<()> {
    if nodes > MAX_INDEX {
        return Err(config(format!("{kind}: --nodes {nodes} is more than {MAX_INDEX} (node ids are 32-bit)")));
    }
    Ok(())
}

/// Refuses a class count below 1 (`min`) or beyond [`class_limit`] of `nodes` labeled nodes.
fn check_classes(kind: &str, classes: usize, min: usize, nodes: usize) -> Result<()> {
    if classes < min {
        return Err(config(format!("{kind}: --classes {classes}: needs at least {min}")));
    }
    let limit = class_limit(nodes);
    if classes > limit {
        return Err(config(format!(
            "{kind}: --classes {classes} is more than {limit} (at most max(1000, nodes) classes, 1000000 in all)"
        )));
    }
    Ok(())
}

/// Checks the options of [`random_node_data`] for `nodes` nodes before anything is generated
/// (callers can run it before generating the graph): at least one class and no more than the
/// class limit, enough nodes for a split with nodes in every part, memory for the features.
pub fn check_node_data(name: &str, nodes: usize, features: usize, classes: usize) -> Result<()> {
    let n = nodes;
    check_classes(name, classes, 1, n)?;
    if n * 65 / 100 == 0 || n * 75 / 100 == n * 65 / 100 || n * 75 / 100 == n {
        return Err(config(format!("{name}: {n} nodes are too few for a 65/10/25 split with nodes in every part")));
    }
    let need = (n as u64).saturating_mul(features as u64).saturating_mul(4).saturating_add(n as u64 * 32);
    check_fits(need, || format!("{name}: --features {features} for {n} nodes"))
}

/// Random features (`[n, f]`, uniform in [-1, 1)), labels (`classes`) and a 65/10/25 split for a
/// generated graph used in timing runs.
pub fn random_node_data(adj: Csr, name: &str, features: usize, classes: usize, seed: u64) -> Result<GraphData> {
    let n = adj.n_rows();
    check_node_data(name, n, features, classes)?;
    let x: Vec<f32> = (0..n)
        .into_par_iter()
        .flat_map_iter(|i| {
            let mut rng = StdRng::seed_from_u64(seed ^ (i as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
            (0..features).map(move |_| rng.random::<f32>() * 2.0 - 1.0).collect::<Vec<_>>()
        })
        .collect();
    let mut rng = StdRng::seed_from_u64(seed);
    let labels: Vec<i64> = (0..n).map(|_| rng.random_range(0..classes as i64)).collect();
    let mut ids: Vec<u32> = (0..n as u32).collect();
    ids.shuffle(&mut rng);
    let (a, b) = (n * 65 / 100, n * 75 / 100); // non-empty parts: checked above
    let mut split = Split { train: ids[..a].to_vec(), valid: ids[a..b].to_vec(), test: ids[b..].to_vec() };
    split.train.sort_unstable();
    split.valid.sort_unstable();
    split.test.sort_unstable();
    let features = Features::dense(n, features, x).map_err(|e| AppError::graph(name, e))?;
    GraphData::new(name, adj, features, labels, classes, Some(split)).map_err(|e| AppError::graph(name, e))
}
