//! `Autodiff<B>` implementation of [`super::DeviceOps`]: hand-written backward passes from `B`'s kernels.

use super::DeviceOps;
use crate::backend::SparseGnnBackend;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::Autodiff;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::ops::{FloatTensor, IntTensor};

impl<B: SparseGnnBackend, C: CheckpointStrategy> DeviceOps for Autodiff<B, C> {
    fn device_memory(device: &Self::Device) -> Option<(u64, u64)> {
        B::device_memory(device)
    }

    fn device_capacity(device: &Self::Device) -> Option<(u64, u64)> {
        B::device_capacity(device)
    }

    fn max_buffer_bytes(device: &Self::Device) -> Option<u64> {
        B::max_buffer_bytes(device)
    }

    fn float_upload(data: burn::tensor::TensorData, device: &Self::Device) -> FloatTensor<Self> {
        <Self as AutodiffBackend>::from_inner(B::float_upload(data, device))
    }

    fn int_upload(data: burn::tensor::TensorData, device: &Self::Device) -> IntTensor<Self> {
        B::int_upload(data, device)
    }

    fn index_arrays(arrays: Vec<Vec<i32>>, device: &Self::Device) -> Vec<IntTensor<Self>> {
        B::index_arrays(arrays, device)
    }

    fn float_arrays(arrays: Vec<Vec<f64>>, device: &Self::Device) -> Vec<FloatTensor<Self>> {
        B::float_arrays(arrays, device).into_iter().map(<Self as AutodiffBackend>::from_inner).collect()
    }
}
