//! `CubeBackend` implementation of [`super::TransferOps`]: the CubeCL kernels of `sparse-gnn-kernels`.

use super::TransferOps;
use crate::ops::cube_launch::*;
use burn::tensor::DType;
#[cfg(feature = "cuda")]
use burn_cubecl::kernel::into_contiguous;
#[cfg(feature = "cuda")]
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::BoolElement;
use burn_cubecl::CubeBackend;
use burn_cubecl::CubeRuntime;
use burn_cubecl::FloatElement;
use burn_cubecl::IntElement;

impl<R, F, I, BT> TransferOps for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn transfer_all(pieces: Vec<(Ft<R>, R::Device)>) -> Vec<Ft<R>> {
        #[cfg(feature = "cuda")]
        let pieces = match grouped_transfer::<R>(pieces) {
            Ok(out) => return out,
            Err(pieces) => pieces,
        };
        pieces
            .into_iter()
            .map(|(t, d)| <Self as burn::tensor::ops::FloatTensorOps<Self>>::float_to_device(t, &d))
            .collect()
    }

    fn nccl_device(device: &R::Device) -> Option<usize> {
        #[cfg(feature = "cuda")]
        if let Some(d) = (device as &dyn std::any::Any).downcast_ref::<cubecl::cuda::CudaDevice>() {
            return Some(d.index);
        }
        let _ = device;
        None
    }

    fn rank_transfer(
        send: Vec<Option<Ft<R>>>,
        recv: &[usize],
        width: usize,
        dtype: DType,
        device: &R::Device,
        comm: &crate::dist::collective::comm::Comm,
    ) -> Option<Result<Option<Ft<R>>, crate::dist::collective::comm::CommError>> {
        #[cfg(feature = "cuda")]
        return nccl_rank_transfer::<R>(send, recv, width, dtype, device, comm);
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (send, recv, width, dtype, device, comm);
            None
        }
    }

    fn rank_transfer_ints(
        send: Vec<Option<Ft<R>>>,
        recv: &[usize],
        width: usize,
        dtype: DType,
        device: &R::Device,
        comm: &crate::dist::collective::comm::Comm,
    ) -> Option<Result<Option<Ft<R>>, crate::dist::collective::comm::CommError>> {
        // integer and float tensors are both `CubeTensor`s: the same bytes move
        Self::rank_transfer(send, recv, width, dtype, device, comm)
    }

    fn rank_all_gather(
        x: Ft<R>,
        comm: &crate::dist::collective::comm::Comm,
    ) -> Option<Result<Ft<R>, crate::dist::collective::comm::CommError>> {
        #[cfg(feature = "cuda")]
        {
            let c = comm.nccl()?;
            let x = to_cuda(x)?;
            Some(
                crate::dist::nccl::rank_all_gather(c, x, comm.world())
                    .map(|t| from_cuda::<R>(t).expect("R is CudaRuntime"))
                    .map_err(|e| crate::dist::collective::comm::CommError::Config(format!("NCCL all-gather: {}", e.0))),
            )
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (x, comm);
            None
        }
    }

    fn float_from_host(bytes: &[u8], shape: [usize; 2], dtype: DType, device: &R::Device) -> Ft<R> {
        #[cfg(feature = "cuda")]
        if let Some(t) = crate::ops::device::cuda::direct_upload::<R>(bytes, &shape, dtype, device) {
            return t;
        }
        <Self as burn::tensor::ops::FloatTensorOps<Self>>::float_from_data(
            burn::tensor::TensorData::from_bytes_vec(bytes.to_vec(), shape, dtype),
            device,
        )
    }

    fn transfer_start(groups: Vec<(Vec<Ft<R>>, R::Device)>) -> (Vec<Ft<R>>, crate::dist::transfer::TransferWait) {
        #[cfg(feature = "cuda")]
        let groups = match grouped_start::<R>(groups) {
            Ok(out) => return out,
            Err(groups) => groups,
        };
        crate::dist::transfer::move_groups::<Self>(groups)
    }
}

