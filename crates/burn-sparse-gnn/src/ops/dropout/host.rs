//! NdArray implementation of [`super::DropoutOps`]: the trait's default (composed) methods.

use super::DropoutOps;
use burn_ndarray::FloatNdArrayElement;
use burn_ndarray::IntNdArrayElement;
use burn_ndarray::NdArray;
use burn_ndarray::NdArrayTensor;
use burn_ndarray::QuantElement;
use burn_ndarray::SharedArray;

impl<E: FloatNdArrayElement, I: IntNdArrayElement, Q: QuantElement> DropoutOps for NdArray<E, I, Q>
where
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
}
