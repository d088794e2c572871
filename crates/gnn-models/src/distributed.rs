//! Exact full-graph training on a partitioned graph: each part's rows on a device of its own
//! (or several parts on one device), a halo exchange before every convolution.
//!
//! A [`PartitionedGraph`] (from `burn_sparse_gnn::partition`) gives each part its rows (whole
//! CSR rows, so every node's aggregation is complete on its part), a local CSR whose columns
//! are the part's own nodes then its halo nodes, and the send lists. [`DistGraph`] uploads each
//! part with the **global** degrees (normalisations equal the whole graph's) to its device.
//! A graph with edge weights keeps them on its parts (each local edge its weight) with the
//! whole graph's weighted degrees ([`Graph::with_weight_sums`]), so weighted layers equal the
//! whole graph's too. [`GnnModel::forward_partitioned`] then runs the model per part:
//!
//! ```text
//! for each convolution l:
//!     a_p   = nonlinearity(h_p) -> dropout            (per part, rows of the part)
//!     full_p = [a_p ; a_q[send_q->p] for q != p]       (halo exchange: select + to_device)
//!     h_p   = conv_l(local graph p, full_p)            (rows of the part)
//! ```
//!
//! Every step is a Burn tensor op, so autodiff runs the backward exchange itself: the gradient
//! of a halo row flows back through `to_device` and `select` and is added to the owner's rows.
//! The parameters live on the leader device (the first of the list); each part's forward reads
//! them through `to_device`, so their gradients are summed on the leader by autodiff and one
//! optimizer step updates them: the same parameters, the same gradients as on one device. On
//! CUDA, Burn's `to_device` between two GPUs goes through NCCL send / receive.
//!
//! Dropout masks are a hash of a seed, the node's global id and the column
//! ([`burn_sparse_gnn::dropout`]): the leader draws one seed per dropout site, each part
//! computes the mask of its own rows from their global ids, so the masks, hence the loss,
//! logits and gradients, equal the one-device model's for the same seed (within float
//! summation order) and no part draws or holds a whole-graph mask. GAT's attention dropout
//! draws per part.

use crate::hidden::Hidden;
use crate::model::GnnModel;
use burn::module::Module;
use burn::tensor::backend::Backend;
use burn::tensor::{BasicOps, Int, Tensor, TensorData};
use burn_sparse_gnn::dropout::DropoutSeed;
use burn_sparse_gnn::partition::PartitionedGraph;
use burn_sparse_gnn::{take_rows, Csr, Graph, GraphError, GraphOptions, RowIndex, SparseGnnBackend};

/// Why a partitioned graph cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum DistError {
    /// No device was given.
    #[error("a partitioned graph needs at least one device")]
    NoDevices,
    /// The partition does not belong to this graph.
    #[error("the partition has {partition} nodes, the graph {graph}")]
    NodeCount { partition: usize, graph: usize },
    /// A part's local graph is invalid.
    #[error("part {part}: {source}")]
    Graph { part: usize, source: GraphError },
    /// The parts' own rows do not list every node of the graph once.
    #[error("the parts' own rows are not the graph's nodes, each once: {0}")]
    Cover(GraphError),
    /// A boundary-sampling rate outside `(0, 1]`.
    #[error("the boundary-sampling rate must be in (0, 1], got {0}")]
    SamplingRate(f64),
    /// The model cannot run on the graph's halo layout.
    #[error("{0}")]
    Layout(String),
    /// The exchange refused its inputs.
    #[error("halo exchange: {0}")]
    Exchange(#[from] burn_sparse_gnn::OpError),
    /// The ranks of a multi-process run do not fit together ([`crate::ranks`]).
    #[error("{0}")]
    Ranks(String),
    /// A collective between the ranks failed.
    #[error("{0}")]
    Comm(burn_sparse_gnn::collective::CommError),
}

