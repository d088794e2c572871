//! Host memory: what this machine can still give a request, so that a file or a flag that would
//! need more is refused with an error instead of aborting the process.

/// Bytes of memory available to new allocations (Linux: `MemAvailable` of `/proc/meminfo`),
/// or `None` where the system does not say.
pub fn host_available_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    text.lines().find_map(|l| {
        let rest = l.strip_prefix("MemAvailable:")?;
        let kib: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kib.saturating_mul(1024))
    })
}

/// `bytes` in GiB with two decimals, for messages.
pub fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

#[cfg(test)]
mod tests {
    #[test]
    fn available_memory_is_read_on_linux() {
        if cfg!(target_os = "linux") {
            let b = super::host_available_bytes().expect("MemAvailable");
            assert!(b > 1 << 20);
        }
    }
}
