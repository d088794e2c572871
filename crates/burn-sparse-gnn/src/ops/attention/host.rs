//! NdArray implementation of [`super::AttentionOps`]: the CPU references of `sparse-gnn-kernels` (f64 accumulation, rayon).

use super::AttentionOps;
use crate::ops::host_io::*;
use crate::ops::primitive::CsrPrim;
use crate::ops::primitive::CsrPrimitive;
use crate::ops::primitive::GraphPrim;
use crate::ops::primitive::GraphPrimitive;
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::ops::IntTensor;
use burn_ndarray::FloatNdArrayElement;
use burn_ndarray::IntNdArrayElement;
use burn_ndarray::NdArray;
use burn_ndarray::NdArrayTensor;
use burn_ndarray::QuantElement;
use burn_ndarray::SharedArray;
use sparse_gnn_kernels::attention;
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

pub fn gat_attention<B: Backend>(
    csr: &CsrPrim<IntTensor<B>>,
    s_dst: FloatTensor<B>,
    s_src: FloatTensor<B>,
    negative_slope: f64,
) -> FloatTensor<B> {
    let device = B::float_device(&s_dst);
    let h = HostCsr::read::<B>(csr);
    let (d, s) = (read_f::<B>(s_dst), read_f::<B>(s_src));
    let heads = d.shape[1];
    let alpha = attention::reference::gat_attention(&h.as_ref(), &d.data, &s.data, heads, negative_slope);
    write_f::<B>(alpha, vec![csr.nnz, heads], d.dtype, &device)
}

pub fn gat_attention_grad<B: Backend>(
    g: &GraphPrim<IntTensor<B>>,
    s_dst: FloatTensor<B>,
    s_src: FloatTensor<B>,
    alpha: FloatTensor<B>,
    d_alpha: FloatTensor<B>,
    negative_slope: f64,
) -> (FloatTensor<B>, FloatTensor<B>) {
    let device = B::float_device(&alpha);
    let h = HostCsr::read::<B>(&g.csr);
    let (d, s) = (read_f::<B>(s_dst), read_f::<B>(s_src));
    let (a, da) = (read_f::<B>(alpha), read_f::<B>(d_alpha));
    let heads = a.shape[1];
    let (gd, gs) = attention::reference::gat_attention_backward(
        &h.as_ref(),
        &d.data,
        &s.data,
        &a.data,
        &da.data,
        heads,
        negative_slope,
    );
    (write_f::<B>(gd, d.shape, a.dtype, &device), write_f::<B>(gs, s.shape, a.dtype, &device))
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

    fn gat_attention(
        csr: &CsrPrimitive<Self>,
        s_dst: FloatTensor<Self>,
        s_src: FloatTensor<Self>,
        negative_slope: f64,
    ) -> FloatTensor<Self> {
        gat_attention::<Self>(csr, s_dst, s_src, negative_slope)
    }

    fn gat_attention_grad(
        g: &GraphPrimitive<Self>,
        s_dst: FloatTensor<Self>,
        s_src: FloatTensor<Self>,
        alpha: FloatTensor<Self>,
        d_alpha: FloatTensor<Self>,
        negative_slope: f64,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        gat_attention_grad::<Self>(g, s_dst, s_src, alpha, d_alpha, negative_slope)
    }
}
