//! The integration tests of `train-app` in one test binary (one link, the backends' generic
//! code generated once): the command line (`cli`), bad input (`inputs`), the loaders, the
//! memory estimate and its checks, runs over several processes, resume, run folders, and the
//! layers on wgpu. Most run the `train-app` binary as a user would.

mod common;

mod cli;
mod cora;
mod graph;
mod inputs;
#[cfg(feature = "wgpu")]
mod layers_wgpu;
mod link;
mod loaders;
mod memory_estimate;
mod minibatch;
mod predict;
mod processes;
mod resume;
mod runs;
