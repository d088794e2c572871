//! `Autodiff<B>` implementation of [`super::DropoutOps`]: hand-written backward passes from `B`'s kernels.

use super::DropoutOps;
use crate::backend::SparseGnnBackend;
use crate::ops::primitive::ReluDropout;
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

#[derive(Debug)]
struct ReluDropoutBackward;

impl<B: SparseGnnBackend> Backward<B, 1> for ReluDropoutBackward {
    type State = (IntTensor<B>, ReluDropout);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node] = ops.parents;
        let dy = grads.consume::<B>(&ops.node);
        if let Some(node) = node {
            let (mask, spec) = ops.state;
            grads.register::<B>(node.id, B::relu_dropout_grad(dy, mask, spec));
        }
    }
}

impl<B: SparseGnnBackend, C: CheckpointStrategy> DropoutOps for Autodiff<B, C> {
    fn relu_dropout(
        x: FloatTensor<Self>,
        spec: ReluDropout,
        seed: Option<FloatTensor<Self>>,
        rows: Option<IntTensor<Self>>,
    ) -> (FloatTensor<Self>, IntTensor<Self>) {
        let (y, mask) = B::relu_dropout(x.primitive, spec, inner_opt::<B, C>(seed), rows);
        (untracked::<B, C>(y), mask)
    }

    fn relu_dropout_grad(dy: FloatTensor<Self>, mask: IntTensor<Self>, spec: ReluDropout) -> FloatTensor<Self> {
        untracked::<B, C>(B::relu_dropout_grad(dy.primitive, mask, spec))
    }

    fn ad_relu_dropout(
        x: FloatTensor<Self>,
        spec: ReluDropout,
        seed: Option<FloatTensor<Self>>,
        rows: Option<IntTensor<Self>>,
    ) -> FloatTensor<Self> {
        let seed = inner_opt::<B, C>(seed);
        match ReluDropoutBackward.prepare::<C>([x.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let (y, mask) = B::relu_dropout(x.primitive, spec, seed, rows);
                prep.finish((mask, spec), y)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::relu_dropout(x.primitive, spec, seed, rows).0),
        }
    }
}
