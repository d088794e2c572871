//! The communicator of a multi-process run ([`Comm`]) over a host transport ([`HostComm`]),
//! its buffer pool and statistics, and the choice of what moves the halo rows.

use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Why a collective failed.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum CommError {
    /// A rank, world size or buffer count that does not fit.
    #[error("{0}")]
    Config(String),
    /// The ranks did not all meet in time.
    #[error("rendezvous at {addr}: {msg}")]
    Rendezvous {
        /// The rendezvous address.
        addr: String,
        /// What went wrong.
        msg: String,
    },
    /// Reading from or writing to a peer failed (the peer stopped, or the link broke).
    #[error("rank {rank}: exchange with rank {peer} failed: {msg}")]
    Io {
        /// This rank.
        rank: usize,
        /// The peer rank.
        peer: usize,
        /// The I/O error.
        msg: String,
    },
    /// A peer sent what the protocol does not allow (another program, or a bug).
    #[error("rank {rank}: rank {peer} sent {msg}")]
    Protocol {
        /// This rank.
        rank: usize,
        /// The peer rank.
        peer: usize,
        /// What the peer sent.
        msg: String,
    },
    /// Rows that do not match their routes (the ranks run different partitions or models).
    #[error("rank {rank}: rank {peer} sent {got} bytes where {expected} were due")]
    Size {
        /// This rank.
        rank: usize,
        /// The peer rank.
        peer: usize,
        /// Bytes received.
        got: usize,
        /// Bytes due.
        expected: usize,
    },
}

/// A transport between the ranks of a run: `rank()` of `world()`.
pub trait HostComm: Send + Sync + std::fmt::Debug {
    /// This process's rank, `0..world()`.
    fn rank(&self) -> usize;
    /// Number of ranks.
    fn world(&self) -> usize;
    /// Sends `out[q]` to rank `q` for every `q` and returns what every rank sent this one
    /// (`out[rank()]` comes back as it is). Every rank calls it, in the same order. The
    /// buffers it receives into come from `pool`, and those it sent go back there.
    fn all_to_all(&self, out: Vec<Vec<u8>>, pool: &BufferPool) -> Result<Vec<Vec<u8>>, CommError>;
}

/// Byte buffers kept for reuse by the collectives. A buffer that held as many bytes before
/// needs no fresh pages: on a GPU host, faulting in a fresh allocation of a few hundred MB
/// took longer than the copy into it (see `docs/MULTI_GPU.md`).
#[derive(Debug, Default)]
pub struct BufferPool {
    free: Mutex<Vec<Vec<u8>>>,
}

impl BufferPool {
    /// Buffers kept at most; beyond, the smallest are dropped.
    const KEEP: usize = 16;

    /// An empty buffer with room for `len` bytes: the smallest kept one that has it, else the
    /// largest kept one grown (or a new one). Errors when the memory cannot be had.
    pub fn take(&self, len: usize) -> Result<Vec<u8>, std::collections::TryReserveError> {
        if len == 0 {
            return Ok(Vec::new());
        }
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        let fits = free.iter().enumerate().filter(|(_, b)| b.capacity() >= len).min_by_key(|(_, b)| b.capacity());
        let at = match fits {
            Some((i, _)) => Some(i),
            None => free.iter().enumerate().max_by_key(|(_, b)| b.capacity()).map(|(i, _)| i),
        };
        let mut b = at.map(|i| free.swap_remove(i)).unwrap_or_default();
        drop(free);
        b.clear();
        b.try_reserve_exact(len)?;
        Ok(b)
    }

    /// Keeps `b` for a later [`BufferPool::take`].
    pub fn give(&self, b: Vec<u8>) {
        if b.capacity() == 0 {
            return;
        }
        let mut free = self.free.lock().unwrap_or_else(|e| e.into_inner());
        free.push(b);
        if free.len() > Self::KEEP {
            free.sort_by_key(|b| std::cmp::Reverse(b.capacity()));
            free.truncate(Self::KEEP);
        }
    }
}

/// A shared handle on a transport (clones share it), poisoned by the first failed collective.
#[derive(Clone, Debug)]
pub struct Comm {
    inner: Arc<CommInner>,
}

