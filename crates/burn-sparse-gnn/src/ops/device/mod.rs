//! Device memory: what a backend can tell about it ([`DeviceOps`]) and the peak-memory
//! sampling of a run ([`peak`]).

mod autodiff;
mod cube;
#[cfg(feature = "cuda")]
pub(crate) mod cuda;
mod host;
pub mod peak;

use burn::tensor::backend::Backend;
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn::tensor::{Element, Int, Tensor, TensorData};

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

    /// `data` on `device` as a float tensor of `data`'s own dtype (a float type). By default
    /// Burn's `float_from_data`; CubeCL's CUDA runtime transfers the bytes straight from `data`
    /// in one copy, where Burn's upload copies them into a fresh allocation first and took 5 to 6
    /// times as long on the H200 host (`bench --ops launch`). Graphs, node features and the
    /// batches of the training loops go up through this or [`DeviceOps::int_upload`] ([`upload`],
    /// [`upload_int`]).
    fn float_upload(data: TensorData, device: &Self::Device) -> FloatTensor<Self> {
        Self::float_from_data(data, device)
    }

    /// `data` on `device` as an int tensor of `data`'s own dtype (an int type), as
    /// [`DeviceOps::float_upload`] uploads floats.
    fn int_upload(data: TensorData, device: &Self::Device) -> IntTensor<Self> {
        Self::int_from_data(data, device)
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
                Self::int_upload(TensorData::new(v, [n]), device)
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
                Self::float_upload(TensorData::new(v, [n]).convert_dtype(dtype), device)
            })
            .collect()
    }
}

/// `data` on `device` as a float tensor of `data`'s dtype, through
/// [`DeviceOps::float_upload`] (one transfer on CUDA).
///
/// ```
/// use burn::backend::NdArray;
/// use burn::tensor::{Tensor, TensorData};
/// let x: Tensor<NdArray, 2> = burn_sparse_gnn::upload(TensorData::new(vec![1f32, 2.0], [1, 2]), &Default::default());
/// assert_eq!(x.into_data().to_vec::<f32>().unwrap(), vec![1.0, 2.0]);
/// ```
pub fn upload<B: DeviceOps, const D: usize>(data: TensorData, device: &B::Device) -> Tensor<B, D> {
    Tensor::from_primitive(burn::tensor::TensorPrimitive::Float(B::float_upload(data, device)))
}

/// `data` on `device` as an int tensor of the backend's int type (`data` is converted to it
/// where it differs, as `Tensor::from_data` does), through [`DeviceOps::int_upload`].
pub fn upload_int<B: DeviceOps, const D: usize>(data: TensorData, device: &B::Device) -> Tensor<B, D, Int> {
    let data = data.convert_dtype(<B::IntElem as Element>::dtype());
    Tensor::from_primitive(B::int_upload(data, device))
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
