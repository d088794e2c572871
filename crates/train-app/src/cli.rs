//! The command line: every command and its options (clap). The `train` options are
//! [`TrainConfig`] itself, so flags, config-file keys and `config.json` share names and defaults.

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use train_app::backend::BackendKind;
use train_app::error::{AppError, Result};
use train_app::training::TrainConfig;

#[derive(Parser)]
#[command(
    name = "train-app",
    version = concat!(env!("CARGO_PKG_VERSION"), " ", env!("SGNN_GIT_COMMIT")),
    about = "Sparse GNN training on Burn: CUDA, wgpu or CPU"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// How the GPU memory pools hold memory: `exact` (buffers of the exact sizes the work
    /// allocates, reused for the same sizes: reserved memory stays close to what is in use) or
    /// `pooled` (CubeCL's default pages and slices).
    #[arg(long, global = true, value_enum, default_value = "exact")]
    pub memory_pools: PoolsArg,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PoolsArg {
    Exact,
    Pooled,
}

/// Every command lets a negative number reach its option's own check (`--epochs -1` is an
/// invalid value of --epochs, not an unknown flag).
#[derive(Subcommand)]
pub enum Command {
    /// Train a model full-batch (the default command: GCN on the built-in SBM dataset).
    ///
    /// A run stops with a "training diverged" error (exit code 1) as soon as its training loss
    /// is not finite or, at any epoch after the first, above twice the first epoch's training
    /// loss; the error names the precision, the epoch and what to try.
    ///
    /// The run folder (--out) is the run's own: a new run replaces only a folder that is empty
    /// or holds a run of train-app (marked by a `.train-app-run` file); a folder of other files
    /// is refused, and so is a folder another run is writing (its `.train-app-lock`).
    #[command(allow_negative_numbers = true)]
    Train(TrainArgs),
    /// Evaluate a trained run (its folder) on the train / valid / test splits.
    #[command(allow_negative_numbers = true)]
    Eval(EvalArgs),
    /// Write every node's (or the --nodes') class probabilities, predicted class and embedding
    /// as .npy files; needs no labels.
    #[command(allow_negative_numbers = true)]
    Predict(PredictArgs),
    /// Run the conformance suite (kernels vs the CPU reference, forward and gradients).
    #[command(allow_negative_numbers = true)]
    Selftest(SelftestArgs),
    /// Time the kernels (JSON lines: bench/README.md).
    #[command(allow_negative_numbers = true)]
    Bench(BenchArgs),
    /// Generate a synthetic graph into an npy folder.
    Gen {
        #[command(subcommand)]
        kind: GenKind,
    },
    /// Print statistics of a dataset.
    #[command(allow_negative_numbers = true)]
    Info(InfoArgs),
    /// Time full-batch training epochs (forward + backward + Adam step) of models on a dataset.
    #[command(allow_negative_numbers = true)]
    BenchTrain(BenchTrainArgs),
    /// Write a dataset (with its split, e.g. a seeded per-class split) as an npy folder, so that
    /// peers train on exactly the same data.
    #[command(allow_negative_numbers = true)]
    Export(ExportArgs),
    /// Partition a dataset's graph into parts (for --devices / --parts) and print the parts'
    /// sizes, cut edges and halos as JSON; optionally keep the partition as a cache file.
    #[command(allow_negative_numbers = true)]
    Partition(PartitionArgs),
}

#[derive(Args)]
pub struct PartitionArgs {
    /// Dataset path.
    #[arg(long)]
    pub dataset: String,
    /// Numbers of parts (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "2")]
    pub parts: Vec<usize>,
    /// Partitioner.
    #[arg(long, default_value = "metis", value_parser = clap::builder::PossibleValuesParser::new(["metis", "greedy", "contiguous"]))]
    pub method: String,
    /// Write each partition to `<cache>-<parts>.part` (what --partition-cache reads).
    #[arg(long)]
    pub cache: Option<PathBuf>,
}

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

