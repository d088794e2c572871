//! ES-SpMM: cache-first edge-sampled SpMM (Bucket and FastRand sampling).

pub mod reference;

pub use reference::{SampleSpec, Sampling};
