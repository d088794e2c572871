//! The `train-app` library: dataset loaders, synthetic generators, full-batch training through
//! burn-train, evaluation, self test and benchmarks. The `train-app` binary is its CLI; the
//! integration tests use the same functions.

pub mod backend;
pub mod bench;
pub mod charts;
pub mod datasets;
pub mod error;
pub mod fsutil;
pub mod gen;
pub mod host_memory;
pub mod npyio;
pub mod out_of_memory;
pub mod partitioned;
pub mod selftest;
pub mod trainbench;
pub mod training;

pub use error::{AppError, Result};
