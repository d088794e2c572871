//! NdArray implementation of [`super::NeighborOps`], and the host form every backend may use.

use super::BlockPrim;
use super::NeighborOps;
use crate::ops::host_io::read_index;
use crate::ops::primitive::CsrPrimitive;
use burn::tensor::backend::Backend;
use burn::tensor::ops::IntTensor;
use burn::tensor::{DType, Int, Tensor, TensorData};
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

fn ids<B: Backend>(v: Vec<i32>, device: &B::Device) -> IntTensor<B> {
    let n = v.len();
    Tensor::<B, 1, Int>::from_data(TensorData::new(v, [n]), (device, DType::I32)).into_primitive()
}

/// The host form of [`NeighborOps::sample_neighbors`].
pub(crate) fn sample_neighbors<B: Backend>(
    csr: &CsrPrimitive<B>,
    seeds: IntTensor<B>,
    fanout: usize,
    key: [u32; 2],
) -> (IntTensor<B>, IntTensor<B>) {
    let device = B::int_device(&seeds);
    let rp: Vec<u32> = read_index::<B>(csr.row_ptr.clone()).into_iter().map(|v| v as u32).collect();
    let mut ci: Vec<u32> = read_index::<B>(csr.col_idx.clone()).into_iter().map(|v| v as u32).collect();
    ci.truncate(csr.nnz);
    let seeds: Vec<u32> = read_index::<B>(seeds).into_iter().map(|v| v as u32).collect();
    let (counts, picks) = reference::sample_neighbors(&rp, &ci, &seeds, fanout, key);
    let signed = |v: Vec<u32>| v.into_iter().map(|x| x as i32).collect::<Vec<_>>();
    (ids::<B>(signed(counts), &device), ids::<B>(signed(picks), &device))
}

/// The host form of [`NeighborOps::sample_block`].
pub(crate) fn sample_block<B: Backend>(
    csr: &CsrPrimitive<B>,
    dst: IntTensor<B>,
    fanout: usize,
    key: [u32; 2],
) -> BlockPrim<IntTensor<B>> {
    let device = B::int_device(&dst);
    let rp: Vec<u32> = read_index::<B>(csr.row_ptr.clone()).into_iter().map(|v| v as u32).collect();
    let mut ci: Vec<u32> = read_index::<B>(csr.col_idx.clone()).into_iter().map(|v| v as u32).collect();
    ci.truncate(csr.nnz);
    let dst: Vec<u32> = read_index::<B>(dst).into_iter().map(|v| v as u32).collect();
    let b = reference::sample_block(&rp, &ci, &dst, fanout, key);
    let signed = |v: Vec<u32>| v.into_iter().map(|x| x as i32).collect::<Vec<_>>();
    BlockPrim {
        n_src: b.src.len(),
        row_ptr: ids::<B>(signed(b.row_ptr), &device),
        col_idx: ids::<B>(signed(b.col_idx), &device),
        src: ids::<B>(signed(b.src), &device),
    }
}