#[derive(Args)]
pub struct EvalArgs {
    /// Folder of a `train` run (holds config.json and model.mpk).
    pub dir: PathBuf,
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: BackendKind,
    /// Evaluate on this dataset instead of the run's (same feature width and classes).
    #[arg(long)]
    pub dataset: Option<String>,
}

#[derive(Args)]
pub struct PredictArgs {
    /// Folder of a `train` run (holds config.json and model.mpk).
    pub dir: PathBuf,
    /// Folder for probabilities.npy, predictions.npy and embeddings.npy.
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: BackendKind,
    /// Predict on this dataset instead of the run's: any graph whose nodes have the model's
    /// feature width, with or without labels (unlabeled: every label -1), prepared as the run
    /// prepared its own (self-loops, symmetrisation, feature normalisation).
    #[arg(long)]
    pub dataset: Option<String>,
    /// An .npy of node ids (int64 or int32, one dimension, each id once): write a row for
    /// these nodes only, in the file's order (default: every node).
    #[arg(long)]
    pub nodes: Option<PathBuf>,
}

#[derive(Args)]
pub struct SelftestArgs {
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: BackendKind,
    /// Smaller hub row (2,000 edges instead of 10,000).
    #[arg(long)]
    pub quick: bool,
    /// Only the ops whose name contains this string.
    #[arg(long)]
    pub filter: Option<String>,
}

#[derive(Args)]
pub struct InfoArgs {
    /// Dataset path or built-in name (`sbm`).
    pub dataset: String,
    /// Print the statistics as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct ExportArgs {
    /// Dataset path or `sbm`.
    #[arg(long)]
    pub dataset: String,
    /// Split to apply (per-class:T,V | random:T,V | mask:K); the dataset's own by default.
    #[arg(long)]
    pub split: Option<String>,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    #[arg(long)]
    pub out: PathBuf,
}

/// The models `bench-train` accepts.
pub const MODELS: [&str; 4] = ["gcn", "sage", "gin", "gat"];
/// The precisions `bench-train` accepts.
pub const PRECISIONS: [&str; 4] = ["f32", "tf32", "mixedf16", "mixedbf16"];

#[derive(Args)]
pub struct BenchTrainArgs {
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: BackendKind,
    /// Dataset (npy folder with features and labels).
    #[arg(long)]
    pub dataset: String,
    /// Models.
    #[arg(long, value_delimiter = ',', default_value = "sage,gcn", value_parser = clap::builder::PossibleValuesParser::new(MODELS))]
    pub models: Vec<String>,
    /// Nonlinearities: relu, maxk:K, maxpool:W.
    #[arg(long, value_delimiter = ',', default_value = "relu,maxk:32")]
    pub nonlins: Vec<String>,
    /// Precisions.
    #[arg(long, value_delimiter = ',', default_value = "f32", value_parser = clap::builder::PossibleValuesParser::new(PRECISIONS))]
    pub precisions: Vec<String>,
    #[arg(long, default_value_t = 4)]
    pub layers: usize,
    #[arg(long, default_value_t = 256)]
    pub hidden: usize,
    /// Timed epochs.
    #[arg(long, default_value_t = 10, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub epochs: usize,
    /// Untimed epochs before them.
    #[arg(long, default_value_t = 3)]
    pub warmup: usize,
    /// Atomic SSpMM backward for MaxK.
    #[arg(long)]
    pub atomic: bool,
    /// Edge-group width of the aggregation kernels (the `train` default when omitted).
    #[arg(long)]
    pub group_width: Option<usize>,
    /// Append the JSON lines to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Device name recorded in the results (e.g. "NVIDIA H200").
    #[arg(long)]
    pub device_name: Option<String>,
    #[command(flatten)]
    pub spread: SpreadArgs,
}

