//! `Autodiff<B>` implementation of [`super::NeighborOps`]: index outputs, nothing to differentiate.

use super::BlockPrim;
use super::NeighborOps;
use crate::backend::SparseGnnBackend;
use crate::ops::primitive::CsrPrimitive;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::Autodiff;
use burn::tensor::ops::IntTensor;

impl<B: SparseGnnBackend, C: CheckpointStrategy> NeighborOps for Autodiff<B, C> {
    fn sample_neighbors(
        csr: &CsrPrimitive<Self>,
        seeds: IntTensor<Self>,
        fanout: usize,
        key: [u32; 2],
    ) -> (IntTensor<Self>, IntTensor<Self>) {
        B::sample_neighbors(csr, seeds, fanout, key)
    }

    fn sample_block(
        csr: &CsrPrimitive<Self>,
        dst: IntTensor<Self>,
        fanout: usize,
        key: [u32; 2],
    ) -> BlockPrim<IntTensor<Self>> {
        B::sample_block(csr, dst, fanout, key)
    }
}
