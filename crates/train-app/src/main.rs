//! `train-app`: train, evaluate, self-test and benchmark sparse GNNs on CUDA, wgpu or the CPU.

mod backend;
mod bench;
mod datasets;
mod error;
mod gen;
mod npyio;
mod selftest;

use backend::{dispatch, BackendKind};
use burn_sparse_gnn::BuildOptions;
use clap::{Args, Parser, Subcommand};
use error::{AppError, Result};
use std::path::PathBuf;

#[derive(Parser)]
#[command(name = "train-app", version = concat!(env!("CARGO_PKG_VERSION"), " ", env!("SGNN_GIT_COMMIT")), about = "Sparse GNN training on Burn: CUDA, wgpu or CPU")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
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
    },
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
    /// Ops: spmm, sddmm, sampled, maxk, cbsr_spgemm, cbsr_sspmm, maxpool, all.
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
    #[arg(long, default_value_t = 256)]
    group_width: usize,
    /// Device name recorded in the results (e.g. "NVIDIA H200").
    #[arg(long)]
    device_name: Option<String>,
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
    Ok((
        a.trim().replace('_', "").parse().map_err(|_| bad())?,
        b.trim().replace('_', "").parse().map_err(|_| bad())?,
    ))
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        None => Err(AppError::Config(
            "training lands with the train-app issue; see `train-app --help` for what works now"
                .into(),
        )),
        Some(Command::Selftest {
            backend,
            quick,
            filter,
        }) => dispatch(backend, selftest::SelfTest { quick, filter }),
        Some(Command::Info { dataset }) => {
            let d = datasets::load(&dataset, BuildOptions::default())?;
            println!("{:#?}", d.stats());
            Ok(())
        }
        Some(Command::Gen { kind }) => match kind {
            GenKind::Rmat {
                nodes,
                edges,
                a,
                b,
                c,
                seed,
                features,
                classes,
                out,
            } => {
                let start = std::time::Instant::now();
                let adj = gen::rmat(&gen::RmatSpec {
                    nodes,
                    edges,
                    a,
                    b,
                    c,
                    seed,
                })?;
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
                    let name = out
                        .file_name()
                        .map(|s| s.to_string_lossy().to_string())
                        .unwrap_or_else(|| "rmat".into());
                    let d = gen::random_node_data(adj, &name, features, classes, seed)?;
                    datasets::npy::save(&d, &out)
                }
            }
            GenKind::Sbm {
                nodes,
                classes,
                avg_degree,
                homophily,
                features,
                seed,
                out,
            } => {
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
                    let name = dir
                        .file_name()
                        .map(|s| s.to_string_lossy().to_string())
                        .unwrap_or_else(|| "graph".into());
                    (
                        name,
                        datasets::npy::read_adjacency(dir, n, BuildOptions::default())?,
                    )
                }
                (None, Some(spec)) => {
                    let (nodes, edges) = parse_rmat(spec)?;
                    (
                        format!("rmat-{nodes}-{edges}"),
                        gen::rmat(&gen::RmatSpec {
                            nodes,
                            edges,
                            ..gen::RmatSpec::reddit_scale()
                        })?,
                    )
                }
                (None, None) => {
                    return Err(AppError::Config(
                        "bench needs --graph DIR or --rmat NODES:EDGES".into(),
                    ))
                }
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
                group_width: a.group_width.max(1),
                device_name: a.device_name,
            };
            dispatch(a.backend, job).map(|_| ())
        }
    }
}

fn main() {
    let cli = Cli::parse();
    if let Err(e) = run(cli) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
