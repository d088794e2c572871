//! Grouped transfers between the GPUs of one process through NCCL (the halo exchange of a
//! partitioned graph, forward and backward).
//!
//! Burn's `to_device` moves one tensor at a time, and each move waits for the previous one: on
//! two GPUs the two directions of an exchange take turns on the link. Here all transfers of one
//! call are one NCCL group (`ncclGroupStart`, a send and a receive per tensor, `ncclGroupEnd`),
//! so both directions of every link run at once. NCCL is loaded at run time (`cudarc`, dynamic
//! loading, as cuBLAS is); where `libnccl.so` cannot be found the caller moves the tensors one
//! by one instead.
//!
//! Ordering against CubeCL's work, with no host synchronisation: every device in the call gets
//! a communication stream of our own. It first waits for the CUDA stream CubeCL orders the
//! caller's work on (reported with each buffer by the patched `cubecl-cuda` in `vendor/`), so a
//! send reads its tensor after the kernels that wrote it and a receive writes memory only after
//! the kernels that used it before ran. After the group, each device's compute stream waits for
//! its communication stream: a received tensor is read, and a sent tensor's memory reused, only
//! after the transfer.
//!
//! One communicator set per list of devices (`ncclCommInitAll`), created on the first transfer
//! among them and kept for the process.

mod comm;
mod group;
mod rank;

pub use comm::{available, grouped_transfers};
pub(crate) use group::{start, transfer};
pub(crate) use rank::{device_identity, init_rank, rank_all_gather, rank_transfer, unique_id, RankNccl};