#[derive(Debug)]
struct CommInner {
    transport: Box<dyn HostComm>,
    failed: Mutex<Option<CommError>>,
    stats: Mutex<CommStats>,
    pool: BufferPool,
    /// The NCCL communicator the halo rows move through, once [`Comm::setup_rows`] made it.
    #[cfg(feature = "cuda")]
    nccl: std::sync::OnceLock<crate::dist::nccl::RankNccl>,
}

/// What moves a rank's halo rows (and their gradients) to the other ranks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RowTransport {
    /// The [`HostComm`] transport: device -> host -> transport -> host -> device.
    #[default]
    Host,
    /// NCCL between the ranks' GPUs (one communicator over all ranks, bootstrapped through
    /// the host transport): the rows stay on the devices.
    Nccl,
}

/// Which [`RowTransport`] a run asks for ([`Comm::setup_rows`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum RowTransportChoice {
    /// NCCL where every rank is on a CUDA device of its own with NCCL loadable, else the host.
    #[default]
    Auto,
    /// Always the host transport.
    Host,
    /// NCCL, or an error saying why not.
    Nccl,
}

/// What a [`Comm`] moved and how long it took, since it was made or since the last
/// [`Comm::take_stats`]. The seconds are wall-clock time on this rank: `transport_seconds`
/// includes waiting for the slowest rank, `readback_seconds` includes waiting for the device
/// work queued before the rows it reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CommStats {
    /// Collectives run ([`Comm::all_to_all`] calls).
    pub collectives: u64,
    /// Bytes sent to other ranks.
    pub bytes_sent: u64,
    /// Bytes received from other ranks.
    pub bytes_received: u64,
    /// Seconds inside the transport.
    pub transport_seconds: f64,
    /// Seconds reading exchanged rows back from the device (halo exchanges).
    pub readback_seconds: f64,
    /// Seconds uploading received rows to the device (halo exchanges).
    pub upload_seconds: f64,
}

impl CommStats {
    /// All seconds spent on the exchange (transport, readback and upload).
    pub fn seconds(&self) -> f64 {
        self.transport_seconds + self.readback_seconds + self.upload_seconds
    }
}

impl Comm {
    /// A handle on `transport`.
    pub fn new(transport: impl HostComm + 'static) -> Self {
        Self {
            inner: Arc::new(CommInner {
                transport: Box::new(transport),
                failed: Mutex::new(None),
                stats: Mutex::new(CommStats::default()),
                pool: BufferPool::default(),
                #[cfg(feature = "cuda")]
                nccl: std::sync::OnceLock::new(),
            }),
        }
    }

    /// What moves the halo rows (the host transport until [`Comm::setup_rows`] sets up NCCL).
    pub fn row_transport(&self) -> RowTransport {
        #[cfg(feature = "cuda")]
        if self.inner.nccl.get().is_some() {
            return RowTransport::Nccl;
        }
        RowTransport::Host
    }

    /// This rank's NCCL communicator, once set up.
    #[cfg(feature = "cuda")]
    pub(crate) fn nccl(&self) -> Option<&crate::dist::nccl::RankNccl> {
        self.inner.nccl.get()
    }

