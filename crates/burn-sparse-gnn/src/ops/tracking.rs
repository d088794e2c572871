//! What the `Autodiff<B>` implementations of the op families share: unwrapping and wrapping
//! primitives, and the parents of a node with an optional edge weight.

use crate::ops::primitive::CbsrPrim;
use crate::ops::primitive::GraphPrimitive;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::Autodiff;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::Tensor;
use burn::tensor::TensorMetadata;
use burn::tensor::TensorPrimitive;

pub(crate) type Ad<B, C> = Autodiff<B, C>;

pub(crate) fn inner_opt<B: Backend, C: CheckpointStrategy>(w: Option<FloatTensor<Ad<B, C>>>) -> Option<FloatTensor<B>> {
    w.map(|w| w.primitive)
}

pub(crate) fn untracked<B: Backend, C: CheckpointStrategy>(t: FloatTensor<B>) -> FloatTensor<Ad<B, C>> {
    <Ad<B, C> as AutodiffBackend>::from_inner(t)
}

pub(crate) fn cbsr_inner<B: Backend, C: CheckpointStrategy>(c: &CbsrPrim<Ad<B, C>>) -> CbsrPrim<B> {
    CbsrPrim {
        values: c.values.primitive.clone(),
        indices: c.indices.clone(),
        n: c.n,
        k: c.k,
        dim: c.dim,
        packed: c.packed,
    }
}

pub(crate) fn t2<B: Backend>(t: FloatTensor<B>) -> Tensor<B, 2> {
    Tensor::from_primitive(TensorPrimitive::Float(t))
}

pub(crate) fn prim<B: Backend, const D: usize>(t: Tensor<B, D>) -> FloatTensor<B> {
    t.into_primitive().tensor()
}

/// Heads of an edge-weight tensor (`[nnz]` = 1 head, `[nnz, h]` = h heads).
pub(crate) fn heads_of<B: Backend>(w: &FloatTensor<B>) -> usize {
    let s = w.shape();
    if s.num_dims() == 1 {
        1
    } else {
        s.as_slice()[1]
    }
}

/// Reshapes an edge-weight gradient `[nnz, heads]` to the weight's own rank.
pub(crate) fn like_weight<B: Backend>(dw: FloatTensor<B>, w_shape: &[usize]) -> FloatTensor<B> {
    B::float_reshape(dw, w_shape.into())
}

/// Edge weights in transpose order (`t_perm` is padded to one entry when there is no edge).
pub(crate) fn permute_weights<B: Backend>(g: &GraphPrimitive<B>, w: FloatTensor<B>) -> FloatTensor<B> {
    if g.csr.nnz == 0 {
        return w;
    }
    B::float_select(w, 0, g.t_perm.clone())
}

/// Parents `[x, w or x]`: when there is no weight the second slot repeats `x` and the backward
/// ignores it (the state says whether a weight exists).
macro_rules! nodes2 {
    ($x:expr, $w:expr) => {
        [$x.node.clone(), $w.map(|w| w.node.clone()).unwrap_or_else(|| $x.node.clone())]
    };
}
pub(crate) use nodes2;
