//! `Autodiff<B>` implementation of [`super::LinkOps`]: index outputs, nothing to differentiate.

use super::LinkOps;
use crate::backend::SparseGnnBackend;
use crate::ops::primitive::CsrPrimitive;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::Autodiff;
use burn::tensor::ops::IntTensor;
use sparse_gnn_kernels::link::ROUNDS;

impl<B: SparseGnnBackend, C: CheckpointStrategy> LinkOps for Autodiff<B, C> {
    fn permutation(n: usize, keys: [u32; ROUNDS], device: &B::Device) -> IntTensor<Self> {
        B::permutation(n, keys, device)
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
