//! NdArray implementation of [`super::DenseOps`]: the trait's default (composed) methods.

use super::DenseOps;
use burn_ndarray::FloatNdArrayElement;
use burn_ndarray::IntNdArrayElement;
use burn_ndarray::NdArray;
use burn_ndarray::NdArrayTensor;
use burn_ndarray::QuantElement;
use burn_ndarray::SharedArray;

impl<E: FloatNdArrayElement, I: IntNdArrayElement, Q: QuantElement> DenseOps for NdArray<E, I, Q>
where
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
}
