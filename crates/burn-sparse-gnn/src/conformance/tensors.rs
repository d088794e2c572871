//! Host values (f64) into and out of tensors of the backend under test.

use crate::random::random_values;
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};

/// A float tensor in the backend's own float type (not the device default, which is shared by
/// every backend on the same device, e.g. NdArray f32 and f64).
pub(super) fn tensor<B: Backend, const D: usize>(v: &[f64], shape: [usize; D], dev: &B::Device) -> Tensor<B, D> {
    let dtype = <B::FloatElem as burn::tensor::Element>::dtype();
    Tensor::from_data(TensorData::new(v.to_vec(), shape).convert_dtype(dtype), (dev, dtype))
}

pub(super) fn host<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f64> {
    t.into_data().convert::<f64>().into_vec::<f64>().expect("f64 data")
}

pub(super) fn host_int<B: Backend, const D: usize>(t: Tensor<B, D, Int>) -> Vec<i64> {
    t.into_data().convert::<i64>().into_vec::<i64>().expect("i64 data")
}

pub(super) fn upstream(n: usize, seed: u64) -> Vec<f64> {
    random_values(n, seed ^ 0x5eed)
}
