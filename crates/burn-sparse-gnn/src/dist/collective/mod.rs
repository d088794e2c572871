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

pub(crate) mod comm;
pub(crate) mod rank;
pub(crate) mod rank_pass;
pub(crate) mod tcp;

pub use comm::*;
pub use rank::*;
pub use rank_pass::RankRoutesPrim;
pub use tcp::*;
