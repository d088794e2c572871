//! `Autodiff<B>` implementation of [`super::AggregationOps`]: hand-written backward passes from `B`'s kernels.

use super::AggregationOps;
use crate::backend::SparseGnnBackend;
use crate::ops::primitive::CsrPrimitive;
use crate::ops::primitive::GraphPrimitive;
use crate::ops::primitive::Reduce;
use crate::ops::primitive::SampleSpec;
use crate::ops::primitive::SpmmOutput;
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
use burn::tensor::Tensor;
use burn::tensor::TensorMetadata;
use burn::tensor::TensorPrimitive;

#[derive(Debug)]
struct SpmmBackward;

#[derive(Clone, Debug)]
struct SpmmState<B: Backend> {
    g: GraphPrimitive<B>,
    w: Option<FloatTensor<B>>,
    x: Option<FloatTensor<B>>,
    reduce: Reduce,
}

impl<B: SparseGnnBackend> Backward<B, 2> for SpmmBackward {
    type State = SpmmState<B>;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node_x, node_w] = ops.parents;
        let dout = grads.consume::<B>(&ops.node);
        let SpmmState { g, w, x, reduce } = ops.state;
        let d = match reduce {
            Reduce::Mean => {
                let dtype = dout.dtype().into();
                crate::ops::rows::inv_degree_rows::<B>(&g.csr, dout, dtype)
            }
            _ => dout,
        };
        if let (Some(node), Some(w), Some(x)) = (node_w, w.as_ref(), x) {
            let shape = w.shape().as_slice().to_vec();
            let dw = B::sddmm(&g.csr, d.clone(), x, heads_of::<B>(w));
            grads.register::<B>(node.id, like_weight::<B>(dw, &shape));
        }
        if let Some(node) = node_x {
            let wt = w.map(|w| permute_weights::<B>(&g, w));
            let dx = B::spmm(&g.csc, wt, d, Reduce::Sum).out;
            grads.register::<B>(node.id, dx);
        }
    }
}

#[derive(Debug)]
struct SpmmMaxBackward;

#[derive(Clone, Debug)]
struct SpmmMaxState<B: Backend> {
    g: GraphPrimitive<B>,
    w: Option<FloatTensor<B>>,
    x: Option<FloatTensor<B>>,
    argmax: IntTensor<B>,
}

impl<B: SparseGnnBackend> Backward<B, 2> for SpmmMaxBackward {
    type State = SpmmMaxState<B>;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node_x, node_w] = ops.parents;
        let dout = grads.consume::<B>(&ops.node);
        let SpmmMaxState { g, w, x, argmax } = ops.state;
        if let (Some(node), Some(w), Some(x)) = (node_w, w.as_ref(), x) {
            let shape = w.shape().as_slice().to_vec();
            let dw = B::spmm_max_grad_w(&g.csr, heads_of::<B>(w), dout.clone(), x, argmax.clone());
            grads.register::<B>(node.id, like_weight::<B>(dw, &shape));
        }
        if let Some(node) = node_x {
            let dx = B::spmm_max_grad_x(&g, w, dout, argmax);
            grads.register::<B>(node.id, dx);
        }
    }
}

#[derive(Debug)]
struct SampledSpmmBackward;

#[derive(Clone, Debug)]
struct SampledState<B: Backend> {
    g: GraphPrimitive<B>,
    w: Option<FloatTensor<B>>,
    x: Option<FloatTensor<B>>,
    spec: SampleSpec,
    reduce: Reduce,
}

impl<B: SparseGnnBackend> Backward<B, 2> for SampledSpmmBackward {
    type State = SampledState<B>;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node_x, node_w] = ops.parents;
        let dout = grads.consume::<B>(&ops.node);
        let SampledState { g, w, x, spec, reduce } = ops.state;
        // the same sample as the forward: per-edge scale (0 = not sampled)
        let scale = B::edge_sample_scale(&g.csr, spec, reduce, &dout);
        let scale_t: Tensor<B, 1> = Tensor::from_primitive(TensorPrimitive::Float(scale));
        let heads = w.as_ref().map(heads_of::<B>).unwrap_or(1);
        let scale_2d = scale_t.clone().unsqueeze_dim::<2>(1);
        if let (Some(node), Some(w), Some(x)) = (node_w, w.as_ref(), x) {
            let shape = w.shape().as_slice().to_vec();
            let dw = t2(B::sddmm(&g.csr, dout.clone(), x, heads)) * scale_2d.clone();
            grads.register::<B>(node.id, like_weight::<B>(prim(dw), &shape));
        }
        if let Some(node) = node_x {
            let eff = match w {
                Some(w) => {
                    let w2 = t2(B::float_reshape(w, [g.csr.nnz, heads].into()));
                    prim(w2 * scale_2d)
                }
                None => prim(scale_t),
            };
            let dx = B::spmm(&g.csc, Some(permute_weights::<B>(&g, eff)), dout, Reduce::Sum).out;
            grads.register::<B>(node.id, dx);
        }
    }
}

