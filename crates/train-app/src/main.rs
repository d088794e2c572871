//! `train-app`: train, evaluate, predict, self-test and benchmark sparse GNNs on CUDA, wgpu or
//! the CPU. `cli` defines the commands and options, `commands` runs them.

mod cli;
mod commands;

use clap::{CommandFactory, FromArgMatches};
use cli::{Cli, PoolsArg};

/// mimalloc instead of the system allocator: the CPU backend allocates and frees its arrays for
/// every tensor op, which glibc's allocator serves from fresh pages (mmap) above its threshold.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    quiet_vulkan_device_selection();
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let pools = match cli.memory_pools {
        PoolsArg::Exact => burn_sparse_gnn::memory::PoolMode::Exact,
        PoolsArg::Pooled => burn_sparse_gnn::memory::PoolMode::Pooled,
        // a batch of graphs differs in size every step: exact-size buffers would never be reused
        PoolsArg::Auto if cli.varying_batches() => burn_sparse_gnn::memory::PoolMode::Pooled,
        PoolsArg::Auto => burn_sparse_gnn::memory::PoolMode::Exact,
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

/// Turns off Mesa's Vulkan device-selection layer where no Wayland compositor is there for it to
/// ask. The layer (an implicit layer of `mesa-vulkan-drivers`) asks a Wayland compositor for the
/// default GPU while wgpu lists the adapters (`--backend auto` probes wgpu twice), and
/// libwayland prints `error: XDG_RUNTIME_DIR is invalid or not set in the environment.` each
/// time where `XDG_RUNTIME_DIR` is not an absolute path, as on a server or in a container. The
/// layer only orders the adapters, which wgpu and CubeCL pick by type anyway; its own switch
/// `NODEVICE_SELECT=1` (from its manifest) turns it off, unless the caller set that variable.
/// Runs first in `main`, before any thread starts, as setting a variable requires.
fn quiet_vulkan_device_selection() {
    let runtime_dir = std::env::var_os("XDG_RUNTIME_DIR").is_some_and(|d| d.to_string_lossy().starts_with('/'));
    if !runtime_dir && std::env::var_os("NODEVICE_SELECT").is_none() {
        std::env::set_var("NODEVICE_SELECT", "1");
    }
}
