//! Distributed training: transfers between devices and ranks ([`transfer`]), the halo exchanges
//! of a partitioned graph ([`exchange`], [`collective`]) and NCCL ([`nccl`], CUDA only).

pub mod collective;
pub mod exchange;
#[cfg(feature = "cuda")]
pub(crate) mod nccl;
pub mod transfer;
