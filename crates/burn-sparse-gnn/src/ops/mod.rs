//! Tensor-level sparse operations: what models call. Each function dispatches to
//! [`SparseGnnBackend`], is differentiable on `Autodiff<B>`, and has a `try_` form that
//! returns an [`OpError`] instead of panicking on bad arguments.
//!
//! One folder per op family: `mod.rs` holds the family's backend trait (with its composed
//! defaults) and its tensor-level ops, `cube.rs` the `CubeBackend` implementation, `host.rs` the
//! NdArray one and `autodiff.rs` the `Autodiff<B>` one with its backward passes.

pub mod aggregation;
pub(crate) mod args;
pub mod attention;
pub mod cbsr;
pub(crate) mod cube_launch;
pub mod dense;
pub mod device;
pub mod dropout;
pub(crate) mod host_io;
pub mod layer;
pub mod link;
pub mod loss;
pub mod neighbors;
pub mod norm;
pub mod optim;
pub mod primitive;
pub mod rows;
pub(crate) mod tracking;

pub use aggregation::{sampled_spmm, spmm, spmm_heads, spmm_weighted, try_sampled_spmm, try_spmm};
pub use attention::{edge_softmax, gat_attention, sddmm, sddmm_heads, try_edge_softmax, try_gat_attention, try_sddmm};
pub use cbsr::{
    cbsr_spgemm, cbsr_spgemm_weighted, maxk, maxpool, try_cbsr_spgemm, try_maxk, try_maxk_with, try_maxpool, Cbsr,
};
pub use layer::{
    add_bias, aggregate_pair, linear, linear_pair, try_aggregate_pair, try_split_pair, LinearTerm, SplitInputs,
};
pub use norm::{batch_norm, batch_norm_running};
