//! NdArray implementation of [`super::OptimOps`]: the trait's default (host) method.

use super::OptimOps;
use burn_ndarray::FloatNdArrayElement;
use burn_ndarray::IntNdArrayElement;
use burn_ndarray::NdArray;
use burn_ndarray::NdArrayTensor;
use burn_ndarray::QuantElement;
use burn_ndarray::SharedArray;

impl<E: FloatNdArrayElement, I: IntNdArrayElement, Q: QuantElement> OptimOps for NdArray<E, I, Q>
where
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
}
