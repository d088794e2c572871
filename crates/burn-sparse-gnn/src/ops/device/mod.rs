//! Device memory: what a backend can tell about it ([`DeviceOps`]) and the peak-memory
//! sampling of a run ([`peak`]).

mod autodiff;
mod cube;
mod host;
pub mod peak;

use burn::tensor::backend::Backend;

/// What a backend can tell about its device memory.
///
/// Part of [`crate::backend::SparseGnnBackend`] (see its conventions).
pub trait DeviceOps: Backend {
    /// Device memory held by this process on `device`: `(bytes reserved, bytes in use)`, where
    /// the backend can tell (CubeCL memory pools); `None` on the CPU.
    fn device_memory(_device: &Self::Device) -> Option<(u64, u64)> {
        None
    }

    /// The device's memory as its driver reports it: `(bytes free, bytes in all)`, where the
    /// backend can tell (CUDA); `None` elsewhere. Memory this process's pools reserve counts
    /// as used.
    fn device_capacity(_device: &Self::Device) -> Option<(u64, u64)> {
        None
    }
}