/// How each part holds the columns of its halo rows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HaloLayout {
    /// One local graph whose columns are the part's own nodes then its halo nodes: each
    /// convolution reads `[own rows; halo rows]`, built once the halo rows arrived. Every model.
    #[default]
    Joined,
    /// Two local graphs, the own columns and the halo columns: each convolution sums over the
    /// own columns while the halo rows move, then adds the sum over the halo columns
    /// ([`crate::GnnModel::splits_halo`] models: GraphSAGE mean / sum on ReLU states). In the
    /// backward pass the halo gradients move while the own columns' gradients are computed.
    Split,
}

/// One part on its device.
#[derive(Clone, Debug)]
pub struct PartGraph<B: Backend> {
    /// Device the part runs on.
    pub device: B::Device,
    /// The local graph: the part's rows; columns = own nodes then halo nodes
    /// ([`HaloLayout::Joined`]), or the own nodes alone ([`HaloLayout::Split`]).
    pub graph: Graph<B>,
    /// [`HaloLayout::Split`]: the part's rows with its halo nodes as columns (`None` without
    /// halo rows, and in the joined layout).
    pub halo_graph: Option<Graph<B>>,
    /// Number of own rows.
    pub owned: usize,
    /// Number of halo rows it receives per exchange.
    pub halo: usize,
    /// Per other part `q`: the local rows this part sends to `q` (on this part's device).
    send: Vec<Option<RowIndex<B>>>,
    /// Global ids of the own rows, on the leader.
    owned_ids: RowIndex<B>,
    /// Global ids of the own rows, on the part's device (they key its dropout masks).
    global_ids: Tensor<B, 1, Int>,
}

/// A partitioned graph on one or more devices (see the module docs).
#[derive(Clone, Debug)]
pub struct DistGraph<B: Backend> {
    parts: Vec<PartGraph<B>>,
    layout: HaloLayout,
    leader: B::Device,
    n_nodes: usize,
    /// On the leader: the position of every global node in the concatenation of the parts'
    /// own rows.
    inverse: RowIndex<B>,
    /// Host copies per part: the global ids of its own rows, and per other part the local rows
    /// it sends there (what boundary sampling draws from).
    host_owned: std::sync::Arc<Vec<Vec<u32>>>,
    host_send: std::sync::Arc<Vec<Vec<Vec<u32>>>>,
}

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
    fn routes(&self) -> Vec<Vec<(usize, &RowIndex<B>)>> {
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

/// BNS-GCN's boundary-node sampling (Wan et al., MLSys 2022), opt-in: in each training step a
/// halo row crosses to a part with probability `rate` (a hash of `seed`, the step and the
/// node's global id, the same for every layer of the step), and the rows that cross are scaled
/// by `1 / rate`, so every aggregation over the halo is unbiased; the rows that do not cross
/// count as zeros. The exchange moves about `rate` times the bytes, and the model is no longer
/// the one-device model: the gradients are a sample. Evaluation exchanges every row. With half
/// storage a small rate can push scaled rows past f16's range (65,504): keep `rate` well above
/// the largest activation over 65,504.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BoundarySampling {
    /// Fraction of the halo rows that cross per step, in `(0, 1]`.
    pub rate: f64,
    /// Seed of the draws.
    pub seed: u64,
}

/// The halo rows that cross in one step under [`BoundarySampling`].
#[derive(Clone, Debug)]
pub struct SampledHalo<B: Backend> {
    /// Per receiving part: per sending part `q` in ascending order, the rows of `q`'s state
    /// that cross (on `q`'s device) and where they go in the receiving part's halo block from
    /// `q` (on its device).
    routes: Vec<Vec<(usize, RowIndex<B>, burn_sparse_gnn::RowSpread<B>)>>,
    scale: f64,
    rows: usize,
}

