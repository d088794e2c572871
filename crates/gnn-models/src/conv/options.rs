//! The options of the convolutions, each read by its own layer: [`ConvOptions`], and the option
//! types of GCN and GraphSAGE.

use serde::{Deserialize, Serialize};

/// Degree normalisation of a GCN layer (`d` counts the self-loop when there is one).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GcnNorm {
    /// `D^-1/2 A D^-1/2` (in-degree on the left, out-degree on the right).
    #[default]
    Symmetric,
    /// `D_in^-1 A` (row mean).
    Left,
    /// `A D_out^-1` (column normalised).
    Right,
    /// `A` unnormalised.
    None,
}

/// Neighbour aggregation of a SAGE layer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SageAggr {
    /// Mean of the neighbours.
    #[default]
    Mean,
    /// Sum of the neighbours.
    Sum,
    /// Max-pool: `max_j relu(W_p h_j + b_p)` (the projection of the original paper).
    MaxPool,
}

/// The options the convolutions read, each its own: what [`super::ConvSpec`] gets to build,
/// check and estimate a layer. `GnnModelConfig::conv_options` gives a model's.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConvOptions {
    /// The model's hidden width.
    pub hidden: usize,
    /// GCN normalisation.
    pub gcn_norm: GcnNorm,
    /// GraphSAGE aggregation.
    pub sage_aggr: SageAggr,
    /// GAT heads (the hidden width is split over them).
    pub gat_heads: usize,
    /// GAT attention dropout.
    pub gat_attention_dropout: f64,
    /// GIN half-safe aggregation (`lambda * mean`).
    pub gin_half_safe_lambda: Option<f64>,
}
