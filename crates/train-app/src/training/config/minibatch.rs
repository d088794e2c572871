//! The options of mini-batch training (`--training minibatch`) and the batch sizes of the tasks
//! that train in batches.

use super::TrainConfig;
use serde::{Deserialize, Serialize};

/// How node classification trains.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Training {
    /// Every epoch one step on the whole graph.
    #[default]
    Full,
    /// Steps on batches of seed nodes with sampled neighbourhoods (docs/MINIBATCH.md).
    Minibatch,
}

/// Where mini-batch training keeps the node features.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum FeatureHome {
    /// On the device; a batch selects its rows there.
    #[default]
    Device,
    /// In host memory; a batch gathers its rows there and moves only them (features larger
    /// than the device).
    Host,
}

/// The fan-outs of mini-batch training when `--fanouts` is not given: 15, 10, then 5 for every
/// further hop.
pub const DEFAULT_FANOUTS: [usize; 3] = [15, 10, 5];

impl TrainConfig {
    /// Graphs per batch of graph classification.
    pub fn graph_batch(&self) -> usize {
        self.batch_size.unwrap_or(128)
    }

    /// Seed nodes per batch of mini-batch training.
    pub fn seed_batch(&self) -> usize {
        self.batch_size.unwrap_or(1024)
    }

    /// The fan-out of every hop of mini-batch training, hop 1 first (see `--fanouts`).
    pub fn hop_fanouts(&self) -> Vec<usize> {
        if !self.fanouts.is_empty() {
            return self.fanouts.clone();
        }
        (0..self.layers).map(|h| DEFAULT_FANOUTS[h.min(DEFAULT_FANOUTS.len() - 1)]).collect()
    }
}
