//! The options of the data commands: `partition`, `info`, `export` and `gen`.

use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Args)]
pub struct PartitionArgs {
    /// Dataset path.
    #[arg(long)]
    pub dataset: String,
    /// Numbers of parts (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "2")]
    pub parts: Vec<usize>,
    /// Partitioner.
    #[arg(long, default_value = "multilevel", value_parser = clap::builder::PossibleValuesParser::new(["multilevel", "metis", "greedy", "contiguous"]))]
    pub method: String,
    /// Write each partition to `<cache>-<parts>.part` (what --partition-cache reads).
    #[arg(long)]
    pub cache: Option<PathBuf>,
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