impl<B: Backend> SampledHalo<B> {
    /// Halo rows that cross in this step, all parts together.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The routes' rows, as an exchange takes them.
    fn exchange_routes(&self) -> Vec<Vec<(usize, &RowIndex<B>)>> {
        self.routes.iter().map(|l| l.iter().map(|(q, sel, _)| (*q, sel)).collect()).collect()
    }
}

impl<B: SparseGnnBackend> SampledHalo<B> {
    /// Part `p`'s halo block from the rows it received (`got`: its routes' kept rows in route
    /// order): each scaled by `1 / rate` and put back at its halo column, zeros elsewhere.
    fn spread_part(&self, p: usize, got: Tensor<B, 2>) -> Tensor<B, 2> {
        let mut pieces = Vec::with_capacity(self.routes[p].len());
        let mut start = 0;
        for (_, _, spread) in &self.routes[p] {
            let rows = got.clone().slice([start..start + spread.kept()]);
            start += spread.kept();
            pieces.push(burn_sparse_gnn::spread_rows(rows * self.scale, spread));
        }
        match pieces.len() {
            1 => pieces.remove(0),
            _ => Tensor::cat(pieces, 0),
        }
    }
}

/// Whether node `id` crosses in step `step` (a splitmix64 hash against the rate).
fn crosses(seed: u64, step: u64, id: u32, rate: f64) -> bool {
    let mut z = seed ^ step.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (u64::from(id) << 17);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    ((z >> 11) as f64) / ((1u64 << 53) as f64) < rate
}

impl<B: SparseGnnBackend> DistGraph<B> {
    /// The halo rows that cross in training step `step` under `sampling` (see
    /// [`BoundarySampling`]). Errors when the rate is not in `(0, 1]`.
    pub fn sample_halo(&self, sampling: &BoundarySampling, step: u64) -> Result<SampledHalo<B>, DistError> {
        let rate = sampling.rate;
        if !(rate > 0.0 && rate <= 1.0) {
            return Err(DistError::SamplingRate(rate));
        }
        let mut rows = 0;
        let mut routes = Vec::with_capacity(self.parts.len());
        for (p, part) in self.parts.iter().enumerate() {
            let mut list = Vec::new();
            for (q, other) in self.parts.iter().enumerate() {
                let Some(send) = self.host_send[q].get(p).filter(|s| q != p && !s.is_empty()) else { continue };
                let mut kept_rows = Vec::new();
                let mut positions = Vec::new();
                for (pos, &r) in send.iter().enumerate() {
                    if crosses(sampling.seed, step, self.host_owned[q][r as usize], rate) {
                        kept_rows.push(r);
                        positions.push(pos as u32);
                    }
                }
                rows += kept_rows.len();
                let err = |source| DistError::Graph { part: p, source };
                let sel = RowIndex::new(&kept_rows, other.owned, &other.device).map_err(err)?;
                let spread = burn_sparse_gnn::RowSpread::new(&positions, send.len(), &part.device).map_err(err)?;
                list.push((q, sel, spread));
            }
            routes.push(list);
        }
        Ok(SampledHalo { routes, scale: 1.0 / rate, rows })
    }

