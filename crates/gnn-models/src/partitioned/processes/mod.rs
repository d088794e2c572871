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
//!
//! By concern: [`graph`] builds a rank's part, [`forward`] runs the model and its loss on it,
//! [`replicas`] keeps the ranks' model replicas equal (parameters and gradients).

mod forward;
mod graph;
mod replicas;

pub use forward::rank_loss;
pub use replicas::{broadcast_model, sum_gradients};

use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor};
use burn_sparse_gnn::collective::RankRoutes;
use burn_sparse_gnn::{DropoutSeed, Graph};

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

/// The dropout seeds of one training step: the input's and each convolution's (`None` where
/// the model draws none), drawn in the order the one-process forward pass draws them.
#[derive(Clone, Debug)]
pub struct StepSeeds<B: Backend> {
    input: Option<DropoutSeed<B>>,
    layers: Vec<Option<DropoutSeed<B>>>,
}
