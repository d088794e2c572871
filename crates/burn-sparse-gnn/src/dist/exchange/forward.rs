//! The forward passes of the halo exchange of a partitioned graph, without autodiff bookkeeping
//! (on any backend with [`TransferOps`]), and the routes they follow.

use crate::dist::transfer::TransferOps;
use crate::dist::transfer::TransferWait;
use crate::ops::rows::RowOps;
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::ops::IntTensor;
use burn::tensor::FloatDType;
use burn::tensor::TensorMetadata;

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

/// The forward pass on primitives: selects every route's rows, moves them together, appends
/// them to each part's state.
pub(crate) fn forward<B: TransferOps>(
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

/// A started halo exchange (primitive level, see [`exchange_start`]): per part its halo rows
/// (`None` for a part that receives none), readable once
/// [`ExchangeOps::ad_exchange_finish`](crate::dist::exchange::ExchangeOps::ad_exchange_finish) ran.
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

/// The forward pass of [`exchange_start`] on primitives: selects every route's rows (in the
/// `send` type) and starts moving them, each part's pieces into one tensor.
pub(crate) fn forward_start<B: TransferOps + RowOps>(
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
                // `ad_take_rows_as`: differentiable on the autodiff backend (with a gather for
                // its gradient), gathered and converted in one pass where the backend has a kernel
                B::ad_take_rows_as(states[r.from].clone(), r.indices.clone(), r.inverse.clone(), send)
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