/// Training on a partitioned graph (`train` and `bench-train`).
#[derive(Args)]
pub struct SpreadArgs {
    /// Train on a partitioned graph spread over these device indices (e.g. `0,1`: the first two
    /// GPUs; the halo exchange runs through NCCL on CUDA). Without it (and --parts): the whole
    /// graph on one device.
    #[arg(long, value_delimiter = ',')]
    pub devices: Option<Vec<usize>>,
    /// Number of parts (default: one per device; more parts than devices go round-robin).
    #[arg(long)]
    pub parts: Option<usize>,
    /// Partitioner of --devices / --parts.
    #[arg(long, default_value = "metis", value_parser = clap::builder::PossibleValuesParser::new(["metis", "greedy", "contiguous"]))]
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
        };
        spread.check()?;
        Ok(Some(spread))
    }
}

/// The ops `bench` times.
pub const BENCH_OPS: [&str; 9] =
    ["spmm", "sddmm", "sampled", "maxk", "cbsr_spgemm", "cbsr_sspmm", "maxpool", "matmul", "all"];

/// Largest MaxK k `bench` times (its features are 256 wide).
pub const BENCH_MAX_K: usize = 256;

#[derive(Args)]
pub struct BenchArgs {
    #[arg(long, value_enum, default_value = "auto")]
    pub backend: BackendKind,
    /// npy folder of the graph (or generate one with --rmat).
    #[arg(long, conflicts_with = "rmat")]
    pub graph: Option<PathBuf>,
    /// Generate an R-MAT graph in memory: NODES:EDGES.
    #[arg(long)]
    pub rmat: Option<String>,
    /// Ops (matmul: the dense products of linear layers over all nodes).
    #[arg(long, value_delimiter = ',', default_value = "spmm", value_parser = clap::builder::PossibleValuesParser::new(BENCH_OPS))]
    pub ops: Vec<String>,
    /// Feature widths (at most 1,048,576).
    #[arg(long, value_delimiter = ',', default_value = "32,64,128,256", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=1 << 20))]
    pub widths: Vec<usize>,
    /// MaxK k values (features 256 wide).
    #[arg(long, value_delimiter = ',', default_value = "8,16,32,64", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=BENCH_MAX_K as u64))]
    pub ks: Vec<usize>,
    /// ES-SpMM sample widths.
    #[arg(long, value_delimiter = ',', default_value = "16,32,64,128,256,512", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub samples: Vec<usize>,
    #[arg(long, default_value_t = 20)]
    pub runs: usize,
    #[arg(long, default_value_t = 3)]
    pub warmup: usize,
    /// Append the JSON lines to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Device name recorded in the results (e.g. "NVIDIA H200").
    #[arg(long)]
    pub device_name: Option<String>,
    /// Storage types of the SpMM timings.
    #[arg(long, value_delimiter = ',', default_value = "f32", value_parser = clap::builder::PossibleValuesParser::new(["f32", "f16", "bf16"]))]
    pub dtypes: Vec<String>,
    #[command(flatten)]
    pub kernels: KernelArgs,
}

/// Forced kernel launch shapes (benchmarks): every option left out is chosen by the measured
/// heuristics (`sparse_gnn_kernels::heuristics`).
#[derive(Args, Clone, Debug, Default)]
pub struct KernelArgs {
    /// Edge-group width of the SpMM family and the SDDMM.
    #[arg(long)]
    pub group_width: Option<usize>,
    /// Hot columns split off for the two-pass f32 SpMM (0: no split).
    #[arg(long)]
    pub hot_cols: Option<usize>,
    /// Edge-group width of the cold edges of a split structure.
    #[arg(long)]
    pub cold_group_width: Option<usize>,
    /// Features per SpMM tile.
    #[arg(long)]
    pub spmm_tile: Option<usize>,
    /// Most lanes per SpMM slot.
    #[arg(long)]
    pub spmm_lanes: Option<u32>,
    /// Threads per SpMM cube.
    #[arg(long)]
    pub spmm_threads: Option<u32>,
    /// Edges loaded ahead per SpMM lane.
    #[arg(long)]
    pub spmm_unroll: Option<u32>,
    /// Narrowest width the hot-column split runs at.
    #[arg(long)]
    pub hot_min_width: Option<usize>,
    /// Bytes of a hot column's row per shared-memory tile.
    #[arg(long)]
    pub hot_tile_bytes: Option<usize>,
    /// Threads per hot-pass cube.
    #[arg(long)]
    pub hot_threads: Option<u32>,
    /// Hot-pass cubes.
    #[arg(long)]
    pub hot_blocks: Option<usize>,
    /// Use the shared-memory fallbacks instead of plane (warp) operations.
    #[arg(long)]
    pub no_planes: bool,
    /// MaxK selection by the radix histogram at every width.
    #[arg(long)]
    pub maxk_radix: bool,
}

