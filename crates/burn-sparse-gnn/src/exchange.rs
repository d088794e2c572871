//! The halo exchange of a partitioned graph as one differentiable op over all parts.
//!
//! Part `p` holds `states[p]` (its own rows, on its device) and reads rows of other parts: its
//! routes `(q, rows)` name, in order, the rows of `states[q]` it receives. [`exchange`] returns
//! per part `[states[p]; states[q][rows] for each route]` on the part's device.
//!
//! All transfers of a call go through [`SparseGnnBackend::transfer_all`] together (on CUDA one
//! NCCL group: both directions of every link at once), in the forward pass and in the backward
//! pass. The backward pass of one output cannot send its halo rows' gradients alone without
//! taking turns with the other parts' sends, so the P outputs share one pending list: each
//! output's backward step queues its own rows' gradient and its halo rows' gradients, and the
//! last of the P steps moves all halo gradients in one group and adds each to the own rows'
//! gradient of the part that sent them, in place over the halo rows only
//! ([`SparseGnnBackend::add_rows`]; the rows of a route are distinct, so no atomics).
//! Every output is a child of all P states, so autodiff runs all P steps before any state's
//! own step. Every output must therefore reach the loss (as in a partitioned model, where
//! every part's logits do): an output left out holds back the halo gradients of all.

use crate::backend::SparseGnnBackend;
use crate::dense::{prim, t2};
use crate::error::OpError;
use crate::rows::RowIndex;
use burn::tensor::backend::Backend;
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn::tensor::{FloatDType, Int, Tensor, TensorMetadata, TensorPrimitive};

/// How many grouped transfers (one NCCL group each, [`SparseGnnBackend::transfer_all`] on
/// CUDA) this process ran; 0 without the `cuda` feature.
pub fn grouped_transfers() -> usize {
    #[cfg(feature = "cuda")]
    return crate::nccl::grouped_transfers();
    #[cfg(not(feature = "cuda"))]
    0
}

/// Rows part `to` receives from part `from` (primitive level): `indices` select them from
/// `from`'s state, `inverse` gathers their gradient back (see [`RowIndex`]); both on `from`'s
/// device.
#[derive(Clone, Debug)]
pub struct Route<B: Backend> {
    /// The sending part.
    pub from: usize,
    /// Selected rows of the sender's state.
    pub indices: IntTensor<B>,
    /// Per row of the sender's state: the entry of `indices` naming it, or `indices.len()`.
    pub inverse: IntTensor<B>,
}

/// The halo exchange (see the module docs): per part `p`, `states[p]` followed by the rows
/// `routes[p]` names, on `devices[p]` (differentiable). Errors when the lists' lengths differ,
/// a route names a missing part or its own part, a route's rows do not fit its sender's state,
/// or the states differ in width.
pub fn exchange<B: SparseGnnBackend>(
    states: Vec<Tensor<B, 2>>,
    devices: &[B::Device],
    routes: &[Vec<(usize, &RowIndex<B>)>],
) -> Result<Vec<Tensor<B, 2>>, OpError> {
    let prims = checked_routes("exchange", &states, devices, routes)?;
    let states = states.into_iter().map(|s| s.into_primitive().tensor()).collect();
    let outs = B::ad_exchange(states, devices.to_vec(), prims);
    Ok(outs.into_iter().map(|t| Tensor::from_primitive(TensorPrimitive::Float(t))).collect())
}

/// Checks the states, devices and routes of an exchange (one device and one route list per
/// state, routes from other parts that fit their senders' states, states of one width and
/// dtype) and turns the routes into primitives.
fn checked_routes<B: SparseGnnBackend>(
    op: &'static str,
    states: &[Tensor<B, 2>],
    devices: &[B::Device],
    routes: &[Vec<(usize, &RowIndex<B>)>],
) -> Result<Vec<Vec<Route<B>>>, OpError> {
    let n = states.len();
    let bad = |what: &'static str, got: Vec<usize>, expected: String| OpError::Shape { op, what, got, expected };
    if devices.len() != n || routes.len() != n {
        return Err(bad("devices / routes", vec![devices.len(), routes.len()], format!("{n} each (one per state)")));
    }
    let width = states.first().map(|s| s.dims()[1]).unwrap_or(0);
    let dtype = states.first().map(|s| s.dtype());
    for s in states {
        if s.dims()[1] != width || Some(s.dtype()) != dtype {
            return Err(bad("a state", s.dims().to_vec(), format!("[_, {width}] like the first, in its dtype")));
        }
    }
    let mut prims = Vec::with_capacity(n);
    for (p, list) in routes.iter().enumerate() {
        let mut out = Vec::with_capacity(list.len());
        for &(q, rows) in list {
            if q >= n || q == p {
                return Err(OpError::Config {
                    op,
                    msg: format!("part {p} has a route from part {q} (parts 0..{n}, not itself)"),
                });
            }
            if rows.source_rows() != states[q].dims()[0] {
                return Err(bad("a sender's state", states[q].dims().to_vec(), format!("[{}, _]", rows.source_rows())));
            }
            out.push(Route {
                from: q,
                indices: rows.indices().into_primitive(),
                inverse: rows.inverse().into_primitive(),
            });
        }
        prims.push(out);
    }
    Ok(prims)
}

