//! Host memory: what this machine can still give a request, so that a file or a flag that would
//! need more is refused with an error instead of aborting the process.

use crate::error::{AppError, Result};

/// Bytes of memory available to new allocations: `MemAvailable` of `/proc/meminfo`, or less
/// where a memory limit of this process's cgroup leaves less ([`cgroup_room_bytes`]); `None`
/// where the system says neither.
pub fn host_available_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok().and_then(|text| {
        text.lines().find_map(|l| {
            let rest = l.strip_prefix("MemAvailable:")?;
            let kib: u64 = rest.trim().trim_end_matches("kB").trim().parse().ok()?;
            Some(kib.saturating_mul(1024))
        })
    });
    match (meminfo, cgroup_room_bytes()) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// What the memory limits of this process's cgroup and of the cgroups above it still leave
/// (Linux; the least of them): cgroup v2 `memory.max` less `memory.current`, v1
/// `memory.limit_in_bytes` less `memory.usage_in_bytes`, the inactive file cache (which the
/// kernel reclaims before it refuses) not counted as used. `None` without a limit.
pub fn cgroup_room_bytes() -> Option<u64> {
    let read = |p: &std::path::Path| std::fs::read_to_string(p).ok();
    let own = read(std::path::Path::new("/proc/self/cgroup")).unwrap_or_default();
    let mut room: Option<u64> = None;
    let mut least = |r: Option<u64>| {
        if let Some(r) = r {
            room = Some(room.map_or(r, |x| x.min(r)));
        }
    };
    // v2: the unified hierarchy, "0::/path"
    if let Some(path) = own.lines().find_map(|l| l.strip_prefix("0::")) {
        let mut dir = std::path::PathBuf::from("/sys/fs/cgroup").join(path.trim().trim_start_matches('/'));
        loop {
            least(cgroup_room(
                read(&dir.join("memory.max")).as_deref(),
                read(&dir.join("memory.current")).as_deref(),
                read(&dir.join("memory.stat")).as_deref(),
                "inactive_file",
            ));
            if dir == std::path::Path::new("/sys/fs/cgroup") || !dir.pop() {
                break;
            }
        }
    }
    // v1: the memory controller's hierarchy
    let v1 = std::path::Path::new("/sys/fs/cgroup/memory");
    least(cgroup_room(
        read(&v1.join("memory.limit_in_bytes")).as_deref(),
        read(&v1.join("memory.usage_in_bytes")).as_deref(),
        read(&v1.join("memory.stat")).as_deref(),
        "total_inactive_file",
    ));
    room
}

/// A cgroup's room from the texts of its limit, its usage and its `memory.stat` (whose
/// `inactive` line counts reclaimable cache): `None` where there is no limit (`max`, or v1's
/// page-rounded `i64::MAX`) or the limit is unreadable.
fn cgroup_room(limit: Option<&str>, usage: Option<&str>, stat: Option<&str>, inactive: &str) -> Option<u64> {
    let limit: u64 = limit?.trim().parse().ok()?;
    if limit >= 1 << 62 {
        return None;
    }
    let usage: u64 = usage.and_then(|u| u.trim().parse().ok()).unwrap_or(0);
    let cache: u64 = stat
        .and_then(|s| {
            s.lines().find_map(|l| {
                let (k, v) = l.split_once(' ')?;
                (k == inactive).then(|| v.trim().parse().ok()).flatten()
            })
        })
        .unwrap_or(0);
    Some(limit.saturating_sub(usage.saturating_sub(cache)))
}

/// This process's resident host memory now and at its peak (Linux: `VmRSS` and `VmHWM` of
/// `/proc/self/status`), or `None` where the system does not say.
pub fn host_resident_bytes() -> Option<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let kib: u64 = l.strip_prefix(name)?.trim().trim_end_matches("kB").trim().parse().ok()?;
            Some(kib.saturating_mul(1024))
        })
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}

/// `; host memory X resident, peak Y` for progress lines of long steps (empty where the
/// system does not say).
pub fn host_resident_note() -> String {
    match host_resident_bytes() {
        Some((now, peak)) => format!("; host memory {} resident, peak {}", gib(now), gib(peak)),
        None => String::new(),
    }
}