impl KernelArgs {
    /// The graph options these flags force (the rest: defaults).
    pub fn graph_options(&self) -> Result<burn_sparse_gnn::GraphOptions> {
        use burn_sparse_gnn::Choice;
        let forced = |v: Option<usize>, what: &str| -> Result<Choice<usize>> {
            match v {
                Some(0) if what != "--hot-cols" => Err(AppError::Config(format!("{what} must be >= 1"))),
                Some(v) => Ok(Choice::Forced(v)),
                None => Ok(Choice::Auto),
            }
        };
        let forced32 = |v: Option<u32>, what: &str| -> Result<Choice<u32>> {
            match v {
                Some(0) => Err(AppError::Config(format!("{what} must be >= 1"))),
                Some(v) => Ok(Choice::Forced(v)),
                None => Ok(Choice::Auto),
            }
        };
        let mut o = burn_sparse_gnn::GraphOptions::default();
        o.group_width = forced(self.group_width, "--group-width")?;
        o.hot_cols = forced(self.hot_cols, "--hot-cols")?;
        if let Some(w) = self.cold_group_width {
            o.cold_group_width = w.max(1);
        }
        let k = &mut o.kernels;
        k.spmm.tile_features = forced(self.spmm_tile, "--spmm-tile")?;
        k.spmm.max_lanes = forced32(self.spmm_lanes, "--spmm-lanes")?;
        k.spmm.threads = forced32(self.spmm_threads, "--spmm-threads")?;
        k.spmm.unroll = forced32(self.spmm_unroll, "--spmm-unroll")?;
        k.hot.min_width = forced(self.hot_min_width, "--hot-min-width")?;
        k.hot.tile_bytes = forced(self.hot_tile_bytes, "--hot-tile-bytes")?;
        k.hot.threads = forced32(self.hot_threads, "--hot-threads")?;
        k.hot.blocks = forced(self.hot_blocks, "--hot-blocks")?;
        if self.no_planes {
            k.planes = burn_sparse_gnn::PlaneUse::SharedMemory;
        }
        if self.maxk_radix {
            k.maxk = burn_sparse_gnn::kernels::config::MaxkSelect::Radix;
        }
        Ok(o)
    }
}

#[derive(Subcommand)]
pub enum GenKind {
    /// R-MAT graph (symmetrised, deduplicated, relabelled) with random features and labels.
    Rmat {
        #[arg(long, default_value_t = 232_965)]
        nodes: usize,
        /// Target number of directed edges.
        #[arg(long, default_value_t = 129_362_596)]
        edges: usize,
        #[arg(long, default_value_t = 0.45)]
        a: f64,
        #[arg(long, default_value_t = 0.22)]
        b: f64,
        #[arg(long, default_value_t = 0.22)]
        c: f64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Random feature width (0: structure only).
        #[arg(long, default_value_t = 602)]
        features: usize,
        #[arg(long, default_value_t = 41)]
        classes: usize,
        #[arg(long)]
        out: PathBuf,
    },
    /// Stochastic block model with class-correlated features (the built-in default dataset).
    Sbm {
        #[arg(long, default_value_t = 3000)]
        nodes: usize,
        #[arg(long, default_value_t = 5)]
        classes: usize,
        #[arg(long, default_value_t = 10)]
        avg_degree: usize,
        #[arg(long, default_value_t = 0.8)]
        homophily: f64,
        #[arg(long, default_value_t = 64)]
        features: usize,
        #[arg(long, default_value_t = 17)]
        seed: u64,
        #[arg(long)]
        out: PathBuf,
    },
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
