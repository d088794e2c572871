//! Full-graph training on a partitioned graph in one process: P parts on one or more devices
//! of the backend (several GPUs of a host through NCCL on CUDA; logical parts on one device
//! elsewhere), the exact model of `gnn_models::partitioned::devices`. Used by `train --devices`
//! / `--parts` and `bench-train --devices` / `--parts`.
//!
//! By concern: [`setup`](mod@setup) uploads the parts and the node data, [`step`] trains and
//! evaluates one epoch, [`train`](mod@train) runs the epochs, [`bench`](mod@bench) times them,
//! and [`equality`] checks the parts against the whole graph.

pub mod bench;
pub mod equality;
pub mod setup;
pub mod step;
pub mod train;

pub use bench::{bench, sync_all, time_exchange};
pub use equality::equality_checks;
pub use setup::{setup, PartitionedData};
pub use step::{accuracies, train_step};
pub use train::train;
