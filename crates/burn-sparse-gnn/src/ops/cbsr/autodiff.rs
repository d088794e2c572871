//! `Autodiff<B>` implementation of [`super::CbsrOps`]: hand-written backward passes from `B`'s kernels.

use super::CbsrOps;
use crate::backend::SparseGnnBackend;
use crate::ops::primitive::CbsrPrim;
use crate::ops::primitive::CsrPrimitive;
use crate::ops::primitive::GraphPrimitive;
use crate::ops::primitive::PoolSpec;
use crate::ops::tracking::*;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::Backward;
use burn::backend::autodiff::ops::Ops;
use burn::backend::autodiff::ops::OpsKind;
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::ops::IntTensor;
use burn::tensor::TensorMetadata;
use sparse_gnn_kernels::config::KernelConfig;

#[derive(Debug)]
struct SelectBackward;

impl<B: SparseGnnBackend> Backward<B, 1> for SelectBackward {
    type State = CbsrPrim<B>;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node] = ops.parents;
        let dv = grads.consume::<B>(&ops.node);
        if let Some(node) = node {
            let mut pattern = ops.state;
            pattern.values = dv;
            grads.register::<B>(node.id, B::cbsr_to_dense(&pattern));
        }
    }
}

#[derive(Debug)]
struct ToDenseBackward;

impl<B: SparseGnnBackend> Backward<B, 1> for ToDenseBackward {
    type State = CbsrPrim<B>;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node] = ops.parents;
        let dy = grads.consume::<B>(&ops.node);
        if let Some(node) = node {
            grads.register::<B>(node.id, B::cbsr_gather(dy, &ops.state));
        }
    }
}

#[derive(Debug)]
struct SpgemmBackward;

#[derive(Clone, Debug)]
struct SpgemmState<B: Backend> {
    g: GraphPrimitive<B>,
    w: Option<FloatTensor<B>>,
    c: CbsrPrim<B>,
}

impl<B: SparseGnnBackend> Backward<B, 2> for SpgemmBackward {
    type State = SpgemmState<B>;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node_v, node_w] = ops.parents;
        let dy = grads.consume::<B>(&ops.node);
        let SpgemmState { g, w, c } = ops.state;
        if let (Some(node), Some(w)) = (node_w, w.as_ref()) {
            let shape = w.shape().as_slice().to_vec();
            let dw = B::cbsr_spgemm_grad_w(&g.csr, dy.clone(), &c);
            grads.register::<B>(node.id, like_weight::<B>(dw, &shape));
        }
        if let Some(node) = node_v {
            grads.register::<B>(node.id, B::cbsr_sspmm(&g, w, dy, &c));
        }
    }
}

/// Wraps the values of a selection (MaxK / pooling) so their gradient scatters back to `x`.
fn track_selection<B: SparseGnnBackend, C: CheckpointStrategy>(
    x: FloatTensor<Ad<B, C>>,
    c: CbsrPrim<B>,
) -> CbsrPrim<Ad<B, C>> {
    let CbsrPrim { values, indices, n, k, dim, packed } = c;
    let values = match SelectBackward.prepare::<C>([x.node.clone()]).compute_bound().stateful() {
        OpsKind::Tracked(prep) => {
            let pattern = CbsrPrim { values: values.clone(), indices: indices.clone(), n, k, dim, packed };
            prep.finish(pattern, values)
        }
        OpsKind::UnTracked(prep) => prep.finish(values),
    };
    CbsrPrim { values, indices, n, k, dim, packed }
}

impl<B: SparseGnnBackend, C: CheckpointStrategy> CbsrOps for Autodiff<B, C> {
    fn maxk(x: FloatTensor<Self>, k: usize, config: &KernelConfig) -> CbsrPrim<Self> {
        let c = B::maxk(x.primitive, k, config);
        CbsrPrim {
            values: untracked::<B, C>(c.values),
            indices: c.indices,
            n: c.n,
            k: c.k,
            dim: c.dim,
            packed: c.packed,
        }
    }

    fn maxpool(x: FloatTensor<Self>, spec: PoolSpec) -> CbsrPrim<Self> {
        let c = B::maxpool(x.primitive, spec);
        CbsrPrim {
            values: untracked::<B, C>(c.values),
            indices: c.indices,
            n: c.n,
            k: c.k,
            dim: c.dim,
            packed: c.packed,
        }
    }

    fn cbsr_to_dense(c: &CbsrPrim<Self>) -> FloatTensor<Self> {
        untracked::<B, C>(B::cbsr_to_dense(&cbsr_inner(c)))
    }

    fn cbsr_gather(x: FloatTensor<Self>, pattern: &CbsrPrim<Self>) -> FloatTensor<Self> {
        untracked::<B, C>(B::cbsr_gather(x.primitive, &cbsr_inner(pattern)))
    }

    fn cbsr_spgemm(g: &GraphPrimitive<Self>, w: Option<FloatTensor<Self>>, c: &CbsrPrim<Self>) -> FloatTensor<Self> {
        untracked::<B, C>(B::cbsr_spgemm(g, inner_opt::<B, C>(w), &cbsr_inner(c)))
    }

    fn cbsr_sspmm(
        g: &GraphPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        dy: FloatTensor<Self>,
        pattern: &CbsrPrim<Self>,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::cbsr_sspmm(g, inner_opt::<B, C>(w), dy.primitive, &cbsr_inner(pattern)))
    }

    fn cbsr_spgemm_grad_w(csr: &CsrPrimitive<Self>, dy: FloatTensor<Self>, c: &CbsrPrim<Self>) -> FloatTensor<Self> {
        untracked::<B, C>(B::cbsr_spgemm_grad_w(csr, dy.primitive, &cbsr_inner(c)))
    }

    fn cbsr_indices(c: &CbsrPrim<Self>) -> IntTensor<Self> {
        B::cbsr_indices(&cbsr_inner(c))
    }

    fn ad_maxk(x: FloatTensor<Self>, k: usize, config: &KernelConfig) -> CbsrPrim<Self> {
        let c = B::maxk(x.primitive.clone(), k, config);
        track_selection::<B, C>(x, c)
    }

    fn ad_maxpool(x: FloatTensor<Self>, spec: PoolSpec) -> CbsrPrim<Self> {
        let c = B::maxpool(x.primitive.clone(), spec);
        track_selection::<B, C>(x, c)
    }

    fn ad_cbsr_to_dense(c: &CbsrPrim<Self>) -> FloatTensor<Self> {
        let ci = cbsr_inner(c);
        match ToDenseBackward.prepare::<C>([c.values.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let out = B::cbsr_to_dense(&ci);
                prep.finish(ci, out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::cbsr_to_dense(&ci)),
        }
    }

    fn ad_cbsr_spgemm(g: &GraphPrimitive<Self>, w: Option<FloatTensor<Self>>, c: &CbsrPrim<Self>) -> FloatTensor<Self> {
        let nodes = nodes2!(c.values, w.as_ref());
        let wi = w.map(|w| w.primitive);
        let ci = cbsr_inner(c);
        match SpgemmBackward.prepare::<C>(nodes).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let out = B::cbsr_spgemm(g, wi.clone(), &ci);
                prep.finish(SpgemmState { g: g.clone(), w: wi, c: ci }, out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::cbsr_spgemm(g, wi, &ci)),
        }
    }
}
