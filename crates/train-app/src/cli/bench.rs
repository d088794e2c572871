//! The options of `bench` and `bench-train`.

use super::train::SpreadArgs;
use clap::Args;
use std::path::PathBuf;
use train_app::backend::BackendKind;
use train_app::error::{AppError, Result};

/// The models `bench-train` accepts: every convolution of `gnn_models::ConvKind`, by name.
fn conv_names() -> clap::builder::PossibleValuesParser {
    use clap::ValueEnum;
    clap::builder::PossibleValuesParser::new(
        gnn_models::ConvKind::value_variants().iter().filter_map(ValueEnum::to_possible_value),
    )
}

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
    #[arg(long, value_delimiter = ',', default_value = "sage,gcn", value_parser = conv_names())]
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
    /// What the timed steps train: node classification, or link prediction (the classic
    /// stack of `--layers` convolutions, `--hidden` wide, to `--embedding`; dot decoder, one
    /// negative per positive, no dropout, as `bench/pyg_link.py --time` trains).
    #[arg(long, value_enum, default_value_t = train_app::training::Task::Node)]
    pub task: train_app::training::Task,
    /// Node classification: full-graph epochs, or mini-batch training (`sample`, `batch` and
    /// `train_epoch` records per batch size of `--batch-sizes`; `--fanouts`).
    #[arg(long, value_enum, default_value_t = train_app::training::Training::Full)]
    pub training: train_app::training::Training,
    /// Mini-batch: the fan-outs, hop 1 first (default 15,10,5, then 5).
    #[arg(long, value_delimiter = ',')]
    pub fanouts: Vec<usize>,
    /// Mini-batch: batches built ahead of the step on a second thread (CPU and wgpu only).
    #[arg(long, default_value_t = 0)]
    pub prefetch: usize,
    /// Graph classification (`--task graph`, `--dataset` a TU folder): graphs per batch, one
    /// record each; mini-batch training: seed nodes per batch.
    #[arg(long, value_delimiter = ',', default_value = "128")]
    pub batch_sizes: Vec<usize>,
    /// Graph classification: how a graph's node states are pooled.
    #[arg(long, value_enum, default_value_t = gnn_models::Readout::Sum)]
    pub readout: gnn_models::Readout,
    /// Link prediction: the embedding width.
    #[arg(long, default_value_t = 64)]
    pub embedding: usize,
    /// Link prediction: the pair decoder (the dot product is what `bench/pyg_link.py --time`
    /// trains).
    #[arg(long, value_enum, default_value_t = gnn_train::link::Decoder::Dot)]
    pub decoder: gnn_train::link::Decoder,
    /// Link prediction: write the split the steps train on into this folder (`link-split/`),
    /// for the peer script.
    #[arg(long)]
    pub link_split: Option<PathBuf>,
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

/// The ops `bench` times.
pub const BENCH_OPS: [&str; 10] =
    ["spmm", "sddmm", "sampled", "maxk", "cbsr_spgemm", "cbsr_sspmm", "maxpool", "matmul", "launch", "all"];

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
