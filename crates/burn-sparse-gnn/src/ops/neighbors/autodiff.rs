//! `Autodiff<B>` implementation of [`super::NeighborOps`]: index outputs, nothing to differentiate.

use super::NeighborOps;
use super::{BlockNorms, BlockPrim, BlockShape, BlockStructure};
use crate::backend::SparseGnnBackend;
use crate::ops::primitive::CsrPrimitive;
use crate::ops::tracking::untracked;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::Autodiff;
use burn::tensor::ops::{FloatTensor, IntTensor};

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

    fn block_norms(
        row_ptr: IntTensor<Self>,
        src: IntTensor<Self>,
        in_degree: FloatTensor<Self>,
        out_degree: FloatTensor<Self>,
        n_dst: usize,
        weighted: bool,
    ) -> BlockNorms<FloatTensor<Self>> {
        let n = B::block_norms(row_ptr, src, in_degree.primitive, out_degree.primitive, n_dst, weighted);
        let t = untracked::<B, C>;
        BlockNorms {
            in_degree: t(n.in_degree),
            in_inv: t(n.in_inv),
            in_inv_sqrt: t(n.in_inv_sqrt),
            out_degree: t(n.out_degree),
            out_inv: t(n.out_inv),
            out_inv_sqrt: t(n.out_inv_sqrt),
            weighted: n.weighted.map(|(full, share)| (t(full), t(share))),
        }
    }
}