    /// Picks what moves the halo rows, the same on every rank (a collective: every rank calls
    /// it, with the same `choice`). `device` is this rank's CUDA device index
    /// ([`TransferOps::nccl_device`](crate::dist::transfer::TransferOps::nccl_device); `None` on
    /// other backends). NCCL is used when every rank has a CUDA device, NCCL loads everywhere and,
    /// for [`RowTransportChoice::Auto`], no two ranks share a GPU (NCCL refuses that); rank 0 then
    /// makes a unique id, sends it through the host transport and every rank joins the
    /// communicator. With [`RowTransportChoice::Nccl`] a rank that cannot gives an error on every
    /// rank; with `Auto` every rank falls back to the host transport. A rank that fails inside
    /// NCCL's own set-up may leave the others waiting there: stop them (`train --processes` stops
    /// the other ranks when one fails).
    pub fn setup_rows(&self, device: Option<usize>, choice: RowTransportChoice) -> Result<RowTransport, CommError> {
        if choice == RowTransportChoice::Host || self.row_transport() == RowTransport::Nccl {
            return Ok(self.row_transport());
        }
        let (rank, world) = (self.rank(), self.world());
        let refuse = |why: String| match choice {
            RowTransportChoice::Nccl => Err(CommError::Config(format!("the NCCL row transport: {why}"))),
            _ => {
                log::info!("halo rows move through the host transport: {why}");
                Ok(RowTransport::Host)
            }
        };
        // every rank's device identity ("" where it has no CUDA device or no NCCL)
        let identity: Result<String, String> = match device {
            #[cfg(feature = "cuda")]
            Some(d) if crate::dist::nccl::available() => crate::dist::nccl::device_identity(d).map_err(|e| e.0),
            #[cfg(feature = "cuda")]
            Some(_) => Err("libnccl.so not found".into()),
            _ => Err("not on a CUDA device".into()),
        };
        let mine = identity.as_ref().map(|s| s.as_bytes().to_vec()).unwrap_or_default();
        let ids = self.all_to_all(vec![mine; world])?;
        let missing: Vec<usize> = (0..world).filter(|&q| ids[q].is_empty()).collect();
        if !missing.is_empty() {
            let own = identity.err().map(|e| format!(" (rank {rank}: {e})")).unwrap_or_default();
            return refuse(format!("rank(s) {missing:?} cannot use NCCL{own}"));
        }
        if choice == RowTransportChoice::Auto {
            for q in 1..world {
                if let Some(p) = (0..q).find(|&p| ids[p] == ids[q]) {
                    return refuse(format!("ranks {p} and {q} share the GPU {}", String::from_utf8_lossy(&ids[q])));
                }
            }
        }
        #[cfg(feature = "cuda")]
        {
            let d = device.expect("every rank has a device (checked above)");
            let id = match rank {
                0 => crate::dist::nccl::unique_id().map_err(|e| log::warn!("{}", e.0)).unwrap_or_default(),
                _ => Vec::new(),
            };
            let id = self.broadcast(id)?;
            if id.is_empty() {
                return refuse("rank 0 could not make an NCCL unique id".into());
            }
            let joined = crate::dist::nccl::init_rank(d, world, rank, &id);
            let flag = joined.as_ref().map(|_| Vec::new()).unwrap_or_else(|e| e.0.as_bytes().to_vec());
            let flags = self.all_to_all(vec![flag; world])?;
            let failed: Vec<String> = flags
                .iter()
                .enumerate()
                .filter(|(_, f)| !f.is_empty())
                .map(|(q, f)| format!("rank {q}: {}", String::from_utf8_lossy(f)))
                .collect();
            if !failed.is_empty() {
                return refuse(failed.join("; "));
            }
            let joined = joined.expect("no rank failed");
            let _ = self.inner.nccl.set(joined);
            Ok(RowTransport::Nccl)
        }
        #[cfg(not(feature = "cuda"))]
        refuse("this build has no CUDA".into())
    }

    /// Counts one collective that ran on the devices (NCCL): its bytes, and the seconds it
    /// took to queue (the transfer itself runs on the device, in order with the kernels).
    pub(crate) fn record_device(&self, sent: usize, received: usize, seconds: f64) {
        self.record(|s| {
            s.collectives += 1;
            s.bytes_sent += sent as u64;
            s.bytes_received += received as u64;
            s.transport_seconds += seconds;
        });
    }

    /// The buffers this handle's collectives receive into: give back the buffers they return
    /// once read, and take the buffers to send from it.
    pub fn pool(&self) -> &BufferPool {
        &self.inner.pool
    }

