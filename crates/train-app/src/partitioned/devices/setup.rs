//! The parts of a partitioned graph and their node data, uploaded to their devices.

use crate::error::{AppError, Result};
use crate::training::HostGraph;
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};
use burn_sparse_gnn::{SparseGnnAutodiffBackend, SparseGnnBackend};
use gnn_models::partitioned::devices::{DistGraph, HaloLayout};
use std::path::Path;
use std::time::Instant;

use crate::partitioned::{known_partition, split_weights, KnownPartition, PartitionReport, Spread};

/// A partitioned graph on its devices with the node data split by part.
pub struct PartitionedData<B: Backend> {
    pub dg: DistGraph<B>,
    pub xs: Vec<Tensor<B, 2>>,
    pub labels: Vec<Tensor<B, 1, Int>>,
    /// Per split (train, valid, test): per part the loss weights (`1 / |split|` on the split).
    pub weights: [Vec<Tensor<B, 1>>; 3],
    pub report: PartitionReport,
}

/// Partitions `host`'s graph (or reads `cache` when it holds a partition of this graph with
/// the same parts and method; or takes `known`) and uploads the parts to `devices`, their halo
/// columns held as `layout` says.
pub fn setup<B: SparseGnnBackend>(
    host: &HostGraph,
    spread: &Spread,
    devices: &[B::Device],
    cache: Option<&Path>,
    layout: HaloLayout,
    known: Option<KnownPartition>,
) -> Result<PartitionedData<B>> {
    spread.check()?;
    burn_sparse_gnn::exchange::set_device_links(spread.links);
    let adj = host.data.adjacency();
    let n = host.data.num_nodes();
    let KnownPartition { graph: pg, cached: was_cached, seconds: partition_seconds } = match known {
        Some(k) => k,
        None => known_partition(adj, spread, cache)?,
    };
    let start = Instant::now();
    let dg = DistGraph::<B>::with_layout(adj, &pg, devices, host.opts, layout)
        .map_err(|e| AppError::Config(e.to_string()))?;
    let leader = dg.leader().clone();
    let dtype = <B::FloatElem as burn::tensor::Element>::dtype();
    let x = Tensor::<B, 2>::from_data(
        TensorData::new(host.x.clone(), [n, host.d_in]).convert_dtype(dtype),
        (&leader, dtype),
    );
    let labels: Vec<i64> = host.data.labels().iter().map(|&l| l.max(0)).collect();
    let labels = Tensor::<B, 1, Int>::from_data(TensorData::new(labels, [n]), &leader);
    let weights = split_weights(host)?
        .map(|w| dg.scatter(Tensor::<B, 1>::from_data(TensorData::new(w, [n]).convert_dtype(dtype), (&leader, dtype))));
    let report = PartitionReport {
        parts: spread.parts,
        devices: devices.len(),
        method: format!("{:?}", spread.method).to_lowercase(),
        stats: pg.stats(),
        exchanged_bytes_per_epoch: 0,
        partition_seconds,
        setup_seconds: start.elapsed().as_secs_f64(),
        cached: was_cached,
        boundary_sampling: spread.boundary_sampling,
        halo_layout: format!("{layout:?}").to_lowercase(),
        processes: None,
        transport: None,
    };
    Ok(PartitionedData { xs: dg.scatter(x), labels: dg.scatter(labels), weights, dg, report })
}

/// The node data of `data` without autodiff (evaluation).
pub(super) fn inner<B: SparseGnnAutodiffBackend>(data: &PartitionedData<B>) -> PartitionedData<B::InnerBackend> {
    PartitionedData {
        dg: data.dg.inner(),
        xs: data.xs.iter().map(|t| t.clone().inner()).collect(),
        labels: data.labels.iter().map(|t| t.clone().inner()).collect(),
        weights: [0, 1, 2].map(|s| data.weights[s].iter().map(|t| t.clone().inner()).collect()),
        report: data.report.clone(),
    }
}
