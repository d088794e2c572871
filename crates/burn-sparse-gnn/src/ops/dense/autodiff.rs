//! `Autodiff<B>` implementation of [`super::DenseOps`]: hand-written backward passes from `B`'s kernels.

use super::DenseOps;
use crate::backend::SparseGnnBackend;
use crate::ops::tracking::*;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::Autodiff;
use burn::tensor::ops::FloatTensor;

impl<B: SparseGnnBackend, C: CheckpointStrategy> DenseOps for Autodiff<B, C> {
    fn dense_product(
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
        ta: bool,
        tb: bool,
        math: crate::ops::dense::precision::ProductMath,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::dense_product(a.primitive, b.primitive, ta, tb, math))
    }

    fn dense_product_half(a: FloatTensor<Self>, b: FloatTensor<Self>, ta: bool, tb: bool) -> FloatTensor<Self> {
        untracked::<B, C>(B::dense_product_half(a.primitive, b.primitive, ta, tb))
    }

    fn dense_product_bias(
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
        bias: FloatTensor<Self>,
        math: crate::ops::dense::precision::ProductMath,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::dense_product_bias(a.primitive, b.primitive, bias.primitive, math))
    }

    fn dense_product_acc(
        acc: FloatTensor<Self>,
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
        ta: bool,
        tb: bool,
        math: crate::ops::dense::precision::ProductMath,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::dense_product_acc(acc.primitive, a.primitive, b.primitive, ta, tb, math))
    }
}
