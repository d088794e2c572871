//! GraphSAGE convolution: `out = W_n aggr_{j -> i}(h_j) + W_r h_i`.
//!
//! On a graph with edge weights ([`Graph::weights`]) every message is scaled by its edge's
//! weight, as DGL's `SAGEConv(edge_weight=...)` does (PyG's `SAGEConv` takes none): sum
//! `sum_j w_ij h_j`, mean `sum_j w_ij h_j / deg(i)` (divided by the number of the row's edges,
//! not by the sum of their weights), max-pool `max_j w_ij relu(W_p h_j + b_p)`. Zero, tiny and
//! negative weights are accepted as they are (a zero weight's message counts as zeros, which
//! still count in the mean's `deg(i)` and compete in the max).

use crate::activation::relu_rows;
use crate::aggregate::aggregate;
use crate::hidden::Hidden;
use crate::linear::add_bias;
use crate::precision::Precision;
use burn::config::Config;
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use burn_sparse_gnn::{ops, Graph, Reduce, SparseGnnBackend};
use super::options::ConvOptions;
use super::spec::{ConvSpec, EstimateLayer, LayerShape, SavedBytes};

pub use super::options::SageAggr;

/// Configuration of [`SageConv`].
#[derive(Config, Debug)]
pub struct SageConvConfig {
    /// Input width.
    pub d_in: usize,
    /// Output width.
    pub d_out: usize,
    /// Aggregation.
    #[config(default = "SageAggr::Mean")]
    pub aggr: SageAggr,
    /// Add `W_r h_i` (the root weight).
    #[config(default = true)]
    pub root_weight: bool,
}

/// A GraphSAGE layer (edge weights: see the module docs).
///
/// ```
/// use burn::backend::NdArray;
/// use burn::tensor::Tensor;
/// use burn_sparse_gnn::{BuildOptions, Csr, Graph, GraphOptions};
/// use gnn_models::{Hidden, Precision, SageAggr, SageConvConfig};
///
/// type B = NdArray;
/// let dev = Default::default();
/// let adj = Csr::from_edges(3, &[0, 1], &[1, 2], None, BuildOptions::undirected()).unwrap();
/// let g = Graph::<B>::new(&adj, &dev, GraphOptions::default());
/// let conv = SageConvConfig::new(4, 2).with_aggr(SageAggr::MaxPool).init::<B>(&dev);
/// let y = conv.forward(&g, &Hidden::Dense(Tensor::ones([3, 4], &dev)), Precision::F32);
/// assert_eq!(y.dims(), [3, 2]);
/// ```
#[derive(Module, Debug)]
pub struct SageConv<B: Backend> {
    pub lin_neigh: Linear<B>,
    pub lin_root: Option<Linear<B>>,
    pub lin_pool: Option<Linear<B>>,
    #[module(skip)]
    pub aggr: SageAggr,
}

impl SageConvConfig {
    /// Initialises the layer.
    pub fn init<B: Backend>(&self, device: &B::Device) -> SageConv<B> {
        SageConv {
            lin_neigh: LinearConfig::new(self.d_in, self.d_out).init(device),
            lin_root: self.root_weight.then(|| LinearConfig::new(self.d_in, self.d_out).with_bias(false).init(device)),
            lin_pool: (self.aggr == SageAggr::MaxPool).then(|| LinearConfig::new(self.d_in, self.d_in).init(device)),
            aggr: self.aggr,
        }
    }
}

