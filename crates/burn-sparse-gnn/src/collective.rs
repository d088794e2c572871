//! Collectives between processes: the ranks of a multi-process run (one part of a partitioned
//! graph per process, on one host or several) exchange halo rows, gradients and scalars.
//!
//! [`Comm`] is a handle on a [`HostComm`] transport: every collective is an
//! [`HostComm::all_to_all`] of byte buffers, which every rank calls in the same order.
//! [`TcpComm`] is the transport built here: the ranks meet at rank 0's address (a rendezvous
//! that checks every rank runs the same world size and configuration tag), then every
//! collective goes through rank 0 (a star: rank 0 receives every rank's buffers and hands each
//! its own, passing each buffer on as soon as it has read it; every link carries both
//! directions at once). It moves host memory, so it runs with every backend and between hosts.
//! [`Comm::setup_rows`] can move the halo rows GPU to GPU instead: one NCCL communicator over
//! all ranks (CUDA ranks on GPUs of their own), bootstrapped through the host transport; the
//! other collectives stay on the host transport.
//!
//! [`rank_exchange`] is the halo exchange of one rank as a differentiable op: the forward pass
//! sends the rows other ranks read and appends the rows received; the backward pass sends the
//! halo rows' gradients back to their owners and adds the gradients received to the rows that
//! were sent. Both passes are collectives, so every rank runs the same ops in the same order
//! (the same model on every rank does). A collective that fails inside a backward pass cannot
//! return its error: it poisons the [`Comm`] (every later collective fails) and
//! [`Comm::check`] returns the error.

use crate::backend::{CbsrPrim, SparseGnnBackend};
use crate::dense::t2;
use crate::ops::Cbsr;
use crate::rows::RowIndex;
use burn::tensor::backend::Backend;
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn::tensor::{BasicOps, DType, Int, Tensor, TensorData, TensorMetadata, TensorPrimitive};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Why a collective failed.
#[derive(Clone, Debug, thiserror::Error, PartialEq, Eq)]
pub enum CommError {
    /// A rank, world size or buffer count that does not fit.
    #[error("{0}")]
    Config(String),
    /// The ranks did not all meet in time.
    #[error("rendezvous at {addr}: {msg}")]
    Rendezvous { addr: String, msg: String },
    /// Reading from or writing to a peer failed (the peer stopped, or the link broke).
    #[error("rank {rank}: exchange with rank {peer} failed: {msg}")]
    Io { rank: usize, peer: usize, msg: String },
    /// A peer sent what the protocol does not allow (another program, or a bug).
    #[error("rank {rank}: rank {peer} sent {msg}")]
    Protocol { rank: usize, peer: usize, msg: String },
    /// Rows that do not match their routes (the ranks run different partitions or models).
    #[error("rank {rank}: rank {peer} sent {got} bytes where {expected} were due")]
    Size { rank: usize, peer: usize, got: usize, expected: usize },
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
    nccl: std::sync::OnceLock<crate::nccl::RankNccl>,
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
    pub(crate) fn nccl(&self) -> Option<&crate::nccl::RankNccl> {
        self.inner.nccl.get()
    }

