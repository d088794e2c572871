//! The integration tests of `burn-sparse-gnn` in one test binary (one link, and the backends'
//! generic code generated once rather than once per file). Each module is one concern: the
//! conformance suite on the CPU, wgpu and CUDA backends (the CUDA cases with the `cuda-tests`
//! feature: `cargo test-cuda` on a GPU machine), the ops' properties and validation, partitioning and the halo
//! exchange, and the launch heuristics against their recorded timings (`shapes.jsonl`, written by
//! `bench/shapes.sh`).

mod aggregate_pair;
mod attention;
mod collective;
mod compare;
mod conformance_cpu;
#[cfg(feature = "cuda-tests")]
mod conformance_cuda;
#[cfg(feature = "wgpu")]
mod conformance_wgpu;
#[cfg(feature = "wgpu")]
mod half_wgpu;
mod heuristics;
mod link;
mod loss;
mod neighbors;
mod norm;
mod optim;
mod packed_graph;
mod partition;
mod properties;
mod relu_dropout;
mod rows;
mod split_pair;
mod validation;
