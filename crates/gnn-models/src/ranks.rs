//! Exact full-graph training over several processes: one part of a partitioned graph per
//! process (a rank), on one host or several, the halo exchange through a
//! [`burn_sparse_gnn::collective::Comm`].
//!
//! Every rank holds a replica of the model (rank 0's parameters, [`broadcast_model`]) and its
//! part ([`RankGraph`]: its rows over its own and its halo columns, with the whole graph's
//! degrees). One training step on every rank:
//!
//! ```text
//! h = lin_in(x_own)
//! for each convolution l:
//!     a    = dropout(nonlinearity(h))                  (masks keyed by global node id)
//!     full = [a ; rows of a the other ranks send]      (rank_exchange, a collective)
//!     h    = conv_l(local graph, full)
//! loss_r = weighted cross-entropy of the own rows      (weights 1 / |split| of the whole graph)
//! backward: the exchange's backward sends the halo gradients back (a collective)
//! gradients: summed over the ranks in rank order (sum_gradients), the same bits everywhere
//! optimizer step on every replica                       (the replicas stay equal)
//! ```
//!
//! The sum of the ranks' losses is the one-process loss, and the summed gradients are its
//! gradients (up to the order of float sums), so the replicas follow the one-process model.
//! Rank 0 draws the dropout seeds of a step ([`StepSeeds`], in the one-process model's order)
//! and sends them to the others (a few bytes); the masks are keyed by global node id, so they
//! are the one-process masks. MaxK and max-pool states (CBSR rows) move as their values
//! (through the differentiable exchange) and their column ids
//! ([`burn_sparse_gnn::collective::rank_exchange_cbsr`]).

