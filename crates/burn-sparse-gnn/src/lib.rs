//! # burn-sparse-gnn
//!
//! Sparse graph operations for [Burn](https://burn.dev): SpMM (sum / mean / max, weighted,
//! multi-head), SDDMM, edge softmax, ES-SpMM sampled aggregation, MaxK and k-max-pooling into
//! the CBSR format, CBSR SpGEMM / SSpMM, as a backend extension trait with
//! - a CPU implementation (NdArray, on the references of `sparse-gnn-kernels`),
//! - CubeCL kernels for `CubeBackend` (CUDA and wgpu),
//! - `Autodiff<B>` with hand-written backward passes (no float atomics).
//!
//! ```
//! use burn::backend::{Autodiff, NdArray};
//! use burn::tensor::Tensor;
//! use burn_sparse_gnn::{ops, BuildOptions, Csr, Graph, GraphOptions, Reduce};
//!
//! type B = Autodiff<NdArray>;
//! let device = Default::default();
//! // a triangle 0-1-2, stored both ways
//! let adj = Csr::from_edges(3, &[0, 1, 2], &[1, 2, 0], None, BuildOptions::undirected()).unwrap();
//! let g = Graph::<B>::new(&adj, &device, GraphOptions::default());
//! let x = Tensor::<B, 2>::from_data([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], &device).require_grad();
//! let h = ops::spmm(&g, x.clone(), Reduce::Mean);           // neighbour mean
//! let grads = h.sum().backward();
//! assert_eq!(x.grad(&grads).unwrap().dims(), [3, 2]);
//! ```

#![warn(missing_docs)]

pub mod autodiff;
pub mod backend;
#[cfg(feature = "testing")]
pub mod conformance;
/// Host graph data in one module: the adjacency ([`graph::csr`]), datasets ([`graph::dataset`])
/// and their statistics ([`graph::dataset_stats`]).
pub mod data {
    pub use crate::graph::csr::{BuildOptions, Csr, MAX_EDGES, MAX_INDEX};
    pub use crate::graph::dataset::{class_limit, Features, GraphData, Split, SplitIssue, FREE_CLASSES, MAX_CLASSES};
    pub use crate::graph::dataset_stats::{DatasetStats, SHOWN_CLASSES};
}
pub mod dist;
pub mod error;
pub mod fallback;
pub mod graph;
pub mod ops;
pub mod random;

/// Collectives between processes (the module [`dist::collective`]).
pub use dist::collective;
/// The halo exchange of a partitioned graph (the module [`dist::exchange`]).
pub use dist::exchange;
/// Node partitioning (the module [`graph::partition`]).
pub use graph::partition;
/// Dense node-wise products (the module [`ops::dense`]).
pub use ops::dense;
/// Peak device-memory sampling (the module [`ops::device::peak`]).
pub use ops::device::peak as memory;
/// Uploads of host data through [`ops::device::DeviceOps`] (one transfer on CUDA).
pub use ops::device::{upload, upload_int};
/// ReLU and dropout (the module [`ops::dropout`]).
pub use ops::dropout;
/// Weighted softmax cross-entropy (the module [`ops::loss`]).
pub use ops::link;
pub use ops::loss;
/// Adam in one kernel per parameter tensor (the module [`ops::optim`]).
pub use ops::optim;
/// Rows picked by distinct ids (the module [`ops::rows`]).
pub use ops::rows;

pub use backend::{
    CbsrPrim, PoolLayout, PoolSpec, Reduce, ReluDropout, SampleSpec, Sampling, SparseGnnAutodiffBackend,
    SparseGnnBackend,
};
pub use data::{BuildOptions, Csr, DatasetStats, Features, GraphData, Split};
pub use dropout::{relu_dropout, DropoutSeed};
pub use error::{Error, GraphError, OpError};
pub use graph::{Graph, GraphOptions, GraphShape, KernelPolicy, SspmmStrategy, WeightSums};
pub use ops::Cbsr;
pub use partition::{
    partition, LocalPart, Partition, PartitionError, PartitionMethod, PartitionOptions, PartitionStats,
    PartitionedGraph,
};
pub use rows::{spread_rows, take_rows, try_take_rows, RowIndex, RowSpread};
/// The kernels and CPU references (re-exported for applications and benchmarks).
pub use sparse_gnn_kernels as kernels;
pub use sparse_gnn_kernels::config::{Choice, KernelConfig, PlaneUse};

/// The CPU backend (NdArray, f32).
pub type Cpu = burn::backend::NdArray<f32, i32>;

/// The wgpu backend (Vulkan / Metal / DX12 / WebGPU), not fused: a `CubeBackend`.
#[cfg(feature = "wgpu")]
pub type Wgpu = burn_cubecl::CubeBackend<cubecl::wgpu::WgpuRuntime, f32, i32, u32>;

/// Whether wgpu sees a GPU adapter (discrete, integrated or virtual) through the platform's
/// default graphics API, not only a CPU one such as Mesa's lavapipe. Lists the adapters without
/// opening a device.
#[cfg(feature = "wgpu")]
pub fn wgpu_has_gpu_adapter() -> bool {
    use cubecl::wgpu::{AutoGraphicsApi, GraphicsApi, WgpuRuntime};
    use cubecl::Runtime;
    WgpuRuntime::enumerate_all_devices(&AutoGraphicsApi::backend()).iter().any(|d| d.type_id <= 2)
}

/// The CUDA backend, not fused: a `CubeBackend`.
#[cfg(feature = "cuda")]
pub type Cuda = burn_cubecl::CubeBackend<cubecl::cuda::CudaRuntime, f32, i32, u8>;
