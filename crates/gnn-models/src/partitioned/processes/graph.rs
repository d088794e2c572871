//! A rank's part of a partitioned graph on its device.

use super::RankGraph;
use crate::partitioned::devices::DistError;
use burn::tensor::backend::Backend;
use burn::tensor::{Tensor, TensorData};
use burn_sparse_gnn::collective::{Comm, RankRoutes};
use burn_sparse_gnn::partition::PartitionedGraph;
use burn_sparse_gnn::{Csr, Graph, GraphOptions, RowIndex, SparseGnnBackend};

impl<B: SparseGnnBackend> RankGraph<B> {
    /// Part `comm.rank()` of `partition` (of the graph `adj`, one part per rank) on `device`.
    /// Errors when the parts are not one per rank, the partition is not of this graph, or the
    /// part's graph is invalid.
    pub fn new(
        adj: &Csr,
        partition: &PartitionedGraph,
        comm: Comm,
        device: &B::Device,
        opts: GraphOptions,
    ) -> Result<Self, DistError> {
        let (rank, world) = (comm.rank(), comm.world());
        if partition.parts.len() != world {
            return Err(DistError::Ranks(format!(
                "the partition has {} parts for {world} ranks (one part per rank)",
                partition.parts.len()
            )));
        }
        if partition.n_nodes != adj.n_rows() {
            return Err(DistError::NodeCount { partition: partition.n_nodes, graph: adj.n_rows() });
        }
        let local = &partition.parts[rank];
        let (in_deg, out_deg) = (adj.row_degrees(), adj.col_degrees());
        let row_deg: Vec<usize> = local.owned.iter().map(|&g| in_deg[g as usize]).collect();
        let col_deg: Vec<usize> = local.owned.iter().chain(local.halo.iter()).map(|&g| out_deg[g as usize]).collect();
        let err = |source| DistError::Graph { part: rank, source };
        let graph = Graph::with_degrees(&local.adj, device, opts, row_deg, col_deg).map_err(err)?;
        let graph = match adj.row_weight_sums().zip(adj.col_weight_sums()) {
            Some(sums) => {
                let (rows, cols) = crate::partitioned::devices::part_weight_sums(&sums, &local.owned, &local.halo);
                graph.with_weight_sums(rows, cols).map_err(err)?
            }
            None => graph,
        };
        let owned = local.owned.len();
        let mut send = Vec::with_capacity(world);
        let mut recv = Vec::with_capacity(world);
        for q in 0..world {
            let rows = local.send.get(q).map(Vec::as_slice).unwrap_or(&[]);
            send.push(match q != rank && !rows.is_empty() {
                true => Some(RowIndex::new(rows, owned, device).map_err(err)?),
                false => None,
            });
            // the halo columns are grouped by owner in ascending order, each group in the
            // order of the owner's send list
            recv.push(if q == rank { 0 } else { partition.parts[q].send.get(rank).map_or(0, Vec::len) });
        }
        if recv.iter().sum::<usize>() != local.halo.len() {
            return Err(DistError::Ranks(format!(
                "part {rank} has {} halo columns, the other parts send it {}",
                local.halo.len(),
                recv.iter().sum::<usize>()
            )));
        }
        let routes = RankRoutes::new(owned, send, recv, comm).map_err(DistError::Comm)?;
        let ids: Vec<i64> = local.owned.iter().map(|&g| i64::from(g)).collect();
        let global_ids = Tensor::from_data(TensorData::new(ids, [owned]).convert::<B::IntElem>(), device);
        let ids: Vec<i64> = local.owned.iter().chain(&local.halo).map(|&g| i64::from(g)).collect();
        let full = ids.len();
        let full_ids = Tensor::from_data(TensorData::new(ids, [full]).convert::<B::IntElem>(), device);
        Ok(Self {
            device: device.clone(),
            graph,
            routes,
            global_ids,
            full_ids,
            owned_host: local.owned.clone(),
            n_nodes: adj.n_rows(),
        })
    }
}

impl<B: Backend> RankGraph<B> {
    /// The transport.
    pub fn comm(&self) -> &Comm {
        self.routes.comm()
    }

    /// Global ids of the rank's own rows, in row order.
    pub fn owned_ids(&self) -> &[u32] {
        &self.owned_host
    }

    /// Nodes of the whole graph.
    pub fn num_nodes(&self) -> usize {
        self.n_nodes
    }

    /// Rows the rank receives per exchange.
    pub fn halo_rows(&self) -> usize {
        self.routes.received()
    }

    /// Rows the rank sends per exchange.
    pub fn sent_rows(&self) -> usize {
        self.routes.sent()
    }

    /// The rows of a whole-graph host array (`width` values per node) that this rank owns.
    pub fn own_rows<T: Copy>(&self, values: &[T], width: usize) -> Vec<T> {
        let mut out = Vec::with_capacity(self.owned_host.len() * width);
        for &g in &self.owned_host {
            let g = g as usize;
            out.extend_from_slice(&values[g * width..(g + 1) * width]);
        }
        out
    }
}

impl<B: burn_sparse_gnn::SparseGnnAutodiffBackend> RankGraph<B> {
    /// The same part without autodiff (evaluation with the model's `valid()` copy).
    pub fn inner(&self) -> RankGraph<B::InnerBackend> {
        RankGraph {
            device: self.device.clone(),
            graph: self.graph.inner(),
            routes: self.routes.inner(),
            global_ids: self.global_ids.clone().inner(),
            full_ids: self.full_ids.clone().inner(),
            owned_host: self.owned_host.clone(),
            n_nodes: self.n_nodes,
        }
    }
}
