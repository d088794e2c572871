//! k-max-pooling selection (1D, 2D and channelled windows) into CBSR.

pub mod kernel;
pub mod reference;

pub use reference::{PoolLayout, PoolSpec};