    /// What this handle (and its clones) moved since it was made or last taken.
    pub fn stats(&self) -> CommStats {
        *self.inner.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// [`Comm::stats`], resetting them to zero (e.g. once per epoch).
    pub fn take_stats(&self) -> CommStats {
        std::mem::take(&mut *self.inner.stats.lock().unwrap_or_else(|e| e.into_inner()))
    }

    pub(crate) fn record(&self, f: impl FnOnce(&mut CommStats)) {
        f(&mut self.inner.stats.lock().unwrap_or_else(|e| e.into_inner()));
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.inner.transport.rank()
    }

    /// Number of ranks.
    pub fn world(&self) -> usize {
        self.inner.transport.world()
    }

    /// The first error of a collective (`Ok` while none failed). A collective run by a
    /// backward pass reports its failure here; check after every backward pass.
    pub fn check(&self) -> Result<(), CommError> {
        match self.inner.failed.lock().unwrap_or_else(|e| e.into_inner()).as_ref() {
            Some(e) => Err(e.clone()),
            None => Ok(()),
        }
    }

    pub(crate) fn poison(&self, e: CommError) {
        let mut failed = self.inner.failed.lock().unwrap_or_else(|e| e.into_inner());
        if failed.is_none() {
            *failed = Some(e);
        }
    }

    /// [`HostComm::all_to_all`]; fails at once on a poisoned handle, and poisons it on failure.
    pub fn all_to_all(&self, out: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>, CommError> {
        self.check()?;
        if out.len() != self.world() {
            return Err(CommError::Config(format!("all_to_all got {} buffers for {} ranks", out.len(), self.world())));
        }
        let rank = self.rank();
        let sent: usize = out.iter().enumerate().filter(|&(q, _)| q != rank).map(|(_, b)| b.len()).sum();
        let start = Instant::now();
        let got = self.inner.transport.all_to_all(out, &self.inner.pool).inspect_err(|e| self.poison(e.clone()))?;
        let seconds = start.elapsed().as_secs_f64();
        let received: usize = got.iter().enumerate().filter(|&(q, _)| q != rank).map(|(_, b)| b.len()).sum();
        self.record(|s| {
            s.collectives += 1;
            s.bytes_sent += sent as u64;
            s.bytes_received += received as u64;
            s.transport_seconds += seconds;
        });
        Ok(got)
    }

    /// Waits until every rank reached it.
    pub fn barrier(&self) -> Result<(), CommError> {
        self.all_to_all(vec![Vec::new(); self.world()]).map(|_| ())
    }

    /// Rank 0's `bytes` on every rank (the others' argument is ignored).
    pub fn broadcast(&self, bytes: Vec<u8>) -> Result<Vec<u8>, CommError> {
        let world = self.world();
        let out = match self.rank() {
            0 => vec![bytes; world],
            _ => vec![Vec::new(); world],
        };
        let mut got = self.all_to_all(out)?;
        Ok(std::mem::take(&mut got[0]))
    }

    /// The element-wise sum of every rank's `values`, added in rank order, so every rank gets
    /// the same bits. Errors when the ranks' lengths differ.
    pub fn all_reduce_sum(&self, values: &[f64]) -> Result<Vec<f64>, CommError> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.sum_words(bytes, values.len(), 8, |c| f64::from_le_bytes(c.try_into().expect("chunks of 8 bytes")))
    }

    /// [`Comm::all_reduce_sum`] of f32 values, sent as f32 (half the bytes) and added in f64
    /// in rank order: the same sums as the f64 call on the same values.
    pub fn all_reduce_sum_f32(&self, values: &[f32]) -> Result<Vec<f64>, CommError> {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.sum_words(bytes, values.len(), 4, |c| {
            f64::from(f32::from_le_bytes(c.try_into().expect("chunks of 4 bytes")))
        })
    }

    /// Every rank's `bytes` (`len` words of `size` bytes) summed word by word in rank order.
    fn sum_words(
        &self,
        bytes: Vec<u8>,
        len: usize,
        size: usize,
        word: impl Fn(&[u8]) -> f64,
    ) -> Result<Vec<f64>, CommError> {
        let got = self.all_to_all(vec![bytes; self.world()])?;
        let mut sum = vec![0.0f64; len];
        for (peer, b) in got.iter().enumerate() {
            if b.len() != len * size {
                let e = CommError::Size { rank: self.rank(), peer, got: b.len(), expected: len * size };
                self.poison(e.clone());
                return Err(e);
            }
            for (s, c) in sum.iter_mut().zip(b.chunks_exact(size)) {
                *s += word(c);
            }
        }
        Ok(sum)
    }
}