    /// The halo exchange of one step under boundary sampling: each part's state followed by its
    /// halo rows, those that cross scaled by `1 / rate`, the others zero (dense states only:
    /// `None` for CBSR states, or for a halo drawn from a graph of another number of parts).
    pub fn exchange_sampled(&self, states: &[Hidden<B>], halo: &SampledHalo<B>) -> Option<Vec<Hidden<B>>> {
        // a halo drawn for another partitioned graph (other parts) falls back to every row
        if halo.routes.len() != self.parts.len() || !states.iter().all(|s| matches!(s, Hidden::Dense(_))) {
            return None;
        }
        let devices: Vec<B::Device> = self.parts.iter().map(|p| p.device.clone()).collect();
        let dense = states.iter().map(Hidden::dense).collect();
        let moved = burn_sparse_gnn::exchange::exchange(dense, &devices, &halo.exchange_routes())
            .expect("the sampled rows were drawn from these states' send lists");
        let full = moved
            .into_iter()
            .zip(&self.parts)
            .enumerate()
            .map(|(p, (t, part))| {
                if halo.routes[p].is_empty() {
                    return Hidden::Dense(t);
                }
                let [rows, _] = t.dims();
                let own = t.clone().slice([0..part.owned]);
                Hidden::Dense(Tensor::cat(vec![own, halo.spread_part(p, t.slice([part.owned..rows]))], 0))
            })
            .collect();
        Some(full)
    }
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

impl<B: SparseGnnBackend> GnnModel<B> {
    /// The model on a partitioned graph: `xs[p]` holds part `p`'s input rows (on its device,
    /// e.g. from [`DistGraph::scatter`]); returns each part's logits. Equals
    /// [`GnnModel::forward`] on the whole graph, rows split by part (see the module docs).
    pub fn forward_partitioned(
        &self,
        dg: &DistGraph<B>,
        xs: Vec<Tensor<B, 2>>,
    ) -> Result<Vec<Tensor<B, 2>>, DistError> {
        self.forward_partitioned_sampled(dg, xs, None)
    }

