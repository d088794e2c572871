//! Graph classification: a stack of convolutions over a batch of graphs (one block-diagonal
//! graph), batch normalisation and ReLU after each, and a readout that pools every node state
//! of a graph into one vector (sum, mean or max).
//!
//! The setup of the GIN paper (Xu et al., ICLR 2019) is the default: the readouts of every
//! layer, the input features included, are concatenated and one linear map scores them
//! (`score = W dropout([pool(h_0) | pool(h_1) | ... | pool(h_L)])`, the paper's sum of one linear
//! map per layer written as one product); with [`GraphModelConfig::every_layer`] off only the
//! last layer's readout is scored.
//!
//! The readout is an SpMM with the pooling pattern: a `[graphs, nodes]` CSR whose row `g` holds
//! the nodes of graph `g` ([`pool_pattern`]), so sum, mean and max pooling and their backward
//! passes are the aggregation kernels (max through its argmax).

use crate::activation::relu_rows;
use crate::conv::{Conv, ConvKind, ConvOptions, GcnNorm, LayerShape, SageAggr};
use crate::hidden::Hidden;
use crate::model::{check_stack, ModelError};
use crate::norm::BatchNorm;
use crate::precision::Precision;
use burn::config::Config;
use burn::module::Module;
use burn::nn::{Dropout, DropoutConfig, Linear, LinearConfig};
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use burn_sparse_gnn::{ops, Csr, Graph, GraphError, Reduce, SparseGnnBackend};
use serde::{Deserialize, Serialize};

/// How the node states of a graph are pooled into one vector.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Readout {
    /// The sum of the node states (GIN's choice: it tells multisets apart).
    #[default]
    Sum,
    /// The mean.
    Mean,
    /// The largest value per feature.
    Max,
}

impl Readout {
    /// The aggregation that pools.
    pub fn reduce(self) -> Reduce {
        match self {
            Readout::Sum => Reduce::Sum,
            Readout::Mean => Reduce::Mean,
            Readout::Max => Reduce::Max,
        }
    }

    /// The lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            Readout::Sum => "sum",
            Readout::Mean => "mean",
            Readout::Max => "max",
        }
    }
}

/// The pooling pattern of a batch: `graphs` rows, one per graph, row `g` holding the nodes
/// `node_ptr[g]..node_ptr[g + 1]` (the batch's nodes are grouped by graph).
pub fn pool_pattern(node_ptr: &[usize]) -> Result<Csr, GraphError> {
    let graphs = node_ptr.len().saturating_sub(1);
    let nodes = node_ptr.last().copied().unwrap_or(0);
    let row_ptr: Vec<i64> = node_ptr.iter().map(|&p| p as i64).collect();
    Csr::from_columns(graphs, nodes, &row_ptr, (0..nodes as u32).collect(), None)
}

/// Configuration of [`GraphModel`].
#[derive(Config, Debug)]
pub struct GraphModelConfig {
    /// Convolution.
    pub conv: ConvKind,
    /// Input feature width.
    pub d_in: usize,
    /// Hidden width.
    pub hidden: usize,
    /// Number of classes.
    pub classes: usize,
    /// Number of convolutions (the GIN paper's "5 layers" count the input: 4 convolutions).
    #[config(default = 4)]
    pub layers: usize,
    /// Pooling of each graph's node states.
    #[config(default = "Readout::Sum")]
    pub readout: Readout,
    /// Score the readouts of every layer, the input included, concatenated (the GIN paper);
    /// else only the last layer's.
    #[config(default = true)]
    pub every_layer: bool,
    /// Batch normalisation after each convolution (before its ReLU).
    #[config(default = true)]
    pub batch_norm: bool,
    /// Dropout on the readout before the linear map (the GIN paper's final dropout, 0.5).
    #[config(default = 0.5)]
    pub dropout: f64,
    /// Storage precision of the sparse aggregations.
    #[config(default = "Precision::F32")]
    pub precision: Precision,
    /// Learn GIN's `eps` (GIN-eps); off: `eps = 0` (GIN-0).
    #[config(default = false)]
    pub gin_learn_eps: bool,
    /// GCN normalisation.
    #[config(default = "GcnNorm::Symmetric")]
    pub gcn_norm: GcnNorm,
    /// SAGE aggregation.
    #[config(default = "SageAggr::Mean")]
    pub sage_aggr: SageAggr,
    /// GAT heads (the hidden width is split over them).
    #[config(default = 4)]
    pub gat_heads: usize,
}

