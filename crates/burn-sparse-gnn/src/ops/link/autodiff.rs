//! `Autodiff<B>` implementation of [`super::LinkOps`]: index outputs, and the row permutation
//! whose backward gathers by the inverse permutation.

use super::LinkOps;
use crate::backend::SparseGnnBackend;
use crate::ops::primitive::CsrPrimitive;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::Autodiff;
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn::tensor::TensorMetadata;
use sparse_gnn_kernels::link::ROUNDS;

#[derive(Debug)]
struct PermuteRowsBackward;

impl<B: SparseGnnBackend> Backward<B, 1> for PermuteRowsBackward {
    type State = IntTensor<B>;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node] = ops.parents;
        let dy = grads.consume::<B>(&ops.node);
        if let Some(node) = node {
            // row `perm[i]` of the input went to row `i`: it gets the gradient's row `inverse[perm[i]]`
            grads.register::<B>(node.id, B::float_select(dy, 0, ops.state));
        }
    }
}

#[derive(Debug)]
struct PairRowsBackward;

impl<B: SparseGnnBackend> Backward<B, 1> for PairRowsBackward {
    /// The segments' row pointer, the transpose's edge permutation (sources), the node count.
    type State = (IntTensor<B>, Option<IntTensor<B>>, usize);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node] = ops.parents;
        let dy = grads.consume::<B>(&ops.node);
        if let Some(node) = node {
            let (row_ptr, perm, n) = ops.state;
            grads.register::<B>(node.id, B::pair_rows_sum(row_ptr, perm, dy, n));
        }
    }
}

impl<B: SparseGnnBackend, C: CheckpointStrategy> LinkOps for Autodiff<B, C> {
    fn pair_rows(
        x: FloatTensor<Self>,
        ids: IntTensor<Self>,
        row_ptr: IntTensor<Self>,
        perm: Option<IntTensor<Self>>,
    ) -> FloatTensor<Self> {
        let n = x.primitive.shape()[0];
        match PairRowsBackward.prepare::<C>([x.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => prep.finish((row_ptr, perm, n), B::float_select(x.primitive, 0, ids)),
            OpsKind::UnTracked(prep) => prep.finish(B::float_select(x.primitive, 0, ids)),
        }
    }

    fn pair_rows_sum(
        row_ptr: IntTensor<Self>,
        perm: Option<IntTensor<Self>>,
        dy: FloatTensor<Self>,
        n: usize,
    ) -> FloatTensor<Self> {
        crate::ops::tracking::untracked::<B, C>(B::pair_rows_sum(row_ptr, perm, dy.primitive, n))
    }

    fn permutation(n: usize, keys: [u32; ROUNDS], inverse: bool, device: &B::Device) -> IntTensor<Self> {
        B::permutation(n, keys, inverse, device)
    }

    fn permute_rows(x: FloatTensor<Self>, perm: IntTensor<Self>, inverse: IntTensor<Self>) -> FloatTensor<Self> {
        match PermuteRowsBackward.prepare::<C>([x.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => prep.finish(inverse, B::float_select(x.primitive, 0, perm)),
            OpsKind::UnTracked(prep) => prep.finish(B::float_select(x.primitive, 0, perm)),
        }
    }

    fn pair_mask(
        pattern: &CsrPrimitive<Self>,
        known: &CsrPrimitive<Self>,
        pa: IntTensor<Self>,
        pb: IntTensor<Self>,
    ) -> IntTensor<Self> {
        B::pair_mask(pattern, known, pa, pb)
    }
}
