//! The TCP transport: the ranks meet at rank 0's address, then every collective goes through
//! rank 0 (a star).

use crate::dist::collective::comm::BufferPool;
use crate::dist::collective::comm::CommError;
use crate::dist::collective::comm::HostComm;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::sync::Mutex;
use std::time::{Duration, Instant};

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
