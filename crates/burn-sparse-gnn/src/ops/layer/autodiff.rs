//! `Autodiff<B>` implementation of [`super::LayerOps`]: hand-written backward passes from `B`'s kernels.

use super::LayerOps;
use crate::backend::SparseGnnBackend;
use crate::ops::aggregation::AggregationOps;
use crate::ops::dense::precision::LinearPrecision;
use crate::ops::dense::precision::ProductMath;
use crate::ops::layer::terms::SavedTerm;
use crate::ops::layer::terms::Term;
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
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::TensorMetadata;

#[derive(Debug)]
struct LinearBackward;

#[derive(Debug)]
struct LinearPairBackward;

#[derive(Clone, Debug)]
struct LinearState<B: Backend> {
    /// Per product: what the forward kept of its input, its weight, its input's dtype.
    terms: Vec<SavedTerm<B>>,
    has_b: bool,
    precision: LinearPrecision,
}

/// Registers the gradients of a linear layer's parents: `[x_1, w_1, ..., x_t, w_t, b]`.
fn linear_grads<B: SparseGnnBackend, const N: usize>(ops: Ops<LinearState<B>, N>, grads: &mut Gradients) {
    let parents = ops.parents;
    let dy = grads.consume::<B>(&ops.node);
    let LinearState { terms, has_b, precision } = ops.state;
    let node_b = parents[N - 1].clone().filter(|_| has_b);
    let want: Vec<[bool; 2]> =
        (0..terms.len()).map(|t| [parents[2 * t].is_some(), parents[2 * t + 1].is_some()]).collect();
    let (per_term, db) = crate::ops::layer::terms::linear_backward::<B>(dy, terms, precision, &want, node_b.is_some());
    for (t, [dx, dw]) in per_term.into_iter().enumerate() {
        for (node, g) in [(parents[2 * t].clone(), dx), (parents[2 * t + 1].clone(), dw)] {
            if let (Some(node), Some(g)) = (node, g) {
                grads.register::<B>(node.id, g);
            }
        }
    }
    if let (Some(node), Some(g)) = (node_b, db) {
        grads.register::<B>(node.id, g);
    }
}

impl<B: SparseGnnBackend> Backward<B, 3> for LinearBackward {
    type State = LinearState<B>;

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        linear_grads::<B, 3>(ops, grads);
    }
}

impl<B: SparseGnnBackend> Backward<B, 5> for LinearPairBackward {
    type State = LinearState<B>;

    fn backward(self, ops: Ops<Self::State, 5>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        linear_grads::<B, 5>(ops, grads);
    }
}

#[derive(Debug)]
struct AddBiasBackward;

impl<B: SparseGnnBackend> Backward<B, 2> for AddBiasBackward {
    type State = ();

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node_y, node_b] = ops.parents;
        let dy = grads.consume::<B>(&ops.node);
        if let Some(node) = node_b {
            let db = crate::ops::layer::terms::bias_gradient::<B>(dy.clone(), ProductMath::F32);
            grads.register::<B>(node.id, db);
        }
        if let Some(node) = node_y {
            grads.register::<B>(node.id, dy);
        }
    }
}

#[derive(Debug)]
struct AggregatePairBackward;

#[derive(Clone, Debug)]
struct AggregatePairState<B: Backend> {
    g: GraphPrimitive<B>,
    saved: crate::ops::layer::pair::PairSaved<B>,
    has_b: bool,
}

impl<B: SparseGnnBackend> Backward<B, 4> for AggregatePairBackward {
    type State = AggregatePairState<B>;

    fn backward(self, ops: Ops<Self::State, 4>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node_x, node_wn, node_wr, node_b] = ops.parents;
        let dy = grads.consume::<B>(&ops.node);
        let AggregatePairState { g, saved, has_b } = ops.state;
        let node_b = node_b.filter(|_| has_b);
        let want = [node_x.is_some(), node_wn.is_some(), node_wr.is_some(), node_b.is_some()];
        let out = crate::ops::layer::pair::pair_backward::<B>(&g, dy, saved, want);
        for (node, grad) in [node_x, node_wn, node_wr, node_b].into_iter().zip(out) {
            if let (Some(node), Some(grad)) = (node, grad) {
                grads.register::<B>(node.id, grad);
            }
        }
    }
}

