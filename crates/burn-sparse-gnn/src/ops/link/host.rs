//! NdArray implementation of [`super::LinkOps`], and the host forms every backend may use.

use super::LinkOps;
use crate::ops::host_io::{host_csr_u32, read_f, read_u32, width, write_f, write_ids};
use crate::ops::primitive::CsrPrimitive;
use burn::tensor::backend::Backend;
use burn::tensor::ops::{FloatTensor, IntTensor};
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

/// The host form of [`LinkOps::permutation`].
pub(crate) fn permutation<B: Backend>(
    n: usize,
    keys: [u32; kernel::ROUNDS],
    inverse: bool,
    device: &B::Device,
) -> IntTensor<B> {
    let ids = if inverse { kernel::inverse_permutation(n, &keys) } else { kernel::permutation(n, &keys) };
    write_ids::<B>(ids.into_iter().map(|v| v as i32).collect(), device)
}

/// The host form of [`LinkOps::pair_mask`].
pub(crate) fn pair_mask<B: Backend>(
    pattern: &CsrPrimitive<B>,
    known: &CsrPrimitive<B>,
    pa: IntTensor<B>,
    pb: IntTensor<B>,
) -> IntTensor<B> {
    let device = B::int_device(&pa);
    let (prp, pci) = host_csr_u32::<B>(pattern);
    let (krp, kci) = host_csr_u32::<B>(known);
    let (pa, pb) = (read_u32::<B>(pa), read_u32::<B>(pb));
    let mask = kernel::pair_mask((&prp, &pci), (&krp, &kci), &pa, &pb);
    write_ids::<B>(mask, &device)
}

/// The host form of [`LinkOps::pair_rows_sum`].
pub(crate) fn pair_rows_sum<B: Backend>(
    row_ptr: IntTensor<B>,
    perm: Option<IntTensor<B>>,
    dy: FloatTensor<B>,
    n: usize,
) -> FloatTensor<B> {
    let device = B::float_device(&dy);
    let mut row_ptr = read_u32::<B>(row_ptr);
    row_ptr.truncate(n + 1);
    let perm = perm.map(read_u32::<B>);
    let dy = read_f::<B>(dy);
    let f = width(&dy);
    let out = sparse_gnn_kernels::pair_rows::pair_rows_sum(&row_ptr, perm.as_deref(), &dy.data, f);
    write_f::<B>(out, vec![n, f], dy.dtype, &device)
}
