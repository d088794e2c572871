//! Node partitioning of a graph into `P` parts for exact multi-GPU full-graph training
//! (host side, no tensors).
//!
//! [`partition`] assigns every node to one part ([`Partition`]): multilevel on all cores with
//! METIS on the coarsest graph ([`PartitionMethod::Multilevel`], the default), METIS k-way
//! edge-cut on the whole graph ([`PartitionMethod::Metis`]), a pure Rust streaming partitioner
//! ([`PartitionMethod::Greedy`]) or consecutive node ranges ([`PartitionMethod::Contiguous`]).
//! All of them balance the parts by
//! the weight `in-degree + 1` of their nodes (the aggregation work of a row) and leave no part
//! empty.
//!
//! [`PartitionedGraph::build`] then cuts the adjacency into one [`LocalPart`] per part: the
//! part's own rows (destination nodes) with their columns renumbered into the part's owned
//! nodes followed by its halo (the sources of other parts its rows read), and the send lists
//! that tell every part which of its rows the others need. Each local row keeps the global row's
//! sources and weights in their order, so a local aggregation over `[owned; halo]` features adds
//! exactly the same numbers in the same order as the global one.
//!
//! A partition can be cached on disk ([`Partition::save`], [`Partition::load`]): the file holds
//! the assignment and a fingerprint of the graph, and loading it for another graph is refused.

mod assignment;
mod build;
mod cache;
mod multilevel;
mod partitioners;
mod stats;
mod symmetric;

pub use assignment::{Partition, PartitionError, PartitionMethod, PartitionOptions};
pub use build::{LocalPart, PartitionedGraph};
pub use cache::GraphFingerprint;
pub use partitioners::partition;
pub use stats::{PartStats, PartitionStats};
