//! Building the parts of a partitioned graph on their devices, and the halo exchange.

use super::{DistError, DistGraph, HaloLayout, PartGraph};
use crate::hidden::Hidden;
use burn::tensor::{BasicOps, Tensor, TensorData};
use burn_sparse_gnn::partition::PartitionedGraph;
use burn_sparse_gnn::{take_rows, Csr, Graph, GraphError, GraphOptions, RowIndex, SparseGnnBackend};

impl<B: SparseGnnBackend> DistGraph<B> {
    /// Uploads every part of `partition` (of the graph `adj`) to `devices[p % devices.len()]`,
    /// with the global degrees of `adj`. The first device is the leader (parameters, loss).
    pub fn new(
        adj: &Csr,
        partition: &PartitionedGraph,
        devices: &[B::Device],
        opts: GraphOptions,
    ) -> Result<Self, DistError> {
        Self::with_layout(adj, partition, devices, opts, HaloLayout::Joined)
    }

    /// [`DistGraph::new`] with the parts' halo columns held as `layout` says.
    pub fn with_layout(
        adj: &Csr,
        partition: &PartitionedGraph,
        devices: &[B::Device],
        opts: GraphOptions,
        layout: HaloLayout,
    ) -> Result<Self, DistError> {
        let leader = devices.first().ok_or(DistError::NoDevices)?.clone();
        if partition.n_nodes != adj.n_rows() {
            return Err(DistError::NodeCount { partition: partition.n_nodes, graph: adj.n_rows() });
        }
        let (in_deg, out_deg) = (adj.row_degrees(), adj.col_degrees());
        let sums = adj.row_weight_sums().zip(adj.col_weight_sums());
        let n_parts = partition.parts.len();
        let mut parts = Vec::with_capacity(n_parts);
        let mut order = Vec::with_capacity(adj.n_rows());
        for (p, local) in partition.parts.iter().enumerate() {
            let device = devices[p % devices.len()].clone();
            let row_deg: Vec<usize> = local.owned.iter().map(|&g| in_deg[g as usize]).collect();
            let col_deg: Vec<usize> =
                local.owned.iter().chain(local.halo.iter()).map(|&g| out_deg[g as usize]).collect();
            let part_sums = sums.as_ref().map(|s| part_weight_sums(s, &local.owned, &local.halo));
            let (graph, halo_graph) = match layout {
                HaloLayout::Joined => (
                    Graph::with_degrees(&local.adj, &device, opts, row_deg, col_deg)
                        .and_then(|g| match part_sums {
                            Some((rows, cols)) => g.with_weight_sums(rows, cols),
                            None => Ok(g),
                        })
                        .map_err(|source| DistError::Graph { part: p, source })?,
                    None,
                ),
                HaloLayout::Split => {
                    let degrees = PartDegrees { rows: row_deg, cols: col_deg, weights: part_sums };
                    split_graphs(&local.adj, local.owned.len(), &device, opts, degrees)
                        .map_err(|source| DistError::Graph { part: p, source })?
                }
            };
            let rows_err = |source| DistError::Graph { part: p, source };
            let mut send = Vec::with_capacity(n_parts);
            for q in 0..n_parts {
                let rows = local.send.get(q).map(|v| v.as_slice()).unwrap_or(&[]);
                send.push(match q != p && !rows.is_empty() {
                    true => Some(RowIndex::new(rows, local.owned.len(), &device).map_err(rows_err)?),
                    false => None,
                });
            }
            order.extend_from_slice(&local.owned);
            let ids: Vec<i64> = local.owned.iter().map(|&g| i64::from(g)).collect();
            let global_ids =
                Tensor::from_data(TensorData::new(ids, [local.owned.len()]).convert::<B::IntElem>(), &device);
            parts.push(PartGraph {
                owned_ids: RowIndex::new(&local.owned, adj.n_rows(), &leader).map_err(rows_err)?,
                global_ids,
                device,
                graph,
                halo_graph,
                owned: local.owned.len(),
                halo: local.halo.len(),
                send,
            });
        }
        let n = adj.n_rows();
        if order.len() != n {
            return Err(DistError::Cover(GraphError::NodeCount {
                what: "own rows of the parts",
                got: order.len(),
                nodes: n,
            }));
        }
        // a node listed twice leaves another unset: RowIndex::new refuses the sentinel
        let mut inverse = vec![u32::MAX; n];
        for (pos, &g) in order.iter().enumerate() {
            if let Some(slot) = inverse.get_mut(g as usize) {
                *slot = pos as u32;
            }
        }
        let inverse = RowIndex::new(&inverse, n, &leader).map_err(DistError::Cover)?;
        Ok(Self {
            inverse,
            parts,
            layout,
            leader,
            n_nodes: adj.n_rows(),
            host_owned: std::sync::Arc::new(partition.parts.iter().map(|l| l.owned.clone()).collect()),
            host_send: std::sync::Arc::new(partition.parts.iter().map(|l| l.send.clone()).collect()),
        })
    }

