//! What the host (NdArray) implementations of the op families share: tensors read to and
//! written from host vectors, and CSR structures copied to the host.

use crate::ops::primitive::CbsrPrim;
use crate::ops::primitive::CsrPrim;
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::ops::IntTensor;
use burn::tensor::try_read_sync;
use burn::tensor::DType;
use burn::tensor::TensorData;
use burn::tensor::TensorMetadata;
use sparse_gnn_kernels::csr::CsrRef;

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

/// `v` as a `[len]` i32 index tensor.
pub(crate) fn write_ids<B: Backend>(v: Vec<i32>, device: &B::Device) -> IntTensor<B> {
    let n = v.len();
    write_i::<B>(v, vec![n], device)
}

/// An index tensor copied to the host as u32.
pub(crate) fn read_u32<B: Backend>(t: IntTensor<B>) -> Vec<u32> {
    read_index::<B>(t).into_iter().map(|v| v as u32).collect()
}

/// The row pointer and columns (`nnz` of them) of a CSR primitive, copied to the host as u32.
pub(crate) fn host_csr_u32<B: Backend>(c: &CsrPrim<IntTensor<B>>) -> (Vec<u32>, Vec<u32>) {
    let mut ci = read_u32::<B>(c.col_idx.clone());
    ci.truncate(c.nnz);
    (read_u32::<B>(c.row_ptr.clone()), ci)
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

pub(crate) fn heads_of(w: &HostF, nnz: usize) -> usize {
    if w.shape.len() == 1 {
        1
    } else {
        debug_assert_eq!(w.shape[0], nnz);
        w.shape[1]
    }
}

pub(crate) fn width(x: &HostF) -> usize {
    x.shape[1]
}

pub(crate) fn cbsr_out<B: Backend>(
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

pub(crate) fn read_w1<B: Backend>(w: Option<FloatTensor<B>>) -> Option<Vec<f64>> {
    w.map(|w| read_f::<B>(w).data)
}
