//! # sparse-gnn-kernels
//!
//! The sparse graph kernels of the project, written once in CubeCL for any CubeCL runtime
//! (CUDA, wgpu), together with a plain-Rust CPU reference of every operation (f64
//! accumulation) that is the oracle of every test. This crate knows nothing about Burn.
//!
//! One module per operation:
//! - [`spmm`]: CSR SpMM with sum / mean / max (GE-SpMM), max backward;
//! - [`sddmm`]: per-edge dot products;
//! - [`softmax`]: edge softmax over CSR rows and its backward;
//! - [`attention`]: GAT's attention coefficients from per-node scores, and their backward;
//! - [`sample`]: ES-SpMM sampled aggregation (Bucket, FastRand);
//! - [`maxk`]: MaxK top-k selection into CBSR;
//! - [`pool`]: k-max-pooling selection into CBSR;
//! - [`cbsr`]: CBSR SpGEMM forward, SSpMM backward, scatter / gather;
//! - [`loss`]: weighted softmax cross-entropy of logit rows and its backward, in place;
//! - [`rows`]: per-row half copies, and the halo gradients' scatter-add.
//! - [`link`]: the device permutations and known-edge mask of link prediction's negatives.
//! - [`pair_rows`]: the gradient of a row gather per pair of a pattern (segment sums).
//! - [`neighbors`]: uniform neighbour sampling without replacement, for mini-batches.
//! - [`optim`]: Adam's update of a parameter and its moments in one pass.
//!
//! Each module has a `reference` submodule; [`csr`] holds the borrowed structures they take.
//! Launch shapes are typed values ([`config::KernelConfig`], every field `Auto` or forced)
//! resolved by the measured rules of [`heuristics`]; a launch the device cannot take returns a
//! [`KernelError`].

pub mod attention;
pub mod cbsr;
pub mod config;
pub mod csr;
pub mod device;
pub mod dropout;
pub mod error;
pub mod heuristics;
pub mod link;
pub mod loss;
pub mod maxk;
pub mod neighbors;
pub mod norm;
pub mod optim;
pub mod pair_rows;
pub mod pool;
pub mod reduce;
pub mod rows;
pub mod sample;
pub mod sddmm;
pub mod softmax;
pub mod spmm;

pub use config::{Choice, KernelConfig, PlaneUse};
pub use csr::{CsrRef, EdgeGroups, HotStats, Transpose};
pub use error::KernelError;