/// The forward pass on primitives: selects every route's rows, moves them together, appends
/// them to each part's state.
pub(crate) fn forward<B: SparseGnnBackend>(
    states: Vec<FloatTensor<B>>,
    devices: &[B::Device],
    routes: &[Vec<Route<B>>],
) -> Vec<FloatTensor<B>> {
    // a route of no rows moves nothing and adds no rows
    let rows = |r: &Route<B>| r.indices.shape()[0];
    let mut pieces = Vec::new();
    for (p, list) in routes.iter().enumerate() {
        for r in list.iter().filter(|r| rows(r) > 0) {
            pieces.push((B::float_select(states[r.from].clone(), 0, r.indices.clone()), devices[p].clone()));
        }
    }
    let mut moved = B::transfer_all(pieces).into_iter();
    states
        .into_iter()
        .zip(routes)
        .map(|(own, list)| {
            let n = list.iter().filter(|r| rows(r) > 0).count();
            if n == 0 {
                return own;
            }
            let mut parts = vec![own];
            parts.extend(moved.by_ref().take(n));
            B::float_cat(parts, 0)
        })
        .collect()
}

/// The gradient of a sender's state from the gradient of the rows it sent: `[dy; 0]` gathered
/// through the route's inverse (also `take_rows`'s backward).
pub(crate) fn gather_back<B: Backend>(dy: FloatTensor<B>, inverse: IntTensor<B>) -> FloatTensor<B> {
    let dy = t2::<B>(dy);
    let width = dy.dims()[1];
    let zero = Tensor::<B, 2>::zeros([1, width], (&dy.device(), dy.dtype()));
    let inverse = Tensor::<B, 1, Int>::from_primitive(inverse);
    prim(Tensor::cat(vec![dy, zero], 0).select(0, inverse))
}

/// Rows `start..start + len` of a 2-D tensor (a view where the backend allows it).
pub(crate) fn row_range<B: Backend>(t: FloatTensor<B>, start: usize, len: usize) -> FloatTensor<B> {
    prim(t2::<B>(t).slice([start..start + len]))
}

// ---- the exchange in two halves: started, then finished once other work is queued ----------

/// What a started transfer still owes its receivers: on CUDA, the compute streams of the
/// devices it touches wait for it (and the sent tensors are kept until then); elsewhere
/// nothing (the transfers already ran). [`TransferWait::run`] does it; dropping it does it too,
/// so no buffer of a transfer is read or reused before the transfer.
pub struct TransferWait(Option<Box<dyn FnOnce() + Send>>);

impl TransferWait {
    /// Nothing to wait for.
    pub fn done() -> Self {
        Self(None)
    }

    /// Waits with `wait` (queued on the devices' streams, no host synchronisation).
    pub fn new(wait: impl FnOnce() + Send + 'static) -> Self {
        Self(Some(Box::new(wait)))
    }

    /// Makes the devices wait for the transfer (their later work reads the received tensors).
    pub fn run(mut self) {
        if let Some(wait) = self.0.take() {
            wait();
        }
    }
}

impl Drop for TransferWait {
    fn drop(&mut self) {
        if let Some(wait) = self.0.take() {
            wait();
        }
    }
}

impl std::fmt::Debug for TransferWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "TransferWait(pending)" } else { "TransferWait(done)" })
    }
}

/// A started halo exchange (primitive level, see [`exchange_start`]): per part its halo rows
/// (`None` for a part that receives none), readable once [`SparseGnnBackend::ad_exchange_finish`]
/// ran.
pub struct HaloInFlight<B: Backend> {
    pub(crate) halo: Vec<Option<FloatTensor<B>>>,
    pub(crate) wait: TransferWait,
    /// The autodiff backend's own record (inner tensors and the shared backward state).
    pub(crate) tracked: Option<Box<dyn std::any::Any + Send>>,
}

impl<B: Backend> std::fmt::Debug for HaloInFlight<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HaloInFlight").field("parts", &self.halo.len()).field("wait", &self.wait).finish()
    }
}

/// A started halo exchange at the tensor level: the rows are moving; [`exchange_finish`] hands
/// them out.
pub struct HaloStart<B: SparseGnnBackend> {
    /// Per part its own rows, to be used in place of the state it came from (the halo
    /// gradients are added to their gradient in the backward pass).
    pub own: Vec<Tensor<B, 2>>,
    /// The rows in flight.
    pub halo: HaloInFlight<B>,
}