/// Refuses a request of `need` bytes that the host's available memory cannot hold, with a
/// [`AppError::TooLarge`] naming `what` (built only when refused). Passes where the system does
/// not say how much memory is available.
pub fn check_fits(need: u64, what: impl FnOnce() -> String) -> Result<()> {
    match host_available_bytes() {
        Some(avail) if need > avail => Err(AppError::TooLarge {
            what: what(),
            need_bytes: need,
            limit_bytes: avail,
            limit: "the host's available memory".into(),
        }),
        _ => Ok(()),
    }
}

/// Makes room for one more element of `v`, growing it (by doubling) only after checking the
/// growth against the host's available memory: a vector filled from a stream of unknown
/// length (a gzipped CSV, say) ends in an error, not in an aborted process.
pub fn reserve_one<T>(v: &mut Vec<T>, what: impl FnOnce() -> String) -> Result<()> {
    if v.len() < v.capacity() {
        return Ok(());
    }
    let extra = v.capacity().max(1024);
    let need = (extra as u64).saturating_mul(std::mem::size_of::<T>().max(1) as u64);
    let avail = host_available_bytes();
    if let Some(avail) = avail.filter(|&a| need > a) {
        return Err(AppError::TooLarge {
            what: what(),
            need_bytes: need,
            limit_bytes: avail,
            limit: "the host's available memory".into(),
        });
    }
    v.try_reserve(extra).map_err(|_| AppError::TooLarge {
        what: what(),
        need_bytes: need,
        limit_bytes: avail.unwrap_or(0),
        limit: "what the allocator could give".into(),
    })
}

/// Pushes `value` onto `v` after [`reserve_one`].
pub fn push_checked<T>(v: &mut Vec<T>, value: T, what: impl FnOnce() -> String) -> Result<()> {
    reserve_one(v, what)?;
    v.push(value);
    Ok(())
}

pub use crate::error::gib;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resident_memory_is_read_where_the_system_says() {
        if !std::path::Path::new("/proc/self/status").exists() {
            return;
        }
        let (now, peak) = host_resident_bytes().expect("VmRSS and VmHWM on Linux");
        assert!(now > 0 && peak >= now, "resident {now}, peak {peak}");
        let note = host_resident_note();
        assert!(note.starts_with("; host memory ") && note.contains("resident, peak"), "{note}");
    }

    #[test]
    fn requests_beyond_the_available_memory_are_refused() {
        if host_available_bytes().is_none() {
            return;
        }
        let e = check_fits(u64::MAX, || "a test request".into()).unwrap_err().to_string();
        assert!(e.contains("a test request needs") && e.contains("available memory"), "{e}");
        assert!(check_fits(1, || unreachable!()).is_ok());
        let mut v: Vec<u64> = Vec::new();
        for i in 0..5000 {
            push_checked(&mut v, i, || unreachable!()).unwrap();
        }
        assert_eq!(v.len(), 5000);
    }
    #[test]
    fn a_cgroup_limit_leaves_its_limit_less_what_is_used() {
        let stat = "anon 100\ninactive_file 300\nactive_file 5\n";
        assert_eq!(cgroup_room(Some("8000\n"), Some("1000\n"), Some(stat), "inactive_file"), Some(7300));
        assert_eq!(cgroup_room(Some("max\n"), Some("1000\n"), Some(stat), "inactive_file"), None);
        assert_eq!(cgroup_room(Some("9223372036854771712"), Some("1"), None, "total_inactive_file"), None);
        assert_eq!(cgroup_room(Some("500"), Some("900"), None, "inactive_file"), Some(0));
        assert_eq!(cgroup_room(None, Some("1"), None, "inactive_file"), None);
    }

    #[test]
    fn available_memory_is_read_on_linux() {
        if cfg!(target_os = "linux") {
            let b = super::host_available_bytes().expect("MemAvailable");
            assert!(b > 1 << 20);
        }
    }
}
