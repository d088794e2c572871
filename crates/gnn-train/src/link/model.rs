//! The link predictor: a GNN encoder and a pair decoder (dot product through the SDDMM, or a
//! Hadamard-product MLP), trained with binary cross-entropy on the positive pairs and negatives
//! drawn on the device each epoch.

use super::batch::{Encoder, LinkBatch, Pairs};
use crate::classifier::backward_step;
use crate::loss_scale::{LossScaleConfig, LossScaler, SharedLossScaler};
use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::prelude::Backend;
use burn::tensor::{Int, Tensor};
use burn::train::{ClassificationOutput, InferenceStep, TrainOutput, TrainStep};
use burn_sparse_gnn::dense::ProductMath;
use burn_sparse_gnn::link::{negative_pairs, pair_rows, permute_rows, PairEnd};
use burn_sparse_gnn::loss::{binary_cross_entropy, sum_terms};
use burn_sparse_gnn::ops::attention::sddmm;
use burn_sparse_gnn::{SparseGnnAutodiffBackend, SparseGnnBackend};
use gnn_models::activation::relu;
use gnn_models::linear::linear;
use gnn_models::GnnModel;
use serde::{Deserialize, Serialize};

/// How a pair of embeddings becomes a score.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "lowercase")]
pub enum Decoder {
    /// `<z_u, z_v>`: one SDDMM over the pairs' pattern, no `[pairs, width]` gather.
    #[default]
    Dot,
    /// `w2 . relu(W1 (z_u * z_v) + b1) + b2`: the Hadamard product through a two-layer MLP.
    Mlp,
}

/// The MLP decoder's layers.
#[derive(Module, Debug)]
pub struct HadamardMlp<B: Backend> {
    hidden: Linear<B>,
    out: Linear<B>,
}

impl<B: Backend> HadamardMlp<B> {
    /// An MLP over embeddings of width `width`.
    pub fn new(width: usize, device: &B::Device) -> Self {
        Self { hidden: LinearConfig::new(width, width).init(device), out: LinearConfig::new(width, 1).init(device) }
    }
}

impl<B: SparseGnnBackend> HadamardMlp<B> {
    /// Scores of the Hadamard products `h` (`[pairs, width]`). Both layers are
    /// [`burn_sparse_gnn::ops::linear`] products in exact f32 (cuBLAS on CUDA): their weight
    /// gradients reduce over every pair, which Burn's own matmul gives to one cube per output
    /// tile.
    pub fn forward(&self, h: Tensor<B, 2>) -> Tensor<B, 1> {
        let math = ProductMath::F32;
        let y = linear(&self.out, relu(linear(&self.hidden, h, math)), math);
        let n = y.dims()[0];
        y.reshape([n])
    }
}

/// A [`GnnModel`] encoder with a pair decoder (what burn-train trains for link prediction).
#[derive(Module, Debug)]
pub struct LinkPredictor<B: Backend> {
    pub model: GnnModel<B>,
    pub mlp: Option<HadamardMlp<B>>,
    seed: u64,
    #[module(skip)]
    loss_scale: SharedLossScaler,
}

/// The binary cross-entropy terms of the scores `s` (`burn_sparse_gnn::loss::binary_cross_entropy`:
/// one kernel each way on the CubeCL backends); `labels` and `weight` one per score or one for all.
fn bce<B: SparseGnnBackend>(s: Tensor<B, 1>, labels: Tensor<B, 1>, weight: Tensor<B, 1>) -> Tensor<B, 1> {
    binary_cross_entropy(s, labels, weight)
        .unwrap_or_else(|e| panic!("the labels and weights are one per score or one for all: {e}"))
}

impl<B: SparseGnnBackend> LinkPredictor<B> {
    /// Wraps an encoder whose output width is the embedding width `width`; `seed` seeds each
    /// epoch's dropout draws together with the epoch number.
    pub fn new(model: GnnModel<B>, decoder: Decoder, width: usize, seed: u64, device: &B::Device) -> Self {
        let mlp = (decoder == Decoder::Mlp).then(|| HadamardMlp::new(width, device));
        Self { model, mlp, seed, loss_scale: SharedLossScaler::default() }
    }

    /// Trains with dynamic loss scaling (`None`: without).
    pub fn with_loss_scale(mut self, config: Option<LossScaleConfig>) -> Self {
        self.loss_scale = SharedLossScaler::new(config);
        self
    }

    /// The loss scaler's state, where the model trains with one.
    pub fn loss_scaler(&self) -> Option<LossScaler> {
        self.loss_scale.state()
    }

    /// The embeddings of every node, `[n, width]`, in f32 (on the leader device where the
    /// encoder runs on parts).
    pub fn embed(&self, batch: &LinkBatch<B>) -> Tensor<B, 2> {
        let z = match &batch.encoder {
            Encoder::Whole { graph, x } => self.model.forward(graph, x.clone()),
            Encoder::Parts { graph, xs } => {
                let parts = self
                    .model
                    .forward_partitioned(graph, xs.clone())
                    .unwrap_or_else(|e| panic!("the encoder's parts were built for this model: {e}"));
                graph.gather(parts)
            }
        };
        z.cast(burn::tensor::FloatDType::F32)
    }

