//! The options of `train` beyond `TrainConfig`: output, resume, devices and processes.

use clap::Args;
use std::path::PathBuf;
use train_app::backend::BackendKind;
use train_app::error::{AppError, Result};
use train_app::training::TrainConfig;

#[derive(Args)]
pub struct TrainArgs {
    #[command(flatten)]
    pub cfg: TrainConfig,
    /// Config file (TOML or JSON) with training options: the keys of a run's config.json (the
    /// model, data and optimizer options below, not --backend, --parts, --devices, --processes
    /// or --resume), the flag names with dashes or underscores (`weight-decay` or
    /// `weight_decay`); flags given too override it.
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Backend: auto (CUDA, else wgpu on a GPU, else the CPU), cuda, wgpu or cpu.
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: BackendKind,
    /// Continue the run in --out from the checkpoint of this epoch, or `last` for the latest
    /// checkpoint the run keeps (the run's config.json gives every option; flags that
    /// contradict it are an error, --epochs may grow).
    #[arg(long)]
    pub resume: Option<ResumeFrom>,
    /// Several devices or parts (the model equals the one-device model unless
    /// --boundary-sampling is given).
    #[command(flatten)]
    pub spread: SpreadArgs,
    /// Device memory the run may use, e.g. `20GiB`, `512MiB` (default: the device's free
    /// memory where the backend reports it). A run whose estimate exceeds it stops before
    /// training with what to change. On the CPU backend a run also stops before training when
    /// its host estimate exceeds the host's available memory (or its cgroup's limit).
    #[arg(long)]
    pub memory_budget: Option<String>,
    /// Print the device memory estimate of the run and stop.
    #[arg(long)]
    pub dry_run: bool,

    /// Several processes, one part of the graph each.
    #[command(flatten)]
    pub processes: ProcessArgs,

    /// One fold (--fold) of a `--fold-jobs` run, started by the run's process, which holds the
    /// run folder and wrote its files: this process writes the fold's folder only.
    #[arg(long, hide = true)]
    pub fold_worker: bool,
}

/// Training over several processes (`train`): one part of the partitioned graph per process,
/// the halo rows moving between them through NCCL or over TCP. The model equals the
/// one-process model.
#[derive(Args)]
pub struct ProcessArgs {
    /// Train on N processes of this host: `train` starts ranks 0..N (meeting on 127.0.0.1) and
    /// waits for them. With --devices (N indices), rank r runs on the r-th listed device;
    /// without, every rank on the backend's default device. Rank 0 shows the progress and
    /// writes --out.
    #[arg(long, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1024),
          conflicts_with_all = ["rank", "world", "parts", "boundary_sampling", "dry_run"])]
    pub processes: Option<usize>,
    /// This process's rank in a run of --world processes (start one per host or GPU, each with
    /// the same options and --rendezvous; --devices I picks this rank's device).
    #[arg(long, requires_all = ["world", "rendezvous"], conflicts_with_all = ["parts", "boundary_sampling", "dry_run"])]
    pub rank: Option<usize>,
    /// Number of processes of the run (with --rank).
    #[arg(long, requires_all = ["rank", "rendezvous"])]
    pub world: Option<usize>,
    /// Rank 0's address, HOST:PORT: rank 0 listens there, every other rank connects to it.
    #[arg(long, requires = "rank")]
    pub rendezvous: Option<String>,
    /// Seconds the ranks wait for each other at the start.
    #[arg(long, default_value_t = 600)]
    pub rendezvous_timeout: u64,
    /// What moves the halo rows between the ranks: `nccl` (GPU to GPU, CUDA ranks on GPUs of
    /// their own; needs libnccl.so), `host` (through the host over TCP, any backend) or `auto`
    /// (nccl where every rank can use it, else host). With nccl the parameter gradients are
    /// summed on the GPUs too; scalars and seeds always go through the host.
    #[arg(long, value_enum, default_value = "auto")]
    pub rank_transport: RankTransportArg,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RankTransportArg {
    Auto,
    Host,
    Nccl,
}

