//! Argument checks and tensor wrapping shared by the tensor-level ops.

use crate::error::OpError;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use burn::tensor::TensorPrimitive;

pub(crate) fn float<B: Backend, const D: usize>(t: Tensor<B, D>) -> burn::tensor::ops::FloatTensor<B> {
    t.into_primitive().tensor()
}

pub(crate) fn wrap<B: Backend, const D: usize>(t: burn::tensor::ops::FloatTensor<B>) -> Tensor<B, D> {
    Tensor::from_primitive(TensorPrimitive::Float(t))
}

pub(crate) fn expect_rows(op: &'static str, what: &'static str, dims: &[usize], rows: usize) -> Result<(), OpError> {
    if dims[0] != rows {
        return Err(OpError::Shape { op, what, got: dims.to_vec(), expected: format!("[{rows}, _]") });
    }
    Ok(())
}

pub(crate) fn check_weights(op: &'static str, dims: &[usize], nnz: usize, width: usize) -> Result<usize, OpError> {
    let heads = if dims.len() == 1 { 1 } else { dims[1] };
    if dims[0] != nnz || dims.len() > 2 {
        return Err(OpError::Shape {
            op,
            what: "edge weights",
            got: dims.to_vec(),
            expected: format!("[{nnz}] or [{nnz}, heads]"),
        });
    }
    if heads == 0 || width % heads != 0 {
        return Err(OpError::Heads { op, heads, width });
    }
    Ok(heads)
}
