//! SDDMM: per-edge dot products of the endpoint feature rows, per head.

pub mod kernel;
pub mod reference;
