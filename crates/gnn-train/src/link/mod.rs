//! Link prediction with burn-train's `Learner`: an edge split ([`split`]), full-graph batches
//! whose training negatives are drawn on the device ([`batch`]), an encoder with a pair decoder
//! ([`model`]), ranking metrics ([`metrics`], and ROC-AUC as a burn-train metric in [`metric`])
//! and the evaluation and scoring of a trained predictor ([`evaluate`]).

pub mod batch;
pub mod evaluate;
pub mod metric;
pub mod metrics;
pub mod model;
pub mod split;

pub use batch::{Encoder, LinkBatch, LinkBatcher, LinkHost, LinkParts, Pairs};
pub use evaluate::{embeddings_of, evaluate_link, score_pairs, top_k, LinkEvaluation};
pub use metric::LinkAucMetric;
pub use metrics::{link_metrics, LinkMetrics};
pub use model::{Decoder, LinkPredictor};
pub use split::{LinkSplit, LinkSplitConfig, Pair};
