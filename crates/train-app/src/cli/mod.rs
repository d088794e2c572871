//! The command line: every command and its options (clap). The `train` options are
//! [`TrainConfig`] itself, so flags, config-file keys and `config.json` share names and defaults.
//!
//! By command: [`train`] (its options beyond [`TrainConfig`], the spread over devices and
//! processes, resume), [`bench`] (`bench` and `bench-train`), [`data`] (`partition`, `info`,
//! `export`, `gen`), and here the commands themselves with `eval`, `predict` and `selftest`.

pub mod bench;
pub mod data;
pub mod train;

pub use bench::{BenchArgs, BenchTrainArgs};
pub use data::{ExportArgs, GenKind, InfoArgs, PartitionArgs};
pub use train::{RankTransportArg, TrainArgs};

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use train_app::backend::BackendKind;

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
    /// `pooled` (CubeCL's default pages and slices). `auto`: pooled for graph classification
    /// (`--task graph`) and mini-batch training (`--training minibatch`), whose batches differ
    /// in size every step, exact otherwise.
    #[arg(long, global = true, value_enum, default_value = "auto")]
    pub memory_pools: PoolsArg,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PoolsArg {
    Auto,
    Exact,
    Pooled,
}

impl Cli {
    /// Whether the command trains or times batches of varying sizes: graph classification or
    /// mini-batch training.
    pub fn varying_batches(&self) -> bool {
        use train_app::training::{Task, Training};
        match &self.command {
            Some(Command::Train(a)) => a.cfg.task == Task::Graph || a.cfg.training == Training::Minibatch,
            Some(Command::BenchTrain(a)) => a.task == Task::Graph || a.training == Training::Minibatch,
            _ => false,
        }
    }
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
    /// these nodes only, in the file's order (default: every node). A link run: the nodes whose
    /// best new neighbours `--top-k` lists.
    #[arg(long)]
    pub nodes: Option<PathBuf>,
    /// A link run: a CSV of node pairs `source,destination` (a header row allowed) to score
    /// into `scores.csv` (score and probability per pair).
    #[arg(long)]
    pub pairs: Option<PathBuf>,
    /// A link run: the K best-scored new neighbours of each node of `--nodes`, into `top_k.csv`.
    #[arg(long)]
    pub top_k: Option<usize>,
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
