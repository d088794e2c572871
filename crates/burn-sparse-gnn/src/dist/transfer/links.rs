//! How tensors move between the GPUs of one process: the choice between copy engines and NCCL.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

/// How the rows of a halo exchange move between the GPUs of one process (CUDA; other backends
/// move tensors with `to_device`). Set with [`set_device_links`]; the setting holds for the
/// process.
///
/// On four H200s (NVSwitch) NCCL's epochs were 5 % shorter than the copies' (products-scale
/// GraphSAGE 4x256); on two, the copies' were 0.6 to 1.8 % shorter (docs/MULTI_GPU.md).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DeviceLinks {
    /// One NCCL group (a send and a receive per piece), both directions of every link at once.
    #[default]
    Nccl,
    /// Peer-to-peer copies on the GPUs' copy engines (no multiprocessor taken from the kernels
    /// they run under), one stream per pair of GPUs, where every pair of the exchange's GPUs
    /// can reach each other's memory; one NCCL group otherwise.
    PeerCopies,
}

static LINKS: AtomicU8 = AtomicU8::new(0);
static COPY_GROUPS: AtomicUsize = AtomicUsize::new(0);

/// Chooses how the halo rows move between the GPUs of this process from now on.
pub fn set_device_links(links: DeviceLinks) {
    LINKS.store(matches!(links, DeviceLinks::PeerCopies) as u8, Ordering::Relaxed);
}

/// The choice of [`set_device_links`] ([`DeviceLinks::Nccl`] unless set).
pub fn device_links() -> DeviceLinks {
    match LINKS.load(Ordering::Relaxed) {
        1 => DeviceLinks::PeerCopies,
        _ => DeviceLinks::Nccl,
    }
}

/// How many grouped transfers this process ran as peer-to-peer copies.
pub fn peer_copy_groups() -> usize {
    COPY_GROUPS.load(Ordering::Relaxed)
}

/// Counts one grouped transfer run as peer-to-peer copies.
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub(crate) fn count_peer_copy_group() {
    COPY_GROUPS.fetch_add(1, Ordering::Relaxed);
}
