//! `Autodiff<B>` implementation of [`super::TransferOps`]: hand-written backward passes from `B`'s kernels.

use super::TransferOps;
use crate::backend::SparseGnnBackend;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::Autodiff;
use burn::tensor::ops::IntTensor;

impl<B: SparseGnnBackend, C: CheckpointStrategy> TransferOps for Autodiff<B, C> {
    fn nccl_device(device: &B::Device) -> Option<usize> {
        B::nccl_device(device)
    }

    fn rank_transfer_ints(
        send: Vec<Option<IntTensor<B>>>,
        recv: &[usize],
        width: usize,
        dtype: burn::tensor::DType,
        device: &B::Device,
        comm: &crate::dist::collective::comm::Comm,
    ) -> Option<Result<Option<IntTensor<B>>, crate::dist::collective::comm::CommError>> {
        B::rank_transfer_ints(send, recv, width, dtype, device, comm)
    }
}
