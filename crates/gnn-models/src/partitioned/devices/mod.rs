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
//!
//! A training step runs [`GnnModel::forward_partitioned_replicas`] instead: the devices other
//! than the leader run a copy of the model made there for the step ([`DeviceReplicas`]), whose
//! gradients stay on its device through the backward pass and reach the leader in one transfer
//! after it, so that no device waits for another's gradients in the middle of the pass.
//!
//! By concern: [`graph`] builds the parts and runs the exchange, [`sampling`] draws the halo
//! rows of boundary sampling, [`forward`] runs the model and its loss on the parts, `replicas`
//! the training step's copies of the model and their gradients.

mod forward;
mod graph;
mod replicas;
mod sampling;

pub use forward::partitioned_loss;
pub(crate) use graph::part_weight_sums;
pub use replicas::DeviceReplicas;

use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor};
use burn_sparse_gnn::{Graph, GraphError, RowIndex};

/// The devices of `indices` of the kind of `like` (the GPUs `0, 1` of a CUDA device, ...), for
/// [`DistGraph::with_layout`]: the parts go round-robin over them, the first one leads.
pub fn devices_of<D: burn::tensor::backend::Device>(like: &D, indices: &[usize]) -> Vec<D> {
    indices
        .iter()
        .map(|&i| {
            let mut id = like.to_id();
            id.index_id = i as u16;
            D::from_id(id)
        })
        .collect()
}

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
    /// The ranks of a multi-process run do not fit together ([`crate::partitioned::processes`]).
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
