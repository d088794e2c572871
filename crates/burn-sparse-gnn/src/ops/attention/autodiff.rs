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

#[derive(Debug)]
struct GatAttentionBackward;

impl<B: SparseGnnBackend> Backward<B, 2> for GatAttentionBackward {
    type State = (GraphPrimitive<B>, FloatTensor<B>, FloatTensor<B>, FloatTensor<B>, f64);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node_dst, node_src] = ops.parents;
        let d_alpha = grads.consume::<B>(&ops.node);
        let (g, s_dst, s_src, alpha, slope) = ops.state;
        let (d_dst, d_src) = B::gat_attention_grad(&g, s_dst, s_src, alpha, d_alpha, slope);
        if let Some(node) = node_dst {
            grads.register::<B>(node.id, d_dst);
        }
        if let Some(node) = node_src {
            grads.register::<B>(node.id, d_src);
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

    fn gat_attention(
        csr: &CsrPrimitive<Self>,
        s_dst: FloatTensor<Self>,
        s_src: FloatTensor<Self>,
        negative_slope: f64,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::gat_attention(csr, s_dst.primitive, s_src.primitive, negative_slope))
    }

    fn gat_attention_grad(
        g: &GraphPrimitive<Self>,
        s_dst: FloatTensor<Self>,
        s_src: FloatTensor<Self>,
        alpha: FloatTensor<Self>,
        d_alpha: FloatTensor<Self>,
        negative_slope: f64,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let (d_dst, d_src) = B::gat_attention_grad(
            g,
            s_dst.primitive,
            s_src.primitive,
            alpha.primitive,
            d_alpha.primitive,
            negative_slope,
        );
        (untracked::<B, C>(d_dst), untracked::<B, C>(d_src))
    }

    fn ad_gat_attention(
        g: &GraphPrimitive<Self>,
        s_dst: FloatTensor<Self>,
        s_src: FloatTensor<Self>,
        negative_slope: f64,
    ) -> FloatTensor<Self> {
        let parents = [s_dst.node.clone(), s_src.node.clone()];
        match GatAttentionBackward.prepare::<C>(parents).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let alpha = B::gat_attention(&g.csr, s_dst.primitive.clone(), s_src.primitive.clone(), negative_slope);
                prep.finish((g.clone(), s_dst.primitive, s_src.primitive, alpha.clone(), negative_slope), alpha)
            }
            OpsKind::UnTracked(prep) => {
                prep.finish(B::gat_attention(&g.csr, s_dst.primitive, s_src.primitive, negative_slope))
            }
        }
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