/// [`TransferOps::rank_transfer`](crate::dist::transfer::TransferOps::rank_transfer) through this
/// rank's NCCL communicator where `R` is the CUDA runtime and the communicator is set up; `None`
/// otherwise.
#[cfg(feature = "cuda")]
#[allow(clippy::type_complexity)]
fn nccl_rank_transfer<R: CubeRuntime>(
    send: Vec<Option<Ft<R>>>,
    recv: &[usize],
    width: usize,
    dtype: DType,
    device: &R::Device,
    comm: &crate::dist::collective::comm::Comm,
) -> Option<Result<Option<Ft<R>>, crate::dist::collective::comm::CommError>> {
    use cubecl::cuda::CudaDevice;
    use std::any::Any;
    let c = comm.nccl()?;
    let d = (device as &dyn Any).downcast_ref::<CudaDevice>()?;
    let mut cuda = Vec::with_capacity(send.len());
    for t in send {
        cuda.push(match t {
            Some(t) => Some(to_cuda(t)?),
            None => None,
        });
    }
    Some(
        crate::dist::nccl::rank_transfer(c, cuda, recv, width, dtype, d)
            .map(|t| t.map(|t| from_cuda::<R>(t).expect("R is CudaRuntime")))
            .map_err(|e| crate::dist::collective::comm::CommError::Config(format!("NCCL row transfer: {}", e.0))),
    )
}

/// The pieces in one grouped transfer (peer-to-peer copies or one NCCL group) where they are
/// CUDA tensors between CUDA devices; otherwise (or when the group cannot run) the pieces
/// back, for moves one by one.
#[cfg(feature = "cuda")]
fn grouped_transfer<R: CubeRuntime>(pieces: Vec<(Ft<R>, R::Device)>) -> Result<Vec<Ft<R>>, Vec<(Ft<R>, R::Device)>> {
    use cubecl::cuda::{CudaDevice, CudaRuntime};
    use std::any::Any;
    if pieces.len() < 2 || !grouped_possible() {
        return Err(pieces);
    }
    let mut cuda = Vec::with_capacity(pieces.len());
    for (t, d) in &pieces {
        let t = (t as &dyn Any).downcast_ref::<CubeTensor<CudaRuntime>>();
        let d = (d as &dyn Any).downcast_ref::<CudaDevice>();
        match (t, d) {
            (Some(t), Some(d)) => cuda.push((into_contiguous(t.clone()), d.clone())),
            _ => return Err(pieces),
        }
    }
    match crate::dist::nccl::transfer(cuda) {
        Ok(out) => Ok(out.into_iter().map(|t| from_cuda::<R>(t).expect("R is CudaRuntime")).collect()),
        Err(e) => {
            static LOGGED: std::sync::Once = std::sync::Once::new();
            LOGGED.call_once(|| log::warn!("grouped transfers unavailable ({}): tensors move one by one", e.0));
            Err(pieces)
        }
    }
}

/// Whether a grouped transfer can run: peer-to-peer copies are chosen, or NCCL loads.
#[cfg(feature = "cuda")]
fn grouped_possible() -> bool {
    crate::dist::transfer::device_links() == crate::dist::transfer::DeviceLinks::PeerCopies
        || crate::dist::nccl::available()
}

/// [`TransferOps::transfer_start`](crate::dist::transfer::TransferOps::transfer_start) through one
/// grouped transfer (peer-to-peer copies or one NCCL group) where `R` is the CUDA runtime and
/// one can run (every piece off its group's device); the groups back otherwise.
#[cfg(feature = "cuda")]
#[allow(clippy::type_complexity)]
fn grouped_start<R: CubeRuntime>(
    groups: Vec<(Vec<Ft<R>>, R::Device)>,
) -> Result<(Vec<Ft<R>>, crate::dist::transfer::TransferWait), Vec<(Vec<Ft<R>>, R::Device)>> {
    use cubecl::cuda::{CudaDevice, CudaRuntime};
    use std::any::Any;
    if groups.is_empty() || !grouped_possible() {
        return Err(groups);
    }
    let mut cuda = Vec::with_capacity(groups.len());
    for (pieces, d) in &groups {
        let Some(d) = (d as &dyn Any).downcast_ref::<CudaDevice>() else { return Err(groups) };
        let mut list = Vec::with_capacity(pieces.len());
        for t in pieces {
            match (t as &dyn Any).downcast_ref::<CubeTensor<CudaRuntime>>() {
                Some(t) if t.device.index != d.index => list.push(into_contiguous(t.clone())),
                _ => return Err(groups),
            }
        }
        cuda.push((list, d.clone()));
    }
    match crate::dist::nccl::start(cuda) {
        Ok((out, pending)) => {
            let out = out.into_iter().map(|t| from_cuda::<R>(t).expect("R is CudaRuntime")).collect();
            let wait = crate::dist::transfer::TransferWait::new(move || {
                if let Err(e) = pending.wait() {
                    log::error!("waiting for a grouped transfer: {}", e.0);
                }
            });
            Ok((out, wait))
        }
        Err(e) => {
            static LOGGED: std::sync::Once = std::sync::Once::new();
            LOGGED.call_once(|| log::warn!("grouped transfers unavailable ({}): tensors move one by one", e.0));
            Err(groups)
        }
    }
}
