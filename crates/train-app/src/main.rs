//! `train-app`: train, evaluate, self-test and benchmark sparse GNNs on CUDA, wgpu or the CPU.

use burn_sparse_gnn::BuildOptions;
use clap::{Args, Parser, Subcommand};
use error::{AppError, Result};
use std::path::PathBuf;
use train_app::backend::{dispatch, BackendKind};
use train_app::{bench, datasets, error, gen, npyio, selftest};

#[derive(Parser)]
#[command(name = "train-app", version = concat!(env!("CARGO_PKG_VERSION"), " ", env!("SGNN_GIT_COMMIT")), about = "Sparse GNN training on Burn: CUDA, wgpu or CPU")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// How the GPU memory pools hold memory: `exact` (buffers of the exact sizes the work
    /// allocates, reused for the same sizes: reserved memory stays close to what is in use) or
    /// `pooled` (CubeCL's default pages and slices).
    #[arg(long, global = true, value_enum, default_value = "exact")]
    memory_pools: PoolsArg,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PoolsArg {
    Exact,
    Pooled,
}

#[derive(Subcommand)]
enum Command {
    /// Train a model full-batch (the default command: GCN on the built-in SBM dataset).
    Train(TrainArgs),
    /// Evaluate a trained model (its artifact directory) on the train / valid / test splits.
    Eval {
        /// Artifact directory of a `train` run (holds config.json and model.mpk).
        dir: PathBuf,
        #[arg(long, value_enum, default_value = "auto")]
        backend: BackendKind,
        /// Evaluate on another dataset path than the one of the run.
        #[arg(long)]
        dataset: Option<String>,
    },
    /// Run the conformance suite (kernels vs the CPU reference, forward and gradients).
    Selftest {
        #[arg(long, value_enum, default_value = "auto")]
        backend: BackendKind,
        /// Smaller hub row (2,000 edges instead of 10,000).
        #[arg(long)]
        quick: bool,
        /// Only the ops whose name contains this string.
        #[arg(long)]
        filter: Option<String>,
    },
    /// Time the kernels (JSON lines: bench/README.md).
    Bench(BenchArgs),
    /// Generate a synthetic graph into an npy folder.
    Gen {
        #[command(subcommand)]
        kind: GenKind,
    },
    /// Print statistics of a dataset.
    Info {
        /// Dataset path or built-in name (`sbm`).
        dataset: String,
        /// Print the statistics as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Time full-batch training epochs (forward + backward + Adam step) of models on a dataset.
    BenchTrain(BenchTrainArgs),
    /// Write a dataset (with its split, e.g. a seeded per-class split) as an npy folder, so that
    /// peers train on exactly the same data.
    Export {
        /// Dataset path or `sbm`.
        #[arg(long)]
        dataset: String,
        /// Split to apply (per-class:T,V | random:T,V | mask:K); the dataset's own by default.
        #[arg(long)]
        split: Option<String>,
        #[arg(long, default_value_t = 42)]
        seed: u64,
        #[arg(long)]
        out: PathBuf,
    },
}

#[derive(Args, Default)]
struct TrainArgs {
    /// Config file (TOML or JSON, fields of `TrainConfig`); flags override it.
    #[arg(long)]
    config: Option<PathBuf>,
    #[arg(long, value_enum)]
    backend: Option<BackendKind>,
    /// Dataset path (npy folder, .npz, OGB / GraphSAINT folder) or `sbm`.
    #[arg(long)]
    dataset: Option<String>,
    /// per-class:TRAIN,VALID | random:TRAIN,VALID | mask:K.
    #[arg(long)]
    split: Option<String>,
    /// gcn, sage, gin, gat.
    #[arg(long)]
    model: Option<String>,
    #[arg(long)]
    hidden: Option<usize>,
    #[arg(long)]
    layers: Option<usize>,
    /// relu, maxk:K, maxpool:W[xC][:2d].
    #[arg(long)]
    nonlin: Option<String>,
    #[arg(long)]
    dropout: Option<f64>,
    /// none or layernorm.
    #[arg(long)]
    norm: Option<String>,
    /// f32, mixedf16, mixedbf16.
    #[arg(long)]
    precision: Option<String>,
    /// SAGE aggregation: mean, sum, maxpool.
    #[arg(long)]
    sage_aggr: Option<String>,
    #[arg(long)]
    heads: Option<usize>,
    /// GAT attention dropout.
    #[arg(long)]
    attention_dropout: Option<f64>,
    #[arg(long)]
    epochs: Option<usize>,
    #[arg(long)]
    lr: Option<f64>,
    #[arg(long)]
    weight_decay: Option<f64>,
    /// Early stopping: epochs without validation-loss improvement.
    #[arg(long)]
    patience: Option<usize>,
    #[arg(long)]
    seed: Option<u64>,
    #[arg(long)]
    self_loops: bool,
    #[arg(long)]
    symmetrize: bool,
    /// Non-deterministic atomic SSpMM backward (faster MaxK training).
    #[arg(long)]
    atomic: bool,
    #[arg(long)]
    group_width: Option<usize>,
    /// Artifact directory (checkpoints, model, results.json, charts).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Resume from this checkpoint epoch of the artifact directory.
    #[arg(long)]
    resume: Option<usize>,
    /// Do not write checkpoints.
    #[arg(long)]
    no_checkpoints: bool,
    /// Classic architecture: convolutions `d_in -> hidden -> classes`, no lin_in / lin_out.
    #[arg(long)]
    classic: bool,
    #[arg(long)]
    input_dropout: Option<f64>,
    /// Row-normalise the input features.
    #[arg(long)]
    normalize_features: bool,
    /// Print a line every N epochs (plain log).
    #[arg(long)]
    log_every: Option<usize>,
    /// Model to keep and report: `last` (epoch) or `best-valid` (highest validation accuracy).
    #[arg(long)]
    select: Option<String>,
    /// GIN's half-safe aggregation `(1 + eps) x + LAMBDA * mean` instead of the sum (HalfGNN:
    /// the sum of a high-degree row overflows f16), e.g. 0.1.
    #[arg(long)]
    gin_lambda: Option<f64>,
}

fn parse_enum<T: serde::de::DeserializeOwned>(what: &str, v: &str) -> Result<T> {
    serde_json::from_value(serde_json::Value::String(v.to_lowercase()))
        .map_err(|_| AppError::Config(format!("unknown {what} `{v}`")))
}

fn train_config(a: &TrainArgs) -> Result<train_app::training::TrainConfig> {
    let mut c = match &a.config {
        Some(p) => train_app::training::TrainConfig::from_file(p)?,
        None => Default::default(),
    };
    if let Some(v) = &a.dataset {
        c.dataset = v.clone();
    }
    if let Some(v) = &a.split {
        c.split = Some(v.clone());
    }
    if let Some(v) = &a.model {
        c.conv = parse_enum("model", v)?;
    }
    if let Some(v) = a.hidden {
        c.hidden = v;
    }
    if let Some(v) = a.layers {
        c.layers = v;
    }
    if let Some(v) = &a.nonlin {
        c.nonlin = v.clone();
    }
    if let Some(v) = a.dropout {
        c.dropout = v;
    }
    if let Some(v) = &a.norm {
        c.norm = parse_enum("norm", v)?;
    }
    if let Some(v) = &a.precision {
        c.precision = parse_enum("precision", v)?;
    }
    if let Some(v) = &a.sage_aggr {
        c.sage_aggr = parse_enum("SAGE aggregation", v)?;
    }
    if let Some(v) = a.heads {
        c.gat_heads = v;
    }
    if let Some(v) = a.attention_dropout {
        c.gat_attention_dropout = v;
    }
    if let Some(v) = a.epochs {
        c.epochs = v;
    }
    if let Some(v) = a.lr {
        c.lr = v;
    }
    if let Some(v) = a.weight_decay {
        c.weight_decay = v;
    }
    if let Some(v) = a.patience {
        c.patience = Some(v);
    }
    if let Some(v) = a.seed {
        c.seed = v;
    }
    c.self_loops |= a.self_loops;
    c.symmetrize |= a.symmetrize;
    c.atomic |= a.atomic;
    if let Some(v) = a.group_width {
        c.group_width = Some(v);
    }
    if let Some(v) = &a.out {
        c.artifact_dir = v.clone();
    }
    if a.no_checkpoints {
        c.checkpoints = false;
    }
    if a.classic {
        c.linear_io = false;
    }
    if let Some(v) = a.input_dropout {
        c.input_dropout = v;
    }
    c.normalize_features |= a.normalize_features;
    if let Some(v) = a.log_every {
        c.log_every = v;
    }
    if let Some(v) = &a.select {
        c.select = parse_enum("model selection", v)?;
    }
    if let Some(v) = a.gin_lambda {
        c.gin_half_safe_lambda = Some(v);
    }
    c.check()?;
    Ok(c)
}

struct TrainJob {
    cfg: train_app::training::TrainConfig,
    resume: Option<usize>,
}

impl train_app::backend::Job for TrainJob {
    type Output = ();
    fn run<B: burn_sparse_gnn::SparseGnnAutodiffBackend>(self, device: B::Device, backend: &str) -> Result<()> {
        let data = datasets::load(&self.cfg.dataset, BuildOptions::default())?;
        let stats = data.stats();
        eprintln!(
            "dataset {}: {} nodes, {} edges, {} features, {} classes",
            stats.name, stats.nodes, stats.edges, stats.features, stats.classes
        );
        let host = train_app::training::prepare(&self.cfg, data)?;
        let report = train_app::training::train::<B>(&self.cfg, host, &device, backend, self.resume)?;
        let a = &report.final_accuracy;
        let last = report.epochs.last();
        println!(
            "{} {} on {} ({backend}): {} epochs in {:.1} s{}; accuracy{} train {:.4} valid {:.4} test {:.4}",
            report.config.conv.name(),
            report.config.nonlin,
            report.dataset.name,
            report.epochs.len(),
            report.train_seconds,
            last.and_then(|e| e.device_bytes_reserved)
                .map(|b| format!(", device memory {:.2} GiB", b as f64 / (1u64 << 30) as f64))
                .unwrap_or_default(),
            match (report.config.select, report.selected_epoch) {
                (train_app::training::ModelSelection::BestValid, Some(e)) => format!(" of epoch {e} (best valid)"),
                _ => String::new(),
            },
            a.train,
            a.valid,
            a.test
        );
        println!("results: {}", report.config.artifact_dir.join("results.json").display());
        Ok(())
    }
}

struct EvalJob {
    dir: PathBuf,
    dataset: Option<String>,
}

impl train_app::backend::Job for EvalJob {
    type Output = ();
    fn run<B: burn_sparse_gnn::SparseGnnAutodiffBackend>(self, device: B::Device, _backend: &str) -> Result<()> {
        let (cfg, a) = train_app::training::eval::<B::InnerBackend>(&self.dir, self.dataset.as_deref(), &device)?;
        println!(
            "{} on {}: accuracy train {:.4} valid {:.4} test {:.4} (test loss {:.4})",
            cfg.conv.name(),
            cfg.dataset,
            a.train,
            a.valid,
            a.test,
            a.test_loss
        );
        Ok(())
    }
}

#[derive(Args)]
struct BenchTrainArgs {
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendKind,
    /// Dataset (npy folder with features and labels).
    #[arg(long)]
    dataset: String,
    /// Models: gcn, sage, gin, gat.
    #[arg(long, value_delimiter = ',', default_value = "sage,gcn")]
    models: Vec<String>,
    /// Nonlinearities: relu, maxk:K, maxpool:W.
    #[arg(long, value_delimiter = ',', default_value = "relu,maxk:32")]
    nonlins: Vec<String>,
    /// Precisions: f32, mixedf16, mixedbf16.
    #[arg(long, value_delimiter = ',', default_value = "f32")]
    precisions: Vec<String>,
    #[arg(long, default_value_t = 4)]
    layers: usize,
    #[arg(long, default_value_t = 256)]
    hidden: usize,
    #[arg(long, default_value_t = 10)]
    epochs: usize,
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// Atomic SSpMM backward for MaxK.
    #[arg(long)]
    atomic: bool,
    /// Edge-group width of the aggregation kernels (the `train` default when omitted).
    #[arg(long)]
    group_width: Option<usize>,
    #[arg(long)]
    out: Option<PathBuf>,
    #[arg(long)]
    device_name: Option<String>,
}

struct BenchTrainJob(BenchTrainArgs);

impl train_app::backend::Job for BenchTrainJob {
    type Output = ();
    fn run<B: burn_sparse_gnn::SparseGnnAutodiffBackend>(self, device: B::Device, backend: &str) -> Result<()> {
        let a = self.0;
        let data = datasets::load(&a.dataset, BuildOptions::default())?;
        let name = a.device_name.clone().unwrap_or_else(|| backend.to_string());
        let mut file = match &a.out {
            Some(p) => {
                Some(std::fs::OpenOptions::new().create(true).append(true).open(p).map_err(|e| AppError::io(p, e))?)
            }
            None => None,
        };
        // one prepared graph (and device upload) per graph option set
        let mut batchers: std::collections::HashMap<(bool, Option<usize>, bool, bool), train_app::training::FullGraphBatcher> =
            Default::default();
        for m in &a.models {
            for nl in &a.nonlins {
                for p in &a.precisions {
                    let mut cfg = train_app::training::TrainConfig {
                        dataset: a.dataset.clone(),
                        conv: parse_enum("model", m)?,
                        hidden: a.hidden,
                        layers: a.layers,
                        nonlin: nl.clone(),
                        precision: parse_enum("precision", p)?,
                        dropout: 0.5,
                        atomic: a.atomic,
                        checkpoints: false,
                        ..Default::default()
                    };
                    if let Some(w) = a.group_width {
                        cfg.group_width = Some(w);
                    }
                    cfg.check()?;
                    // graph options differ by self-loops, group width, atomic kernels and precision (no
                    // hot-column split for half-precision aggregation)
                    let key = (
                        cfg.conv == gnn_models::ConvKind::Gat || cfg.self_loops,
                        cfg.group_width,
                        cfg.atomic,
                        cfg.precision.half().is_some(),
                    );
                    if !batchers.contains_key(&key) {
                        let host = train_app::training::prepare(&cfg, data.clone())?;
                        batchers.insert(key, train_app::training::FullGraphBatcher::new(std::sync::Arc::new(host), 0));
                    }
                    let tb = train_app::trainbench::TrainBench { cfg, epochs: a.epochs, warmup: a.warmup };
                    let rec = match train_app::trainbench::run::<B>(&tb, &batchers[&key], &device, &name) {
                        Ok(r) => r,
                        Err(e) => {
                            eprintln!("{m} {nl} {p}: {e}");
                            continue;
                        }
                    };
                    let line = serde_json::to_string(&rec).expect("record serialises");
                    println!("{line}");
                    if let (Some(f), Some(path)) = (file.as_mut(), a.out.as_ref()) {
                        use std::io::Write;
                        writeln!(f, "{line}").map_err(|e| AppError::io(path, e))?;
                    }
                }
            }
        }
        Ok(())
    }
}

#[derive(Args)]
struct BenchArgs {
    #[arg(long, value_enum, default_value = "auto")]
    backend: BackendKind,
    /// npy folder of the graph (or generate one with --rmat).
    #[arg(long, conflicts_with = "rmat")]
    graph: Option<PathBuf>,
    /// Generate an R-MAT graph in memory: NODES:EDGES.
    #[arg(long)]
    rmat: Option<String>,
    /// Ops: spmm, sddmm, sampled, maxk, cbsr_spgemm, cbsr_sspmm, maxpool, matmul (the dense products
    /// of linear layers over all nodes), all.
    #[arg(long, value_delimiter = ',', default_value = "spmm")]
    ops: Vec<String>,
    #[arg(long, value_delimiter = ',', default_value = "32,64,128,256")]
    widths: Vec<usize>,
    /// MaxK k values (hidden 256).
    #[arg(long, value_delimiter = ',', default_value = "8,16,32,64")]
    ks: Vec<usize>,
    /// ES-SpMM sample widths.
    #[arg(long, value_delimiter = ',', default_value = "16,32,64,128,256,512")]
    samples: Vec<usize>,
    #[arg(long, default_value_t = 20)]
    runs: usize,
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// Append the JSON lines to this file.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Device name recorded in the results (e.g. "NVIDIA H200").
    #[arg(long)]
    device_name: Option<String>,
    /// Storage types of the SpMM timings: f32, f16, bf16.
    #[arg(long, value_delimiter = ',', default_value = "f32")]
    dtypes: Vec<String>,
    #[command(flatten)]
    kernels: KernelArgs,
}

/// Forced kernel launch shapes (benchmarks): every option left out is chosen by the measured
/// heuristics (`sparse_gnn_kernels::heuristics`).
#[derive(Args, Clone, Debug, Default)]
struct KernelArgs {
    /// Edge-group width of the SpMM family and the SDDMM.
    #[arg(long)]
    group_width: Option<usize>,
    /// Hot columns split off for the two-pass f32 SpMM (0: no split).
    #[arg(long)]
    hot_cols: Option<usize>,
    /// Edge-group width of the cold edges of a split structure.
    #[arg(long)]
    cold_group_width: Option<usize>,
    /// Features per SpMM tile.
    #[arg(long)]
    spmm_tile: Option<usize>,
    /// Most lanes per SpMM slot.
    #[arg(long)]
    spmm_lanes: Option<u32>,
    /// Threads per SpMM cube.
    #[arg(long)]
    spmm_threads: Option<u32>,
    /// Edges loaded ahead per SpMM lane.
    #[arg(long)]
    spmm_unroll: Option<u32>,
    /// Narrowest width the hot-column split runs at.
    #[arg(long)]
    hot_min_width: Option<usize>,
    /// Bytes of a hot column's row per shared-memory tile.
    #[arg(long)]
    hot_tile_bytes: Option<usize>,
    /// Threads per hot-pass cube.
    #[arg(long)]
    hot_threads: Option<u32>,
    /// Hot-pass cubes.
    #[arg(long)]
    hot_blocks: Option<usize>,
    /// Use the shared-memory fallbacks instead of plane (warp) operations.
    #[arg(long)]
    no_planes: bool,
    /// MaxK selection by the radix histogram at every width.
    #[arg(long)]
    maxk_radix: bool,
}

impl KernelArgs {
    /// The graph options these flags force (the rest: defaults).
    fn graph_options(&self) -> Result<burn_sparse_gnn::GraphOptions> {
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
enum GenKind {
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

fn parse_rmat(s: &str) -> Result<(usize, usize)> {
    let bad = || AppError::Config(format!("--rmat expects NODES:EDGES, got `{s}`"));
    let (a, b) = s.split_once(':').ok_or_else(bad)?;
    Ok((a.trim().replace('_', "").parse().map_err(|_| bad())?, b.trim().replace('_', "").parse().map_err(|_| bad())?))
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        None => run(Cli { command: Some(Command::Train(TrainArgs::default())), ..cli }),
        Some(Command::Train(a)) => {
            let cfg = train_config(&a)?;
            dispatch(a.backend.unwrap_or(BackendKind::Auto), TrainJob { cfg, resume: a.resume })
        }
        Some(Command::Eval { dir, backend, dataset }) => dispatch(backend, EvalJob { dir, dataset }),
        Some(Command::Selftest { backend, quick, filter }) => dispatch(backend, selftest::SelfTest { quick, filter }),
        Some(Command::BenchTrain(a)) => dispatch(a.backend, BenchTrainJob(a)),
        Some(Command::Export { dataset, split, seed, out }) => {
            let d = datasets::load(&dataset, BuildOptions::default())?;
            let d = train_app::training::apply_split(d, split.as_deref(), seed)?;
            datasets::npy::save(&d, &out)?;
            let s = d.stats();
            eprintln!(
                "exported {} ({} nodes, {} edges, split {:?}) to {}",
                s.name,
                s.nodes,
                s.edges,
                s.split_sizes,
                out.display()
            );
            Ok(())
        }
        Some(Command::Info { dataset, json }) => {
            let d = datasets::load(&dataset, BuildOptions::default())?;
            let stats = d.stats();
            if json {
                println!("{}", serde_json::to_string_pretty(&stats).expect("stats serialise"));
            } else {
                println!("{stats}");
            }
            Ok(())
        }
        Some(Command::Gen { kind }) => match kind {
            GenKind::Rmat { nodes, edges, a, b, c, seed, features, classes, out } => {
                let name = out.file_name().map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| "rmat".into());
                if features > 0 {
                    // refuse impossible node data before spending minutes on the edges
                    gen::check_node_data(&name, nodes, features, classes)?;
                }
                let start = std::time::Instant::now();
                let adj = gen::rmat(&gen::RmatSpec { nodes, edges, a, b, c, seed })?;
                let deg = adj.row_degrees();
                eprintln!(
                    "R-MAT: {} nodes, {} edges, max degree {}, {} empty rows ({:.1} s)",
                    adj.n_rows(),
                    adj.nnz(),
                    deg.iter().max().unwrap_or(&0),
                    deg.iter().filter(|&&d| d == 0).count(),
                    start.elapsed().as_secs_f64()
                );
                std::fs::create_dir_all(&out).map_err(|e| AppError::io(&out, e))?;
                if features == 0 {
                    npyio::write(&out.join("num_nodes.npy"), &[], &[nodes as i64])?;
                    datasets::npy::save_adjacency(&adj, &out)
                } else {
                    let d = gen::random_node_data(adj, &name, features, classes, seed)?;
                    datasets::npy::save(&d, &out)
                }
            }
            GenKind::Sbm { nodes, classes, avg_degree, homophily, features, seed, out } => {
                let d = gen::sbm(&gen::SbmSpec {
                    nodes,
                    classes,
                    avg_degree,
                    homophily,
                    features,
                    seed,
                    ..Default::default()
                })?;
                datasets::npy::save(&d, &out)
            }
        },
        Some(Command::Bench(a)) => {
            let (graph_name, adj) = match (&a.graph, &a.rmat) {
                (Some(dir), _) => {
                    let n = datasets::npy::read_num_nodes(dir)?;
                    let name =
                        dir.file_name().map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| "graph".into());
                    (name, datasets::npy::read_adjacency(dir, n, BuildOptions::default())?)
                }
                (None, Some(spec)) => {
                    let (nodes, edges) = parse_rmat(spec)?;
                    (
                        format!("rmat-{nodes}-{edges}"),
                        gen::rmat(&gen::RmatSpec { nodes, edges, ..gen::RmatSpec::reddit_scale() })?,
                    )
                }
                (None, None) => return Err(AppError::Config("bench needs --graph DIR or --rmat NODES:EDGES".into())),
            };
            let job = bench::Bench {
                graph_name,
                adj,
                ops: a.ops,
                widths: a.widths,
                ks: a.ks,
                samples: a.samples,
                runs: a.runs.max(1),
                warmup: a.warmup,
                out: a.out,
                options: a.kernels.graph_options()?,
                device_name: a.device_name,
                dtypes: a.dtypes,
            };
            dispatch(a.backend, job).map(|_| ())
        }
    }
}

fn main() {
    let cli = Cli::parse();
    let pools = match cli.memory_pools {
        PoolsArg::Exact => burn_sparse_gnn::memory::PoolMode::Exact,
        PoolsArg::Pooled => burn_sparse_gnn::memory::PoolMode::Pooled,
    };
    if let Err(e) = burn_sparse_gnn::memory::set_pool_mode(pools) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
    if let Err(e) = run(cli) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
