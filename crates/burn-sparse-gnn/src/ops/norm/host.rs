//! NdArray implementation of [`super::NormOps`]: the trait's default (composed) methods.

use super::NormOps;
use burn_ndarray::FloatNdArrayElement;
use burn_ndarray::IntNdArrayElement;
use burn_ndarray::NdArray;
use burn_ndarray::NdArrayTensor;
use burn_ndarray::QuantElement;
use burn_ndarray::SharedArray;

impl<E: FloatNdArrayElement, I: IntNdArrayElement, Q: QuantElement> NormOps for NdArray<E, I, Q>
where
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
}
