//! The partition cache file: a graph's fingerprint ([`GraphFingerprint`]), writing and reading
//! an assignment with it ([`Partition::save`], [`Partition::load`]).

use super::assignment::{check_assignment, Partition, PartitionError, PartitionMethod};
use crate::graph::csr::Csr;
use rayon::prelude::*;
use serde::Serialize;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Identity of a graph's structure for partition caches: node count, edge count and a 64-bit
/// hash of the row pointer and column indices (edge weights are not part of it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct GraphFingerprint {
    /// Number of nodes.
    pub n_nodes: u64,
    /// Number of edges.
    pub nnz: u64,
    /// Hash of `row_ptr` and `col_idx`.
    pub hash: u64,
}

impl GraphFingerprint {
    /// The fingerprint of `adj` (one parallel pass over its arrays).
    pub fn of(adj: &Csr) -> Self {
        let rp = hash_words(adj.row_ptr(), |&v| v as u64);
        let ci = hash_words(adj.col_idx(), |&v| v as u64);
        let mut h = mix(SEED_HASH, adj.n_rows() as u64);
        h = mix(h, adj.n_cols() as u64);
        h = mix(h, rp);
        h = mix(h, ci);
        Self { n_nodes: adj.n_rows() as u64, nnz: adj.nnz() as u64, hash: fmix(h) }
    }
}

impl Partition {
    /// Writes the assignment with `adj`'s fingerprint to `path` (atomically: a temporary file
    /// in the same folder renamed over `path`). Format: see [`Partition::load`].
    pub fn save(&self, adj: &Csr, path: impl AsRef<Path>) -> Result<(), PartitionError> {
        self.check(adj)?;
        write_cache(path.as_ref(), self, &GraphFingerprint::of(adj))
    }

    /// Reads a partition written by [`Partition::save`] for the graph `adj`.
    ///
    /// The file (little-endian) holds a magic `SGNNPART`, a format version, the method, parts,
    /// seed, the graph's node count, edge count and structure hash, the assignment (`u32` per
    /// node) and a checksum of all of it. The loaded `parts`, `method` and `seed` say what the
    /// partition was computed with; comparing them with the wanted options is the caller's.
    ///
    /// # Errors
    /// [`PartitionError::CacheMismatch`] when the file was written for another graph,
    /// [`PartitionError::CacheCorrupt`] for a truncated, damaged or foreign file,
    /// [`PartitionError::Io`] when it cannot be read.
    pub fn load(path: impl AsRef<Path>, adj: &Csr) -> Result<Self, PartitionError> {
        read_cache(path.as_ref(), &GraphFingerprint::of(adj))
    }
}

// ---------------------------------------------------------------------------------------------
// hashing and the cache file

const SEED_HASH: u64 = 0x5347_4e4e_5041_5254;
const MAGIC: &[u8; 8] = b"SGNNPART";
const VERSION: u32 = 1;
/// magic, version, method, parts, seed, n_nodes, nnz, graph hash
const HEADER: usize = 8 + 4 + 4 + 8 + 8 + 8 + 8 + 8;
/// Elements hashed per parallel chunk (fixed, so the hash does not depend on the thread count).
const HASH_CHUNK: usize = 1 << 16;

