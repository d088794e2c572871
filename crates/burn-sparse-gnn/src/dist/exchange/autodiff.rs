//! `Autodiff<B>` implementation of [`super::ExchangeOps`]: the backward passes of the halo
//! exchanges are exchanges too (halo gradients sent back to the rows' owners and added there).

use super::ExchangeOps;
use crate::backend::SparseGnnBackend;
use crate::ops::rows::RowOps;
use crate::ops::tracking::*;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::Backward;
use burn::backend::autodiff::ops::Ops;
use burn::backend::autodiff::ops::OpsKind;
use burn::backend::Autodiff;
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::ops::IntTensor;
use burn::tensor::TensorMetadata;

// ---- the halo exchange of one rank: its backward pass is a collective too --------------

#[derive(Debug)]
struct RankExchangeBackward;

impl<B: SparseGnnBackend> Backward<B, 1> for RankExchangeBackward {
    type State = crate::dist::collective::rank_pass::RankRoutesPrim<B>;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node] = ops.parents;
        let dy = grads.consume::<B>(&ops.node);
        // every rank takes part in the collective, whether or not its state needs a gradient
        let own = crate::dist::collective::rank_pass::rank_backward::<B>(dy, &ops.state);
        if let Some(node) = node {
            grads.register::<B>(node.id, own);
        }
    }
}

// ---- the halo exchange: one pending list for the P outputs' backward steps ----------------

#[derive(Debug)]
struct ExchangeBackward<const N: usize>;

/// What the outputs' backward steps have queued: per part the gradient of its own rows (from
/// its output), and per halo piece the part that sent the rows, their gradient (on the
/// receiving part's device) and the route's indices and inverse.
#[derive(Debug)]
struct PendingHalo<B: Backend> {
    remaining: usize,
    own: Vec<Option<FloatTensor<B>>>,
    pieces: Vec<HaloPiece<B>>,
    devices: Vec<B::Device>,
}

impl<B: Backend> Drop for PendingHalo<B> {
    fn drop(&mut self) {
        if !self.pieces.is_empty() {
            log::error!(
                "halo exchange: {} output(s) never ran their backward step, so {} halo gradient piece(s) were not \
                 sent back; every output of an exchange must reach the loss",
                self.remaining,
                self.pieces.len()
            );
        }
    }
}

/// A halo gradient on its way back: the part that sent the rows, their gradient, the route's
/// indices and their inverse.
type HaloPiece<B> = (usize, FloatTensor<B>, IntTensor<B>, IntTensor<B>);

/// One route of an output: the sending part, its first row in the output, its rows, its
/// indices and their inverse.
type HaloRows<B> = (usize, usize, usize, IntTensor<B>, IntTensor<B>);

#[derive(Clone, Debug)]
struct ExchangeState<B: Backend> {
    part: usize,
    owned: usize,
    halo: Vec<HaloRows<B>>,
    pending: std::sync::Arc<std::sync::Mutex<PendingHalo<B>>>,
}

impl<B: SparseGnnBackend, const N: usize> Backward<B, N> for ExchangeBackward<N> {
    type State = ExchangeState<B>;

    fn backward(self, ops: Ops<Self::State, N>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let dy = grads.consume::<B>(&ops.node);
        let ExchangeState { part, owned, halo, pending } = ops.state;
        let parents = ops.parents;
        let mut pending = pending.lock().unwrap_or_else(|e| e.into_inner());
        if parents[part].is_some() {
            pending.own[part] = Some(crate::ops::primitive::row_range::<B>(dy.clone(), 0, owned));
        }
        for (from, start, len, indices, inverse) in halo {
            if parents[from].is_some() && len > 0 {
                let g = crate::ops::primitive::row_range::<B>(dy.clone(), start, len);
                pending.pieces.push((from, g, indices, inverse));
            }
        }
        pending.remaining = pending.remaining.saturating_sub(1);
        if pending.remaining > 0 {
            return;
        }
        // every output has run its step: move all halo gradients together, then add each to
        // its sender's own rows' gradient in place (one gradient per state, one addition over
        // the halo rows instead of a gather and an addition over all rows per piece)
        let mut sums = std::mem::take(&mut pending.own);
        let pieces = std::mem::take(&mut pending.pieces);
        let moves = pieces.iter().map(|(from, g, _, _)| (g.clone(), pending.devices[*from].clone())).collect();
        let moved = B::transfer_all(moves);
        for ((from, _, indices, inverse), g) in pieces.into_iter().zip(moved) {
            sums[from] = Some(match sums[from].take() {
                Some(base) => B::add_rows(base, g, indices, inverse),
                None => crate::ops::rows::gather_back::<B>(g, inverse),
            });
        }
        for (node, sum) in parents.iter().zip(sums) {
            if let (Some(node), Some(sum)) = (node, sum) {
                grads.register::<B>(node.id, sum);
            }
        }
    }
}

