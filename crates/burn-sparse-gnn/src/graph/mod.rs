//! Graphs on the host and on a device: the validated adjacency ([`csr`]), node-classification
//! datasets ([`dataset`], [`dataset_stats`]), the device graph every sparse op takes
//! ([`device`], configured by [`options`]) and node partitioning for multi-GPU training
//! ([`partition`]).

pub mod csr;
pub mod dataset;
pub mod dataset_stats;
pub mod device;
pub mod options;
pub mod partition;
pub(crate) mod upload;

pub use crate::ops::primitive::{CsrPrim, GraphPrim, GraphPrimitive, GroupsPrim, HotPrim, KernelPolicy, SspmmStrategy};
pub use device::{DegreeNorms, Graph, WeightSums};
pub use options::{GraphOptions, GraphShape, DEFAULT_CBSR_GROUP_WIDTH, DEFAULT_COLD_GROUP_WIDTH, DEFAULT_UPLOAD_PIECE};
