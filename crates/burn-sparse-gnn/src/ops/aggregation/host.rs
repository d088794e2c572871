//! NdArray implementation of [`super::AggregationOps`]: the CPU references of `sparse-gnn-kernels` (f64 accumulation, rayon).

use super::AggregationOps;
use crate::ops::host_io::*;
use crate::ops::primitive::CsrPrim;
use crate::ops::primitive::CsrPrimitive;
use crate::ops::primitive::GraphPrimitive;
use crate::ops::primitive::Reduce;
use crate::ops::primitive::SampleSpec;
use crate::ops::primitive::SpmmOutput;
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::ops::IntTensor;
use burn::tensor::TensorMetadata;
use burn_ndarray::FloatNdArrayElement;
use burn_ndarray::IntNdArrayElement;
use burn_ndarray::NdArray;
use burn_ndarray::NdArrayTensor;
use burn_ndarray::QuantElement;
use burn_ndarray::SharedArray;
use sparse_gnn_kernels::sample;
use sparse_gnn_kernels::spmm::reference::EdgeWeights;
use sparse_gnn_kernels::spmm::reference::{self as spmm_ref};

pub fn spmm<B: Backend>(
    csr: &CsrPrim<IntTensor<B>>,
    w: Option<FloatTensor<B>>,
    x: FloatTensor<B>,
    reduce: Reduce,
) -> SpmmOutput<B> {
    let device = B::float_device(&x);
    let h = HostCsr::read::<B>(csr);
    let x = read_f::<B>(x);
    let f = width(&x);
    let w = w.map(read_f::<B>);
    let ew = w.as_ref().map(|w| EdgeWeights { values: &w.data, heads: heads_of(w, csr.nnz) });
    let (out, arg) = spmm_ref::spmm(&h.as_ref(), ew, &x.data, f, reduce);
    SpmmOutput {
        out: write_f::<B>(out, vec![csr.n_rows, f], x.dtype, &device),
        argmax: arg.map(|a| write_i::<B>(a.into_iter().map(|v| v as i32).collect(), vec![csr.n_rows, f], &device)),
    }
}

pub fn spmm_max_grad_x<B: Backend>(
    g: &GraphPrimitive<B>,
    w: Option<FloatTensor<B>>,
    dout: FloatTensor<B>,
    argmax: IntTensor<B>,
) -> FloatTensor<B> {
    let device = B::float_device(&dout);
    let h = HostCsr::read::<B>(&g.csr);
    let dout = read_f::<B>(dout);
    let f = width(&dout);
    let w = w.map(read_f::<B>);
    let ew = w.as_ref().map(|w| EdgeWeights { values: &w.data, heads: heads_of(w, g.csr.nnz) });
    let arg = read_i::<B>(argmax);
    let dx = spmm_ref::spmm_max_backward_x(&h.as_ref(), ew, &dout.data, &arg, f);
    write_f::<B>(dx, vec![g.csr.n_cols, f], dout.dtype, &device)
}

pub fn spmm_max_grad_w<B: Backend>(
    csr: &CsrPrim<IntTensor<B>>,
    heads: usize,
    dout: FloatTensor<B>,
    x: FloatTensor<B>,
    argmax: IntTensor<B>,
) -> FloatTensor<B> {
    let device = B::float_device(&dout);
    let h = HostCsr::read::<B>(csr);
    let dout = read_f::<B>(dout);
    let x = read_f::<B>(x);
    let f = width(&dout);
    let arg = read_i::<B>(argmax);
    let dw = spmm_ref::spmm_max_backward_w(&h.as_ref(), heads, &dout.data, &x.data, &arg, f);
    write_f::<B>(dw, vec![csr.nnz, heads], dout.dtype, &device)
}

pub fn edge_sample_scale<B: Backend>(
    csr: &CsrPrim<IntTensor<B>>,
    spec: SampleSpec,
    reduce: Reduce,
    like: &FloatTensor<B>,
) -> FloatTensor<B> {
    let device = B::float_device(like);
    let h = HostCsr::read::<B>(csr);
    let s = sample::reference::edge_scale(&h.as_ref(), &spec, reduce);
    write_f::<B>(s, vec![csr.nnz], like.dtype(), &device)
}

pub fn sampled_spmm<B: Backend>(
    csr: &CsrPrim<IntTensor<B>>,
    w: Option<FloatTensor<B>>,
    x: FloatTensor<B>,
    spec: SampleSpec,
    reduce: Reduce,
) -> FloatTensor<B> {
    let device = B::float_device(&x);
    let h = HostCsr::read::<B>(csr);
    let x = read_f::<B>(x);
    let f = width(&x);
    let w = w.map(read_f::<B>);
    let ew = w.as_ref().map(|w| EdgeWeights { values: &w.data, heads: heads_of(w, csr.nnz) });
    let out = sample::reference::sampled_spmm(&h.as_ref(), ew, &x.data, f, &spec, reduce);
    write_f::<B>(out, vec![csr.n_rows, f], x.dtype, &device)
}

impl<E: FloatNdArrayElement, I: IntNdArrayElement, Q: QuantElement> AggregationOps for NdArray<E, I, Q>
where
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
    fn spmm(
        csr: &CsrPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        x: FloatTensor<Self>,
        reduce: Reduce,
    ) -> SpmmOutput<Self> {
        spmm::<Self>(csr, w, x, reduce)
    }

    fn spmm_max_grad_x(
        g: &GraphPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        dout: FloatTensor<Self>,
        argmax: IntTensor<Self>,
    ) -> FloatTensor<Self> {
        spmm_max_grad_x::<Self>(g, w, dout, argmax)
    }

    fn spmm_max_grad_w(
        csr: &CsrPrimitive<Self>,
        heads: usize,
        dout: FloatTensor<Self>,
        x: FloatTensor<Self>,
        argmax: IntTensor<Self>,
    ) -> FloatTensor<Self> {
        spmm_max_grad_w::<Self>(csr, heads, dout, x, argmax)
    }

    fn edge_sample_scale(
        csr: &CsrPrimitive<Self>,
        spec: SampleSpec,
        reduce: Reduce,
        like: &FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        edge_sample_scale::<Self>(csr, spec, reduce, like)
    }

    fn sampled_spmm(
        csr: &CsrPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        x: FloatTensor<Self>,
        spec: SampleSpec,
        reduce: Reduce,
    ) -> FloatTensor<Self> {
        sampled_spmm::<Self>(csr, w, x, spec, reduce)
    }
}
