//! NdArray implementation of [`super::LinkOps`], and the host forms every backend may use.

use super::LinkOps;
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
use sparse_gnn_kernels::link as kernel;

impl<E: FloatNdArrayElement, I: IntNdArrayElement, Q: QuantElement> LinkOps for NdArray<E, I, Q>
where
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
}

fn ids<B: Backend>(v: Vec<i32>, device: &B::Device) -> IntTensor<B> {
    let n = v.len();
    Tensor::<B, 1, Int>::from_data(TensorData::new(v, [n]), (device, DType::I32)).into_primitive()
}

/// The host form of [`LinkOps::permutation`].
pub(crate) fn permutation<B: Backend>(n: usize, keys: [u32; kernel::ROUNDS], device: &B::Device) -> IntTensor<B> {
    ids::<B>(kernel::permutation(n, &keys).into_iter().map(|v| v as i32).collect(), device)
}

fn host_csr<B: Backend>(c: &CsrPrimitive<B>) -> (Vec<u32>, Vec<u32>) {
    let rp: Vec<u32> = read_index::<B>(c.row_ptr.clone()).into_iter().map(|v| v as u32).collect();
    let mut ci: Vec<u32> = read_index::<B>(c.col_idx.clone()).into_iter().map(|v| v as u32).collect();
    ci.truncate(c.nnz);
    (rp, ci)
}

/// The host form of [`LinkOps::pair_mask`].
pub(crate) fn pair_mask<B: Backend>(
    pattern: &CsrPrimitive<B>,
    known: &CsrPrimitive<B>,
    pa: IntTensor<B>,
    pb: IntTensor<B>,
) -> IntTensor<B> {
    let device = B::int_device(&pa);
    let (prp, pci) = host_csr::<B>(pattern);
    let (krp, kci) = host_csr::<B>(known);
    let pa: Vec<u32> = read_index::<B>(pa).into_iter().map(|v| v as u32).collect();
    let pb: Vec<u32> = read_index::<B>(pb).into_iter().map(|v| v as u32).collect();
    let mask = kernel::pair_mask((&prp, &pci), (&krp, &kci), &pa, &pb);
    ids::<B>(mask, &device)
}
