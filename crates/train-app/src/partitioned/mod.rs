//! Full-graph training on a partitioned graph, by how the parts run:
//!
//! - [`devices`]: every part in one process, on one or more devices (`train --devices` /
//!   `--parts`, `bench-train --devices` / `--parts`);
//! - [`processes`]: one part per process (`train --world` / `--processes`).
//!
//! What both share: [`spread`] (how a run spreads over devices and parts, and which models
//! allow the split halo layout and boundary sampling), [`partition`] (the partition and its
//! cache), [`traffic`] (bytes exchanged per epoch), [`estimate`] (device memory per device),
//! [`run`] (the epoch loop), [`checkpoints`] (checkpoints, resume, early stopping) and
//! [`report`] (`results.json` and the files a run leaves).

pub mod checkpoints;
pub mod devices;
pub mod estimate;
pub mod partition;
pub mod processes;
pub mod report;
pub mod run;
pub mod spread;
pub mod traffic;

pub use estimate::estimate_per_device;
pub(crate) use partition::split_weights;
pub use partition::{known_partition, load_or_partition, partition_with_progress, KnownPartition};
pub use report::{PartitionReport, PartitionedEpoch, PartitionedReport, SplitAccuracy};
pub use run::{adam, scalar};
pub use spread::{check_device_indices, devices_of, Spread};
pub use traffic::{exchanged_bytes_per_epoch, sampled_bytes};
