//! Full-graph training on a partitioned graph, the exact model of one device:
//!
//! - [`devices`]: every part in one process, on one or more devices of the backend
//!   ([`DistGraph`](devices::DistGraph)), the halo exchange between devices;
//! - [`processes`]: one part per process (a rank, [`RankGraph`](processes::RankGraph)), the
//!   halo exchange through the collectives of `burn_sparse_gnn::collective`.

pub mod devices;
pub mod processes;
