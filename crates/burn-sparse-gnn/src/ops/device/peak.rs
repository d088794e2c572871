//! Peak device-memory sampling for benchmarks. CubeCL's memory pools report the bytes held by
//! live tensors at the moment they are asked, not a peak. While sampling is on, every sparse
//! kernel, dense product (cuBLAS or Burn's matmul), ReLU + dropout and row-scaling launch of the
//! `CubeBackend` implementation (forward and backward) records the bytes in use just after its
//! output is allocated (the SpMM adds the staging rows it holds while it runs), so the recorded
//! maximum follows the live-tensor peak through the backward pass at the granularity of those
//! ops (Burn's own element-wise ops are not sampled). Off by default (the query goes through the
//! compute client).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static SAMPLING: AtomicBool = AtomicBool::new(false);
static PEAK: AtomicU64 = AtomicU64::new(0);
static PEAK_DEVICE: AtomicU64 = AtomicU64::new(0);

/// Starts sampling (and resets the recorded peaks).
pub fn start_peak_sampling() {
    PEAK.store(0, Ordering::SeqCst);
    PEAK_DEVICE.store(0, Ordering::SeqCst);
    SAMPLING.store(true, Ordering::SeqCst);
}

/// The largest device memory in use as the driver reports it (`total - free`: every pool, the
/// driver's own caches, the context, the libraries) seen at the sampled launches since the
/// last [`start_peak_sampling`]; 0 where the backend does not report it (CUDA does).
pub fn device_peak() -> u64 {
    PEAK_DEVICE.load(Ordering::SeqCst)
}

/// Records the driver's bytes in use when sampling is on.
pub fn record_device(bytes_used: u64) {
    if sampling() {
        PEAK_DEVICE.fetch_max(bytes_used, Ordering::SeqCst);
    }
}

/// Stops sampling and returns the largest number of bytes in use seen since the start.
pub fn stop_peak_sampling() -> u64 {
    SAMPLING.store(false, Ordering::SeqCst);
    PEAK.swap(0, Ordering::SeqCst)
}

/// Whether sampling is on.
pub fn sampling() -> bool {
    SAMPLING.load(Ordering::Relaxed)
}

/// Records `bytes_in_use` when sampling is on.
pub fn record(bytes_in_use: u64) {
    if sampling() {
        PEAK.fetch_max(bytes_in_use, Ordering::SeqCst);
    }
}

/// How CubeCL's memory pools hold device memory (CUDA and wgpu), a process-wide choice made
/// before the first device is used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum PoolMode {
    /// Every buffer is allocated at its exact size (rounded to 512 bytes) and reused only for
    /// tensors of that size (CubeCL's persistent pool, enforced). Full-graph training allocates
    /// the same sizes every epoch, so after the first epoch nothing new is allocated and the
    /// reserved bytes stay close to the live peak.
    #[default]
    Exact,
    /// CubeCL's default pools: large pages cut into slices (sizes rounded up to the page of
    /// their class, pages kept for the life of the process).
    Pooled,
}

/// Error of [`set_pool_mode`].
#[derive(Debug, thiserror::Error)]
#[error("the memory pool mode must be chosen before the first device is used")]
pub struct PoolModeTooLate;

/// Chooses how CubeCL's pools hold device memory for this process. Call it before any device
/// is used: CubeCL reads its configuration once (from `cubecl.toml` and its own `CUBECL_*`
/// variables, which are kept; only the pool mode is set here).
pub fn set_pool_mode(mode: PoolMode) -> Result<(), PoolModeTooLate> {
    use cubecl::config::memory::PersistentMemory;
    use cubecl::config::{CubeClRuntimeConfig, RuntimeConfig};
    let mut state = CubeClRuntimeConfig::storage().lock();
    if state.is_some() {
        return Err(PoolModeTooLate);
    }
    let mut cfg = CubeClRuntimeConfig::from_current_dir().override_from_env();
    cfg.memory.persistent_memory = match mode {
        PoolMode::Exact => PersistentMemory::Enforced,
        PoolMode::Pooled => PersistentMemory::Enabled,
    };
    *state = Some(std::sync::Arc::new(cfg));
    EXACT_POOLS.store(mode == PoolMode::Exact, Ordering::SeqCst);
    Ok(())
}

static EXACT_POOLS: AtomicBool = AtomicBool::new(false);

/// The pool mode chosen by [`set_pool_mode`] (CubeCL's own default, [`PoolMode::Pooled`]'s
/// behaviour, if it was never called).
pub fn pool_mode() -> PoolMode {
    if EXACT_POOLS.load(Ordering::SeqCst) {
        PoolMode::Exact
    } else {
        PoolMode::Pooled
    }
}