    /// [`GnnModel::forward_partitioned`] with the halo rows of `halo` only (boundary sampling,
    /// see [`BoundarySampling`]; dense states: a convolution reading CBSR states exchanges
    /// every row). `None`: every row, the exact model.
    ///
    /// Errors when `dg` has the split layout and the model cannot use it
    /// ([`GnnModel::splits_halo`]).
    pub fn forward_partitioned_sampled(
        &self,
        dg: &DistGraph<B>,
        xs: Vec<Tensor<B, 2>>,
        halo: Option<&SampledHalo<B>>,
    ) -> Result<Vec<Tensor<B, 2>>, DistError> {
        if dg.layout == HaloLayout::Split && !self.splits_halo() {
            return Err(DistError::Layout(
                "this model needs the joined halo layout (the split layout serves GraphSAGE mean / sum layers \
                 on ReLU states)"
                    .into(),
            ));
        }
        // a clone of a lazily initialised parameter initialises its own copy: initialise them
        // here, so every part reads the same tensors and their gradients reach this model's
        self.initialise_parameters();
        let models: Vec<GnnModel<B>> = dg
            .parts
            .iter()
            .map(|p| if p.device == dg.leader { self.clone() } else { self.clone().to_device(&p.device) })
            .collect();
        // one seed per dropout site, drawn on the leader as the one-device model draws it
        let on = |seed: &Option<DropoutSeed<B>>, part: &PartGraph<B>| seed.as_ref().map(|s| s.to_device(&part.device));
        let seed = self.input_dropout_seed(&dg.leader);
        let mut hs: Vec<Tensor<B, 2>> = models
            .iter()
            .zip(&dg.parts)
            .zip(xs)
            .map(|((m, part), x)| m.input(m.drop_input(x, on(&seed, part).as_ref(), Some(&part.global_ids))))
            .collect();
        for l in 0..self.num_layers() {
            let seed = self.dropout_seed(l, &dg.leader);
            let states: Vec<Hidden<B>> = models
                .iter()
                .zip(&dg.parts)
                .zip(hs)
                .map(|((m, part), h)| {
                    m.activate(l, h, part.graph.kernel_config(), on(&seed, part).as_ref(), Some(&part.global_ids))
                })
                .collect();
            if dg.layout == HaloLayout::Split {
                // a halo drawn for another partitioned graph (other parts) falls back to every row
                let sampled = halo.filter(|h| h.routes.len() == dg.parts.len());
                hs = dg.convolve_split(&models, l, states, sampled)?;
                continue;
            }
            let full = match halo.and_then(|h| dg.exchange_sampled(&states, h)) {
                Some(full) => full,
                None => dg.exchange(&states),
            };
            hs = models.iter().zip(&dg.parts).zip(&full).map(|((m, part), a)| m.convolve(l, &part.graph, a)).collect();
        }
        Ok(models.iter().zip(hs).map(|(m, h)| m.output(h)).collect())
    }
}

impl<B: SparseGnnBackend> DistGraph<B> {
    /// Convolution `l` of the parts' models on the split layout: the exchange starts, every
    /// part sums over its own columns, the halo rows are taken, every part adds the sum over
    /// its halo columns and applies the layer's maps. With `sampled` (boundary sampling) only
    /// the rows that cross move, and each part's halo block is rebuilt from them.
    fn convolve_split(
        &self,
        models: &[GnnModel<B>],
        l: usize,
        states: Vec<Hidden<B>>,
        sampled: Option<&SampledHalo<B>>,
    ) -> Result<Vec<Tensor<B, 2>>, DistError> {
        let mut dense = Vec::with_capacity(states.len());
        for s in states {
            match s {
                Hidden::Dense(t) => dense.push(t),
                Hidden::Sparse(_) => return Err(DistError::Layout("the split halo layout needs dense states".into())),
            }
        }
        let devices: Vec<B::Device> = self.parts.iter().map(|p| p.device.clone()).collect();
        let send = models.first().and_then(GnnModel::split_send);
        let routes = match sampled {
            Some(h) => h.exchange_routes(),
            None => self.routes(),
        };
        let start = burn_sparse_gnn::exchange::exchange_start(dense, &devices, &routes, send)?;
        let own_sums: Vec<(Tensor<B, 2>, Option<Tensor<B, 2>>)> = models
            .iter()
            .zip(&self.parts)
            .zip(&start.own)
            .map(|((m, part), own)| m.convolve_own(&part.graph, own))
            .collect();
        let after: Vec<Tensor<B, 2>> = own_sums.iter().map(|(s, _)| s.clone()).collect();
        let mut halos = burn_sparse_gnn::exchange::exchange_finish(start.halo, &after);
        if let Some(h) = sampled {
            halos = halos.into_iter().enumerate().map(|(p, got)| got.map(|t| h.spread_part(p, t))).collect();
        }
        Ok(models
            .iter()
            .zip(&self.parts)
            .zip(start.own)
            .zip(own_sums)
            .zip(halos)
            .map(|((((m, part), own), sum), halo)| {
                m.convolve_rest(l, &part.graph, part.halo_graph.as_ref(), own, sum, halo)
            })
            .collect())
    }
}

/// Weighted cross-entropy of the parts, summed on the leader: `-sum_i w_i log p_i[y_i]` over
/// all parts' rows (`weights[p]` 0 off the split), each part's terms by
/// [`burn_sparse_gnn::loss::cross_entropy_rows`] with its graph's kernel configuration. Equals
/// the one-device loss of the same weights up to the order of the sum.
///
/// Panics when a part's logits, labels and weights differ in rows (they come from
/// [`DistGraph::scatter`] and the partitioned forward pass, which keep the parts' rows).
pub fn partitioned_loss<B: SparseGnnBackend>(
    dg: &DistGraph<B>,
    logits: &[Tensor<B, 2>],
    labels: &[Tensor<B, 1, Int>],
    weights: &[Tensor<B, 1>],
) -> Tensor<B, 1> {
    let terms: Vec<Tensor<B, 1>> = logits
        .iter()
        .zip(labels)
        .zip(weights)
        .zip(dg.parts())
        .map(|(((z, y), w), part)| {
            // the same bits every run (not Burn's whole-tensor sum: see `sum_terms`)
            burn_sparse_gnn::loss::sum_terms(
                burn_sparse_gnn::loss::cross_entropy_rows(z.clone(), y.clone(), w.clone(), part.graph.kernel_config())
                    .expect("a part's logits, labels and weights have the part's rows"),
            )
            .to_device(dg.leader())
        })
        .collect();
    Tensor::cat(terms, 0).sum_dim(0)
}