/// The exchange of `N` parts under autodiff: every output a child of all `N` states.
fn exchange_tracked<B: SparseGnnBackend, C: CheckpointStrategy, const N: usize>(
    states: Vec<FloatTensor<Ad<B, C>>>,
    devices: Vec<B::Device>,
    routes: Vec<Vec<crate::dist::exchange::forward::Route<B>>>,
) -> Vec<FloatTensor<Ad<B, C>>> {
    let nodes: Vec<_> = states.iter().map(|s| s.node.clone()).collect();
    let nodes: [_; N] = match nodes.try_into() {
        Ok(n) => n,
        Err(_) => unreachable!("called with N states"),
    };
    let inner: Vec<FloatTensor<B>> = states.into_iter().map(|s| s.primitive).collect();
    let owned: Vec<usize> = inner.iter().map(|s| s.shape()[0]).collect();
    let outs = crate::dist::exchange::forward::forward::<B>(inner, &devices, &routes);
    let pending = std::sync::Arc::new(std::sync::Mutex::new(PendingHalo::<B> {
        remaining: N,
        own: vec![None; N],
        pieces: Vec::new(),
        devices: devices.clone(),
    }));
    outs.into_iter()
        .zip(routes)
        .enumerate()
        .map(|(p, (out, list))| match ExchangeBackward::<N>.prepare::<C>(nodes.clone()).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let mut start = owned[p];
                let halo = list
                    .into_iter()
                    .map(|r| {
                        let len = r.indices.shape()[0];
                        start += len;
                        (r.from, start - len, len, r.indices, r.inverse)
                    })
                    .collect();
                prep.finish(ExchangeState { part: p, owned: owned[p], halo, pending: pending.clone() }, out)
            }
            OpsKind::UnTracked(prep) => prep.finish(out),
        })
        .collect()
}

// ---- the exchange in two halves: halo gradients sent early, added late --------------------

/// What the two halves' backward steps share: the halo gradients queued by the halo rows'
/// steps, and once all of them ran, the moved gradients per sending part and the wait for
/// them.
#[derive(Debug)]
struct SplitHalo<B: Backend> {
    remaining: usize,
    pieces: Vec<HaloPiece<B>>,
    devices: Vec<B::Device>,
    /// Per sending part: the moved gradients with their route's indices and inverse.
    arrived: Vec<Vec<Arrived<B>>>,
    wait: Option<crate::dist::transfer::TransferWait>,
}

impl<B: Backend> Drop for SplitHalo<B> {
    fn drop(&mut self) {
        if self.remaining > 0 && !self.pieces.is_empty() {
            log::error!(
                "halo exchange: {} halo output(s) never ran their backward step, so the halo gradients were not \
                 sent back; every halo output of an exchange must reach the loss",
                self.remaining
            );
        }
    }
}

type Shared<B> = std::sync::Arc<std::sync::Mutex<SplitHalo<B>>>;

/// A moved halo gradient on its sender's device, its route's indices and inverse.
type Arrived<B> = (FloatTensor<B>, IntTensor<B>, IntTensor<B>);

fn lock<B: Backend>(s: &Shared<B>) -> std::sync::MutexGuard<'_, SplitHalo<B>> {
    s.lock().unwrap_or_else(|e| e.into_inner())
}

/// The own rows of a part (the state itself): its gradient gets the halo gradients the other
/// parts sent back, added in place once they arrived.
#[derive(Debug)]
struct HaloOwnBackward;

impl<B: SparseGnnBackend> Backward<B, 1> for HaloOwnBackward {
    type State = (usize, Shared<B>);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node] = ops.parents;
        let mut dy = grads.consume::<B>(&ops.node);
        let (part, shared) = ops.state;
        let Some(node) = node else { return };
        let mut s = lock(&shared);
        if let Some(wait) = s.wait.take() {
            wait.run();
        }
        for (g, indices, inverse) in std::mem::take(&mut s.arrived[part]) {
            // gradients that moved in another type are added in the state's (`add_rows`
            // converts them)
            dy = B::add_rows(dy, g, indices, inverse);
        }
        grads.register::<B>(node.id, dy);
    }
}

/// The halo rows of a part: their gradient goes back to the parts that sent them, all parts'
/// in one transfer started by the last of these steps.
#[derive(Debug)]
struct HaloRowsBackward<const N: usize>;