impl<B: SparseGnnBackend, C: CheckpointStrategy> AggregationOps for Autodiff<B, C> {
    fn spmm(
        csr: &CsrPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        x: FloatTensor<Self>,
        reduce: Reduce,
    ) -> SpmmOutput<Self> {
        let o = B::spmm(csr, inner_opt::<B, C>(w), x.primitive, reduce);
        SpmmOutput { out: untracked::<B, C>(o.out), argmax: o.argmax }
    }

    fn spmm_max_grad_x(
        g: &GraphPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        dout: FloatTensor<Self>,
        argmax: IntTensor<Self>,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::spmm_max_grad_x(g, inner_opt::<B, C>(w), dout.primitive, argmax))
    }

    fn spmm_max_grad_w(
        csr: &CsrPrimitive<Self>,
        heads: usize,
        dout: FloatTensor<Self>,
        x: FloatTensor<Self>,
        argmax: IntTensor<Self>,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::spmm_max_grad_w(csr, heads, dout.primitive, x.primitive, argmax))
    }

    fn edge_sample_scale(
        csr: &CsrPrimitive<Self>,
        spec: SampleSpec,
        reduce: Reduce,
        like: &FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::edge_sample_scale(csr, spec, reduce, &like.primitive))
    }

    fn sampled_spmm(
        csr: &CsrPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        x: FloatTensor<Self>,
        spec: SampleSpec,
        reduce: Reduce,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::sampled_spmm(csr, inner_opt::<B, C>(w), x.primitive, spec, reduce))
    }

    fn ad_spmm(
        g: &GraphPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        x: FloatTensor<Self>,
        reduce: Reduce,
    ) -> FloatTensor<Self> {
        let nodes = nodes2!(x, w.as_ref());
        // `x` is kept only for the weights' gradient: constant weights (data) keep nothing
        let keep_x = w.as_ref().is_some_and(|w| !w.node.requirement.is_none());
        let wi = w.map(|w| w.primitive);
        if reduce == Reduce::Max {
            match SpmmMaxBackward.prepare::<C>(nodes).compute_bound().stateful() {
                OpsKind::Tracked(prep) => {
                    let o = B::spmm(&g.csr, wi.clone(), x.primitive.clone(), reduce);
                    let argmax = o.argmax.expect("max reduce returns its argmax");
                    let x_state = keep_x.then_some(x.primitive);
                    prep.finish(SpmmMaxState { g: g.clone(), w: wi, x: x_state, argmax }, o.out)
                }
                OpsKind::UnTracked(prep) => prep.finish(B::spmm(&g.csr, wi, x.primitive, reduce).out),
            }
        } else {
            match SpmmBackward.prepare::<C>(nodes).compute_bound().stateful() {
                OpsKind::Tracked(prep) => {
                    let out = B::spmm(&g.csr, wi.clone(), x.primitive.clone(), reduce).out;
                    let x_state = keep_x.then_some(x.primitive);
                    prep.finish(SpmmState { g: g.clone(), w: wi, x: x_state, reduce }, out)
                }
                OpsKind::UnTracked(prep) => prep.finish(B::spmm(&g.csr, wi, x.primitive, reduce).out),
            }
        }
    }

    fn ad_sampled_spmm(
        g: &GraphPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        x: FloatTensor<Self>,
        spec: SampleSpec,
        reduce: Reduce,
    ) -> FloatTensor<Self> {
        let nodes = nodes2!(x, w.as_ref());
        let wi = w.map(|w| w.primitive);
        match SampledSpmmBackward.prepare::<C>(nodes).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let out = B::sampled_spmm(&g.csr, wi.clone(), x.primitive.clone(), spec, reduce);
                let x_state = wi.as_ref().map(|_| x.primitive);
                prep.finish(SampledState { g: g.clone(), w: wi, x: x_state, spec, reduce }, out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::sampled_spmm(&g.csr, wi, x.primitive, spec, reduce)),
        }
    }
}