fn mix(h: u64, x: u64) -> u64 {
    (h.rotate_left(23) ^ x).wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// MurmurHash3's 64-bit finaliser.
fn fmix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

fn hash_words<T: Sync>(data: &[T], word: impl Fn(&T) -> u64 + Sync) -> u64 {
    let chunks: Vec<u64> =
        data.par_chunks(HASH_CHUNK).map(|c| fmix(c.iter().fold(SEED_HASH, |h, x| mix(h, word(x))))).collect();
    fmix(chunks.iter().fold(mix(SEED_HASH, data.len() as u64), |h, &x| mix(h, x)))
}

fn checksum(bytes: &[u8]) -> u64 {
    hash_words(bytes, |&b| b as u64)
}

/// Makes the temporary file names of concurrent writers in one process distinct.
static TMP_COUNTER: AtomicUsize = AtomicUsize::new(0);

pub(super) fn write_cache(path: &Path, p: &Partition, fp: &GraphFingerprint) -> Result<(), PartitionError> {
    let mut bytes = Vec::with_capacity(HEADER + 4 * p.assignment.len() + 8);
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&VERSION.to_le_bytes());
    bytes.extend_from_slice(&p.method.code().to_le_bytes());
    bytes.extend_from_slice(&(p.parts as u64).to_le_bytes());
    bytes.extend_from_slice(&p.seed.to_le_bytes());
    bytes.extend_from_slice(&fp.n_nodes.to_le_bytes());
    bytes.extend_from_slice(&fp.nnz.to_le_bytes());
    bytes.extend_from_slice(&fp.hash.to_le_bytes());
    for &q in &p.assignment {
        bytes.extend_from_slice(&q.to_le_bytes());
    }
    let sum = checksum(&bytes);
    bytes.extend_from_slice(&sum.to_le_bytes());

    let io = |source| PartitionError::Io { path: path.to_path_buf(), source };
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "partition".into());
    let tmp = path.with_file_name(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        TMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(&bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)
    })();
    result.map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        io(e)
    })
}

pub(super) fn read_cache(path: &Path, fp: &GraphFingerprint) -> Result<Partition, PartitionError> {
    let bytes = std::fs::read(path).map_err(|source| PartitionError::Io { path: path.to_path_buf(), source })?;
    let corrupt = |reason: String| PartitionError::CacheCorrupt { path: path.to_path_buf(), reason };
    if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
        return Err(corrupt("not a partition cache (bad magic)".into()));
    }
    if bytes.len() < HEADER + 8 {
        return Err(corrupt(format!("{} bytes, shorter than the {}-byte header", bytes.len(), HEADER + 8)));
    }
    let u32_at = |o: usize| u32::from_le_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]]);
    let u64_at = |o: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&bytes[o..o + 8]);
        u64::from_le_bytes(b)
    };
    let version = u32_at(8);
    if version != VERSION {
        return Err(corrupt(format!("format version {version}, this build reads {VERSION}")));
    }
    let n_nodes = u64_at(32);
    let expected = usize::try_from(n_nodes)
        .ok()
        .and_then(|n| n.checked_mul(4))
        .and_then(|b| b.checked_add(HEADER + 8))
        .ok_or_else(|| corrupt(format!("node count {n_nodes} is impossible")))?;
    if bytes.len() != expected {
        return Err(corrupt(format!("{} bytes, expected {expected} for {n_nodes} nodes (truncated?)", bytes.len())));
    }
    let body = &bytes[..bytes.len() - 8];
    if checksum(body) != u64_at(bytes.len() - 8) {
        return Err(corrupt("checksum mismatch".into()));
    }
    let method =
        PartitionMethod::from_code(u32_at(12)).ok_or_else(|| corrupt(format!("unknown method {}", u32_at(12))))?;
    let parts = u64_at(16);
    let seed = u64_at(24);
    let found = GraphFingerprint { n_nodes, nnz: u64_at(40), hash: u64_at(48) };
    if found != *fp {
        let reason = if found.n_nodes != fp.n_nodes {
            format!("written for {} nodes, the graph has {}", found.n_nodes, fp.n_nodes)
        } else if found.nnz != fp.nnz {
            format!("written for {} edges, the graph has {}", found.nnz, fp.nnz)
        } else {
            format!("structure hash {:016x}, the graph's is {:016x}", found.hash, fp.hash)
        };
        return Err(PartitionError::CacheMismatch { path: path.to_path_buf(), reason });
    }
    let parts = usize::try_from(parts)
        .ok()
        .filter(|&p| p >= 1 && p as u64 <= n_nodes.max(1))
        .ok_or_else(|| corrupt(format!("{parts} parts")))?;
    let assignment: Vec<u32> =
        body[HEADER..].chunks_exact(4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
    if let Err(e) = check_assignment(&assignment, n_nodes as usize, parts) {
        return Err(corrupt(e.to_string()));
    }
    Ok(Partition { parts, assignment, method, seed })
}