#[derive(Debug)]
struct SplitPairBackward;

#[derive(Clone, Debug)]
struct SplitPairState<B: Backend> {
    saved: crate::ops::layer::split::SplitSaved<B>,
    has_halo: bool,
    has_b: bool,
}

impl<B: SparseGnnBackend> Backward<B, 6> for SplitPairBackward {
    type State = SplitPairState<B>;

    fn backward(self, ops: Ops<Self::State, 6>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node_sum, node_halo, node_own, node_wn, node_wr, node_b] = ops.parents;
        let dy = grads.consume::<B>(&ops.node);
        let SplitPairState { saved, has_halo, has_b } = ops.state;
        let node_halo = node_halo.filter(|_| has_halo);
        let node_b = node_b.filter(|_| has_b);
        let nodes = [node_sum, node_halo, node_own, node_wn, node_wr, node_b];
        let want = nodes.each_ref().map(Option::is_some);
        let out = crate::ops::layer::split::split_backward::<B>(dy, saved, want);
        for (node, grad) in nodes.into_iter().zip(out) {
            if let (Some(node), Some(grad)) = (node, grad) {
                grads.register::<B>(node.id, grad);
            }
        }
    }
}

impl<B: SparseGnnBackend, C: CheckpointStrategy> LayerOps for Autodiff<B, C> {
    fn ad_linear(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        b: Option<FloatTensor<Self>>,
        precision: LinearPrecision,
    ) -> FloatTensor<Self> {
        let has_b = b.is_some();
        let nodes =
            [x.node.clone(), w.node.clone(), b.as_ref().map(|b| b.node.clone()).unwrap_or_else(|| x.node.clone())];
        let bi = b.map(|b| b.primitive);
        let terms = vec![Term::new(x.primitive, w.primitive)];
        match LinearBackward.prepare::<C>(nodes).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let (out, terms) = crate::ops::layer::terms::linear_forward::<B>(terms, bi, precision);
                prep.finish(LinearState { terms, has_b, precision }, out)
            }
            OpsKind::UnTracked(prep) => {
                prep.finish(crate::ops::layer::terms::linear_forward::<B>(terms, bi, precision).0)
            }
        }
    }

    fn ad_add_bias(y: FloatTensor<Self>, b: FloatTensor<Self>) -> FloatTensor<Self> {
        let nodes = [y.node.clone(), b.node.clone()];
        let out = crate::ops::dense::add_row_bias::<B>(y.primitive, b.primitive);
        match AddBiasBackward.prepare::<C>(nodes).compute_bound().stateful() {
            OpsKind::Tracked(prep) => prep.finish((), out),
            OpsKind::UnTracked(prep) => prep.finish(out),
        }
    }

    fn ad_linear_pair(
        first: Term<Self>,
        second: Term<Self>,
        b: Option<FloatTensor<Self>>,
        precision: LinearPrecision,
    ) -> FloatTensor<Self> {
        let has_b = b.is_some();
        let nodes = [
            first.x.node.clone(),
            first.w.node.clone(),
            second.x.node.clone(),
            second.w.node.clone(),
            b.as_ref().map(|b| b.node.clone()).unwrap_or_else(|| first.x.node.clone()),
        ];
        let bi = b.map(|b| b.primitive);
        // the half copies are inputs of the forward only: their gradient goes to `x`
        let inner = |t: Term<Self>| Term { x: t.x.primitive, w: t.w.primitive, x_half: t.x_half.map(|h| h.primitive) };
        let terms = vec![inner(first), inner(second)];
        match LinearPairBackward.prepare::<C>(nodes).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let (out, terms) = crate::ops::layer::terms::linear_forward::<B>(terms, bi, precision);
                prep.finish(LinearState { terms, has_b, precision }, out)
            }
            OpsKind::UnTracked(prep) => {
                prep.finish(crate::ops::layer::terms::linear_forward::<B>(terms, bi, precision).0)
            }
        }
    }

    fn ad_aggregate_pair(
        g: &GraphPrimitive<Self>,
        x: FloatTensor<Self>,
        w_neigh: FloatTensor<Self>,
        w_root: FloatTensor<Self>,
        b: Option<FloatTensor<Self>>,
        reduce: Reduce,
        precision: LinearPrecision,
    ) -> FloatTensor<Self> {
        let (d_in, d_out) = {
            let s = w_neigh.primitive.shape();
            (s[0], s[1])
        };
        let n = g.csr.n_rows;
        // the fused backward's transposed SpMM is `d_out` wide: where the input needs no
        // gradient, or the output is wider than the input, the aggregate is kept instead (the
        // neighbour weight's gradient is then one product)
        if x.node.requirement.is_none() || d_out > d_in {
            let x_half = match precision {
                LinearPrecision::Half(h) => Some(prim(t2::<Self>(x.clone()).cast(h))),
                _ => None,
            };
            let neigh = Self::ad_spmm(g, None, x_half.clone().unwrap_or_else(|| x.clone()), reduce);
            let head = |t| crate::ops::layer::pair::head::<Self>(t, n);
            let root = Term { x: head(x), w: w_root, x_half: x_half.map(head) };
            return Self::ad_linear_pair(Term::new(neigh, w_neigh), root, b, precision);
        }
        let has_b = b.is_some();
        let nodes = [
            x.node.clone(),
            w_neigh.node.clone(),
            w_root.node.clone(),
            b.as_ref().map(|b| b.node.clone()).unwrap_or_else(|| x.node.clone()),
        ];
        let bi = b.map(|b| b.primitive);
        let forward = |bi| {
            crate::ops::layer::pair::pair_forward::<B>(
                g,
                x.primitive,
                w_neigh.primitive,
                w_root.primitive,
                bi,
                reduce,
                precision,
            )
        };
        match AggregatePairBackward.prepare::<C>(nodes).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let (out, saved) = forward(bi);
                prep.finish(AggregatePairState { g: g.clone(), saved, has_b }, out)
            }
            OpsKind::UnTracked(prep) => prep.finish(forward(bi).0),
        }
    }

    fn ad_split_pair(inputs: crate::ops::layer::split::SplitInputs<Self>) -> FloatTensor<Self> {
        use crate::ops::layer::split::SplitInputs;
        let SplitInputs { own_sum, halo, inv_degree, own, own_half, w_neigh, w_root, b, precision } = inputs;
        let (has_halo, has_b) = (halo.is_some(), b.is_some());
        let first = own_sum.node.clone();
        let nodes = [
            own_sum.node.clone(),
            halo.as_ref().map(|(_, h)| h.node.clone()).unwrap_or_else(|| first.clone()),
            own.node.clone(),
            w_neigh.node.clone(),
            w_root.node.clone(),
            b.as_ref().map(|b| b.node.clone()).unwrap_or(first),
        ];
        // `inv_degree` and the half copy of `own` are inputs of the forward only
        let inner = SplitInputs {
            own_sum: own_sum.primitive,
            halo: halo.map(|(g, h)| (g, h.primitive)),
            inv_degree: inv_degree.map(|t| t.primitive),
            own: own.primitive,
            own_half: own_half.map(|t| t.primitive),
            w_neigh: w_neigh.primitive,
            w_root: w_root.primitive,
            b: b.map(|t| t.primitive),
            precision,
        };
        match SplitPairBackward.prepare::<C>(nodes).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let (out, saved) = crate::ops::layer::split::split_forward::<B>(inner);
                prep.finish(SplitPairState { saved, has_halo, has_b }, out)
            }
            OpsKind::UnTracked(prep) => prep.finish(crate::ops::layer::split::split_forward::<B>(inner).0),
        }
    }
}