/// The first half of an exchange in two halves: selects the rows every part sends and starts
/// moving them (on CUDA one NCCL group on streams of its own); returns each part's own rows
/// (use them, not the states, from here on) and the rows in flight. Queue the work that needs
/// no halo rows, then call [`exchange_finish`]. In the backward pass the halves swap roles: the
/// halo gradients start moving as soon as every part's is known, and are added to the owners'
/// gradients when those reach the own rows (the work on the own rows in between runs while the
/// gradients move). `send`: the type the rows move in (e.g. the half type of a mixed-precision
/// aggregation, which halves the bytes; their gradients move in it too and are added to the
/// states' gradients in the states' type); `None`: the states' type. Errors as [`exchange`].
pub fn exchange_start<B: SparseGnnBackend>(
    states: Vec<Tensor<B, 2>>,
    devices: &[B::Device],
    routes: &[Vec<(usize, &RowIndex<B>)>],
    send: Option<FloatDType>,
) -> Result<HaloStart<B>, OpError> {
    let prims = checked_routes("exchange_start", &states, devices, routes)?;
    let states = states.into_iter().map(|s| s.into_primitive().tensor()).collect();
    let (own, halo) = B::ad_exchange_start(states, devices.to_vec(), prims, send);
    Ok(HaloStart { own: own.into_iter().map(|t| Tensor::from_primitive(TensorPrimitive::Float(t))).collect(), halo })
}

/// The second half of [`exchange_start`]: each part's halo rows (`[received rows, w]`, the
/// routes' rows in order; `None` where a part receives none), readable now. `after` lists
/// tensors computed from the own rows since the start (one per part, or none: then the own
/// rows stand in): the backward pass sends the halo gradients before it computes their
/// gradients, so their work overlaps the transfer. Under autodiff every halo output, every
/// tensor of `after` (or every own output when `after` is empty) must reach the loss, as every
/// output of [`exchange`] must.
pub fn exchange_finish<B: SparseGnnBackend>(
    halo: HaloInFlight<B>,
    after: &[Tensor<B, 2>],
) -> Vec<Option<Tensor<B, 2>>> {
    let after = after.iter().map(|t| t.clone().into_primitive().tensor()).collect();
    B::ad_exchange_finish(halo, after)
        .into_iter()
        .map(|t| t.map(|t| Tensor::from_primitive(TensorPrimitive::Float(t))))
        .collect()
}

/// [`SparseGnnBackend::transfer_start`] without a grouped transfer: each piece moves by
/// `float_to_device`, a group's pieces are concatenated, all before it returns.
pub(crate) fn move_groups<B: SparseGnnBackend>(
    groups: Vec<(Vec<FloatTensor<B>>, B::Device)>,
) -> (Vec<FloatTensor<B>>, TransferWait) {
    let out = groups
        .into_iter()
        .map(|(pieces, d)| {
            let mut moved: Vec<_> = pieces.into_iter().map(|t| B::float_to_device(t, &d)).collect();
            match moved.len() {
                1 => moved.pop().expect("one piece"),
                _ => B::float_cat(moved, 0),
            }
        })
        .collect();
    (out, TransferWait::done())
}

/// The forward pass of [`exchange_start`] on primitives: selects every route's rows (in the
/// `send` type) and starts moving them, each part's pieces into one tensor.
pub(crate) fn forward_start<B: SparseGnnBackend>(
    states: &[FloatTensor<B>],
    devices: &[B::Device],
    routes: &[Vec<Route<B>>],
    send: Option<FloatDType>,
) -> (Vec<Option<FloatTensor<B>>>, TransferWait) {
    let rows = |r: &Route<B>| r.indices.shape()[0];
    let mut groups = Vec::new();
    let mut slots = Vec::with_capacity(routes.len());
    for (p, list) in routes.iter().enumerate() {
        let pieces: Vec<_> = list
            .iter()
            .filter(|r| rows(r) > 0)
            .map(|r| {
                // `ad_take_rows`: differentiable on the autodiff backend (with a gather for its
                // gradient), a select elsewhere
                let rows = B::ad_take_rows(states[r.from].clone(), r.indices.clone(), r.inverse.clone());
                match send {
                    Some(d) if rows.dtype() != d.into() => B::float_cast(rows, d),
                    _ => rows,
                }
            })
            .collect();
        if pieces.is_empty() {
            slots.push(false);
        } else {
            slots.push(true);
            groups.push((pieces, devices[p].clone()));
        }
    }
    let (moved, wait) = B::transfer_start(groups);
    let mut moved = moved.into_iter();
    (slots.into_iter().map(|s| if s { moved.next() } else { None }).collect(), wait)
}
