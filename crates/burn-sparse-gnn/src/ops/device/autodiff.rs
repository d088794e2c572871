//! `Autodiff<B>` implementation of [`super::DeviceOps`]: hand-written backward passes from `B`'s kernels.

use super::DeviceOps;
use crate::backend::SparseGnnBackend;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::Autodiff;

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
}