#[derive(Clone, Debug)]
struct HaloRowsState<B: Backend> {
    halo: Vec<HaloRows<B>>,
    shared: Shared<B>,
}

impl<B: SparseGnnBackend, const N: usize> Backward<B, N> for HaloRowsBackward<N> {
    type State = HaloRowsState<B>;

    fn backward(self, ops: Ops<Self::State, N>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let dy = grads.consume::<B>(&ops.node);
        let HaloRowsState { halo, shared } = ops.state;
        let mut s = lock(&shared);
        for (from, start, len, indices, inverse) in halo {
            s.pieces.push((from, crate::ops::primitive::row_range::<B>(dy.clone(), start, len), indices, inverse));
        }
        s.remaining = s.remaining.saturating_sub(1);
        if s.remaining > 0 {
            return;
        }
        let pieces = std::mem::take(&mut s.pieces);
        let groups = pieces.iter().map(|(from, g, _, _)| (vec![g.clone()], s.devices[*from].clone())).collect();
        let (moved, wait) = B::transfer_start(groups);
        for ((from, _, indices, inverse), g) in pieces.into_iter().zip(moved) {
            s.arrived[from].push((g, indices, inverse));
        }
        s.wait = Some(wait);
    }
}

/// The autodiff record of a started exchange.
struct TrackedStart<B: SparseGnnBackend, C: CheckpointStrategy> {
    halo: Vec<Option<FloatTensor<B>>>,
    routes: Vec<Vec<HaloRows<B>>>,
    own: Vec<FloatTensor<Ad<B, C>>>,
    shared: Shared<B>,
}

fn finish_tracked<B: SparseGnnBackend, C: CheckpointStrategy, const N: usize>(
    rec: TrackedStart<B, C>,
    after: Vec<FloatTensor<Ad<B, C>>>,
) -> Vec<Option<FloatTensor<Ad<B, C>>>> {
    let TrackedStart { halo, routes, own, shared } = rec;
    // the halo rows' steps run before the steps of what `after` came from (deeper in the
    // graph), so the gradients move while those run
    let parents = if after.len() == N { after } else { own };
    let nodes: Vec<_> = parents.iter().map(|t| t.node.clone()).collect();
    let nodes: [_; N] = match nodes.try_into() {
        Ok(n) => n,
        Err(_) => unreachable!("one parent per part"),
    };
    halo.into_iter()
        .zip(routes)
        .map(|(h, halo_rows)| {
            h.map(|h| match HaloRowsBackward::<N>.prepare::<C>(nodes.clone()).compute_bound().stateful() {
                OpsKind::Tracked(prep) => prep.finish(HaloRowsState { halo: halo_rows, shared: shared.clone() }, h),
                OpsKind::UnTracked(prep) => {
                    // nothing will send these rows' gradients: do not wait for them
                    lock(&shared).remaining = 0;
                    prep.finish(h)
                }
            })
        })
        .collect()
}

impl<B: SparseGnnBackend, C: CheckpointStrategy> ExchangeOps for Autodiff<B, C> {
    fn ad_rank_exchange(
        state: FloatTensor<Self>,
        routes: &crate::dist::collective::rank_pass::RankRoutesPrim<Self>,
    ) -> Result<FloatTensor<Self>, crate::dist::collective::comm::CommError> {
        let inner = crate::dist::collective::rank_pass::RankRoutesPrim::<B> {
            owned: routes.owned,
            send: routes.send.clone(),
            recv: routes.recv.clone(),
            comm: routes.comm.clone(),
        };
        match RankExchangeBackward.prepare::<C>([state.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let out = crate::dist::collective::rank_pass::rank_forward::<B>(state.primitive, &inner)?;
                Ok(prep.finish(inner, out))
            }
            OpsKind::UnTracked(prep) => {
                Ok(prep.finish(crate::dist::collective::rank_pass::rank_forward::<B>(state.primitive, &inner)?))
            }
        }
    }

