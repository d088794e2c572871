//! `train-app`: train, evaluate, predict, self-test and benchmark sparse GNNs on CUDA, wgpu or
//! the CPU. `cli` defines the commands and options, `commands` runs them.

mod cli;
mod commands;

use clap::{CommandFactory, FromArgMatches};
use cli::{Cli, PoolsArg};

fn main() {
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let pools = match cli.memory_pools {
        PoolsArg::Exact => burn_sparse_gnn::memory::PoolMode::Exact,
        PoolsArg::Pooled => burn_sparse_gnn::memory::PoolMode::Pooled,
    };
    if let Err(e) = burn_sparse_gnn::memory::set_pool_mode(pools) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
    // the environment is read here, not in the library
    if let Some(font) = std::env::var_os("SGNN_CHART_FONT") {
        train_app::charts::prefer_font(font);
    }
    if let Err(e) = commands::run(cli, &matches) {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
