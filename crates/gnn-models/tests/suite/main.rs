//! The integration tests of `gnn-models` in one test binary (one link, the backends' generic
//! code generated once): the layers against dense references and finite differences
//! (`layers`), and the forward and backward passes on the parts of a partitioned graph, in one
//! process (`partitioned_devices`) and over several (`partitioned_processes`), against the
//! whole graph's.

mod common;
mod layers;
mod partitioned_devices;
mod partitioned_processes;
