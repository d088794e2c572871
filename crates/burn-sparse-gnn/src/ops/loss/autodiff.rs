//! `Autodiff<B>` implementation of [`super::LossOps`]: hand-written backward passes from `B`'s kernels.

use super::LossOps;
use crate::backend::SparseGnnBackend;
use crate::ops::tracking::*;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::Backward;
use burn::backend::autodiff::ops::Ops;
use burn::backend::autodiff::ops::OpsKind;
use burn::backend::Autodiff;
use burn::tensor::ops::FloatTensor;
use burn::tensor::ops::IntTensor;
use sparse_gnn_kernels::config::KernelConfig;

#[derive(Debug)]
struct CrossEntropyBackward;

impl<B: SparseGnnBackend> Backward<B, 1> for CrossEntropyBackward {
    /// The logits, their rows' log-sum-exp, the labels and the weights.
    type State = (FloatTensor<B>, FloatTensor<B>, IntTensor<B>, FloatTensor<B>);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node] = ops.parents;
        let dterms = grads.consume::<B>(&ops.node);
        if let Some(node) = node {
            let (x, lse, labels, weight) = ops.state;
            grads.register::<B>(node.id, B::cross_entropy_grad(x, lse, labels, weight, dterms));
        }
    }
}

#[derive(Debug)]
struct BinaryCrossEntropyBackward;

impl<B: SparseGnnBackend> Backward<B, 1> for BinaryCrossEntropyBackward {
    /// The scores, the labels and the weights.
    type State = (FloatTensor<B>, FloatTensor<B>, FloatTensor<B>);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node] = ops.parents;
        let dterms = grads.consume::<B>(&ops.node);
        if let Some(node) = node {
            let (s, labels, weight) = ops.state;
            grads.register::<B>(node.id, B::binary_cross_entropy_grad(s, labels, weight, dterms));
        }
    }
}

impl<B: SparseGnnBackend, C: CheckpointStrategy> LossOps for Autodiff<B, C> {
    fn cross_entropy(
        x: FloatTensor<Self>,
        labels: IntTensor<Self>,
        weight: FloatTensor<Self>,
        config: &KernelConfig,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let (terms, lse) = B::cross_entropy(x.primitive, labels, weight.primitive, config);
        (untracked::<B, C>(terms), untracked::<B, C>(lse))
    }

    fn cross_entropy_grad(
        x: FloatTensor<Self>,
        lse: FloatTensor<Self>,
        labels: IntTensor<Self>,
        weight: FloatTensor<Self>,
        dterms: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::cross_entropy_grad(x.primitive, lse.primitive, labels, weight.primitive, dterms.primitive))
    }

    fn ad_cross_entropy(
        x: FloatTensor<Self>,
        labels: IntTensor<Self>,
        weight: FloatTensor<Self>,
        config: &KernelConfig,
    ) -> FloatTensor<Self> {
        let weight = weight.primitive;
        match CrossEntropyBackward.prepare::<C>([x.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let (terms, lse) = B::cross_entropy(x.primitive.clone(), labels.clone(), weight.clone(), config);
                prep.finish((x.primitive, lse, labels, weight), terms)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::cross_entropy(x.primitive, labels, weight, config).0),
        }
    }

    fn binary_cross_entropy(
        s: FloatTensor<Self>,
        labels: FloatTensor<Self>,
        weight: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::binary_cross_entropy(s.primitive, labels.primitive, weight.primitive))
    }

    fn binary_cross_entropy_grad(
        s: FloatTensor<Self>,
        labels: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        dterms: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::binary_cross_entropy_grad(
            s.primitive,
            labels.primitive,
            weight.primitive,
            dterms.primitive,
        ))
    }

    fn ad_binary_cross_entropy(
        s: FloatTensor<Self>,
        labels: FloatTensor<Self>,
        weight: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        let (labels, weight) = (labels.primitive, weight.primitive);
        match BinaryCrossEntropyBackward.prepare::<C>([s.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let terms = B::binary_cross_entropy(s.primitive.clone(), labels.clone(), weight.clone());
                prep.finish((s.primitive, labels, weight), terms)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::binary_cross_entropy(s.primitive, labels, weight)),
        }
    }
}
