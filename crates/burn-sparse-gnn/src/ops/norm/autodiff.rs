//! `Autodiff<B>` implementation of [`super::NormOps`]: hand-written backward passes from `B`'s kernels.

use super::NormOps;
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

#[derive(Debug)]
struct BatchNormBackward;

impl<B: SparseGnnBackend> Backward<B, 3> for BatchNormBackward {
    /// The states, the batch's means and `1 / std`, and `gamma`.
    type State = (FloatTensor<B>, FloatTensor<B>, FloatTensor<B>, FloatTensor<B>);

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node_x, node_gamma, node_beta] = ops.parents;
        let dy = grads.consume::<B>(&ops.node);
        let (x, mean, invstd, gamma) = ops.state;
        let (dx, dgamma, dbeta) = B::batch_norm_grad(x, dy, mean, invstd, gamma.clone());
        let like = |t: FloatTensor<B>| {
            // the parameters' gradients in the parameters' dtype
            let dtype = burn::tensor::FloatDType::from(burn::tensor::TensorMetadata::dtype(&gamma));
            burn::tensor::Tensor::<B, 1>::from_primitive(burn::tensor::TensorPrimitive::Float(t))
                .cast(dtype)
                .into_primitive()
                .tensor()
        };
        if let Some(node) = node_x {
            grads.register::<B>(node.id, dx);
        }
        if let Some(node) = node_gamma {
            grads.register::<B>(node.id, like(dgamma));
        }
        if let Some(node) = node_beta {
            grads.register::<B>(node.id, like(dbeta));
        }
    }
}

impl<B: SparseGnnBackend, C: CheckpointStrategy> NormOps for Autodiff<B, C> {
    fn batch_norm_running(
        old_mean: FloatTensor<Self>,
        old_var: FloatTensor<Self>,
        mean: FloatTensor<Self>,
        var: FloatTensor<Self>,
        momentum: f64,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let (m, v) =
            B::batch_norm_running(old_mean.primitive, old_var.primitive, mean.primitive, var.primitive, momentum);
        (untracked::<B, C>(m), untracked::<B, C>(v))
    }

    fn batch_norm_stats(x: FloatTensor<Self>, eps: f64) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let (mean, invstd, var) = B::batch_norm_stats(x.primitive, eps);
        (untracked::<B, C>(mean), untracked::<B, C>(invstd), untracked::<B, C>(var))
    }

    fn batch_norm_apply(
        x: FloatTensor<Self>,
        mean: FloatTensor<Self>,
        invstd: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::batch_norm_apply(
            x.primitive,
            mean.primitive,
            invstd.primitive,
            gamma.primitive,
            beta.primitive,
        ))
    }

    fn batch_norm_grad(
        x: FloatTensor<Self>,
        dy: FloatTensor<Self>,
        mean: FloatTensor<Self>,
        invstd: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let (dx, dgamma, dbeta) =
            B::batch_norm_grad(x.primitive, dy.primitive, mean.primitive, invstd.primitive, gamma.primitive);
        (untracked::<B, C>(dx), untracked::<B, C>(dgamma), untracked::<B, C>(dbeta))
    }

    fn ad_batch_norm(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        eps: f64,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let parents = [x.node.clone(), gamma.node.clone(), beta.node.clone()];
        let (mean, invstd, var) = B::batch_norm_stats(x.primitive.clone(), eps);
        let y = B::batch_norm_apply(
            x.primitive.clone(),
            mean.clone(),
            invstd.clone(),
            gamma.primitive.clone(),
            beta.primitive,
        );
        let y = match BatchNormBackward.prepare::<C>(parents).compute_bound().stateful() {
            OpsKind::Tracked(prep) => prep.finish((x.primitive, mean.clone(), invstd, gamma.primitive), y),
            OpsKind::UnTracked(prep) => prep.finish(y),
        };
        (y, untracked::<B, C>(mean), untracked::<B, C>(var))
    }
}
