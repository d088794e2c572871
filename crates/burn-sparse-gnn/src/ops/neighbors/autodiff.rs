//! `Autodiff<B>` implementation of [`super::NeighborOps`]: index outputs, nothing to differentiate.

use super::NeighborOps;
use super::{BlockPrim, BlockShape, BlockStructure};
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

    fn block_structure(
        row_ptr: IntTensor<Self>,
        col_idx: IntTensor<Self>,
        shape: BlockShape,
    ) -> BlockStructure<IntTensor<Self>> {
        B::block_structure(row_ptr, col_idx, shape)
    }
}
