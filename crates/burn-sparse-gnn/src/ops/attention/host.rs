//! NdArray implementation of [`super::AttentionOps`]: the CPU references of `sparse-gnn-kernels` (f64 accumulation, rayon).

use super::AttentionOps;
use crate::ops::host_io::*;
use crate::ops::primitive::CsrPrim;
use crate::ops::primitive::CsrPrimitive;
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::ops::IntTensor;
use burn_ndarray::FloatNdArrayElement;
use burn_ndarray::IntNdArrayElement;
use burn_ndarray::NdArray;
use burn_ndarray::NdArrayTensor;
use burn_ndarray::QuantElement;
use burn_ndarray::SharedArray;
use sparse_gnn_kernels::sddmm as sddmm_mod;
use sparse_gnn_kernels::softmax;

pub fn sddmm<B: Backend>(
    csr: &CsrPrim<IntTensor<B>>,
    a: FloatTensor<B>,
    b: FloatTensor<B>,
    heads: usize,
) -> FloatTensor<B> {
    let device = B::float_device(&a);
    let h = HostCsr::read::<B>(csr);
    let a = read_f::<B>(a);
    let b = read_f::<B>(b);
    let out = sddmm_mod::reference::sddmm(&h.as_ref(), &a.data, &b.data, width(&a), heads);
    write_f::<B>(out, vec![csr.nnz, heads], a.dtype, &device)
}

pub fn edge_softmax<B: Backend>(csr: &CsrPrim<IntTensor<B>>, scores: FloatTensor<B>) -> FloatTensor<B> {
    let device = B::float_device(&scores);
    let h = HostCsr::read::<B>(csr);
    let s = read_f::<B>(scores);
    let heads = s.shape[1];
    let y = softmax::reference::edge_softmax(&h.as_ref(), &s.data, heads);
    write_f::<B>(y, s.shape, s.dtype, &device)
}

pub fn edge_softmax_grad<B: Backend>(
    csr: &CsrPrim<IntTensor<B>>,
    y: FloatTensor<B>,
    dy: FloatTensor<B>,
) -> FloatTensor<B> {
    let device = B::float_device(&y);
    let h = HostCsr::read::<B>(csr);
    let y = read_f::<B>(y);
    let dy = read_f::<B>(dy);
    let heads = y.shape[1];
    let ds = softmax::reference::edge_softmax_backward(&h.as_ref(), &y.data, &dy.data, heads);
    write_f::<B>(ds, y.shape, y.dtype, &device)
}

impl<E: FloatNdArrayElement, I: IntNdArrayElement, Q: QuantElement> AttentionOps for NdArray<E, I, Q>
where
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
    fn sddmm(csr: &CsrPrimitive<Self>, a: FloatTensor<Self>, b: FloatTensor<Self>, heads: usize) -> FloatTensor<Self> {
        sddmm::<Self>(csr, a, b, heads)
    }

    fn edge_softmax(csr: &CsrPrimitive<Self>, scores: FloatTensor<Self>) -> FloatTensor<Self> {
        edge_softmax::<Self>(csr, scores)
    }

    fn edge_softmax_grad(csr: &CsrPrimitive<Self>, y: FloatTensor<Self>, dy: FloatTensor<Self>) -> FloatTensor<Self> {
        edge_softmax_grad::<Self>(csr, y, dy)
    }
}
