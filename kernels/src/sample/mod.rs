//! ES-SpMM: cache-first edge-sampled SpMM (Bucket and FastRand sampling).

pub mod kernel;
pub mod reference;

pub use reference::{SampleSpec, Sampling};
