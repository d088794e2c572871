//! Device memory: what a backend can tell about it ([`DeviceOps`]) and the peak-memory
//! sampling of a run ([`peak`]).

mod autodiff;
mod cube;
mod host;
pub mod peak;

use burn::tensor::backend::Backend;
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn::tensor::{DType, Element, Int, Tensor, TensorData};

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

    /// The largest buffer one kernel can bind on `device`, where the device limits it below its
    /// memory (wgpu: the adapter's storage-buffer binding size, 128 MiB on Mesa's lavapipe);
    /// `None` where only the memory bounds a buffer (CUDA, the CPU). No tensor above it can be
    /// computed on: CubeCL's wgpu server refuses such an allocation in its own thread, or binds
    /// a buffer the shader does not see whole, and the run goes on with wrong values. Callers
    /// check the tensors a run will hold against it first ([`check_buffers`]).
    fn max_buffer_bytes(_device: &Self::Device) -> Option<u64> {
        None
    }

    /// The index arrays of one structure on `device`, as 1-D i32 tensors in the order given
    /// (every array holds at least one entry). By default each is uploaded on its own. The
    /// CubeCL backends upload them all in one buffer and return views of it, each starting at
    /// an offset the device can bind: a small graph (a batch of molecules) has some thirty
    /// arrays, and one upload per array costs more than their data.
    fn index_arrays(arrays: Vec<Vec<i32>>, device: &Self::Device) -> Vec<IntTensor<Self>> {
        arrays
            .into_iter()
            .map(|v| {
                let n = v.len();
                Tensor::<Self, 1, Int>::from_data(TensorData::new(v, [n]), (device, DType::I32)).into_primitive()
            })
            .collect()
    }

    /// Float vectors on `device` in the backend's float type, in the order given, as
    /// [`DeviceOps::index_arrays`] does for index arrays (every vector holds at least one entry).
    fn float_arrays(arrays: Vec<Vec<f64>>, device: &Self::Device) -> Vec<FloatTensor<Self>> {
        let dtype = <Self::FloatElem as Element>::dtype();
        arrays
            .into_iter()
            .map(|v| {
                let n = v.len();
                Tensor::<Self, 1>::from_data(TensorData::new(v, [n]).convert_dtype(dtype), (device, dtype))
                    .into_primitive()
                    .tensor()
            })
            .collect()
    }
}

/// A tensor that a run will hold on `device` that exceeds [`DeviceOps::max_buffer_bytes`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "{what} takes {} MiB, more than the {} MiB one buffer can hold on this device (the storage-buffer \
     binding size of its wgpu adapter)",
    bytes.div_ceil(1 << 20),
    limit >> 20
)]
pub struct BufferTooLarge {
    /// What the tensor holds.
    pub what: String,
    /// Its size.
    pub bytes: u64,
    /// The device's limit.
    pub limit: u64,
}

/// Checks `(what, bytes)` tensors against the largest buffer `device` can bind: the first
/// that does not fit, or `Ok` (always on devices without such a limit).
///
/// ```
/// use burn::backend::NdArray;
/// // the CPU has no limit below its memory
/// assert!(burn_sparse_gnn::ops::device::check_buffers::<NdArray>(&Default::default(), &[("x", u64::MAX)]).is_ok());
/// ```
pub fn check_buffers<B: DeviceOps>(device: &B::Device, tensors: &[(&str, u64)]) -> Result<(), BufferTooLarge> {
    let Some(limit) = B::max_buffer_bytes(device) else { return Ok(()) };
    match tensors.iter().find(|(_, bytes)| *bytes > limit) {
        Some((what, bytes)) => Err(BufferTooLarge { what: what.to_string(), bytes: *bytes, limit }),
        None => Ok(()),
    }
}