use crate::distributed::DistError;
use crate::hidden::Hidden;
use crate::model::GnnModel;
use burn::module::{AutodiffModule, Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::record::{BinBytesRecorder, DoublePrecisionSettings, Recorder};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{DType, Int, Tensor, TensorData};
use burn_sparse_gnn::collective::{
    device_all_reduce_sum, rank_exchange, rank_exchange_cbsr, Comm, CommError, RankRoutes, RowTransport,
};
use burn_sparse_gnn::partition::PartitionedGraph;
use burn_sparse_gnn::{Csr, DropoutSeed, Graph, GraphOptions, RowIndex, SparseGnnBackend};

/// One rank's part of a partitioned graph on its device (see the module docs).
#[derive(Clone, Debug)]
pub struct RankGraph<B: Backend> {
    /// The device of the rank.
    pub device: B::Device,
    /// The rank's rows over its own columns then its halo columns, with the whole graph's
    /// degrees (and weighted degrees, where the graph has edge weights).
    pub graph: Graph<B>,
    routes: RankRoutes<B>,
    global_ids: Tensor<B, 1, Int>,
    /// Global ids of the own rows then the halo rows (the rows after an exchange).
    full_ids: Tensor<B, 1, Int>,
    owned_host: Vec<u32>,
    n_nodes: usize,
}

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
                let (rows, cols) = crate::distributed::part_weight_sums(&sums, &local.owned, &local.halo);
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

/// A rank's input rows for [`GnnModel::forward_rank`], made once by [`GnnModel::rank_input`]:
/// its own rows, and for a model whose first convolution reads the input features directly
/// (the classic stack) also the halo rows, exchanged once instead of in every forward pass
/// (the features do not change; the input dropout, keyed by global node id, is applied to
/// the halo rows on this rank).
#[derive(Clone, Debug)]
pub struct RankInput<B: Backend> {
    rows: Tensor<B, 2>,
    with_halo: bool,
}

impl<B: Backend> RankInput<B> {
    /// The rows: own, then halo rows where [`RankInput::has_halo`].
    pub fn rows(&self) -> &Tensor<B, 2> {
        &self.rows
    }

    /// Whether the halo rows are held (exchanged once).
    pub fn has_halo(&self) -> bool {
        self.with_halo
    }
}

impl<B: AutodiffBackend> RankInput<B> {
    /// The same rows without autodiff (evaluation).
    pub fn inner(&self) -> RankInput<B::InnerBackend> {
        RankInput { rows: self.rows.clone().inner(), with_halo: self.with_halo }
    }
}

/// The dropout seeds of one training step: the input's and each convolution's (`None` where
/// the model draws none), drawn in the order the one-process forward pass draws them.
#[derive(Clone, Debug)]
pub struct StepSeeds<B: Backend> {
    input: Option<DropoutSeed<B>>,
    layers: Vec<Option<DropoutSeed<B>>>,
}

impl<B: SparseGnnBackend> StepSeeds<B> {
    /// The seeds `model` draws for one step on `device` (none without autodiff: evaluation).
    pub fn draw(model: &GnnModel<B>, device: &B::Device) -> Self {
        let input = model.input_dropout_seed(device);
        let layers = (0..model.num_layers()).map(|l| model.dropout_seed(l, device)).collect();
        Self { input, layers }
    }

    /// No dropout (evaluation).
    pub fn none(model: &GnnModel<B>) -> Self {
        Self { input: None, layers: vec![None; model.num_layers()] }
    }

    /// Rank 0's seeds on every rank (each seed's exact bits; 17 bytes per f32 dropout site).
    pub fn broadcast(self, comm: &Comm, device: &B::Device) -> Result<Self, DistError> {
        let sites: Vec<&Option<DropoutSeed<B>>> = std::iter::once(&self.input).chain(&self.layers).collect();
        let mut bytes = Vec::new();
        if comm.rank() == 0 {
            for s in &sites {
                match s {
                    Some(seed) => {
                        let data = seed.tensor().to_data();
                        bytes.push(1 + data.dtype.size() as u8);
                        bytes.extend_from_slice(data.as_bytes());
                    }
                    None => bytes.push(0),
                }
            }
        }
        let bytes = comm.broadcast(bytes).map_err(DistError::Comm)?;
        let dtype = sites
            .iter()
            .find_map(|s| s.as_ref().map(|seed| seed.tensor().dtype()))
            .unwrap_or_else(<B::FloatElem as burn::tensor::Element>::dtype);
        let bad = || DistError::Ranks("rank 0 sent dropout seeds of another model".into());
        let mut at = 0;
        let mut out = Vec::with_capacity(sites.len());
        for _ in 0..sites.len() {
            let tag = *bytes.get(at).ok_or_else(bad)? as usize;
            at += 1;
            if tag == 0 {
                out.push(None);
                continue;
            }
            let size = tag - 1;
            let raw = bytes.get(at..at + 2 * size).ok_or_else(bad)?.to_vec();
            at += 2 * size;
            let dtype = match size == dtype.size() {
                true => dtype,
                false => return Err(bad()),
            };
            let t = Tensor::<B, 1>::from_data(TensorData::from_bytes_vec(raw, [2], dtype), (device, dtype));
            out.push(Some(DropoutSeed::from_tensor(t)?));
        }
        if at != bytes.len() {
            return Err(bad());
        }
        let mut out = out.into_iter();
        Ok(Self { input: out.next().flatten(), layers: out.collect() })
    }
}

impl<B: SparseGnnBackend> GnnModel<B> {
    /// This rank's input for [`GnnModel::forward_rank`] from its own rows `x`
    /// ([`RankGraph::own_rows`]): for a model whose first convolution reads the features
    /// directly, the halo rows are exchanged here, once (a collective: every rank calls it).
    /// Errors when `x` is not the rank's rows or the exchange fails.
    pub fn rank_input(&self, rg: &RankGraph<B>, x: Tensor<B, 2>) -> Result<RankInput<B>, DistError> {
        if !self.reads_input(0) {
            if x.dims()[0] != rg.owned_host.len() {
                return Err(DistError::Ranks(format!(
                    "an input of {} rows for this rank's {}",
                    x.dims()[0],
                    rg.owned_host.len()
                )));
            }
            return Ok(RankInput { rows: x, with_halo: false });
        }
        let rows = rank_exchange(x, &rg.routes).map_err(DistError::Comm)?;
        Ok(RankInput { rows, with_halo: true })
    }

    /// The model on this rank's part with the dropout seeds `seeds` ([`StepSeeds::draw`] on
    /// rank 0, broadcast): `x` holds the rank's input rows ([`GnnModel::rank_input`]); returns
    /// its logits. Every rank calls it together (the exchanges are collectives). Errors when
    /// the seeds are of another model, the input is not this rank's for this model, or an
    /// exchange fails.
    pub fn forward_rank(
        &self,
        rg: &RankGraph<B>,
        x: &RankInput<B>,
        seeds: &StepSeeds<B>,
    ) -> Result<Tensor<B, 2>, DistError> {
        if seeds.layers.len() != self.num_layers() {
            return Err(DistError::Ranks(format!(
                "dropout seeds of {} convolutions for a model of {}",
                seeds.layers.len(),
                self.num_layers()
            )));
        }
        let (rows, owned) = (x.rows.dims()[0], rg.owned_host.len());
        let want = if x.with_halo { owned + rg.halo_rows() } else { owned };
        if rows != want || x.with_halo != self.reads_input(0) {
            return Err(DistError::Ranks(format!(
                "an input of {rows} rows{} for this rank's {want}: make it with GnnModel::rank_input",
                if x.with_halo { " with halo rows" } else { "" }
            )));
        }
        // the classic stack's first convolution reads the input rows held with their halo
        let ids = if x.with_halo { &rg.full_ids } else { &rg.global_ids };
        let mut h = self.input(self.drop_input(x.rows.clone(), seeds.input.as_ref(), Some(ids)));
        for (l, seed) in seeds.layers.iter().enumerate() {
            let full = match self.activate(l, h, rg.graph.kernel_config(), seed.as_ref(), Some(&rg.global_ids)) {
                Hidden::Dense(a) if l == 0 && x.with_halo => Hidden::Dense(a),
                Hidden::Dense(a) => Hidden::Dense(rank_exchange(a, &rg.routes).map_err(DistError::Comm)?),
                // CBSR rows (MaxK, max-pool): their values and column ids
                Hidden::Sparse(c) => Hidden::Sparse(rank_exchange_cbsr(&c, &rg.routes).map_err(DistError::Comm)?),
            };
            h = self.convolve(l, &rg.graph, &full);
        }
        Ok(self.output(h))
    }
}

/// The weighted cross-entropy of this rank's rows, `-sum_i w_i log p_i[y_i]` (`weights` 0 off
/// the split): the rank's share of the one-process loss (the ranks' shares add up to it).
pub fn rank_loss<B: SparseGnnBackend>(
    rg: &RankGraph<B>,
    logits: Tensor<B, 2>,
    labels: Tensor<B, 1, Int>,
    weights: Tensor<B, 1>,
) -> Result<Tensor<B, 1>, DistError> {
    let terms = burn_sparse_gnn::loss::cross_entropy_rows(logits, labels, weights, rg.graph.kernel_config())?;
    // the same bits every run (not Burn's whole-tensor sum: see `sum_terms`)
    Ok(burn_sparse_gnn::loss::sum_terms(terms))
}

/// The gradients of `model`'s parameters summed over the ranks (in rank order, so every rank
/// gets the same bits), all parameters in one collective: after each rank's backward pass of
/// its [`rank_loss`], the gradients of the one-process loss. A parameter without a gradient on
/// a rank counts as zero there.
pub fn sum_gradients<B: AutodiffBackend, M: AutodiffModule<B>>(
    model: &M,
    grads: GradientsParams,
    comm: &Comm,
) -> Result<GradientsParams, CommError>
where
    B::InnerBackend: SparseGnnBackend,
{
    if comm.row_transport() == RowTransport::Nccl {
        return sum_gradients_on_devices::<B, M>(model, grads, comm);
    }
    /// Every parameter's gradient (zeros where it has none) then 1 where it has one, in the
    /// model's parameter order, and each gradient's dtype.
    struct Gather<'a> {
        grads: &'a mut GradientsParams,
        flat: Vec<f64>,
        dtypes: Vec<burn::tensor::DType>,
    }
    impl<B: AutodiffBackend> ModuleVisitor<B> for Gather<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            let value = param.val();
            let n = value.shape().num_elements();
            let mine = self.grads.remove::<B::InnerBackend, D>(param.id);
            self.dtypes.push(mine.as_ref().map(|g| g.dtype()).unwrap_or_else(|| value.dtype()));
            match mine.map(|g| g.to_data().convert::<f64>().to_vec::<f64>()) {
                Some(Ok(v)) if v.len() == n => {
                    self.flat.extend(v);
                    self.flat.push(1.0);
                }
                _ => {
                    self.flat.extend(std::iter::repeat_n(0.0, n));
                    self.flat.push(0.0);
                }
            }
        }
    }
    /// The summed gradients back into `grads`, in the same order.
    struct Scatter<'a> {
        grads: &'a mut GradientsParams,
        sum: &'a [f64],
        dtypes: std::slice::Iter<'a, burn::tensor::DType>,
        at: usize,
    }
    impl<B: AutodiffBackend> ModuleVisitor<B> for Scatter<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            let value = param.val();
            let shape = value.shape();
            let n = shape.num_elements();
            let (Some(values), Some(&dtype)) = (self.sum.get(self.at..self.at + n), self.dtypes.next()) else {
                return;
            };
            let present = self.sum.get(self.at + n).copied().unwrap_or(0.0);
            self.at += n + 1;
            if present > 0.0 {
                let data = TensorData::new(values.to_vec(), shape).convert_dtype(dtype);
                self.grads.register::<B::InnerBackend, D>(param.id, Tensor::from_data(data, (&value.device(), dtype)));
            }
        }
    }
    comm.check()?;
    let mut grads = grads;
    let mut gather = Gather { grads: &mut grads, flat: Vec::new(), dtypes: Vec::new() };
    model.visit(&mut gather);
    let (flat, dtypes) = (gather.flat, gather.dtypes);
    // gradients held in f32 or narrower travel as f32 (exact), summed in f64 all the same
    let sum = match dtypes.iter().all(|d| matches!(d, DType::F32 | DType::F16 | DType::BF16)) {
        true => comm.all_reduce_sum_f32(&flat.iter().map(|&v| v as f32).collect::<Vec<f32>>())?,
        false => comm.all_reduce_sum(&flat)?,
    };
    model.visit(&mut Scatter { grads: &mut grads, sum: &sum, dtypes: dtypes.iter(), at: 0 });
    Ok(grads)
}

