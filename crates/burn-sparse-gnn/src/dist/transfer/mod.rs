//! Moving tensors between devices and between the ranks of a multi-process run: a backend trait
//! ([`TransferOps`]) whose CUDA implementation goes through NCCL or the GPUs' copy engines
//! ([`DeviceLinks`]), and what a started transfer still owes its receivers ([`TransferWait`]).

mod autodiff;
mod cube;
mod host;
mod links;

pub(crate) use links::count_peer_copy_group;
pub use links::{device_links, peer_copy_groups, set_device_links, DeviceLinks};

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::ops::IntTensor;
use burn::tensor::DType;

/// Moving tensors between devices and between the ranks of a multi-process run (not differentiable).
///
/// Part of [`crate::backend::SparseGnnBackend`] (see its conventions).
pub trait TransferOps: Backend {
    /// Moves each tensor to the device next to it, all moves of the call together (the
    /// transfers of a halo exchange). Not differentiable: [`crate::dist::exchange::exchange`] is.
    /// Default: `float_to_device` one after another; on CUDA all at once, both directions of
    /// every link together (one NCCL group or peer-to-peer copies, see [`DeviceLinks`]).
    fn transfer_all(pieces: Vec<(FloatTensor<Self>, Self::Device)>) -> Vec<FloatTensor<Self>> {
        pieces.into_iter().map(|(t, d)| Self::float_to_device(t, &d)).collect()
    }

    /// A `[rows, width]` float tensor of `dtype` on `device` from its row-major little-endian
    /// `bytes` (`rows * width * dtype.size()` of them; the rows a multi-process exchange
    /// received). The default copies them into a [`TensorData`](burn::tensor::TensorData); on
    /// CUDA they go up in one transfer straight from `bytes` (see
    /// [`crate::ops::device::DeviceOps::float_upload`]).
    fn float_from_host(bytes: &[u8], shape: [usize; 2], dtype: DType, device: &Self::Device) -> FloatTensor<Self> {
        Self::float_from_data(burn::tensor::TensorData::from_bytes_vec(bytes.to_vec(), shape, dtype), device)
    }

    /// This device's CUDA index where the rows of a multi-process run can move through NCCL
    /// (`None` on other backends): what [`crate::dist::collective::comm::Comm::setup_rows`] takes.
    fn nccl_device(device: &Self::Device) -> Option<usize> {
        let _ = device;
        None
    }

    /// Moves rows between the ranks of a multi-process run on the devices: `send[q]` (rows on
    /// this rank's device, `None`: nothing) to rank `q`, and `recv[q]` rows of `width` values
    /// of `dtype` from every rank `q`, returned as one tensor in rank order (`None`: nothing
    /// arrives). `None` where the backend cannot (the caller reports it); on CUDA one NCCL
    /// group on the communicator [`crate::dist::collective::comm::Comm::setup_rows`] made.
    fn rank_transfer(
        send: Vec<Option<FloatTensor<Self>>>,
        recv: &[usize],
        width: usize,
        dtype: DType,
        device: &Self::Device,
        comm: &crate::dist::collective::comm::Comm,
    ) -> Option<Result<Option<FloatTensor<Self>>, crate::dist::collective::comm::CommError>> {
        let _ = (send, recv, width, dtype, device, comm);
        None
    }

    /// [`Self::rank_transfer`] of integer rows (the column ids of CBSR states, in the dtype
    /// they are stored in): the same NCCL group, not differentiable. `None` where the backend
    /// cannot.
    fn rank_transfer_ints(
        send: Vec<Option<IntTensor<Self>>>,
        recv: &[usize],
        width: usize,
        dtype: DType,
        device: &Self::Device,
        comm: &crate::dist::collective::comm::Comm,
    ) -> Option<Result<Option<IntTensor<Self>>, crate::dist::collective::comm::CommError>> {
        let _ = (send, recv, width, dtype, device, comm);
        None
    }

    /// Every rank's `x` (`[rows, width]`, the same shape and dtype on every rank) stacked in
    /// rank order, `[world * rows, width]`, on the devices. `None` where the backend cannot;
    /// on CUDA `ncclAllGather` on the communicator [`crate::dist::collective::comm::Comm::setup_rows`] made.
    fn rank_all_gather(
        x: FloatTensor<Self>,
        comm: &crate::dist::collective::comm::Comm,
    ) -> Option<Result<FloatTensor<Self>, crate::dist::collective::comm::CommError>> {
        let _ = (x, comm);
        None
    }

    /// Starts moving, per group, its pieces (2-D, one width and dtype, on any devices) into one
    /// tensor on the group's device, rows in order; returns those tensors and what their
    /// readers must wait for ([`crate::dist::transfer::TransferWait`]). Not differentiable:
    /// [`crate::dist::exchange::exchange_start`] is. Default: each piece moves by `float_to_device`
    /// and the pieces of a group are concatenated, all before it returns; on CUDA one NCCL group
    /// or peer-to-peer copies ([`DeviceLinks`]) on streams of their own, received straight into
    /// the group's tensor, and the compute streams wait only when the returned wait runs.
    fn transfer_start(
        groups: Vec<(Vec<FloatTensor<Self>>, Self::Device)>,
    ) -> (Vec<FloatTensor<Self>>, crate::dist::transfer::TransferWait) {
        crate::dist::transfer::move_groups::<Self>(groups)
    }
}

/// What a started transfer still owes its receivers: on CUDA, the compute streams of the
/// devices it touches wait for it (and the sent tensors are kept until then); elsewhere
/// nothing (the transfers already ran). [`TransferWait::run`] does it; dropping it does it too,
/// so no buffer of a transfer is read or reused before the transfer.
pub struct TransferWait(Option<Box<dyn FnOnce() + Send>>);

impl TransferWait {
    /// Nothing to wait for.
    pub fn done() -> Self {
        Self(None)
    }

    /// Waits with `wait` (queued on the devices' streams, no host synchronisation).
    pub fn new(wait: impl FnOnce() + Send + 'static) -> Self {
        Self(Some(Box::new(wait)))
    }

    /// Makes the devices wait for the transfer (their later work reads the received tensors).
    pub fn run(mut self) {
        if let Some(wait) = self.0.take() {
            wait();
        }
    }
}

impl Drop for TransferWait {
    fn drop(&mut self) {
        if let Some(wait) = self.0.take() {
            wait();
        }
    }
}

impl std::fmt::Debug for TransferWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "TransferWait(pending)" } else { "TransferWait(done)" })
    }
}

/// [`TransferOps::transfer_start`](crate::dist::transfer::TransferOps::transfer_start) without a
/// grouped transfer: each piece moves by `float_to_device`, a group's pieces are concatenated, all
/// before it returns.
pub(crate) fn move_groups<B: Backend>(
    groups: Vec<(Vec<FloatTensor<B>>, B::Device)>,
) -> (Vec<FloatTensor<B>>, TransferWait) {
    let out = groups
        .into_iter()
        .map(|(pieces, d)| {
            let mut moved: Vec<_> = pieces.into_iter().map(|t| B::float_to_device(t, &d)).collect();
            match moved.len() {
                1 => moved.pop().expect("one piece"),
                _ => B::float_cat(moved, 0),
            }
        })
        .collect();
    (out, TransferWait::done())
}
