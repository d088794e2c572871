//! NdArray implementation of [`super::NeighborOps`], and the host form every backend may use.

use super::BlockPrim;
use super::NeighborOps;
use crate::ops::host_io::{host_csr_u32, read_u32, write_ids};
use crate::ops::primitive::CsrPrimitive;
use burn::tensor::backend::Backend;
use burn::tensor::ops::IntTensor;
use burn_ndarray::FloatNdArrayElement;
use burn_ndarray::IntNdArrayElement;
use burn_ndarray::NdArray;
use burn_ndarray::NdArrayTensor;
use burn_ndarray::QuantElement;
use burn_ndarray::SharedArray;
use sparse_gnn_kernels::neighbors::reference;

impl<E: FloatNdArrayElement, I: IntNdArrayElement, Q: QuantElement> NeighborOps for NdArray<E, I, Q>
where
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
}

fn signed<B: Backend>(v: Vec<u32>, device: &B::Device) -> IntTensor<B> {
    write_ids::<B>(v.into_iter().map(|x| x as i32).collect(), device)
}

/// The host form of [`NeighborOps::sample_neighbors`].
pub(crate) fn sample_neighbors<B: Backend>(
    csr: &CsrPrimitive<B>,
    seeds: IntTensor<B>,
    fanout: usize,
    key: [u32; 2],
) -> (IntTensor<B>, IntTensor<B>) {
    let device = B::int_device(&seeds);
    let (rp, ci) = host_csr_u32::<B>(csr);
    let seeds = read_u32::<B>(seeds);
    let (counts, picks) = reference::sample_neighbors(&rp, &ci, &seeds, fanout, key);
    (signed::<B>(counts, &device), signed::<B>(picks, &device))
}

/// The host form of [`NeighborOps::sample_block`].
pub(crate) fn sample_block<B: Backend>(
    csr: &CsrPrimitive<B>,
    dst: IntTensor<B>,
    fanout: usize,
    key: [u32; 2],
) -> BlockPrim<IntTensor<B>> {
    let device = B::int_device(&dst);
    let (rp, ci) = host_csr_u32::<B>(csr);
    let dst = read_u32::<B>(dst);
    let b = reference::sample_block(&rp, &ci, &dst, fanout, key);
    BlockPrim {
        n_src: b.src.len(),
        row_ptr: signed::<B>(b.row_ptr, &device),
        col_idx: signed::<B>(b.col_idx, &device),
        src: signed::<B>(b.src, &device),
    }
}