    /// Scores of the pairs of `pairs` (CSR order), the sources' embeddings from `src` and the
    /// destinations' from `dst` (`[n, width]` each).
    pub fn score(&self, pairs: &Pairs<B>, dst: Tensor<B, 2>, src: Tensor<B, 2>) -> Tensor<B, 1> {
        match &self.mlp {
            None => sddmm(&pairs.pattern, dst, src),
            Some(mlp) => {
                // gathered per pair; the gradients sum each node's pairs along the pattern
                let end = |x, end, ids: &Tensor<B, 1, Int>| {
                    pair_rows(&pairs.pattern, x, end, ids.clone())
                        .unwrap_or_else(|e| panic!("the pairs' ids follow their pattern: {e}"))
                };
                mlp.forward(end(dst, PairEnd::Destination, &pairs.rows) * end(src, PairEnd::Source, &pairs.cols))
            }
        }
    }

    /// The training step's output: the mean binary cross-entropy over the positive pairs and
    /// `batch.negatives` negatives per positive (pairs that hit a known edge or a node itself do
    /// not count), and a strided sample of positives and first negatives as two-class logits
    /// `[0, score]` for the metrics.
    pub fn train_output(&self, batch: &LinkBatch<B>) -> ClassificationOutput<B> {
        let z = self.embed(batch);
        let pos = self.score(&batch.pairs, z.clone(), z.clone());
        let nnz = pos.dims()[0];
        let device = pos.device();
        let (one, zero) = (Tensor::<B, 1>::ones([1], &device), Tensor::<B, 1>::zeros([1], &device));
        let mut total = sum_terms(bce(pos.clone(), one.clone(), one));
        // the pairs that count, kept on the device (no read back in the step)
        let mut count = Tensor::<B, 1>::from_floats([nnz as f32], &device);
        let mut first_neg = None;
        for k in 0..batch.negatives {
            let seed = batch.negative_seed.wrapping_add((k as u64).wrapping_mul(0xD1B5_4A32_D192_ED03));
            let neg = negative_pairs(&batch.pairs.pattern, &batch.pairs.pattern, seed)
                .unwrap_or_else(|e| panic!("the positive pattern is square: {e}"));
            let s = self.score(
                &batch.pairs,
                permute_rows(z.clone(), neg.rows, neg.rows_inverse),
                permute_rows(z.clone(), neg.cols, neg.cols_inverse),
            );
            let mask = neg.mask.float();
            count = count + sum_terms(mask.clone());
            total = total + sum_terms(bce(s.clone(), zero.clone(), mask));
            if first_neg.is_none() {
                first_neg = Some(s);
            }
        }
        let loss = total / count.clamp_min(1.0);
        let neg = first_neg.unwrap_or_else(|| pos.clone());
        let take = |s: Tensor<B, 1>| s.detach().select(0, batch.sample.clone());
        let (p, n) = (take(pos), take(neg));
        let m = p.dims()[0];
        let scores = Tensor::cat(vec![p, n], 0);
        let device = scores.device();
        let targets = Tensor::<B, 1, Int>::cat(vec![Tensor::ones([m], &device), Tensor::zeros([m], &device)], 0);
        ClassificationOutput::new(loss, two_class(scores), targets)
    }

    /// The valid / test output: the mean binary cross-entropy over the split's pairs and every
    /// pair's two-class logits with its label.
    pub fn eval_output(&self, batch: &LinkBatch<B>) -> ClassificationOutput<B> {
        let z = self.embed(batch);
        let s = self.score(&batch.pairs, z.clone(), z);
        let n = s.dims()[0];
        let device = s.device();
        let labels = batch.labels.clone().unwrap_or_else(|| Tensor::ones([n], &device));
        let y = labels.clone().float();
        let terms = bce(s.clone(), y, Tensor::ones([1], &device));
        let loss = sum_terms(terms).div_scalar(n.max(1) as f64);
        ClassificationOutput::new(loss, two_class(s.detach()), labels)
    }
}

/// Scores as two-class logits `[0, s]` (class 1 where `s > 0`).
fn two_class<B: Backend>(s: Tensor<B, 1>) -> Tensor<B, 2> {
    let n = s.dims()[0];
    let s = s.reshape([n, 1]);
    Tensor::cat(vec![s.zeros_like(), s], 1)
}

impl<B: SparseGnnAutodiffBackend> TrainStep for LinkPredictor<B> {
    type Input = LinkBatch<B>;
    type Output = ClassificationOutput<B>;

    fn step(&self, batch: LinkBatch<B>) -> TrainOutput<ClassificationOutput<B>> {
        let device = batch.pairs.pattern.device();
        // dropout draws depend on (seed, epoch) only: a resumed run repeats them
        B::seed(&device, self.seed.wrapping_mul(1_000_003).wrapping_add(batch.epoch as u64));
        let item = self.train_output(&batch);
        backward_step(self, self.loss_scale.get(), item, &device)
    }
}

impl<B: SparseGnnBackend> InferenceStep for LinkPredictor<B> {
    type Input = LinkBatch<B>;
    type Output = ClassificationOutput<B>;

    fn step(&self, batch: LinkBatch<B>) -> ClassificationOutput<B> {
        self.eval_output(&batch)
    }
}