/// A GNN that classifies whole graphs (see the module docs).
#[derive(Module, Debug)]
pub struct GraphModel<B: Backend> {
    convs: Vec<Conv<B>>,
    norms: Vec<BatchNorm<B>>,
    head: Linear<B>,
    dropout: Dropout,
    #[module(skip)]
    every_layer: bool,
    #[module(skip)]
    readout: Readout,
    #[module(skip)]
    precision: Precision,
}

impl GraphModelConfig {
    /// The options the convolutions read.
    pub fn conv_options(&self) -> ConvOptions {
        ConvOptions {
            hidden: self.hidden,
            gcn_norm: self.gcn_norm,
            sage_aggr: self.sage_aggr,
            gat_heads: self.gat_heads,
            gat_attention_dropout: 0.0,
            gin_half_safe_lambda: None,
        }
    }

    /// Checks the widths, depth, dropout and the convolution's options.
    pub fn check(&self) -> Result<(), ModelError> {
        check_stack((self.d_in, self.hidden, self.classes, self.layers), &[("dropout", self.dropout)])?;
        self.conv.check(&self.conv_options()).map_err(ModelError)
    }

    /// Whether the batches' graphs must contain self-loops (GAT attends to itself).
    pub fn needs_self_loops(&self) -> bool {
        self.conv.needs_self_loops()
    }

    /// Initialises the model (after [`GraphModelConfig::check`]).
    pub fn init<B: Backend>(&self, device: &B::Device) -> Result<GraphModel<B>, ModelError> {
        self.check()?;
        let opts = self.conv_options();
        let h = self.hidden;
        let convs = (0..self.layers)
            .map(|l| {
                let shape = LayerShape { d_in: if l == 0 { self.d_in } else { h }, d_out: h, logits: false };
                match Conv::new(self.conv, &opts, shape, device) {
                    Conv::Gin(c) if !self.gin_learn_eps => Conv::Gin(c.with_fixed_eps(0.0)),
                    c => c,
                }
            })
            .collect();
        let norms = match self.batch_norm {
            true => (0..self.layers).map(|_| BatchNorm::new(h, device)).collect(),
            false => Vec::new(),
        };
        let scored = match self.every_layer {
            true => self.d_in + self.layers * h,
            false => h,
        };
        Ok(GraphModel {
            convs,
            norms,
            head: LinearConfig::new(scored, self.classes).init(device),
            dropout: DropoutConfig::new(self.dropout).init(),
            every_layer: self.every_layer,
            readout: self.readout,
            precision: self.precision,
        })
    }
}

impl<B: SparseGnnBackend> GraphModel<B> {
    /// Logits `[graphs, classes]`: `g` is the batch's block-diagonal graph, `pool` its pooling
    /// pattern ([`pool_pattern`]), `x` the node features `[nodes, d_in]`.
    pub fn forward(&self, g: &Graph<B>, pool: &Graph<B>, x: Tensor<B, 2>) -> Tensor<B, 2> {
        let mut states = self.states(g, x);
        let readout = match self.every_layer {
            true => Tensor::cat(states.into_iter().map(|h| self.pool(pool, h)).collect(), 1),
            false => self.pool(pool, states.pop().expect("the input state")),
        };
        self.head.forward(self.dropout.forward(readout))
    }

    /// The node states: the input, then each convolution's output after its normalisation and
    /// ReLU.
    pub fn states(&self, g: &Graph<B>, x: Tensor<B, 2>) -> Vec<Tensor<B, 2>> {
        let mut states = Vec::with_capacity(self.convs.len() + 1);
        let mut h = x;
        for (l, conv) in self.convs.iter().enumerate() {
            let next = conv.forward(g, &Hidden::Dense(h.clone()), self.precision);
            states.push(h);
            let next = match self.norms.get(l) {
                Some(n) => n.forward(next),
                None => next,
            };
            h = relu_rows(next);
        }
        states.push(h);
        states
    }

    /// Pools node states `[nodes, d]` into one row per graph.
    pub fn pool(&self, pool: &Graph<B>, h: Tensor<B, 2>) -> Tensor<B, 2> {
        ops::spmm(pool, h, self.readout.reduce())
    }

    /// The readout of the last layer, `[graphs, hidden]`: a graph embedding.
    pub fn embed(&self, g: &Graph<B>, pool: &Graph<B>, x: Tensor<B, 2>) -> Tensor<B, 2> {
        let last = self.states(g, x).pop().expect("the input state");
        self.pool(pool, last)
    }

    /// The pooling.
    pub fn readout(&self) -> Readout {
        self.readout
    }

    /// Storage precision of the sparse aggregations.
    pub fn precision(&self) -> Precision {
        self.precision
    }

    /// Number of convolutions.
    pub fn num_layers(&self) -> usize {
        self.convs.len()
    }
}
