//! The partition of a run's graph: computed, or read from its cache file, and the loss
//! weights of the splits.

use crate::error::{AppError, Result};
use crate::training::HostGraph;
use burn_sparse_gnn::partition::{partition, PartitionOptions, PartitionedGraph};
use std::path::Path;
use std::time::Instant;

use crate::partitioned::spread::Spread;

/// The partition of `adj` that `spread` asks for: read from `cache` when it holds one of this
/// graph with the same parts and method, computed (and written to `cache`) otherwise. Returns
/// whether it came from the cache.
pub fn load_or_partition(
    adj: &burn_sparse_gnn::Csr,
    spread: &Spread,
    cache: Option<&Path>,
) -> Result<(burn_sparse_gnn::partition::Partition, bool)> {
    let cached = cache.filter(|p| p.exists()).and_then(|p| match burn_sparse_gnn::partition::Partition::load(p, adj) {
        Ok(part) if part.parts == spread.parts && part.method == spread.method => Some(part),
        Ok(_) => None,
        Err(e) => {
            eprintln!("partition cache {} not used: {e}", p.display());
            None
        }
    });
    if let Some(p) = cached {
        return Ok((p, true));
    }
    let opts = PartitionOptions { parts: spread.parts, method: spread.method, seed: 1 };
    let p = partition_with_progress(adj, &opts)?;
    if let Some(path) = cache {
        p.save(adj, path).map_err(|e| AppError::Config(format!("partition cache: {e}")))?;
    }
    Ok((p, false))
}

/// Partitions `adj` as `opts` asks, with a spinner and the elapsed time on a terminal (whole-graph
/// METIS takes minutes on graphs of 100M edges), a line before and after otherwise.
pub fn partition_with_progress(
    adj: &burn_sparse_gnn::Csr,
    opts: &PartitionOptions,
) -> Result<burn_sparse_gnn::partition::Partition> {
    use indicatif::{ProgressBar, ProgressStyle};
    let what = format!(
        "partitioning {} nodes and {} edges into {} parts ({})",
        adj.n_rows(),
        adj.nnz(),
        opts.parts,
        opts.method.as_str()
    );
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} {elapsed}").unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_message(what.clone());
    if bar.is_hidden() {
        eprintln!("{what}");
    }
    bar.enable_steady_tick(std::time::Duration::from_millis(250));
    let start = Instant::now();
    let p = partition(adj, opts);
    bar.finish_and_clear();
    let p = p.map_err(|e| AppError::Config(format!("partition into {}: {e}", opts.parts)))?;
    eprintln!("partitioned into {} parts in {:.1} s", opts.parts, start.elapsed().as_secs_f64());
    Ok(p)
}

/// [`load_or_partition`], then the parts built, timed.
pub fn known_partition(adj: &burn_sparse_gnn::Csr, spread: &Spread, cache: Option<&Path>) -> Result<KnownPartition> {
    let start = Instant::now();
    let (part, cached) = load_or_partition(adj, spread, cache)?;
    let graph = PartitionedGraph::build(adj, &part).map_err(|e| AppError::Config(format!("partition: {e}")))?;
    Ok(KnownPartition { graph, cached, seconds: start.elapsed().as_secs_f64() })
}

/// A partition computed or read before a run's set-up (for its memory estimate): the run uses
/// it and reports how it came.
pub struct KnownPartition {
    pub graph: PartitionedGraph,
    /// Whether it came from the cache file.
    pub cached: bool,
    /// Seconds to compute or read it and to build the parts.
    pub seconds: f64,
}

/// The loss weights of train, valid and test over all nodes: `1 / |split|` on the split's
/// nodes, 0 elsewhere (a node listed twice counts twice). Errors without a split.
pub(crate) fn split_weights(host: &HostGraph) -> Result<[Vec<f32>; 3]> {
    let n = host.data.num_nodes();
    let split = host.data.split().ok_or_else(|| AppError::Config("a split is needed to train".into()))?;
    Ok([&split.train, &split.valid, &split.test].map(|ids| {
        let mut w = vec![0.0f32; n];
        let share = 1.0 / ids.len().max(1) as f32;
        for &i in ids {
            w[i as usize] += share;
        }
        w
    }))
}
