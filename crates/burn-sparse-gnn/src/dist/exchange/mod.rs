//! The halo exchange of a partitioned graph as one differentiable op over all parts.
//!
//! Part `p` holds `states[p]` (its own rows, on its device) and reads rows of other parts: its
//! routes `(q, rows)` name, in order, the rows of `states[q]` it receives. [`exchange`] returns
//! per part `[states[p]; states[q][rows] for each route]` on the part's device.
//!
//! All transfers of a call go through [`TransferOps::transfer_all`] together (on CUDA one
//! NCCL group or peer-to-peer copies, [`DeviceLinks`]: both directions of every link at once),
//! in the forward pass and in the backward pass. The backward pass of one output cannot send
//! its halo rows' gradients alone without taking turns with the other parts' sends, so the P
//! outputs share one pending list: each
//! output's backward step queues its own rows' gradient and its halo rows' gradients, and the
//! last of the P steps moves all halo gradients in one group and adds each to the own rows'
//! gradient of the part that sent them, in place over the halo rows only
//! ([`RowOps::add_rows`]; the rows of a route are distinct, so no atomics).
//! Every output is a child of all P states, so autodiff runs all P steps before any state's
//! own step. Every output must therefore reach the loss (as in a partitioned model, where
//! every part's logits do): an output left out holds back the halo gradients of all.

mod autodiff;
mod cube;
pub(crate) mod forward;
mod host;
pub use crate::dist::transfer::{device_links, peer_copy_groups, set_device_links, DeviceLinks, TransferWait};
pub use forward::{HaloInFlight, Route};

use crate::dist::transfer::TransferOps;
use crate::error::OpError;
use crate::ops::rows::RowIndex;
use crate::ops::rows::RowOps;
use burn::tensor::ops::FloatTensor;
use burn::tensor::FloatDType;
use burn::tensor::Tensor;
use burn::tensor::TensorPrimitive;

/// The differentiable halo exchanges: between the parts of a partitioned graph in one process, and between the ranks of a multi-process run.
///
/// Part of [`crate::backend::SparseGnnBackend`] (see its conventions).
pub trait ExchangeOps: TransferOps + RowOps {
    /// Differentiable halo exchange of one rank of a multi-process run (see
    /// [`crate::dist::collective`]): `state` followed by the rows the other ranks send it.
    fn ad_rank_exchange(
        state: FloatTensor<Self>,
        routes: &crate::dist::collective::rank_pass::RankRoutesPrim<Self>,
    ) -> Result<FloatTensor<Self>, crate::dist::collective::comm::CommError> {
        crate::dist::collective::rank_pass::rank_forward::<Self>(state, routes)
    }

    /// Differentiable halo exchange (see [`crate::dist::exchange`]): per part `p`, `states[p]`
    /// followed by the rows its routes select from the other parts' states, on `devices[p]`.
    fn ad_exchange(
        states: Vec<FloatTensor<Self>>,
        devices: Vec<Self::Device>,
        routes: Vec<Vec<crate::dist::exchange::forward::Route<Self>>>,
    ) -> Vec<FloatTensor<Self>> {
        crate::dist::exchange::forward::forward::<Self>(states, &devices, &routes)
    }

    /// Differentiable first half of an exchange in two halves (see
    /// [`crate::dist::exchange::exchange_start`]): each part's own rows (its state) and the halo rows
    /// in flight, in the `send` type.
    fn ad_exchange_start(
        states: Vec<FloatTensor<Self>>,
        devices: Vec<Self::Device>,
        routes: Vec<Vec<crate::dist::exchange::forward::Route<Self>>>,
        send: Option<FloatDType>,
    ) -> (Vec<FloatTensor<Self>>, crate::dist::exchange::forward::HaloInFlight<Self>) {
        let (halo, wait) = crate::dist::exchange::forward::forward_start::<Self>(&states, &devices, &routes, send);
        (states, crate::dist::exchange::forward::HaloInFlight { halo, wait, tracked: None })
    }

    /// Differentiable second half (see [`crate::dist::exchange::exchange_finish`]): the halo rows,
    /// readable once the devices waited for them. `after`: tensors computed from the own rows
    /// since the start (they order the backward pass).
    fn ad_exchange_finish(
        halo: crate::dist::exchange::forward::HaloInFlight<Self>,
        after: Vec<FloatTensor<Self>>,
    ) -> Vec<Option<FloatTensor<Self>>> {
        let _ = after;
        let crate::dist::exchange::forward::HaloInFlight { halo, wait, .. } = halo;
        wait.run();
        halo
    }
}

/// How many grouped NCCL transfers (one NCCL group each, [`ExchangeOps::transfer_all`] on
/// CUDA) this process ran; 0 without the `cuda` feature. Those run as peer-to-peer copies are
/// counted by [`peer_copy_groups`].
pub fn grouped_transfers() -> usize {
    #[cfg(feature = "cuda")]
    return crate::dist::nccl::grouped_transfers();
    #[cfg(not(feature = "cuda"))]
    0
}

/// The halo exchange (see the module docs): per part `p`, `states[p]` followed by the rows
/// `routes[p]` names, on `devices[p]` (differentiable). Errors when the lists' lengths differ,
/// a route names a missing part or its own part, a route's rows do not fit its sender's state,
/// or the states differ in width.
pub fn exchange<B: ExchangeOps>(
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
fn checked_routes<B: ExchangeOps>(
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

/// A started halo exchange at the tensor level: the rows are moving; [`exchange_finish`] hands
/// them out.
pub struct HaloStart<B: ExchangeOps> {
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
pub fn exchange_start<B: ExchangeOps>(
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
pub fn exchange_finish<B: ExchangeOps>(halo: HaloInFlight<B>, after: &[Tensor<B, 2>]) -> Vec<Option<Tensor<B, 2>>> {
    let after = after.iter().map(|t| t.clone().into_primitive().tensor()).collect();
    B::ad_exchange_finish(halo, after)
        .into_iter()
        .map(|t| t.map(|t| Tensor::from_primitive(TensorPrimitive::Float(t))))
        .collect()
}
