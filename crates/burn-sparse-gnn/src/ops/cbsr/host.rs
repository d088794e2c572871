//! NdArray implementation of [`super::CbsrOps`]: the CPU references of `sparse-gnn-kernels` (f64 accumulation, rayon).

use super::CbsrOps;
use crate::ops::host_io::*;
use crate::ops::primitive::CbsrPrim;
use crate::ops::primitive::CsrPrim;
use crate::ops::primitive::CsrPrimitive;
use crate::ops::primitive::GraphPrimitive;
use crate::ops::primitive::PoolSpec;
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::ops::IntTensor;
use burn_ndarray::FloatNdArrayElement;
use burn_ndarray::IntNdArrayElement;
use burn_ndarray::NdArray;
use burn_ndarray::NdArrayTensor;
use burn_ndarray::QuantElement;
use burn_ndarray::SharedArray;
use sparse_gnn_kernels::cbsr::reference as cbsr;
use sparse_gnn_kernels::config::KernelConfig;
use sparse_gnn_kernels::maxk;
use sparse_gnn_kernels::pool;

pub fn maxk<B: Backend>(x: FloatTensor<B>, k: usize) -> CbsrPrim<B> {
    let device = B::float_device(&x);
    let x = read_f::<B>(x);
    let (n, d) = (x.shape[0], x.shape[1]);
    let (v, i) = maxk::reference::maxk(&x.data, n, d, k);
    cbsr_out::<B>(v, i, n, k, d, x.dtype, &device)
}

pub fn maxpool<B: Backend>(x: FloatTensor<B>, spec: PoolSpec) -> CbsrPrim<B> {
    let device = B::float_device(&x);
    let x = read_f::<B>(x);
    let (n, d) = (x.shape[0], x.shape[1]);
    let (v, i) = pool::reference::maxpool(&x.data, n, d, &spec);
    cbsr_out::<B>(v, i, n, spec.k(), d, x.dtype, &device)
}

pub fn cbsr_to_dense<B: Backend>(c: &CbsrPrim<B>) -> FloatTensor<B> {
    let device = B::float_device(&c.values);
    let idx = read_cbsr_indices::<B>(c);
    let v = read_f::<B>(c.values.clone());
    let out = cbsr::to_dense(&v.data, &idx, c.n, c.k, c.dim);
    write_f::<B>(out, vec![c.n, c.dim], v.dtype, &device)
}

pub fn cbsr_gather<B: Backend>(x: FloatTensor<B>, pattern: &CbsrPrim<B>) -> FloatTensor<B> {
    let device = B::float_device(&x);
    let idx = read_cbsr_indices::<B>(pattern);
    let x = read_f::<B>(x);
    let out = cbsr::gather(&x.data, &idx, pattern.n, pattern.k, pattern.dim);
    write_f::<B>(out, vec![pattern.n, pattern.k], x.dtype, &device)
}

pub fn cbsr_spgemm<B: Backend>(g: &GraphPrimitive<B>, w: Option<FloatTensor<B>>, c: &CbsrPrim<B>) -> FloatTensor<B> {
    let device = B::float_device(&c.values);
    let h = HostCsr::read::<B>(&g.csr);
    let idx = read_cbsr_indices::<B>(c);
    let v = read_f::<B>(c.values.clone());
    let w = read_w1::<B>(w);
    let out = cbsr::spgemm(&h.as_ref(), w.as_deref(), &v.data, &idx, c.k, c.dim);
    write_f::<B>(out, vec![g.csr.n_rows, c.dim], v.dtype, &device)
}

pub fn cbsr_sspmm<B: Backend>(
    g: &GraphPrimitive<B>,
    w: Option<FloatTensor<B>>,
    dy: FloatTensor<B>,
    pattern: &CbsrPrim<B>,
) -> FloatTensor<B> {
    let device = B::float_device(&dy);
    let h = HostCsr::read::<B>(&g.csr);
    let idx = read_cbsr_indices::<B>(pattern);
    let dy = read_f::<B>(dy);
    let w = read_w1::<B>(w);
    let out = cbsr::sspmm(&h.as_ref(), w.as_deref(), &dy.data, &idx, pattern.k, pattern.dim);
    write_f::<B>(out, vec![g.csr.n_cols, pattern.k], dy.dtype, &device)
}

pub fn cbsr_spgemm_grad_w<B: Backend>(
    csr: &CsrPrim<IntTensor<B>>,
    dy: FloatTensor<B>,
    c: &CbsrPrim<B>,
) -> FloatTensor<B> {
    let device = B::float_device(&dy);
    let h = HostCsr::read::<B>(csr);
    let idx = read_cbsr_indices::<B>(c);
    let v = read_f::<B>(c.values.clone());
    let dy = read_f::<B>(dy);
    let out = cbsr::spgemm_backward_w(&h.as_ref(), &dy.data, &v.data, &idx, c.k, c.dim);
    write_f::<B>(out, vec![csr.nnz], dy.dtype, &device)
}

pub fn cbsr_indices<B: Backend>(c: &CbsrPrim<B>) -> IntTensor<B> {
    if !c.packed {
        return c.indices.clone();
    }
    let device = B::int_device(&c.indices);
    let idx = read_cbsr_indices::<B>(c);
    write_i::<B>(idx.into_iter().map(|v| v as i32).collect(), vec![c.n, c.k], &device)
}

impl<E: FloatNdArrayElement, I: IntNdArrayElement, Q: QuantElement> CbsrOps for NdArray<E, I, Q>
where
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
    fn maxk(x: FloatTensor<Self>, k: usize, _config: &KernelConfig) -> CbsrPrim<Self> {
        maxk::<Self>(x, k)
    }

    fn maxpool(x: FloatTensor<Self>, spec: PoolSpec) -> CbsrPrim<Self> {
        maxpool::<Self>(x, spec)
    }

    fn cbsr_to_dense(c: &CbsrPrim<Self>) -> FloatTensor<Self> {
        cbsr_to_dense::<Self>(c)
    }

    fn cbsr_gather(x: FloatTensor<Self>, pattern: &CbsrPrim<Self>) -> FloatTensor<Self> {
        cbsr_gather::<Self>(x, pattern)
    }

    fn cbsr_spgemm(g: &GraphPrimitive<Self>, w: Option<FloatTensor<Self>>, c: &CbsrPrim<Self>) -> FloatTensor<Self> {
        cbsr_spgemm::<Self>(g, w, c)
    }

    fn cbsr_sspmm(
        g: &GraphPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        dy: FloatTensor<Self>,
        pattern: &CbsrPrim<Self>,
    ) -> FloatTensor<Self> {
        cbsr_sspmm::<Self>(g, w, dy, pattern)
    }

    fn cbsr_spgemm_grad_w(csr: &CsrPrimitive<Self>, dy: FloatTensor<Self>, c: &CbsrPrim<Self>) -> FloatTensor<Self> {
        cbsr_spgemm_grad_w::<Self>(csr, dy, c)
    }

    fn cbsr_indices(c: &CbsrPrim<Self>) -> IntTensor<Self> {
        cbsr_indices::<Self>(c)
    }
}