impl<B: SparseGnnBackend> SageConv<B> {
    /// `[n, d_in]` -> `[n, d_out]`; CBSR input aggregates by the CBSR SpGEMM (mean / sum).
    /// On a part of a partitioned graph `h` holds the part's rows then its halo rows
    /// (`g.n_cols()` in all) and the output has the part's rows (`g.n_rows()`).
    pub fn forward(&self, g: &Graph<B>, h: &Hidden<B>, precision: Precision) -> Tensor<B, 2> {
        // mean / sum commute with the linear map: transform first when that narrows dense input
        let [_, d_in] = h.dims();
        let d_out = self.lin_neigh.weight.dims()[1];
        if let (Hidden::Dense(x), SageAggr::Mean | SageAggr::Sum) = (h, self.aggr) {
            if d_out < d_in {
                let reduce = if self.aggr == SageAggr::Mean { Reduce::Mean } else { Reduce::Sum };
                let w = Hidden::Dense(precision.matmul_nodes(x.clone(), self.lin_neigh.weight.val()));
                let mut out = aggregate(g, &w, reduce, precision);
                if let Some(b) = &self.lin_neigh.bias {
                    out = add_bias(out, b.val());
                }
                return match &self.lin_root {
                    Some(r) => out + precision.linear(r, h.head(g.n_rows()).dense()),
                    None => out,
                };
            }
            // the fused aggregation and maps run without edge weights
            if let (Some(r), None) = (&self.lin_root, g.weights()) {
                return self.forward_pair(g, x, r, precision);
            }
        }
        let neigh = match self.aggr {
            SageAggr::Mean => aggregate(g, h, Reduce::Mean, precision),
            SageAggr::Sum => aggregate(g, h, Reduce::Sum, precision),
            SageAggr::MaxPool => {
                let p = relu_rows(precision.linear(self.lin_pool.as_ref().expect("max-pool projection"), h.dense()));
                aggregate(g, &Hidden::Dense(p), Reduce::Max, precision)
            }
        };
        let out = precision.linear(&self.lin_neigh, neigh);
        match &self.lin_root {
            Some(r) => out + precision.linear(r, h.head(g.n_rows()).dense()),
            None => out,
        }
    }

    /// Mean / sum aggregation of dense rows then both maps into one output
    /// ([`ops::aggregate_pair`]: the root product adds to the neighbour product in place, and
    /// the backward pass keeps no copy of the aggregate where the input needs a gradient). In
    /// mixed precision one half copy of `x` serves the aggregation and the root product.
    fn forward_pair(&self, g: &Graph<B>, x: &Tensor<B, 2>, root: &Linear<B>, precision: Precision) -> Tensor<B, 2> {
        let reduce = if self.aggr == SageAggr::Mean { Reduce::Mean } else { Reduce::Sum };
        ops::aggregate_pair(
            g,
            x.clone(),
            self.lin_neigh.weight.val(),
            root.weight.val(),
            self.lin_neigh.bias.as_ref().map(|b| b.val()),
            reduce,
            precision.linear_precision(),
        )
    }
}

impl ConvSpec for SageConvConfig {
    type Layer<B: Backend> = SageConv<B>;

    fn layer<B: Backend>(opts: &ConvOptions, shape: LayerShape, device: &B::Device) -> SageConv<B> {
        SageConvConfig::new(shape.d_in, shape.d_out).with_aggr(opts.sage_aggr).init(device)
    }

    /// Mean and sum layers can.
    fn supports_split_halo(opts: &ConvOptions) -> bool {
        matches!(opts.sage_aggr, SageAggr::Mean | SageAggr::Sum)
    }

    /// Mean and sum layers do; max-pool does not.
    fn supports_boundary_sampling(opts: &ConvOptions) -> bool {
        opts.sage_aggr != SageAggr::MaxPool
    }

    fn sums_neighbours(opts: &ConvOptions) -> bool {
        opts.sage_aggr == SageAggr::Sum
    }

    fn parameter_count(opts: &ConvOptions, d_in: u64, d_out: u64) -> u64 {
        let pool = if opts.sage_aggr == SageAggr::MaxPool { d_in * d_in + d_in } else { 0 };
        2 * d_in * d_out + d_out + pool
    }

    /// Mean / sum on dense rows ([`SageConv::forward`]): a narrowing map runs before the
    /// aggregation and keeps nothing more; on an input that needs a gradient a map no wider
    /// than its input takes its gradients from `A^T dy` and keeps no aggregate
    /// (`ops::aggregate_pair`); otherwise the aggregate is kept (half in mixed precision).
    /// Max-pool and sparse input: the aggregated rows the linear map reads.
    fn saved_bytes(opts: &ConvOptions, l: &EstimateLayer) -> SavedBytes {
        let per_node = if l.dense_in && opts.sage_aggr != SageAggr::MaxPool {
            if l.width_out < l.width_in || (!l.classic_first && l.width_out <= l.width_in) {
                0
            } else {
                l.saved * l.width_in
            }
        } else {
            l.saved * l.width_in.max(l.hidden)
        };
        SavedBytes { per_node, per_edge: 0 }
    }

    /// A max aggregation stages the arg-max beside the values.
    fn staged_rows(opts: &ConvOptions) -> u64 {
        if opts.sage_aggr == SageAggr::MaxPool {
            2
        } else {
            1
        }
    }
}
