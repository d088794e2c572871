//! CSR SpMM (GE-SpMM): sum / mean / max reductions with optional (multi-head) edge weights.

pub mod hot;
pub mod kernel;
pub mod reference;

pub use reference::Reduce;