    /// The parts.
    pub fn parts(&self) -> &[PartGraph<B>] {
        &self.parts
    }

    /// How the parts hold their halo columns.
    pub fn layout(&self) -> HaloLayout {
        self.layout
    }

    /// Per part, the parts it reads rows from (ascending) and the rows each sends it.
    pub(super) fn routes(&self) -> Vec<Vec<(usize, &RowIndex<B>)>> {
        (0..self.parts.len())
            .map(|p| {
                self.parts
                    .iter()
                    .enumerate()
                    .filter_map(|(q, other)| other.send.get(p).and_then(|s| s.as_ref()).map(|rows| (q, rows)))
                    .collect()
            })
            .collect()
    }

    /// The leader device (parameters, loss, gathered outputs).
    pub fn leader(&self) -> &B::Device {
        &self.leader
    }

    /// Nodes of the whole graph.
    pub fn num_nodes(&self) -> usize {
        self.n_nodes
    }

    /// Rows received by all parts together in one exchange.
    pub fn halo_rows(&self) -> usize {
        self.parts.iter().map(|p| p.halo).sum()
    }

    /// Rows of a whole-graph tensor on the leader, split into the parts' rows on their devices.
    pub fn scatter<const D: usize, K: BasicOps<B>>(&self, x: Tensor<B, D, K>) -> Vec<Tensor<B, D, K>> {
        self.parts.iter().map(|p| x.clone().select(0, p.owned_ids.indices()).to_device(&p.device)).collect()
    }

    /// The parts' rows (`[owned, w]` each) back in global node order, on the leader
    /// (differentiable).
    pub fn gather(&self, parts: Vec<Tensor<B, 2>>) -> Tensor<B, 2> {
        let on_leader: Vec<_> = parts.into_iter().map(|t| t.to_device(&self.leader)).collect();
        take_rows(Tensor::cat(on_leader, 0), &self.inverse)
    }

    /// The halo exchange: each part's state followed by the rows it reads from the others
    /// (grouped by owner part in ascending order, as its local columns are). Dense states go
    /// through [`burn_sparse_gnn::exchange::exchange`] (all transfers of the exchange together,
    /// forward and backward); CBSR states move piece by piece (values and column ids).
    pub fn exchange(&self, states: &[Hidden<B>]) -> Vec<Hidden<B>> {
        if states.iter().all(|s| matches!(s, Hidden::Dense(_))) {
            let devices: Vec<B::Device> = self.parts.iter().map(|p| p.device.clone()).collect();
            let routes = self.routes();
            let dense = states.iter().map(Hidden::dense).collect();
            let full = burn_sparse_gnn::exchange::exchange(dense, &devices, &routes)
                .expect("the parts' send lists were built for these states");
            return full.into_iter().map(Hidden::Dense).collect();
        }
        self.parts
            .iter()
            .enumerate()
            .map(|(p, part)| {
                let mut pieces = vec![states[p].clone()];
                for (q, other) in self.parts.iter().enumerate() {
                    if let Some(rows) = other.send.get(p).and_then(|s| s.as_ref()) {
                        pieces.push(states[q].take_rows(rows).to_device(&part.device));
                    }
                }
                Hidden::cat_rows(pieces).expect("the parts of one layer share their representation")
            })
            .collect()
    }
}

