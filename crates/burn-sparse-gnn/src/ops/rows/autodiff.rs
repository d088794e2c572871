//! `Autodiff<B>` implementation of [`super::RowOps`]: hand-written backward passes from `B`'s kernels.

use super::RowOps;
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

#[derive(Debug)]
struct TakeRowsBackward;

impl<B: SparseGnnBackend> Backward<B, 1> for TakeRowsBackward {
    type State = (IntTensor<B>, burn::tensor::DType);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node] = ops.parents;
        let dy = grads.consume::<B>(&ops.node);
        let (inverse, dtype) = ops.state;
        if let Some(node) = node {
            // `[dy; 0]` gathered through the inverse map, in the dtype of `x`
            let g = crate::ops::rows::gather_back::<B>(dy, inverse);
            let g = match burn::tensor::TensorMetadata::dtype(&g) {
                d if d != dtype => B::float_cast(g, burn::tensor::FloatDType::from(dtype)),
                _ => g,
            };
            grads.register::<B>(node.id, g);
        }
    }
}

impl<B: SparseGnnBackend, C: CheckpointStrategy> RowOps for Autodiff<B, C> {
    fn add_rows(
        base: FloatTensor<Self>,
        values: FloatTensor<Self>,
        indices: IntTensor<Self>,
        inverse: IntTensor<Self>,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::add_rows(base.primitive, values.primitive, indices, inverse))
    }

    fn ad_take_rows(x: FloatTensor<Self>, indices: IntTensor<Self>, inverse: IntTensor<Self>) -> FloatTensor<Self> {
        Self::ad_take_rows_as(x, indices, inverse, None)
    }

    fn ad_take_rows_as(
        x: FloatTensor<Self>,
        indices: IntTensor<Self>,
        inverse: IntTensor<Self>,
        dtype: Option<burn::tensor::FloatDType>,
    ) -> FloatTensor<Self> {
        let x_dtype = burn::tensor::TensorMetadata::dtype(&x.primitive);
        let rows = |x| B::ad_take_rows_as(x, indices, inverse.clone(), dtype);
        match TakeRowsBackward.prepare::<C>([x.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => prep.finish((inverse.clone(), x_dtype), rows(x.primitive)),
            OpsKind::UnTracked(prep) => prep.finish(rows(x.primitive)),
        }
    }
}
