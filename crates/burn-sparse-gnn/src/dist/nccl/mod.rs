//! Grouped transfers between the GPUs of one process (the halo exchange of a partitioned graph,
//! forward and backward): NCCL or peer-to-peer copies on the GPUs' copy engines ([`peer`]),
//! and NCCL between the ranks of a multi-process run.
//!
//! Burn's `to_device` moves one tensor at a time, and each move waits for the previous one: on
//! two GPUs the two directions of an exchange take turns on the link. Here all transfers of one
//! call start together: by default as one NCCL group (`ncclGroupStart`, a send and a receive per
//! tensor, `ncclGroupEnd`), or as peer-to-peer copies on the sources' copy engines where
//! [`crate::dist::transfer::DeviceLinks::PeerCopies`] is chosen and the GPUs can reach each
//! other's memory. NCCL is loaded at run time (`cudarc`, dynamic loading, as cuBLAS is); where
//! neither path can run the caller moves the tensors one by one instead.
//!
//! Ordering against CubeCL's work, with no host synchronisation: every device in the call gets
//! a copy or communication stream of our own. It first waits for the CUDA stream CubeCL orders
//! the caller's work on (reported with each buffer by the patched `cubecl-cuda` in `vendor/`), so a
//! send reads its tensor after the kernels that wrote it and a receive writes memory only after
//! the kernels that used it before ran. After the transfers, each device's compute stream waits
//! for the streams that moved its rows: a received tensor is read, and a sent tensor's memory
//! reused, only after the transfer.
//!
//! One communicator set per list of devices (`ncclCommInitAll`), created on the first transfer
//! among them and kept for the process.

mod comm;
mod group;
mod peer;
mod rank;

pub use comm::{available, grouped_transfers};
pub(crate) use group::{start, transfer};
pub(crate) use rank::{device_identity, init_rank, rank_all_gather, rank_transfer, unique_id, RankNccl};
