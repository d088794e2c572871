//! Peak device-memory sampling for benchmarks. CubeCL's memory pools report the bytes held by
//! live tensors at the moment they are asked, not a peak. While sampling is on, every sparse
//! kernel launch of the `CubeBackend` implementation (forward and backward) records the bytes in
//! use just after its output is allocated, so the recorded maximum follows the live-tensor peak
//! through the backward pass at the granularity of the sparse ops. Off by default (the query
//! goes through the compute client).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

static SAMPLING: AtomicBool = AtomicBool::new(false);
static PEAK: AtomicU64 = AtomicU64::new(0);

/// Starts sampling (and resets the recorded peak).
pub fn start_peak_sampling() {
    PEAK.store(0, Ordering::SeqCst);
    SAMPLING.store(true, Ordering::SeqCst);
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