    fn ad_exchange(
        states: Vec<FloatTensor<Self>>,
        devices: Vec<B::Device>,
        routes: Vec<Vec<crate::dist::exchange::forward::Route<Self>>>,
    ) -> Vec<FloatTensor<Self>> {
        let routes: Vec<Vec<crate::dist::exchange::forward::Route<B>>> = routes
            .into_iter()
            .map(|l| {
                l.into_iter()
                    .map(|r| crate::dist::exchange::forward::Route {
                        from: r.from,
                        indices: r.indices,
                        inverse: r.inverse,
                    })
                    .collect()
            })
            .collect();
        macro_rules! parts {
            ($($n:literal)*) => {
                match states.len() {
                    $($n => return exchange_tracked::<B, C, $n>(states, devices, routes),)*
                    _ => {}
                }
            };
        }
        parts!(1 2 3 4 5 6 7 8);
        // more parts: one differentiable move per route (the transfers take turns)
        let mut outs = Vec::with_capacity(states.len());
        for (p, list) in routes.into_iter().enumerate() {
            let mut pieces = vec![states[p].clone()];
            for r in list {
                let rows = Self::ad_take_rows(states[r.from].clone(), r.indices, r.inverse);
                pieces.push(<Self as burn::tensor::ops::FloatTensorOps<Self>>::float_to_device(rows, &devices[p]));
            }
            outs.push(match pieces.len() {
                1 => pieces.remove(0),
                _ => <Self as burn::tensor::ops::FloatTensorOps<Self>>::float_cat(pieces, 0),
            });
        }
        outs
    }

    fn ad_exchange_start(
        states: Vec<FloatTensor<Self>>,
        devices: Vec<B::Device>,
        routes: Vec<Vec<crate::dist::exchange::forward::Route<Self>>>,
        send: Option<burn::tensor::FloatDType>,
    ) -> (Vec<FloatTensor<Self>>, crate::dist::exchange::forward::HaloInFlight<Self>) {
        let n = states.len();
        if n == 0 || n > 8 {
            // more parts: the rows move by differentiable moves now (the transfers take turns)
            let (halo, wait) = crate::dist::exchange::forward::forward_start::<Self>(&states, &devices, &routes, send);
            return (states, crate::dist::exchange::forward::HaloInFlight { halo, wait, tracked: None });
        }
        let routes: Vec<Vec<crate::dist::exchange::forward::Route<B>>> = routes
            .into_iter()
            .map(|l| {
                l.into_iter()
                    .filter(|r| r.indices.shape()[0] > 0)
                    .map(|r| crate::dist::exchange::forward::Route {
                        from: r.from,
                        indices: r.indices,
                        inverse: r.inverse,
                    })
                    .collect()
            })
            .collect();
        let inner: Vec<FloatTensor<B>> = states.iter().map(|s| s.primitive.clone()).collect();
        let (halo, wait) = crate::dist::exchange::forward::forward_start::<B>(&inner, &devices, &routes, send);
        let shared: Shared<B> = std::sync::Arc::new(std::sync::Mutex::new(SplitHalo {
            remaining: halo.iter().filter(|h| h.is_some()).count(),
            pieces: Vec::new(),
            devices: devices.clone(),
            arrived: (0..n).map(|_| Vec::new()).collect(),
            wait: None,
        }));
        let own: Vec<FloatTensor<Self>> = states
            .into_iter()
            .enumerate()
            .map(|(p, s)| match HaloOwnBackward.prepare::<C>([s.node.clone()]).compute_bound().stateful() {
                OpsKind::Tracked(prep) => prep.finish((p, shared.clone()), s.primitive),
                OpsKind::UnTracked(prep) => prep.finish(s.primitive),
            })
            .collect();
        let rows = routes
            .into_iter()
            .map(|list| {
                let mut start = 0;
                list.into_iter()
                    .map(|r| {
                        let len = r.indices.shape()[0];
                        start += len;
                        (r.from, start - len, len, r.indices, r.inverse)
                    })
                    .collect()
            })
            .collect();
        let rec = TrackedStart::<B, C> { halo, routes: rows, own: own.clone(), shared };
        (own, crate::dist::exchange::forward::HaloInFlight { halo: Vec::new(), wait, tracked: Some(Box::new(rec)) })
    }

    fn ad_exchange_finish(
        halo: crate::dist::exchange::forward::HaloInFlight<Self>,
        after: Vec<FloatTensor<Self>>,
    ) -> Vec<Option<FloatTensor<Self>>> {
        let crate::dist::exchange::forward::HaloInFlight { halo, wait, tracked } = halo;
        wait.run();
        let Some(rec) = tracked else { return halo };
        let rec = match rec.downcast::<TrackedStart<B, C>>() {
            Ok(rec) => *rec,
            Err(_) => unreachable!("started by this backend"),
        };
        macro_rules! parts {
            ($($n:literal)*) => {
                match rec.own.len() {
                    $($n => finish_tracked::<B, C, $n>(rec, after),)*
                    _ => unreachable!("more than 8 parts move their rows when the exchange starts"),
                }
            };
        }
        parts!(1 2 3 4 5 6 7 8)
    }
}