/// [`sum_gradients`] where the rows move through NCCL: the gradients, as f32 and flattened
/// into one vector in the model's parameter order (zeros where a rank has none), summed on the
/// devices ([`device_all_reduce_sum`]: gathered, then added in rank order, the same bits on
/// every rank), and whether each parameter has a gradient on some rank through the host.
fn sum_gradients_on_devices<B: AutodiffBackend, M: AutodiffModule<B>>(
    model: &M,
    grads: GradientsParams,
    comm: &Comm,
) -> Result<GradientsParams, CommError>
where
    B::InnerBackend: SparseGnnBackend,
{
    type I<B> = <B as AutodiffBackend>::InnerBackend;
    struct Gather<'a, B: AutodiffBackend> {
        grads: &'a mut GradientsParams,
        flat: Vec<Tensor<I<B>, 1>>,
        present: Vec<f64>,
        dtypes: Vec<DType>,
    }
    impl<B: AutodiffBackend> ModuleVisitor<B> for Gather<'_, B> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            let value = param.val();
            let n = value.shape().num_elements();
            let mine = self.grads.remove::<B::InnerBackend, D>(param.id);
            self.dtypes.push(mine.as_ref().map(|g| g.dtype()).unwrap_or_else(|| value.dtype()));
            self.present.push(f64::from(u8::from(mine.is_some())));
            if n > 0 {
                // (no device work on empty tensors: CUDA refuses launches of no blocks)
                self.flat.push(match mine {
                    Some(g) => g.reshape([n]).cast(DType::F32),
                    None => Tensor::zeros([n], (&value.device(), DType::F32)),
                });
            }
        }
    }
    struct Scatter<'a, B: AutodiffBackend> {
        grads: &'a mut GradientsParams,
        sum: Tensor<I<B>, 1>,
        present: &'a [f64],
        dtypes: &'a [DType],
        at: usize,
        k: usize,
    }
    impl<B: AutodiffBackend> ModuleVisitor<B> for Scatter<'_, B> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            let shape = param.val().shape();
            let n = shape.num_elements();
            let (Some(&present), Some(&dtype)) = (self.present.get(self.k), self.dtypes.get(self.k)) else {
                return;
            };
            let at = self.at;
            (self.at, self.k) = (at + n, self.k + 1);
            if present > 0.0 && n > 0 {
                let g = self.sum.clone().slice([at..at + n]).reshape(shape).cast(dtype);
                self.grads.register::<B::InnerBackend, D>(param.id, g);
            }
        }
    }
    comm.check()?;
    let mut grads = grads;
    let mut gather = Gather::<B> { grads: &mut grads, flat: Vec::new(), present: Vec::new(), dtypes: Vec::new() };
    model.visit(&mut gather);
    let (flat, present, dtypes) = (gather.flat, gather.present, gather.dtypes);
    let present = comm.all_reduce_sum(&present)?;
    if flat.is_empty() {
        return Ok(grads);
    }
    let sum = match device_all_reduce_sum(Tensor::cat(flat, 0), comm) {
        Some(r) => r?,
        None => return Err(CommError::Config("the gradients cannot be summed on the devices".into())),
    };
    model.visit(&mut Scatter::<B> { grads: &mut grads, sum, present: &present, dtypes: &dtypes, at: 0, k: 0 });
    Ok(grads)
}

/// Rank 0's parameters on every rank (the replicas start equal whatever each rank drew; the
/// values travel as f64, so f32 and f64 parameters arrive exactly).
pub fn broadcast_model<B: Backend, M: Module<B>>(model: M, comm: &Comm, device: &B::Device) -> Result<M, DistError> {
    let recorder = BinBytesRecorder::<DoublePrecisionSettings>::default();
    let bytes = match comm.rank() {
        0 => recorder
            .record(model.clone().into_record(), ())
            .map_err(|e| DistError::Ranks(format!("serialising the parameters: {e}")))?,
        _ => Vec::new(),
    };
    let bytes = comm.broadcast(bytes).map_err(DistError::Comm)?;
    let record =
        recorder.load(bytes, device).map_err(|e| DistError::Ranks(format!("reading rank 0's parameters: {e}")))?;
    Ok(model.load_record(record))
}