/// The whole graph's weighted degrees (`sums`: rows, columns) of a part's rows (`owned`) and
/// of its columns (`owned` then `halo`).
pub(crate) fn part_weight_sums(sums: &(Vec<f64>, Vec<f64>), owned: &[u32], halo: &[u32]) -> (Vec<f64>, Vec<f64>) {
    let rows = owned.iter().map(|&g| sums.0[g as usize]).collect();
    let cols = owned.iter().chain(halo).map(|&g| sums.1[g as usize]).collect();
    (rows, cols)
}

/// A part's degrees in the whole graph: of its rows, of its columns (own nodes then halo
/// nodes), and the weighted degrees (rows, columns) of a graph with edge weights.
struct PartDegrees {
    rows: Vec<usize>,
    cols: Vec<usize>,
    weights: Option<(Vec<f64>, Vec<f64>)>,
}

/// A part's local graph (`adj`: its rows; columns = its `owned` nodes then its halo nodes)
/// split by column into the own block and the halo block (`None` without halo columns), each
/// with the rows' (weighted) degrees and its columns' (weighted) degrees from `degrees` (the
/// whole graph's), so the normalisations are the joined graph's.
fn split_graphs<B: SparseGnnBackend>(
    adj: &Csr,
    owned: usize,
    device: &B::Device,
    opts: GraphOptions,
    degrees: PartDegrees,
) -> Result<(Graph<B>, Option<Graph<B>>), GraphError> {
    let PartDegrees { rows: row_deg, cols: col_deg, weights: sums } = degrees;
    let n = adj.n_rows();
    let halo = adj.n_cols().saturating_sub(owned);
    let (rp, ci, w) = (adj.row_ptr(), adj.col_idx(), adj.weights());
    let mut blocks = [(vec![0i64; n + 1], Vec::new(), Vec::new()), (vec![0i64; n + 1], Vec::new(), Vec::new())];
    for r in 0..n {
        for e in rp[r]..rp[r + 1] {
            let c = ci[e] as usize;
            let (b, col) = if c < owned { (0, c) } else { (1, c - owned) };
            blocks[b].1.push(col as i64);
            if let Some(w) = w {
                blocks[b].2.push(w[e]);
            }
        }
        blocks[0].0[r + 1] = blocks[0].1.len() as i64;
        blocks[1].0[r + 1] = blocks[1].1.len() as i64;
    }
    let [(own_ptr, own_col, own_w), (halo_ptr, halo_col, halo_w)] = blocks;
    let weights = |v: Vec<f32>| w.is_some().then_some(v);
    let own = Csr::new(n, owned, &own_ptr, &own_col, weights(own_w))?;
    drop((own_ptr, own_col));
    let with_sums = |g: Graph<B>, cols: std::ops::Range<usize>| match &sums {
        Some((r, c)) => g.with_weight_sums(r.clone(), c[cols].to_vec()),
        None => Ok(g),
    };
    let own_g =
        with_sums(Graph::with_degrees(&own, device, opts, row_deg.clone(), col_deg[..owned].to_vec())?, 0..owned)?;
    if halo == 0 {
        return Ok((own_g, None));
    }
    let halo_csr = Csr::new(n, halo, &halo_ptr, &halo_col, weights(halo_w))?;
    let halo_g = Graph::with_degrees(&halo_csr, device, opts, row_deg, col_deg[owned..].to_vec())?;
    let halo_g = with_sums(halo_g, owned..owned + halo)?;
    Ok((own_g, Some(halo_g)))
}

impl<B: burn_sparse_gnn::SparseGnnAutodiffBackend> DistGraph<B> {
    /// The same parts without autodiff (evaluation with the model's `valid()` copy).
    pub fn inner(&self) -> DistGraph<B::InnerBackend> {
        DistGraph {
            parts: self
                .parts
                .iter()
                .map(|p| PartGraph {
                    device: p.device.clone(),
                    graph: p.graph.inner(),
                    halo_graph: p.halo_graph.as_ref().map(Graph::inner),
                    owned: p.owned,
                    halo: p.halo,
                    send: p.send.iter().map(|s| s.as_ref().map(RowIndex::inner)).collect(),
                    owned_ids: p.owned_ids.inner(),
                    global_ids: p.global_ids.clone().inner(),
                })
                .collect(),
            layout: self.layout,
            leader: self.leader.clone(),
            n_nodes: self.n_nodes,
            inverse: self.inverse.inner(),
            host_owned: self.host_owned.clone(),
            host_send: self.host_send.clone(),
        }
    }
}
