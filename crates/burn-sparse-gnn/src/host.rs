//! The host implementation of every kernel: read the primitives, run the CPU reference of
//! `sparse-gnn-kernels` (f64 accumulation, rayon), write the result back in the input dtype.
//! Generic over any [`Backend`]; the NdArray backend uses it as its implementation.

use crate::backend::{CbsrPrim, PoolSpec, Reduce, SampleSpec, SpmmOutput};
use crate::graph::{CsrPrim, GraphPrimitive};
use burn::tensor::backend::Backend;
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn::tensor::{try_read_sync, DType, TensorData, TensorMetadata};
use sparse_gnn_kernels::cbsr::reference as cbsr;
use sparse_gnn_kernels::csr::CsrRef;
use sparse_gnn_kernels::spmm::reference::{self as spmm_ref, EdgeWeights};
use sparse_gnn_kernels::{maxk, pool, sample, sddmm as sddmm_mod, softmax};

/// A float tensor read back to the host in f64.
pub(crate) struct HostF {
    pub data: Vec<f64>,
    pub shape: Vec<usize>,
    pub dtype: DType,
}

/// The tensor with a buffer of its own. NdArray reads a tensor whose buffer is shared (an input
/// the caller also holds, such as the features) back element by element, each element's offset
/// computed from its index: a full-graph read of Cora's features took about 140 ms that way. One
/// scaled copy (`* 1`, exact) makes the read a move of the buffer.
pub(crate) fn own_float<B: Backend>(t: FloatTensor<B>) -> FloatTensor<B> {
    B::float_mul_scalar(t, burn::tensor::Scalar::Float(1.0))
}

/// [`own_float`] of an int tensor.
pub(crate) fn own_int<B: Backend>(t: IntTensor<B>) -> IntTensor<B> {
    B::int_mul_scalar(t, burn::tensor::Scalar::Int(1))
}

pub(crate) fn read_f<B: Backend>(t: FloatTensor<B>) -> HostF {
    let shape = t.shape().as_slice().to_vec();
    let dtype = t.dtype();
    let data = try_read_sync(B::float_into_data(own_float::<B>(t)))
        .expect("blocking read is supported on native targets")
        .expect("reading a float tensor from the device");
    let data = data.convert::<f64>().into_vec::<f64>().expect("converted to f64");
    HostF { data, shape, dtype }
}

pub(crate) fn read_i<B: Backend>(t: IntTensor<B>) -> Vec<i64> {
    let data = try_read_sync(B::int_into_data(own_int::<B>(t)))
        .expect("blocking read is supported on native targets")
        .expect("reading an int tensor from the device");
    data.convert::<i64>().into_vec::<i64>().expect("converted to i64")
}

/// A tensor of device indices read back: their values are unsigned 32-bit in the bits of an i32
/// (edge offsets past 2^31 - 1 read as negative i32s).
pub(crate) fn read_index<B: Backend>(t: IntTensor<B>) -> Vec<usize> {
    read_i::<B>(t).into_iter().map(|v| v as u32 as usize).collect()
}

pub(crate) fn write_f<B: Backend>(v: Vec<f64>, shape: Vec<usize>, dtype: DType, device: &B::Device) -> FloatTensor<B> {
    B::float_from_data(TensorData::new(v, shape).convert_dtype(dtype), device)
}

pub(crate) fn write_i<B: Backend>(v: Vec<i32>, shape: Vec<usize>, device: &B::Device) -> IntTensor<B> {
    B::int_from_data(TensorData::new(v, shape), device)
}

/// A CSR structure copied to the host.
pub(crate) struct HostCsr {
    n_rows: usize,
    n_cols: usize,
    row_ptr: Vec<usize>,
    col_idx: Vec<u32>,
}

impl HostCsr {
    pub fn read<B: Backend>(csr: &CsrPrim<IntTensor<B>>) -> Self {
        let row_ptr = read_index::<B>(csr.row_ptr.clone());
        let mut col_idx: Vec<u32> = read_index::<B>(csr.col_idx.clone()).into_iter().map(|v| v as u32).collect();
        col_idx.truncate(csr.nnz);
        Self { n_rows: csr.n_rows, n_cols: csr.n_cols, row_ptr, col_idx }
    }
    pub fn as_ref(&self) -> CsrRef<'_> {
        CsrRef { n_rows: self.n_rows, n_cols: self.n_cols, row_ptr: &self.row_ptr, col_idx: &self.col_idx }
    }
}

fn heads_of(w: &HostF, nnz: usize) -> usize {
    if w.shape.len() == 1 {
        1
    } else {
        debug_assert_eq!(w.shape[0], nnz);
        w.shape[1]
    }
}

fn width(x: &HostF) -> usize {
    x.shape[1]
}

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

fn cbsr_out<B: Backend>(
    values: Vec<f64>,
    indices: Vec<u32>,
    n: usize,
    k: usize,
    dim: usize,
    dtype: DType,
    device: &B::Device,
) -> CbsrPrim<B> {
    CbsrPrim {
        values: write_f::<B>(values, vec![n, k], dtype, device),
        indices: write_i::<B>(indices.into_iter().map(|v| v as i32).collect(), vec![n, k], device),
        n,
        k,
        dim,
        packed: false,
    }
}

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

