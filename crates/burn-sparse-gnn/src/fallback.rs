//! Host fallbacks of the `CubeBackend` implementation: a kernel the device cannot take (e.g. a
//! MaxK row larger than shared memory) runs the CPU implementation instead, with device ->
//! host -> device copies. That is chosen explicitly, logged once per kernel (`log` warning) and
//! counted, so benchmarks can report it; it is never silent.

use sparse_gnn_kernels::KernelError;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

static COUNT: AtomicUsize = AtomicUsize::new(0);
static LOGGED: Mutex<Vec<&'static str>> = Mutex::new(Vec::new());

/// How many sparse ops of this process ran on the host because the device could not take their
/// kernel.
pub fn host_fallbacks() -> usize {
    COUNT.load(Ordering::Relaxed)
}

/// Records that `op` runs on the host because of `err`.
pub(crate) fn record(op: &'static str, err: &KernelError) {
    COUNT.fetch_add(1, Ordering::Relaxed);
    let mut logged = LOGGED.lock().unwrap_or_else(|e| e.into_inner());
    if !logged.contains(&op) {
        logged.push(op);
        log::warn!("{err}: {op} runs on the host (device -> host -> device copies)");
    }
}
