//! The CPU backend: NdArray runs every sparse op through the host references (rayon-parallel).

use crate::backend::{CbsrPrim, PoolSpec, Reduce, SampleSpec, SpmmOutput};
use crate::graph::GraphPrimitive;
use crate::host::impl_host_backend;
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn_ndarray::{FloatNdArrayElement, IntNdArrayElement, NdArray, NdArrayTensor, QuantElement, SharedArray};

impl_host_backend!([E: FloatNdArrayElement, I: IntNdArrayElement, Q: QuantElement] NdArray<E, I, Q>
    where NdArrayTensor: From<SharedArray<E>>, NdArrayTensor: From<SharedArray<I>>);