/// Unpacked indices of a CBSR primitive, on the host.
pub(crate) fn read_cbsr_indices<B: Backend>(c: &CbsrPrim<B>) -> Vec<u32> {
    let raw = read_i::<B>(c.indices.clone());
    if !c.packed {
        return raw.into_iter().map(|v| v as u32).collect();
    }
    let words = c.k.div_ceil(4);
    let mut out = Vec::with_capacity(c.n * c.k);
    for i in 0..c.n {
        for t in 0..c.k {
            let w = raw[i * words + t / 4] as u32;
            out.push((w >> (8 * (t % 4))) & 0xff);
        }
    }
    out
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

fn read_w1<B: Backend>(w: Option<FloatTensor<B>>) -> Option<Vec<f64>> {
    w.map(|w| read_f::<B>(w).data)
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

/// Implements [`crate::SparseGnnBackend`] for a backend type with the host implementation.
macro_rules! impl_host_backend {
    ([$($gen:tt)*] $ty:ty $(where $($bound:tt)*)?) => {
        impl<$($gen)*> $crate::backend::SparseGnnBackend for $ty $(where $($bound)*)? {
            fn spmm(csr: &$crate::backend::CsrPrimitive<Self>, w: Option<FloatTensor<Self>>, x: FloatTensor<Self>, reduce: Reduce) -> SpmmOutput<Self> {
                $crate::host::spmm::<Self>(csr, w, x, reduce)
            }
            fn spmm_max_grad_x(g: &GraphPrimitive<Self>, w: Option<FloatTensor<Self>>, dout: FloatTensor<Self>, argmax: IntTensor<Self>) -> FloatTensor<Self> {
                $crate::host::spmm_max_grad_x::<Self>(g, w, dout, argmax)
            }
            fn spmm_max_grad_w(csr: &$crate::backend::CsrPrimitive<Self>, heads: usize, dout: FloatTensor<Self>, x: FloatTensor<Self>, argmax: IntTensor<Self>) -> FloatTensor<Self> {
                $crate::host::spmm_max_grad_w::<Self>(csr, heads, dout, x, argmax)
            }
            fn sddmm(csr: &$crate::backend::CsrPrimitive<Self>, a: FloatTensor<Self>, b: FloatTensor<Self>, heads: usize) -> FloatTensor<Self> {
                $crate::host::sddmm::<Self>(csr, a, b, heads)
            }
            fn edge_softmax(csr: &$crate::backend::CsrPrimitive<Self>, scores: FloatTensor<Self>) -> FloatTensor<Self> {
                $crate::host::edge_softmax::<Self>(csr, scores)
            }
            fn edge_softmax_grad(csr: &$crate::backend::CsrPrimitive<Self>, y: FloatTensor<Self>, dy: FloatTensor<Self>) -> FloatTensor<Self> {
                $crate::host::edge_softmax_grad::<Self>(csr, y, dy)
            }
            fn edge_sample_scale(csr: &$crate::backend::CsrPrimitive<Self>, spec: SampleSpec, reduce: Reduce, like: &FloatTensor<Self>) -> FloatTensor<Self> {
                $crate::host::edge_sample_scale::<Self>(csr, spec, reduce, like)
            }
            fn sampled_spmm(csr: &$crate::backend::CsrPrimitive<Self>, w: Option<FloatTensor<Self>>, x: FloatTensor<Self>, spec: SampleSpec, reduce: Reduce) -> FloatTensor<Self> {
                $crate::host::sampled_spmm::<Self>(csr, w, x, spec, reduce)
            }
            fn maxk(x: FloatTensor<Self>, k: usize, _config: &$crate::kernels::KernelConfig) -> CbsrPrim<Self> {
                $crate::host::maxk::<Self>(x, k)
            }
            fn maxpool(x: FloatTensor<Self>, spec: PoolSpec) -> CbsrPrim<Self> {
                $crate::host::maxpool::<Self>(x, spec)
            }
            fn cbsr_to_dense(c: &CbsrPrim<Self>) -> FloatTensor<Self> {
                $crate::host::cbsr_to_dense::<Self>(c)
            }
            fn cbsr_gather(x: FloatTensor<Self>, pattern: &CbsrPrim<Self>) -> FloatTensor<Self> {
                $crate::host::cbsr_gather::<Self>(x, pattern)
            }
            fn cbsr_spgemm(g: &GraphPrimitive<Self>, w: Option<FloatTensor<Self>>, c: &CbsrPrim<Self>) -> FloatTensor<Self> {
                $crate::host::cbsr_spgemm::<Self>(g, w, c)
            }
            fn cbsr_sspmm(g: &GraphPrimitive<Self>, w: Option<FloatTensor<Self>>, dy: FloatTensor<Self>, pattern: &CbsrPrim<Self>) -> FloatTensor<Self> {
                $crate::host::cbsr_sspmm::<Self>(g, w, dy, pattern)
            }
            fn cbsr_spgemm_grad_w(csr: &$crate::backend::CsrPrimitive<Self>, dy: FloatTensor<Self>, c: &CbsrPrim<Self>) -> FloatTensor<Self> {
                $crate::host::cbsr_spgemm_grad_w::<Self>(csr, dy, c)
            }
            fn cbsr_indices(c: &CbsrPrim<Self>) -> IntTensor<Self> {
                $crate::host::cbsr_indices::<Self>(c)
            }
        }
    };
}
pub(crate) use impl_host_backend;