    /// Picks what moves the halo rows, the same on every rank (a collective: every rank calls
    /// it, with the same `choice`). `device` is this rank's CUDA device index
    /// ([`crate::backend::SparseGnnBackend::nccl_device`]; `None` on other backends). NCCL is
    /// used when every rank has a CUDA device, NCCL loads everywhere and, for
    /// [`RowTransportChoice::Auto`], no two ranks share a GPU (NCCL refuses that); rank 0 then
    /// makes a unique id, sends it through the host transport and every rank joins the
    /// communicator. With [`RowTransportChoice::Nccl`] a rank that cannot gives an error on
    /// every rank; with `Auto` every rank falls back to the host transport. A rank that fails
    /// inside NCCL's own set-up may leave the others waiting there: stop them (`train
    /// --processes` stops the other ranks when one fails).
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
            Some(d) if crate::nccl::available() => crate::nccl::device_identity(d).map_err(|e| e.0),
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
                0 => crate::nccl::unique_id().map_err(|e| log::warn!("{}", e.0)).unwrap_or_default(),
                _ => Vec::new(),
            };
            let id = self.broadcast(id)?;
            if id.is_empty() {
                return refuse("rank 0 could not make an NCCL unique id".into());
            }
            let joined = crate::nccl::init_rank(d, world, rank, &id);
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

    fn record(&self, f: impl FnOnce(&mut CommStats)) {
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

    fn poison(&self, e: CommError) {
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

// ---- the TCP transport -------------------------------------------------------------------

const MAGIC: &[u8; 8] = b"SGNNRANK";
const VERSION: u32 = 1;

/// Where and how the ranks of a [`TcpComm`] meet.
#[derive(Clone, Debug)]
pub struct TcpCommConfig {
    /// This process's rank, `0..world`.
    pub rank: usize,
    /// Number of ranks.
    pub world: usize,
    /// Rank 0's address (`host:port`): rank 0 listens there, the others connect to it.
    pub addr: String,
    /// A digest of what must agree between the ranks (graph, partition, model, seed): a rank
    /// with another tag is refused at the rendezvous.
    pub tag: u64,
    /// How long the ranks wait for each other at the rendezvous.
    pub connect_timeout: Duration,
    /// How long one read may wait for a peer during training (`None`: until the peer sends or
    /// closes its connection; a stopped process closes it).
    pub io_timeout: Option<Duration>,
}

impl TcpCommConfig {
    /// Rank `rank` of `world` meeting at `addr`, tag 0, a 10-minute rendezvous, no read limit.
    pub fn new(rank: usize, world: usize, addr: impl Into<String>) -> Self {
        Self { rank, world, addr: addr.into(), tag: 0, connect_timeout: Duration::from_secs(600), io_timeout: None }
    }

    fn check(&self) -> Result<(), CommError> {
        if self.world == 0 || self.rank >= self.world {
            return Err(CommError::Config(format!(
                "rank {} of a world of {}: ranks are 0..world",
                self.rank, self.world
            )));
        }
        Ok(())
    }
}

/// The TCP transport (see the module docs): a star through rank 0.
#[derive(Debug)]
pub struct TcpComm {
    rank: usize,
    world: usize,
    /// Rank 0: the stream of every other rank (`None` at its own slot); others: rank 0's.
    streams: Mutex<Vec<Option<TcpStream>>>,
}

impl TcpComm {
    /// Joins the run: rank 0 binds `cfg.addr` and waits for the others, the others connect to
    /// it (retrying until `cfg.connect_timeout`).
    pub fn connect(cfg: &TcpCommConfig) -> Result<Self, CommError> {
        cfg.check()?;
        if cfg.rank == 0 {
            let listener = TcpListener::bind(&cfg.addr).map_err(|e| rendezvous(cfg, format!("cannot listen: {e}")))?;
            return Self::host(listener, cfg);
        }
        let deadline = Instant::now() + cfg.connect_timeout;
        let addrs: Vec<_> =
            cfg.addr.to_socket_addrs().map_err(|e| rendezvous(cfg, format!("not an address: {e}")))?.collect();
        loop {
            let mut last = String::from("no address");
            for a in &addrs {
                match TcpStream::connect_timeout(a, Duration::from_secs(5)) {
                    Ok(s) => return Self::join(s, cfg),
                    Err(e) => last = e.to_string(),
                }
            }
            if Instant::now() >= deadline {
                return Err(rendezvous(cfg, format!("rank 0 did not answer within {:?}: {last}", cfg.connect_timeout)));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Rank 0 on a listener it already bound (e.g. to port 0, then handed its address to the
    /// others): waits for the other ranks.
    pub fn host(listener: TcpListener, cfg: &TcpCommConfig) -> Result<Self, CommError> {
        cfg.check()?;
        if cfg.rank != 0 {
            return Err(CommError::Config(format!("rank {} cannot host the rendezvous (rank 0 does)", cfg.rank)));
        }
        let mut streams: Vec<Option<TcpStream>> = (0..cfg.world).map(|_| None).collect();
        listener.set_nonblocking(true).map_err(|e| rendezvous(cfg, e.to_string()))?;
        let deadline = Instant::now() + cfg.connect_timeout;
        let mut joined = 1;
        while joined < cfg.world {
            match listener.accept() {
                Ok((mut s, _)) => {
                    s.set_nonblocking(false).map_err(|e| rendezvous(cfg, e.to_string()))?;
                    s.set_read_timeout(Some(Duration::from_secs(30))).map_err(|e| rendezvous(cfg, e.to_string()))?;
                    let mut hello = [0u8; 36];
                    if s.read_exact(&mut hello).is_err() || &hello[..8] != MAGIC {
                        continue; // not a rank of this run (a port scan, another program)
                    }
                    let version = u32::from_le_bytes(hello[8..12].try_into().expect("4 bytes"));
                    let world = u64::from_le_bytes(hello[12..20].try_into().expect("8 bytes")) as usize;
                    let rank = u64::from_le_bytes(hello[20..28].try_into().expect("8 bytes")) as usize;
                    let tag = u64::from_le_bytes(hello[28..36].try_into().expect("8 bytes"));
                    let refusal = if version != VERSION {
                        Some(format!("rank {rank} speaks protocol {version}, rank 0 speaks {VERSION}"))
                    } else if world != cfg.world {
                        Some(format!("rank {rank} was started for {world} ranks, rank 0 for {}", cfg.world))
                    } else if rank == 0 || rank >= cfg.world {
                        Some(format!("a rank {rank} joined a world of {}", cfg.world))
                    } else if streams[rank].is_some() {
                        Some(format!("rank {rank} joined twice"))
                    } else if tag != cfg.tag {
                        Some(format!(
                            "rank {rank} runs another configuration (tag {tag:016x}, rank 0 {:016x}): the dataset, \
                             partition, model and seed must agree",
                            cfg.tag
                        ))
                    } else {
                        None
                    };
                    let reply = refusal.as_deref().unwrap_or("");
                    let mut msg = (reply.len() as u32).to_le_bytes().to_vec();
                    msg.extend_from_slice(reply.as_bytes());
                    let _ = s.write_all(&msg);
                    if let Some(r) = refusal {
                        return Err(rendezvous(cfg, r));
                    }
                    setup_stream(&s, cfg).map_err(|e| rendezvous(cfg, e))?;
                    streams[rank] = Some(s);
                    joined += 1;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        let missing: Vec<usize> = (1..cfg.world).filter(|&r| streams[r].is_none()).collect();
                        return Err(rendezvous(
                            cfg,
                            format!("ranks {missing:?} did not join within {:?}", cfg.connect_timeout),
                        ));
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(rendezvous(cfg, e.to_string())),
            }
        }
        Ok(Self { rank: 0, world: cfg.world, streams: Mutex::new(streams) })
    }

    /// Rank `cfg.rank > 0` on its connection to rank 0: says hello, waits for the answer.
    fn join(mut s: TcpStream, cfg: &TcpCommConfig) -> Result<Self, CommError> {
        let mut hello = MAGIC.to_vec();
        hello.extend_from_slice(&VERSION.to_le_bytes());
        hello.extend_from_slice(&(cfg.world as u64).to_le_bytes());
        hello.extend_from_slice(&(cfg.rank as u64).to_le_bytes());
        hello.extend_from_slice(&cfg.tag.to_le_bytes());
        s.write_all(&hello).map_err(|e| rendezvous(cfg, e.to_string()))?;
        let mut len = [0u8; 4];
        s.read_exact(&mut len).map_err(|e| rendezvous(cfg, format!("no answer from rank 0: {e}")))?;
        let len = u32::from_le_bytes(len) as usize;
        if len > 0 {
            let mut msg = vec![0u8; len.min(4096)];
            s.read_exact(&mut msg).map_err(|e| rendezvous(cfg, e.to_string()))?;
            return Err(rendezvous(cfg, format!("refused by rank 0: {}", String::from_utf8_lossy(&msg))));
        }
        setup_stream(&s, cfg).map_err(|e| rendezvous(cfg, e))?;
        let mut streams: Vec<Option<TcpStream>> = (0..cfg.world).map(|_| None).collect();
        streams[0] = Some(s);
        Ok(Self { rank: cfg.rank, world: cfg.world, streams: Mutex::new(streams) })
    }
}

fn rendezvous(cfg: &TcpCommConfig, msg: String) -> CommError {
    CommError::Rendezvous { addr: cfg.addr.clone(), msg: format!("rank {} of {}: {msg}", cfg.rank, cfg.world) }
}

fn setup_stream(s: &TcpStream, cfg: &TcpCommConfig) -> Result<(), String> {
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    s.set_read_timeout(cfg.io_timeout).map_err(|e| e.to_string())
}

/// Writes buffers as a count, then per buffer its length and bytes.
fn write_frame(s: &mut TcpStream, bufs: &[&[u8]]) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::with_capacity(1 << 20, s);
    w.write_all(&(bufs.len() as u64).to_le_bytes())?;
    for b in bufs {
        w.write_all(&(b.len() as u64).to_le_bytes())?;
        w.write_all(b)?;
    }
    w.flush()
}

/// Reads a frame of `count` buffers (see [`write_frame`]); `Err(None)`: not a frame of that many.
fn read_frame(s: &mut TcpStream, count: usize, pool: &BufferPool) -> Result<Vec<Vec<u8>>, Option<std::io::Error>> {
    let mut word = [0u8; 8];
    s.read_exact(&mut word).map_err(Some)?;
    if u64::from_le_bytes(word) != count as u64 {
        return Err(None);
    }
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        s.read_exact(&mut word).map_err(Some)?;
        let len = u64::from_le_bytes(word);
        let len = usize::try_from(len).map_err(|_| None)?;
        let mut b = pool.take(len).map_err(|_| None)?;
        // into the buffer's spare room as it is (no zeroing first)
        (&mut *s).take(len as u64).read_to_end(&mut b).map_err(Some)?;
        if b.len() != len {
            return Err(Some(std::io::Error::from(std::io::ErrorKind::UnexpectedEof)));
        }
        out.push(b);
    }
    Ok(out)
}

impl HostComm for TcpComm {
    fn rank(&self) -> usize {
        self.rank
    }

    fn world(&self) -> usize {
        self.world
    }

    fn all_to_all(&self, mut out: Vec<Vec<u8>>, pool: &BufferPool) -> Result<Vec<Vec<u8>>, CommError> {
        let (rank, world) = (self.rank, self.world);
        let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        let io = |peer: usize, e: std::io::Error| CommError::Io { rank, peer, msg: e.to_string() };
        let bad = |peer: usize| CommError::Protocol { rank, peer, msg: "a frame of another size".into() };
        let read = |s: &mut TcpStream, peer: usize| {
            read_frame(s, world, pool).map_err(|e| match e {
                Some(e) => io(peer, e),
                None => bad(peer),
            })
        };
        let gone = |what: &str| CommError::Config(format!("rank {rank}: the {what} thread stopped"));
        if rank != 0 {
            // write this rank's frame while reading rank 0's (both directions of the link at once)
            let s = streams[0].as_mut().ok_or_else(|| CommError::Config("no stream to rank 0".into()))?;
            let mut w = s.try_clone().map_err(|e| io(0, e))?;
            let mine = std::mem::take(&mut out[rank]);
            let mut got = std::thread::scope(|scope| {
                let writer = scope.spawn(move || {
                    let bufs: Vec<&[u8]> = out.iter().map(|b| b.as_slice()).collect();
                    let wrote = write_frame(&mut w, &bufs);
                    out.into_iter().for_each(|b| pool.give(b));
                    wrote
                });
                let got = read(s, 0);
                let wrote = writer.join().map_err(|_| gone("writer"))?;
                let got = got?;
                wrote.map_err(|e| io(0, e))?;
                Ok::<_, CommError>(got)
            })?;
            got[rank] = mine;
            return Ok(got);
        }
        // rank 0: a writer per rank sends it rank 0's buffer at once and every other rank's as
        // soon as it is read (its own slot empty: it keeps its own buffer)
        let mut writers = Vec::with_capacity(world);
        for (peer, st) in streams.iter_mut().enumerate().skip(1) {
            let st = st.as_mut().ok_or_else(|| CommError::Config(format!("no stream to rank {peer}")))?;
            writers.push((peer, st.try_clone().map_err(|e| io(peer, e))?));
        }
        let mut got: Vec<Vec<u8>> = vec![Vec::new(); world];
        got[0] = std::mem::take(&mut out[0]);
        std::thread::scope(|scope| {
            let mut senders = Vec::with_capacity(world);
            let mut handles = Vec::with_capacity(world);
            for (peer, mut w) in writers {
                let (tx, rx) = std::sync::mpsc::channel::<Vec<u8>>();
                senders.push(tx);
                let first = std::mem::take(&mut out[peer]);
                handles.push(scope.spawn(move || -> std::io::Result<()> {
                    let mut w = std::io::BufWriter::with_capacity(1 << 20, &mut w);
                    w.write_all(&(world as u64).to_le_bytes())?;
                    let mut put = |b: Vec<u8>| -> std::io::Result<()> {
                        w.write_all(&(b.len() as u64).to_le_bytes())?;
                        let wrote = w.write_all(&b);
                        pool.give(b);
                        wrote
                    };
                    put(first)?;
                    for _ in 1..world {
                        let b = rx.recv().map_err(|_| std::io::Error::other("rank 0 stopped reading"))?;
                        put(b)?;
                    }
                    w.flush()
                }));
            }
            let mut failed = None;
            for (sender, st) in streams.iter_mut().enumerate().skip(1) {
                let Some(st) = st.as_mut() else { continue };
                match read(st, sender) {
                    Ok(mut frame) => {
                        for (q, tx) in (1..world).zip(&senders) {
                            let b = if q == sender { Vec::new() } else { std::mem::take(&mut frame[q]) };
                            let _ = tx.send(b);
                        }
                        got[sender] = std::mem::take(&mut frame[0]);
                    }
                    Err(e) => {
                        failed = Some(e);
                        break;
                    }
                }
            }
            // a failed read stops the writers (their channels close)
            drop(senders);
            for (peer, h) in (1..world).zip(handles) {
                let wrote = h.join().map_err(|_| gone("writer"))?;
                if failed.is_none() {
                    wrote.map_err(|e| io(peer, e))?;
                }
            }
            match failed {
                Some(e) => Err(e),
                None => Ok(()),
            }
        })?;
        Ok(got)
    }
}

// ---- the halo exchange of one rank -------------------------------------------------------

/// What one rank sends and receives in a halo exchange (primitive level): per rank `q`, the
/// rows of this rank's state `q` reads (indices and their inverse, see [`RowIndex`]; `None`
/// for none) and the number of rows this rank receives from `q`, appended in rank order.
#[derive(Clone, Debug)]
pub struct RankRoutesPrim<B: Backend> {
    /// Own rows of the state.
    pub owned: usize,
    /// Per rank: the rows sent there.
    pub send: Vec<Option<(IntTensor<B>, IntTensor<B>)>>,
    /// Per rank: the rows received from it.
    pub recv: Vec<usize>,
    /// The transport.
    pub comm: Comm,
}

/// [`RankRoutesPrim`] at the tensor level.
#[derive(Clone, Debug)]
pub struct RankRoutes<B: Backend> {
    owned: usize,
    send: Vec<Option<RowIndex<B>>>,
    recv: Vec<usize>,
    comm: Comm,
}

impl<B: Backend> RankRoutes<B> {
    /// The routes of this rank (`comm.rank()`) over a state of `owned` rows: `send[q]` the rows
    /// rank `q` reads (on this rank's device), `recv[q]` the rows it receives from `q`. Errors
    /// when the lists are not one per rank, a list names this rank itself, or a send list does
    /// not fit `owned` rows.
    pub fn new(owned: usize, send: Vec<Option<RowIndex<B>>>, recv: Vec<usize>, comm: Comm) -> Result<Self, CommError> {
        let (rank, world) = (comm.rank(), comm.world());
        if send.len() != world || recv.len() != world {
            return Err(CommError::Config(format!(
                "routes of rank {rank}: {} send and {} receive lists for {world} ranks",
                send.len(),
                recv.len()
            )));
        }
        if send[rank].is_some() || recv[rank] != 0 {
            return Err(CommError::Config(format!("routes of rank {rank} name the rank itself")));
        }
        if let Some(bad) = send.iter().flatten().find(|r| r.source_rows() != owned) {
            return Err(CommError::Config(format!(
                "a send list of rank {rank} indexes {} rows, the state has {owned}",
                bad.source_rows()
            )));
        }
        Ok(Self { owned, send, recv, comm })
    }

    /// Own rows.
    pub fn owned(&self) -> usize {
        self.owned
    }

    /// Rows received per exchange.
    pub fn received(&self) -> usize {
        self.recv.iter().sum()
    }

    /// Rows sent per exchange.
    pub fn sent(&self) -> usize {
        self.send.iter().flatten().map(RowIndex::len).sum()
    }

    /// The transport.
    pub fn comm(&self) -> &Comm {
        &self.comm
    }

    /// The routes without autodiff (for the `valid()` copy of a model).
    pub fn inner(&self) -> RankRoutes<B::InnerBackend>
    where
        B: burn::tensor::backend::AutodiffBackend,
    {
        RankRoutes {
            owned: self.owned,
            send: self.send.iter().map(|s| s.as_ref().map(RowIndex::inner)).collect(),
            recv: self.recv.clone(),
            comm: self.comm.clone(),
        }
    }

    fn prim(&self) -> RankRoutesPrim<B> {
        RankRoutesPrim {
            owned: self.owned,
            send: self
                .send
                .iter()
                .map(|s| s.as_ref().map(|r| (r.indices().into_primitive(), r.inverse().into_primitive())))
                .collect(),
            recv: self.recv.clone(),
            comm: self.comm.clone(),
        }
    }
}

/// The halo exchange of this rank (differentiable, see the module docs): `[state; rows of
/// rank q for each q with rows]`. Every rank must call it with its own routes of the same
/// exchange. Errors when the state's rows are not the routes' own rows, or the transport
/// fails.
pub fn rank_exchange<B: SparseGnnBackend>(
    state: Tensor<B, 2>,
    routes: &RankRoutes<B>,
) -> Result<Tensor<B, 2>, CommError> {
    if state.dims()[0] != routes.owned {
        return Err(CommError::Config(format!(
            "rank {}: a state of {} rows for routes over {} own rows",
            routes.comm.rank(),
            state.dims()[0],
            routes.owned
        )));
    }
    let out = B::ad_rank_exchange(state.into_primitive().tensor(), &routes.prim())?;
    Ok(Tensor::from_primitive(TensorPrimitive::Float(out)))
}

/// The element-wise sum over the ranks of `values` (a vector on this rank's device, the same
/// length and dtype on every rank) on the devices, where the halo rows move through NCCL: every
/// rank's values gathered (`ncclAllGather`) and added in rank order on the device, so every
/// rank gets the same bits. `None` where the rows take the host transport or the backend
/// cannot (sum through [`Comm::all_reduce_sum`] then). Not differentiable.
pub fn device_all_reduce_sum<B: SparseGnnBackend>(
    values: Tensor<B, 1>,
    comm: &Comm,
) -> Option<Result<Tensor<B, 1>, CommError>> {
    if comm.row_transport() != RowTransport::Nccl {
        return None;
    }
    if let Err(e) = comm.check() {
        return Some(Err(e));
    }
    let n = values.dims()[0];
    let world = comm.world();
    let bytes = n * values.dtype().size();
    let start = Instant::now();
    let flat = values.reshape([1, n]).into_primitive().tensor();
    let all = match B::rank_all_gather(flat, comm)? {
        Ok(t) => Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(t)),
        Err(e) => {
            comm.poison(e.clone());
            return Some(Err(e));
        }
    };
    let sum = (1..world).fold(all.clone().slice([0..1, 0..n]), |s, q| s + all.clone().slice([q..q + 1, 0..n]));
    comm.record_device(bytes * (world - 1), bytes * (world - 1), start.elapsed().as_secs_f64());
    Some(Ok(sum.reshape([n])))
}

/// The halo exchange of an integer matrix (not differentiable): `[ids; rows of rank q for
/// each q with rows]`, as [`rank_exchange`] moves a state's rows, in the ids' dtype (on the
/// devices through NCCL where the rows take it, else through the host). Every rank must call
/// it with its own routes. Errors when `ids` does not have the routes' own rows, or
/// the transport fails.
pub fn rank_exchange_ints<B: SparseGnnBackend>(
    ids: Tensor<B, 2, Int>,
    routes: &RankRoutes<B>,
) -> Result<Tensor<B, 2, Int>, CommError> {
    let comm = &routes.comm;
    let [rows, width] = ids.dims();
    if rows != routes.owned {
        return Err(CommError::Config(format!(
            "rank {}: an id matrix of {rows} rows for routes over {} own rows",
            comm.rank(),
            routes.owned
        )));
    }
    let (device, dtype) = (ids.device(), ids.dtype());
    if comm.row_transport() == RowTransport::Nccl {
        comm.check()?;
        let send =
            routes.send.iter().map(|s| s.as_ref().map(|index| ids.clone().select(0, index.indices()).into_primitive()));
        let received = device_transfer_ints::<B>(send.collect(), &routes.recv, width, dtype, &device, comm)?;
        return Ok(match received {
            Some(rows) => Tensor::cat(vec![ids, Tensor::from_primitive(rows)], 0),
            None => ids,
        });
    }
    let mut out = vec![Vec::new(); comm.world()];
    for (q, s) in routes.send.iter().enumerate() {
        if let Some(index) = s {
            out[q] = read_back(ids.clone().select(0, index.indices()), comm)?;
        }
    }
    let mut parts = vec![ids];
    for (q, bytes) in comm.all_to_all(out)?.into_iter().enumerate() {
        let n = routes.recv[q];
        if n == 0 {
            continue;
        }
        let expected = n * width * dtype.size();
        if bytes.len() != expected {
            return Err(CommError::Size { rank: comm.rank(), peer: q, got: bytes.len(), expected });
        }
        let start = Instant::now();
        let data = TensorData::from_bytes_vec(bytes.to_vec(), [n, width], dtype);
        parts.push(Tensor::from_data(data, (&device, dtype)));
        comm.pool().give(bytes);
        let seconds = start.elapsed().as_secs_f64();
        comm.record(|st| st.upload_seconds += seconds);
    }
    Ok(Tensor::cat(parts, 0))
}

/// The halo exchange of CBSR rows (MaxK, max-pool states): the values through
/// [`rank_exchange`] (their gradients return) and the column ids through
/// [`rank_exchange_ints`], as they are stored (packed or not).
pub fn rank_exchange_cbsr<B: SparseGnnBackend>(c: &Cbsr<B>, routes: &RankRoutes<B>) -> Result<Cbsr<B>, CommError> {
    let values = rank_exchange(c.values(), routes)?;
    let ids = rank_exchange_ints(Tensor::<B, 2, Int>::from_primitive(c.prim().indices.clone()), routes)?;
    Ok(Cbsr::from_prim(CbsrPrim {
        n: values.dims()[0],
        values: values.into_primitive().tensor(),
        indices: ids.into_primitive(),
        ..c.prim().clone()
    }))
}

/// The values of `t` read back into a buffer of the pool (its dtype's little-endian bytes,
/// row-major), timed as read back.
fn read_back<B: Backend, K: BasicOps<B>>(t: Tensor<B, 2, K>, comm: &Comm) -> Result<Vec<u8>, CommError> {
    let start = Instant::now();
    let data = t.try_into_data().map_err(|e| CommError::Config(format!("reading rows back: {e:?}")))?;
    let len = data.as_bytes().len();
    let mut bytes = comm.pool().take(len).map_err(|e| CommError::Config(format!("a buffer of {len} bytes: {e}")))?;
    bytes.extend_from_slice(data.as_bytes());
    let seconds = start.elapsed().as_secs_f64();
    comm.record(|s| s.readback_seconds += seconds);
    Ok(bytes)
}

/// `rows` rows of `width` values of `dtype` from `bytes` sent by `peer`.
fn rows_from<B: SparseGnnBackend>(
    bytes: Vec<u8>,
    [rows, width]: [usize; 2],
    dtype: DType,
    device: &B::Device,
    comm: &Comm,
    peer: usize,
) -> Result<FloatTensor<B>, CommError> {
    let expected = rows * width * dtype.size();
    if bytes.len() != expected {
        return Err(CommError::Size { rank: comm.rank(), peer, got: bytes.len(), expected });
    }
    let start = Instant::now();
    let t = B::float_from_host(&bytes, [rows, width], dtype, device);
    comm.pool().give(bytes);
    let seconds = start.elapsed().as_secs_f64();
    comm.record(|s| s.upload_seconds += seconds);
    Ok(t)
}

/// [`SparseGnnBackend::rank_transfer`] of rows `send[q]` to rank `q` and `recv[q]` rows from
/// each: the received rows in rank order (`None`: none), counted in the stats. A failure
/// poisons the handle.
fn device_transfer<B: SparseGnnBackend>(
    send: Vec<Option<FloatTensor<B>>>,
    recv: &[usize],
    width: usize,
    dtype: DType,
    device: &B::Device,
    comm: &Comm,
) -> Result<Option<FloatTensor<B>>, CommError> {
    let sent: usize = send.iter().flatten().map(|t| t.shape()[0]).sum();
    counted(sent, recv, width * dtype.size(), comm, || B::rank_transfer(send, recv, width, dtype, device, comm))
}

/// [`device_transfer`] of integer rows ([`SparseGnnBackend::rank_transfer_ints`]).
fn device_transfer_ints<B: SparseGnnBackend>(
    send: Vec<Option<IntTensor<B>>>,
    recv: &[usize],
    width: usize,
    dtype: DType,
    device: &B::Device,
    comm: &Comm,
) -> Result<Option<IntTensor<B>>, CommError> {
    let sent: usize = send.iter().flatten().map(|t| t.shape()[0]).sum();
    counted(sent, recv, width * dtype.size(), comm, || B::rank_transfer_ints(send, recv, width, dtype, device, comm))
}

/// Runs a device transfer of `sent` rows out and `recv` rows in, of `row` bytes each: counted
/// in the stats; `None` from the backend (it cannot) and failures are errors that poison the
/// handle.
fn counted<T>(
    sent: usize,
    recv: &[usize],
    row: usize,
    comm: &Comm,
    transfer: impl FnOnce() -> Option<Result<Option<T>, CommError>>,
) -> Result<Option<T>, CommError> {
    let received: usize = recv.iter().sum::<usize>() * row;
    let start = Instant::now();
    let out = transfer().unwrap_or_else(|| Err(CommError::Config("this backend cannot move rows through NCCL".into())));
    let out = out.inspect_err(|e| comm.poison(e.clone()))?;
    comm.record_device(sent * row, received, start.elapsed().as_secs_f64());
    Ok(out)
}

/// The forward pass on primitives: sends the rows every rank reads, appends those received.
pub(crate) fn rank_forward<B: SparseGnnBackend>(
    state: FloatTensor<B>,
    r: &RankRoutesPrim<B>,
) -> Result<FloatTensor<B>, CommError> {
    let world = r.comm.world();
    let width = state.shape()[1];
    let dtype = state.dtype();
    let device = B::float_device(&state);
    if r.comm.row_transport() == RowTransport::Nccl {
        r.comm.check()?;
        let send =
            r.send.iter().map(|s| s.as_ref().map(|(indices, _)| B::float_select(state.clone(), 0, indices.clone())));
        let received = device_transfer::<B>(send.collect(), &r.recv, width, dtype, &device, &r.comm)?;
        return Ok(match received {
            Some(rows) => B::float_cat(vec![state, rows], 0),
            None => state,
        });
    }
    let mut out = vec![Vec::new(); world];
    for (q, s) in r.send.iter().enumerate() {
        if let Some((indices, _)) = s {
            out[q] = read_back(t2::<B>(B::float_select(state.clone(), 0, indices.clone())), &r.comm)?;
        }
    }
    let got = r.comm.all_to_all(out)?;
    let mut parts = vec![state];
    for (q, bytes) in got.into_iter().enumerate() {
        if r.recv[q] > 0 {
            parts.push(rows_from::<B>(bytes, [r.recv[q], width], dtype, &device, &r.comm, q)?);
        }
    }
    Ok(match parts.len() {
        1 => parts.remove(0),
        _ => B::float_cat(parts, 0),
    })
}

/// The backward pass on primitives: `dy` (`[owned + received, w]`) -> the gradient of the own
/// rows, the halo rows' gradients sent back to their owners and those received added to the
/// rows this rank sent ([`SparseGnnBackend::add_rows`]: in place over the sent rows where the
/// backend has the kernel). A failed transfer poisons the handle and leaves the own rows'
/// gradient without the halo terms (the run stops at [`Comm::check`]).
pub(crate) fn rank_backward<B: SparseGnnBackend>(dy: FloatTensor<B>, r: &RankRoutesPrim<B>) -> FloatTensor<B> {
    let world = r.comm.world();
    let width = dy.shape()[1];
    let dtype = dy.dtype();
    let device = B::float_device(&dy);
    let own = crate::exchange::row_range::<B>(dy.clone(), 0, r.owned);
    if r.comm.row_transport() == RowTransport::Nccl {
        let received = (|| {
            r.comm.check()?;
            let mut send = vec![None; world];
            let mut start = r.owned;
            for (q, &rows) in r.recv.iter().enumerate() {
                if rows > 0 {
                    send[q] = Some(crate::exchange::row_range::<B>(dy.clone(), start, rows));
                    start += rows;
                }
            }
            let counts: Vec<usize> = r.send.iter().map(|s| s.as_ref().map_or(0, |(i, _)| i.shape()[0])).collect();
            device_transfer::<B>(send, &counts, width, dtype, &device, &r.comm).map(|g| (g, counts))
        })();
        return match received {
            Ok((Some(g), counts)) => {
                let mut start = 0;
                let mut sum = own;
                for (q, s) in r.send.iter().enumerate() {
                    if let Some((indices, inverse)) = s {
                        let piece = crate::exchange::row_range::<B>(g.clone(), start, counts[q]);
                        sum = B::add_rows(sum, piece, indices.clone(), inverse.clone());
                        start += counts[q];
                    }
                }
                sum
            }
            Ok((None, _)) => own,
            Err(e) => {
                r.comm.poison(e);
                own
            }
        };
    }
    let received = (|| {
        let mut out = vec![Vec::new(); world];
        let mut start = r.owned;
        for (q, &rows) in r.recv.iter().enumerate() {
            if rows > 0 {
                out[q] = read_back(t2::<B>(crate::exchange::row_range::<B>(dy.clone(), start, rows)), &r.comm)?;
                start += rows;
            }
        }
        let mut pieces = Vec::new();
        for (q, bytes) in r.comm.all_to_all(out)?.into_iter().enumerate() {
            if let Some((indices, inverse)) = &r.send[q] {
                let g = rows_from::<B>(bytes, [indices.shape()[0], width], dtype, &device, &r.comm, q)?;
                pieces.push((g, indices.clone(), inverse.clone()));
            }
        }
        Ok::<_, CommError>(pieces)
    })();
    match received {
        Ok(pieces) => pieces.into_iter().fold(own, |sum, (g, indices, inverse)| B::add_rows(sum, g, indices, inverse)),
        Err(e) => {
            r.comm.poison(e);
            own
        }
    }
}
