//! Why a kernel cannot run on a device with the given sizes.

/// A kernel launch that the device cannot take. Callers choose what to do instead (the
/// `burn-sparse-gnn` backend runs the host implementation and counts it).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KernelError {
    /// The launch needs more shared memory per cube than the device has.
    #[error("{op}: needs {needed} bytes of shared memory per cube, the device has {available}")]
    SharedMemory {
        /// Kernel.
        op: &'static str,
        /// Bytes needed.
        needed: usize,
        /// Bytes the device offers.
        available: usize,
    },
    /// A size exceeds what the kernel can index.
    #[error("{op}: {what} of {value} exceeds the kernel's limit of {limit}")]
    Size {
        /// Kernel.
        op: &'static str,
        /// Which size.
        what: &'static str,
        /// Its value.
        value: usize,
        /// The limit.
        limit: usize,
    },
}
