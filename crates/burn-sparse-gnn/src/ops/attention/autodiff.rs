//! `Autodiff<B>` implementation of [`super::AttentionOps`]: hand-written backward passes from `B`'s kernels.

use super::AttentionOps;
use crate::backend::SparseGnnBackend;
use crate::ops::primitive::CsrPrimitive;
use crate::ops::primitive::GraphPrimitive;
use crate::ops::primitive::Reduce;
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
struct SddmmBackward;

impl<B: SparseGnnBackend> Backward<B, 2> for SddmmBackward {
    type State = (GraphPrimitive<B>, FloatTensor<B>, FloatTensor<B>, usize);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node_a, node_b] = ops.parents;
        let ds = grads.consume::<B>(&ops.node);
        let (g, a, b, _heads) = ops.state;
        if let Some(node) = node_b {
            let dst = permute_weights::<B>(&g, ds.clone());
            grads.register::<B>(node.id, B::spmm(&g.csc, Some(dst), a, Reduce::Sum).out);
        }
        if let Some(node) = node_a {
            grads.register::<B>(node.id, B::spmm(&g.csr, Some(ds), b, Reduce::Sum).out);
        }
    }
}

#[derive(Debug)]
struct EdgeSoftmaxBackward;

impl<B: SparseGnnBackend> Backward<B, 1> for EdgeSoftmaxBackward {
    type State = (CsrPrimitive<B>, FloatTensor<B>);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node] = ops.parents;
        let dy = grads.consume::<B>(&ops.node);
        let (csr, y) = ops.state;
        if let Some(node) = node {
            grads.register::<B>(node.id, B::edge_softmax_grad(&csr, y, dy));
        }
    }
}

impl<B: SparseGnnBackend, C: CheckpointStrategy> AttentionOps for Autodiff<B, C> {
    fn sddmm(csr: &CsrPrimitive<Self>, a: FloatTensor<Self>, b: FloatTensor<Self>, heads: usize) -> FloatTensor<Self> {
        untracked::<B, C>(B::sddmm(csr, a.primitive, b.primitive, heads))
    }

    fn edge_softmax(csr: &CsrPrimitive<Self>, scores: FloatTensor<Self>) -> FloatTensor<Self> {
        untracked::<B, C>(B::edge_softmax(csr, scores.primitive))
    }

    fn edge_softmax_grad(csr: &CsrPrimitive<Self>, y: FloatTensor<Self>, dy: FloatTensor<Self>) -> FloatTensor<Self> {
        untracked::<B, C>(B::edge_softmax_grad(csr, y.primitive, dy.primitive))
    }

    fn ad_sddmm(
        g: &GraphPrimitive<Self>,
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
        heads: usize,
    ) -> FloatTensor<Self> {
        match SddmmBackward.prepare::<C>([a.node.clone(), b.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let out = B::sddmm(&g.csr, a.primitive.clone(), b.primitive.clone(), heads);
                prep.finish((g.clone(), a.primitive, b.primitive, heads), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::sddmm(&g.csr, a.primitive, b.primitive, heads)),
        }
    }

    fn ad_edge_softmax(g: &GraphPrimitive<Self>, scores: FloatTensor<Self>) -> FloatTensor<Self> {
        match EdgeSoftmaxBackward.prepare::<C>([scores.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let y = B::edge_softmax(&g.csr, scores.primitive);
                prep.finish((g.csr.clone(), y.clone()), y)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::edge_softmax(&g.csr, scores.primitive)),
        }
    }
}