/// Training on a partitioned graph (`train` and `bench-train`).
#[derive(Args)]
pub struct SpreadArgs {
    /// Train on a partitioned graph spread over these device indices (e.g. `0,1`: the first two
    /// GPUs; see --device-links for how the halo rows move). Without it (and --parts): the whole
    /// graph on one device.
    #[arg(long, value_delimiter = ',')]
    pub devices: Option<Vec<usize>>,
    /// Number of parts (default: one per device; more parts than devices go round-robin).
    #[arg(long)]
    pub parts: Option<usize>,
    /// Partitioner of --devices / --parts.
    #[arg(long, default_value = "multilevel", value_parser = clap::builder::PossibleValuesParser::new(["multilevel", "metis", "greedy", "contiguous"]))]
    pub partition: String,
    /// Partition cache file: read when it holds a partition of this graph with these parts and
    /// partitioner, written otherwise (`train` default: `partition-<parts>-<method>.part` in
    /// --out).
    #[arg(long)]
    pub partition_cache: Option<PathBuf>,
    /// BNS-GCN's boundary-node sampling (opt-in, not exact): the fraction of halo rows that
    /// cross between parts in each training step, in (0, 1]; those that cross are scaled by
    /// 1 / rate, the others count as zeros. Evaluation exchanges every row. ReLU GCN,
    /// GraphSAGE and GIN.
    #[arg(long)]
    pub boundary_sampling: Option<f64>,
    /// How each part holds its halo columns: `split` (GraphSAGE mean / sum on ReLU states: each
    /// convolution sums over the part's own columns while the halo rows move, and in the
    /// backward pass the halo gradients move while the own columns' are computed), `joined`
    /// (one local graph over own and halo columns, read once the halo rows arrived; every
    /// model) or `auto` (split for models that allow it, in mixed precision only over several
    /// devices; joined otherwise).
    #[arg(long, default_value = "auto", value_parser = clap::builder::PossibleValuesParser::new(["auto", "split", "joined"]))]
    pub halo_layout: String,
    /// How the halo rows move between the GPUs of this process: `nccl` (one NCCL group per
    /// exchange) or `peer` (peer-to-peer copies on the GPUs' copy engines, one stream per pair
    /// of GPUs, where they can reach each other's memory; NCCL otherwise).
    #[arg(long, value_enum, default_value = "nccl")]
    pub device_links: DeviceLinksArg,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DeviceLinksArg {
    Peer,
    Nccl,
}

impl SpreadArgs {
    /// The spread asked for, `None` for the whole graph on one device.
    pub fn spread(&self) -> Result<Option<train_app::partitioned::Spread>> {
        if self.devices.is_none() && self.parts.is_none() {
            if self.boundary_sampling.is_some() {
                return Err(AppError::Config(
                    "--boundary-sampling samples the halo of a partitioned run: add --devices or --parts".into(),
                ));
            }
            return Ok(None);
        }
        let devices = self.devices.clone().unwrap_or_else(|| vec![0]);
        let spread = train_app::partitioned::Spread {
            parts: self.parts.unwrap_or(devices.len()),
            devices,
            method: self.partition.parse().map_err(|e| AppError::Config(format!("--partition: {e}")))?,
            boundary_sampling: self.boundary_sampling,
            layout: match self.halo_layout.as_str() {
                "split" => Some(gnn_models::HaloLayout::Split),
                "joined" => Some(gnn_models::HaloLayout::Joined),
                _ => None,
            },
            links: match self.device_links {
                DeviceLinksArg::Peer => burn_sparse_gnn::exchange::DeviceLinks::PeerCopies,
                DeviceLinksArg::Nccl => burn_sparse_gnn::exchange::DeviceLinks::Nccl,
            },
        };
        spread.check()?;
        Ok(Some(spread))
    }
}

/// Where `train --resume` continues a run: a checkpoint's epoch, or the latest one kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResumeFrom {
    /// The checkpoint of this epoch.
    Epoch(usize),
    /// The latest checkpoint the run keeps.
    Last,
}

impl std::str::FromStr for ResumeFrom {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s.trim() {
            "last" => Ok(ResumeFrom::Last),
            t => t.parse().map(ResumeFrom::Epoch).map_err(|_| format!("`{s}` is neither an epoch number nor `last`")),
        }
    }
}

impl ResumeFrom {
    /// The epoch to resume from in the run folder `out`: the latest checkpoint it keeps for
    /// `last` (an error naming the folder when it keeps none).
    pub fn epoch(self, out: &std::path::Path) -> train_app::error::Result<usize> {
        match self {
            ResumeFrom::Epoch(e) => Ok(e),
            ResumeFrom::Last => {
                let dir = train_app::training::checkpoints::checkpoint_dir(out);
                train_app::training::checkpoints::kept_epochs(&dir).last().copied().ok_or_else(|| {
                    train_app::error::AppError::Missing {
                        path: dir,
                        what: "a checkpoint to resume from (--resume last); the run has none (runs with \
                               --checkpoints false write none)"
                            .into(),
                    }
                })
            }
        }
    }
}
