//! A trained link predictor: its metrics on the valid and test pairs, and the scores of any
//! pairs or of every candidate neighbour of a node.

use super::batch::{LinkBatch, LinkBatcher};
use super::metrics::{link_metrics, LinkMetrics};
use super::model::LinkPredictor;
use crate::batch::SplitKind;
use crate::error::TrainError;
use burn::tensor::{ElementConversion, Tensor};
use burn_sparse_gnn::SparseGnnBackend;
use serde::{Deserialize, Serialize};

/// The metrics of every split of a trained predictor and its losses.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkEvaluation {
    /// Absent where the split holds no valid pairs.
    pub valid: Option<LinkMetrics>,
    pub test: LinkMetrics,
    /// Mean binary cross-entropy over the test pairs.
    pub test_loss: f64,
    /// Share of the test pairs on the right side of score 0 (probability 0.5).
    pub test_accuracy: f64,
    pub valid_accuracy: Option<f64>,
}

fn split_scores<B: SparseGnnBackend>(
    model: &LinkPredictor<B>,
    batch: &LinkBatch<B>,
    hits_k: usize,
) -> (LinkMetrics, f64, f64) {
    let out = model.eval_output(batch);
    let [n, _] = out.output.dims();
    let s = (out.output.clone().narrow(1, 1, 1) - out.output.narrow(1, 0, 1)).reshape([n]);
    let s = s.into_data().convert::<f32>().into_vec::<f32>().unwrap_or_default();
    let t = out.targets.into_data().convert::<i64>().into_vec::<i64>().unwrap_or_default();
    let (mut pos, mut neg) = (Vec::new(), Vec::new());
    let mut right = 0usize;
    for (v, l) in s.into_iter().zip(t) {
        right += usize::from((v > 0.0) == (l == 1));
        if l == 1 {
            pos.push(v);
        } else {
            neg.push(v);
        }
    }
    let loss = out.loss.into_scalar().elem::<f64>();
    (link_metrics(&pos, &neg, hits_k), loss, right as f64 / n.max(1) as f64)
}

/// Evaluates a predictor on the valid and test pairs (run it on an inference backend).
pub fn evaluate_link<B: SparseGnnBackend>(
    model: &LinkPredictor<B>,
    batcher: &LinkBatcher,
    device: &B::Device,
    hits_k: usize,
) -> Result<LinkEvaluation, TrainError> {
    let has_valid = !batcher.host().split.valid_pos.is_empty();
    let valid = match has_valid {
        true => Some(split_scores(model, &batcher.try_batch::<B>(SplitKind::Valid, device)?, hits_k)),
        false => None,
    };
    let (test, test_loss, test_accuracy) =
        split_scores(model, &batcher.try_batch::<B>(SplitKind::Test, device)?, hits_k);
    Ok(LinkEvaluation { valid: valid.map(|v| v.0), test, test_loss, test_accuracy, valid_accuracy: valid.map(|v| v.2) })
}

/// Every node's embedding, `[n, width]` row-major in f32 (run it on an inference backend).
pub fn embeddings_of<B: SparseGnnBackend>(
    model: &LinkPredictor<B>,
    batcher: &LinkBatcher,
    device: &B::Device,
) -> Result<(Vec<f32>, usize), TrainError> {
    let batch = batcher.try_batch::<B>(SplitKind::Test, device)?;
    let z = model.embed(&batch);
    let width = z.dims()[1];
    Ok((z.into_data().convert::<f32>().into_vec::<f32>().unwrap_or_default(), width))
}

/// The score (logit) of each pair `(source, destination)` given the embeddings `z` (`[n,
/// width]`), through the model's decoder on the device. Pairs must be in range (checked by the
/// caller).
pub fn score_pairs<B: SparseGnnBackend>(
    model: &LinkPredictor<B>,
    z: &[f32],
    width: usize,
    pairs: &[[u32; 2]],
    device: &B::Device,
) -> Vec<f32> {
    if pairs.is_empty() {
        return Vec::new();
    }
    let n = z.len() / width.max(1);
    let zt = Tensor::<B, 2>::from_data(burn::tensor::TensorData::new(z.to_vec(), [n, width]), device);
    let mut out = Vec::with_capacity(pairs.len());
    // pieces of at most 2^20 pairs bound the gathered rows
    for chunk in pairs.chunks(1 << 20) {
        let idx = |f: fn(&[u32; 2]) -> u32| {
            let v: Vec<i64> = chunk.iter().map(|p| f(p) as i64).collect();
            Tensor::<B, 1, burn::tensor::Int>::from_data(burn::tensor::TensorData::new(v, [chunk.len()]), device)
        };
        let src = zt.clone().select(0, idx(|p| p[0]));
        let dst = zt.clone().select(0, idx(|p| p[1]));
        let s = match &model.mlp {
            None => (src * dst).sum_dim(1).reshape([chunk.len()]),
            Some(mlp) => mlp.forward(dst * src),
        };
        out.extend(s.into_data().convert::<f32>().into_vec::<f32>().unwrap_or_default());
    }
    out
}

/// The `k` best-scored new neighbours of `node`: every other node that is not `excluded`
/// (its known neighbours), scored with the model's decoder, best first (lower id on ties).
pub fn top_k<B: SparseGnnBackend>(
    model: &LinkPredictor<B>,
    z: &[f32],
    width: usize,
    node: u32,
    k: usize,
    excluded: &[u32],
    device: &B::Device,
) -> Vec<(u32, f32)> {
    let n = (z.len() / width.max(1)) as u32;
    let skip: std::collections::HashSet<u32> = excluded.iter().copied().chain([node]).collect();
    let candidates: Vec<[u32; 2]> = (0..n).filter(|v| !skip.contains(v)).map(|v| [node, v]).collect();
    let scores = score_pairs(model, z, width, &candidates, device);
    let mut scored: Vec<(u32, f32)> = candidates.iter().map(|p| p[1]).zip(scores).collect();
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(k);
    scored
}
