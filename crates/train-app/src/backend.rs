//! Backend selection: `auto` picks CUDA when a device answers, else wgpu on a GPU adapter (not a
//! CPU one such as lavapipe, slower than the CPU backend), else the CPU, and
//! says which. Work is written once as a [`Job`] generic over the backend.

use crate::error::{AppError, Result};
use burn::backend::Autodiff;
use burn_sparse_gnn::SparseGnnAutodiffBackend;
use clap::ValueEnum;

/// The backend requested on the command line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackendKind {
    Auto,
    Cuda,
    Wgpu,
    Cpu,
}

/// Work to run on a concrete backend.
pub trait Job {
    type Output;
    fn run<B: SparseGnnAutodiffBackend>(self, device: B::Device, backend: &str) -> Result<Self::Output>;
}

/// Runs `f` with panics turned into `None` and their message silenced (device probing).
fn quietly<T>(f: impl FnOnce() -> T + std::panic::UnwindSafe) -> Option<T> {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let r = std::panic::catch_unwind(f).ok();
    std::panic::set_hook(hook);
    r
}

#[cfg(feature = "cuda")]
fn cuda_available() -> bool {
    use burn::tensor::Tensor;
    quietly(|| {
        let dev = burn::backend::cuda::CudaDevice::default();
        let t = Tensor::<burn_sparse_gnn::Cuda, 1>::from_floats([1.0, 2.0], &dev);
        t.sum().into_scalar() == 3.0
    })
    .unwrap_or(false)
}

#[cfg(feature = "wgpu")]
fn wgpu_available() -> bool {
    use burn::tensor::Tensor;
    quietly(|| {
        let dev = burn::backend::wgpu::WgpuDevice::DefaultDevice;
        let t = Tensor::<burn_sparse_gnn::Wgpu, 1>::from_floats([1.0, 2.0], &dev);
        t.sum().into_scalar() == 3.0
    })
    .unwrap_or(false)
}

/// Resolves `auto` and checks that the chosen backend answers.
pub fn resolve(kind: BackendKind) -> Result<BackendKind> {
    let unavailable = |b: &str, msg: &str| AppError::Backend { backend: b.into(), msg: msg.into() };
    match kind {
        BackendKind::Cpu => Ok(BackendKind::Cpu),
        BackendKind::Cuda => {
            #[cfg(feature = "cuda")]
            {
                if cuda_available() {
                    return Ok(BackendKind::Cuda);
                }
                Err(unavailable(
                    "cuda",
                    "no CUDA device answered (driver, libcuda and libnvrtc are needed at run time)",
                ))
            }
            #[cfg(not(feature = "cuda"))]
            Err(unavailable("cuda", "this binary was built without the `cuda` feature"))
        }
        BackendKind::Wgpu => {
            #[cfg(feature = "wgpu")]
            {
                if wgpu_available() {
                    return Ok(BackendKind::Wgpu);
                }
                Err(unavailable("wgpu", "no wgpu adapter answered (install a Vulkan driver, e.g. mesa-vulkan-drivers)"))
            }
            #[cfg(not(feature = "wgpu"))]
            Err(unavailable("wgpu", "this binary was built without the `wgpu` feature"))
        }
        BackendKind::Auto => {
            #[cfg(feature = "cuda")]
            if cuda_available() {
                return Ok(BackendKind::Cuda);
            }
            // a CPU adapter (lavapipe) runs the kernels slower than the CPU backend
            #[cfg(feature = "wgpu")]
            if quietly(burn_sparse_gnn::wgpu_has_gpu_adapter).unwrap_or(false) && wgpu_available() {
                return Ok(BackendKind::Wgpu);
            }
            Ok(BackendKind::Cpu)
        }
    }
}

/// Runs `job` on the resolved backend (prints which one).
pub fn dispatch<J: Job>(kind: BackendKind, job: J) -> Result<J::Output> {
    let resolved = resolve(kind)?;
    let name = match resolved {
        BackendKind::Cuda => "cuda",
        BackendKind::Wgpu => "wgpu",
        _ => "cpu",
    };
    if kind == BackendKind::Auto {
        eprintln!("backend: auto -> {name}");
    } else {
        eprintln!("backend: {name}");
    }
    match resolved {
        #[cfg(feature = "cuda")]
        BackendKind::Cuda => job.run::<Autodiff<burn_sparse_gnn::Cuda>>(Default::default(), name),
        #[cfg(feature = "wgpu")]
        BackendKind::Wgpu => {
            job.run::<Autodiff<burn_sparse_gnn::Wgpu>>(burn::backend::wgpu::WgpuDevice::DefaultDevice, name)
        }
        _ => job.run::<Autodiff<burn_sparse_gnn::Cpu>>(Default::default(), name),
    }
}
