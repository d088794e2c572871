//! `Autodiff<B>` for every differentiable sparse op, with hand-written backward passes built
//! from `B`'s kernels. No backward needs float atomics: gradients that scatter to source nodes
//! are gathers over the transpose.
//!
//! | op | backward |
//! |---|---|
//! | SpMM sum / mean | `dx = A^T (dout / deg)` (SpMM over the transpose), `dw = SDDMM(dout / deg, x)` |
//! | SpMM max | `dx`, `dw` through the argmax (gather over the transpose, masked SDDMM) |
//! | SDDMM | `da = SpMM(A, ds, b)`, `db = SpMM(A^T, ds, a)` |
//! | edge softmax | `ds = y * (dy - sum_row y * dy)` |
//! | sampled SpMM | as SpMM, over the same sample (per-edge scale from the same hash) |
//! | MaxK / max-pooling | scatter of the value gradient through the kept positions |
//! | CBSR to dense | gather at the pattern |
//! | rows by distinct ids ([`crate::rows`]) | gather of `[dy; 0]` through the inverse map |
//! | ReLU + dropout ([`crate::dropout`]) | `dy` times the saved bit mask and `1 / (1 - p)` |
//! | CBSR SpGEMM | `dvalues = SSpMM(dy)`, `dw = sum_t dy[i, idx] * values` |
//! | mean / sum aggregation then two linear maps ([`crate::ops::aggregate_pair`]) | `t = A^T (dy / deg)`, `dx = t w_n^T + dy w_r^T` (in place), `dw_n = x^T t`, `dw_r = x^T dy` |
//! | matmul with a half-precision saved input | `dx = dy w^T`, `dw = sum over row chunks of (scale * x16)^T dy` |

use crate::backend::{CbsrPrim, CsrPrimitive, PoolSpec, Reduce, ReluDropout, SampleSpec, SparseGnnBackend, SpmmOutput};
use crate::dense::{LinearPrecision, SavedTerm, Term};
use crate::graph::GraphPrimitive;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::Autodiff;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn::tensor::{Tensor, TensorMetadata, TensorPrimitive};
use sparse_gnn_kernels::config::KernelConfig;

type Ad<B, C> = Autodiff<B, C>;

fn inner_opt<B: Backend, C: CheckpointStrategy>(w: Option<FloatTensor<Ad<B, C>>>) -> Option<FloatTensor<B>> {
    w.map(|w| w.primitive)
}

fn untracked<B: Backend, C: CheckpointStrategy>(t: FloatTensor<B>) -> FloatTensor<Ad<B, C>> {
    <Ad<B, C> as AutodiffBackend>::from_inner(t)
}

fn cbsr_inner<B: Backend, C: CheckpointStrategy>(c: &CbsrPrim<Ad<B, C>>) -> CbsrPrim<B> {
    CbsrPrim {
        values: c.values.primitive.clone(),
        indices: c.indices.clone(),
        n: c.n,
        k: c.k,
        dim: c.dim,
        packed: c.packed,
    }
}

fn t2<B: Backend>(t: FloatTensor<B>) -> Tensor<B, 2> {
    Tensor::from_primitive(TensorPrimitive::Float(t))
}

fn prim<B: Backend, const D: usize>(t: Tensor<B, D>) -> FloatTensor<B> {
    t.into_primitive().tensor()
}

/// Heads of an edge-weight tensor (`[nnz]` = 1 head, `[nnz, h]` = h heads).
fn heads_of<B: Backend>(w: &FloatTensor<B>) -> usize {
    let s = w.shape();
    if s.num_dims() == 1 {
        1
    } else {
        s.as_slice()[1]
    }
}

/// Reshapes an edge-weight gradient `[nnz, heads]` to the weight's own rank.
fn like_weight<B: Backend>(dw: FloatTensor<B>, w_shape: &[usize]) -> FloatTensor<B> {
    B::float_reshape(dw, w_shape.into())
}

/// Edge weights in transpose order (`t_perm` is padded to one entry when there is no edge).
fn permute_weights<B: Backend>(g: &GraphPrimitive<B>, w: FloatTensor<B>) -> FloatTensor<B> {
    if g.csr.nnz == 0 {
        return w;
    }
    B::float_select(w, 0, g.t_perm.clone())
}

// ---- SpMM (sum / mean) -------------------------------------------------------------------

#[derive(Debug)]
struct SpmmBackward;

#[derive(Clone, Debug)]
struct SpmmState<B: Backend> {
    g: GraphPrimitive<B>,
    w: Option<FloatTensor<B>>,
    x: Option<FloatTensor<B>>,
    reduce: Reduce,
}

impl<B: SparseGnnBackend> Backward<B, 2> for SpmmBackward {
    type State = SpmmState<B>;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node_x, node_w] = ops.parents;
        let dout = grads.consume::<B>(&ops.node);
        let SpmmState { g, w, x, reduce } = ops.state;
        let d = match reduce {
            Reduce::Mean => {
                let dtype = dout.dtype().into();
                crate::aggregate::inv_degree_rows::<B>(&g.csr, dout, dtype)
            }
            _ => dout,
        };
        if let (Some(node), Some(w), Some(x)) = (node_w, w.as_ref(), x) {
            let shape = w.shape().as_slice().to_vec();
            let dw = B::sddmm(&g.csr, d.clone(), x, heads_of::<B>(w));
            grads.register::<B>(node.id, like_weight::<B>(dw, &shape));
        }
        if let Some(node) = node_x {
            let wt = w.map(|w| permute_weights::<B>(&g, w));
            let dx = B::spmm(&g.csc, wt, d, Reduce::Sum).out;
            grads.register::<B>(node.id, dx);
        }
    }
}

// ---- SpMM (max) --------------------------------------------------------------------------

#[derive(Debug)]
struct SpmmMaxBackward;

#[derive(Clone, Debug)]
struct SpmmMaxState<B: Backend> {
    g: GraphPrimitive<B>,
    w: Option<FloatTensor<B>>,
    x: Option<FloatTensor<B>>,
    argmax: IntTensor<B>,
}

impl<B: SparseGnnBackend> Backward<B, 2> for SpmmMaxBackward {
    type State = SpmmMaxState<B>;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node_x, node_w] = ops.parents;
        let dout = grads.consume::<B>(&ops.node);
        let SpmmMaxState { g, w, x, argmax } = ops.state;
        if let (Some(node), Some(w), Some(x)) = (node_w, w.as_ref(), x) {
            let shape = w.shape().as_slice().to_vec();
            let dw = B::spmm_max_grad_w(&g.csr, heads_of::<B>(w), dout.clone(), x, argmax.clone());
            grads.register::<B>(node.id, like_weight::<B>(dw, &shape));
        }
        if let Some(node) = node_x {
            let dx = B::spmm_max_grad_x(&g, w, dout, argmax);
            grads.register::<B>(node.id, dx);
        }
    }
}

// ---- SDDMM -------------------------------------------------------------------------------

#[derive(Debug)]
struct SddmmBackward;

impl<B: SparseGnnBackend> Backward<B, 2> for SddmmBackward {
    type State = (GraphPrimitive<B>, FloatTensor<B>, FloatTensor<B>, usize);

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node_a, node_b] = ops.parents;
        let ds = grads.consume::<B>(&ops.node);
        let (g, a, b, _heads) = ops.state;
        if let Some(node) = node_b {
            let dst = permute_weights::<B>(&g, ds.clone());
            grads.register::<B>(node.id, B::spmm(&g.csc, Some(dst), a, Reduce::Sum).out);
        }
        if let Some(node) = node_a {
            grads.register::<B>(node.id, B::spmm(&g.csr, Some(ds), b, Reduce::Sum).out);
        }
    }
}

// ---- edge softmax ------------------------------------------------------------------------

#[derive(Debug)]
struct EdgeSoftmaxBackward;

impl<B: SparseGnnBackend> Backward<B, 1> for EdgeSoftmaxBackward {
    type State = (CsrPrimitive<B>, FloatTensor<B>);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node] = ops.parents;
        let dy = grads.consume::<B>(&ops.node);
        let (csr, y) = ops.state;
        if let Some(node) = node {
            grads.register::<B>(node.id, B::edge_softmax_grad(&csr, y, dy));
        }
    }
}

// ---- sampled SpMM ------------------------------------------------------------------------

#[derive(Debug)]
struct SampledSpmmBackward;

#[derive(Clone, Debug)]
struct SampledState<B: Backend> {
    g: GraphPrimitive<B>,
    w: Option<FloatTensor<B>>,
    x: Option<FloatTensor<B>>,
    spec: SampleSpec,
    reduce: Reduce,
}

impl<B: SparseGnnBackend> Backward<B, 2> for SampledSpmmBackward {
    type State = SampledState<B>;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node_x, node_w] = ops.parents;
        let dout = grads.consume::<B>(&ops.node);
        let SampledState { g, w, x, spec, reduce } = ops.state;
        // the same sample as the forward: per-edge scale (0 = not sampled)
        let scale = B::edge_sample_scale(&g.csr, spec, reduce, &dout);
        let scale_t: Tensor<B, 1> = Tensor::from_primitive(TensorPrimitive::Float(scale));
        let heads = w.as_ref().map(heads_of::<B>).unwrap_or(1);
        let scale_2d = scale_t.clone().unsqueeze_dim::<2>(1);
        if let (Some(node), Some(w), Some(x)) = (node_w, w.as_ref(), x) {
            let shape = w.shape().as_slice().to_vec();
            let dw = t2(B::sddmm(&g.csr, dout.clone(), x, heads)) * scale_2d.clone();
            grads.register::<B>(node.id, like_weight::<B>(prim(dw), &shape));
        }
        if let Some(node) = node_x {
            let eff = match w {
                Some(w) => {
                    let w2 = t2(B::float_reshape(w, [g.csr.nnz, heads].into()));
                    prim(w2 * scale_2d)
                }
                None => prim(scale_t),
            };
            let dx = B::spmm(&g.csc, Some(permute_weights::<B>(&g, eff)), dout, Reduce::Sum).out;
            grads.register::<B>(node.id, dx);
        }
    }
}

// ---- MaxK / max-pooling: values = x at the kept positions ----------------------------------

#[derive(Debug)]
struct SelectBackward;

impl<B: SparseGnnBackend> Backward<B, 1> for SelectBackward {
    type State = CbsrPrim<B>;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node] = ops.parents;
        let dv = grads.consume::<B>(&ops.node);
        if let Some(node) = node {
            let mut pattern = ops.state;
            pattern.values = dv;
            grads.register::<B>(node.id, B::cbsr_to_dense(&pattern));
        }
    }
}

// ---- rows picked by distinct ids: the gradient is a gather through the inverse ------------

#[derive(Debug)]
struct TakeRowsBackward;

impl<B: SparseGnnBackend> Backward<B, 1> for TakeRowsBackward {
    type State = IntTensor<B>;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node] = ops.parents;
        let dy = grads.consume::<B>(&ops.node);
        if let Some(node) = node {
            grads.register::<B>(node.id, crate::exchange::gather_back::<B>(dy, ops.state));
        }
    }
}

// ---- the halo exchange of one rank: its backward pass is a collective too --------------

#[derive(Debug)]
struct RankExchangeBackward;

impl<B: SparseGnnBackend> Backward<B, 1> for RankExchangeBackward {
    type State = crate::collective::RankRoutesPrim<B>;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node] = ops.parents;
        let dy = grads.consume::<B>(&ops.node);
        // every rank takes part in the collective, whether or not its state needs a gradient
        let own = crate::collective::rank_backward::<B>(dy, &ops.state);
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
            pending.own[part] = Some(crate::exchange::row_range::<B>(dy.clone(), 0, owned));
        }
        for (from, start, len, indices, inverse) in halo {
            if parents[from].is_some() && len > 0 {
                let g = crate::exchange::row_range::<B>(dy.clone(), start, len);
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
                None => crate::exchange::gather_back::<B>(g, inverse),
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
    routes: Vec<Vec<crate::exchange::Route<B>>>,
) -> Vec<FloatTensor<Ad<B, C>>> {
    let nodes: Vec<_> = states.iter().map(|s| s.node.clone()).collect();
    let nodes: [_; N] = match nodes.try_into() {
        Ok(n) => n,
        Err(_) => unreachable!("called with N states"),
    };
    let inner: Vec<FloatTensor<B>> = states.into_iter().map(|s| s.primitive).collect();
    let owned: Vec<usize> = inner.iter().map(|s| s.shape()[0]).collect();
    let outs = crate::exchange::forward::<B>(inner, &devices, &routes);
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
    wait: Option<crate::exchange::TransferWait>,
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
            // gradients that moved in another type are added in the state's
            let g = match dy.dtype() {
                d if d != g.dtype() => B::float_cast(g, burn::tensor::FloatDType::from(d)),
                _ => g,
            };
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
            s.pieces.push((from, crate::exchange::row_range::<B>(dy.clone(), start, len), indices, inverse));
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

// ---- ReLU + dropout: the gradient passes where the saved bit is set ---------------------

#[derive(Debug)]
struct ReluDropoutBackward;

impl<B: SparseGnnBackend> Backward<B, 1> for ReluDropoutBackward {
    type State = (IntTensor<B>, ReluDropout);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node] = ops.parents;
        let dy = grads.consume::<B>(&ops.node);
        if let Some(node) = node {
            let (mask, spec) = ops.state;
            grads.register::<B>(node.id, B::relu_dropout_grad(dy, mask, spec));
        }
    }
}

// ---- weighted cross-entropy: the logits' gradient over the saved logits -------------------

#[derive(Debug)]
struct CrossEntropyBackward;

impl<B: SparseGnnBackend> Backward<B, 1> for CrossEntropyBackward {
    /// The logits, their rows' log-sum-exp, the labels and the weights.
    type State = (FloatTensor<B>, FloatTensor<B>, IntTensor<B>, FloatTensor<B>);

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node] = ops.parents;
        let dterms = grads.consume::<B>(&ops.node);
        if let Some(node) = node {
            let (x, lse, labels, weight) = ops.state;
            grads.register::<B>(node.id, B::cross_entropy_grad(x, lse, labels, weight, dterms));
        }
    }
}

// ---- CBSR to dense: gradient of the values is a gather ------------------------------------

#[derive(Debug)]
struct ToDenseBackward;

impl<B: SparseGnnBackend> Backward<B, 1> for ToDenseBackward {
    type State = CbsrPrim<B>;

    fn backward(self, ops: Ops<Self::State, 1>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node] = ops.parents;
        let dy = grads.consume::<B>(&ops.node);
        if let Some(node) = node {
            grads.register::<B>(node.id, B::cbsr_gather(dy, &ops.state));
        }
    }
}

// ---- CBSR SpGEMM -------------------------------------------------------------------------

#[derive(Debug)]
struct SpgemmBackward;

#[derive(Clone, Debug)]
struct SpgemmState<B: Backend> {
    g: GraphPrimitive<B>,
    w: Option<FloatTensor<B>>,
    c: CbsrPrim<B>,
}

impl<B: SparseGnnBackend> Backward<B, 2> for SpgemmBackward {
    type State = SpgemmState<B>;

    fn backward(self, ops: Ops<Self::State, 2>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node_v, node_w] = ops.parents;
        let dy = grads.consume::<B>(&ops.node);
        let SpgemmState { g, w, c } = ops.state;
        if let (Some(node), Some(w)) = (node_w, w.as_ref()) {
            let shape = w.shape().as_slice().to_vec();
            let dw = B::cbsr_spgemm_grad_w(&g.csr, dy.clone(), &c);
            grads.register::<B>(node.id, like_weight::<B>(dw, &shape));
        }
        if let Some(node) = node_v {
            grads.register::<B>(node.id, B::cbsr_sspmm(&g, w, dy, &c));
        }
    }
}

/// Parents `[x, w or x]`: when there is no weight the second slot repeats `x` and the backward
/// ignores it (the state says whether a weight exists).
macro_rules! nodes2 {
    ($x:expr, $w:expr) => {
        [$x.node.clone(), $w.map(|w| w.node.clone()).unwrap_or_else(|| $x.node.clone())]
    };
}

impl<B: SparseGnnBackend, C: CheckpointStrategy> SparseGnnBackend for Autodiff<B, C> {
    fn spmm(
        csr: &CsrPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        x: FloatTensor<Self>,
        reduce: Reduce,
    ) -> SpmmOutput<Self> {
        let o = B::spmm(csr, inner_opt::<B, C>(w), x.primitive, reduce);
        SpmmOutput { out: untracked::<B, C>(o.out), argmax: o.argmax }
    }
    fn spmm_max_grad_x(
        g: &GraphPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        dout: FloatTensor<Self>,
        argmax: IntTensor<Self>,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::spmm_max_grad_x(g, inner_opt::<B, C>(w), dout.primitive, argmax))
    }
    fn spmm_max_grad_w(
        csr: &CsrPrimitive<Self>,
        heads: usize,
        dout: FloatTensor<Self>,
        x: FloatTensor<Self>,
        argmax: IntTensor<Self>,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::spmm_max_grad_w(csr, heads, dout.primitive, x.primitive, argmax))
    }
    fn sddmm(csr: &CsrPrimitive<Self>, a: FloatTensor<Self>, b: FloatTensor<Self>, heads: usize) -> FloatTensor<Self> {
        untracked::<B, C>(B::sddmm(csr, a.primitive, b.primitive, heads))
    }
    fn edge_softmax(csr: &CsrPrimitive<Self>, scores: FloatTensor<Self>) -> FloatTensor<Self> {
        untracked::<B, C>(B::edge_softmax(csr, scores.primitive))
    }
    fn edge_softmax_grad(csr: &CsrPrimitive<Self>, y: FloatTensor<Self>, dy: FloatTensor<Self>) -> FloatTensor<Self> {
        untracked::<B, C>(B::edge_softmax_grad(csr, y.primitive, dy.primitive))
    }
    fn edge_sample_scale(
        csr: &CsrPrimitive<Self>,
        spec: SampleSpec,
        reduce: Reduce,
        like: &FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::edge_sample_scale(csr, spec, reduce, &like.primitive))
    }
    fn sampled_spmm(
        csr: &CsrPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        x: FloatTensor<Self>,
        spec: SampleSpec,
        reduce: Reduce,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::sampled_spmm(csr, inner_opt::<B, C>(w), x.primitive, spec, reduce))
    }
    fn maxk(x: FloatTensor<Self>, k: usize, config: &KernelConfig) -> CbsrPrim<Self> {
        let c = B::maxk(x.primitive, k, config);
        CbsrPrim {
            values: untracked::<B, C>(c.values),
            indices: c.indices,
            n: c.n,
            k: c.k,
            dim: c.dim,
            packed: c.packed,
        }
    }
    fn maxpool(x: FloatTensor<Self>, spec: PoolSpec) -> CbsrPrim<Self> {
        let c = B::maxpool(x.primitive, spec);
        CbsrPrim {
            values: untracked::<B, C>(c.values),
            indices: c.indices,
            n: c.n,
            k: c.k,
            dim: c.dim,
            packed: c.packed,
        }
    }
    fn cbsr_to_dense(c: &CbsrPrim<Self>) -> FloatTensor<Self> {
        untracked::<B, C>(B::cbsr_to_dense(&cbsr_inner(c)))
    }
    fn cbsr_gather(x: FloatTensor<Self>, pattern: &CbsrPrim<Self>) -> FloatTensor<Self> {
        untracked::<B, C>(B::cbsr_gather(x.primitive, &cbsr_inner(pattern)))
    }
    fn cbsr_spgemm(g: &GraphPrimitive<Self>, w: Option<FloatTensor<Self>>, c: &CbsrPrim<Self>) -> FloatTensor<Self> {
        untracked::<B, C>(B::cbsr_spgemm(g, inner_opt::<B, C>(w), &cbsr_inner(c)))
    }
    fn cbsr_sspmm(
        g: &GraphPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        dy: FloatTensor<Self>,
        pattern: &CbsrPrim<Self>,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::cbsr_sspmm(g, inner_opt::<B, C>(w), dy.primitive, &cbsr_inner(pattern)))
    }
    fn cbsr_spgemm_grad_w(csr: &CsrPrimitive<Self>, dy: FloatTensor<Self>, c: &CbsrPrim<Self>) -> FloatTensor<Self> {
        untracked::<B, C>(B::cbsr_spgemm_grad_w(csr, dy.primitive, &cbsr_inner(c)))
    }
    fn cbsr_indices(c: &CbsrPrim<Self>) -> IntTensor<Self> {
        B::cbsr_indices(&cbsr_inner(c))
    }
    fn relu_dropout(
        x: FloatTensor<Self>,
        spec: ReluDropout,
        seed: Option<FloatTensor<Self>>,
        rows: Option<IntTensor<Self>>,
    ) -> (FloatTensor<Self>, IntTensor<Self>) {
        let (y, mask) = B::relu_dropout(x.primitive, spec, inner_opt::<B, C>(seed), rows);
        (untracked::<B, C>(y), mask)
    }
    fn relu_dropout_grad(dy: FloatTensor<Self>, mask: IntTensor<Self>, spec: ReluDropout) -> FloatTensor<Self> {
        untracked::<B, C>(B::relu_dropout_grad(dy.primitive, mask, spec))
    }
    fn cross_entropy(
        x: FloatTensor<Self>,
        labels: IntTensor<Self>,
        weight: FloatTensor<Self>,
        config: &KernelConfig,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let (terms, lse) = B::cross_entropy(x.primitive, labels, weight.primitive, config);
        (untracked::<B, C>(terms), untracked::<B, C>(lse))
    }
    fn cross_entropy_grad(
        x: FloatTensor<Self>,
        lse: FloatTensor<Self>,
        labels: IntTensor<Self>,
        weight: FloatTensor<Self>,
        dterms: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::cross_entropy_grad(x.primitive, lse.primitive, labels, weight.primitive, dterms.primitive))
    }
    fn ad_cross_entropy(
        x: FloatTensor<Self>,
        labels: IntTensor<Self>,
        weight: FloatTensor<Self>,
        config: &KernelConfig,
    ) -> FloatTensor<Self> {
        let weight = weight.primitive;
        match CrossEntropyBackward.prepare::<C>([x.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let (terms, lse) = B::cross_entropy(x.primitive.clone(), labels.clone(), weight.clone(), config);
                prep.finish((x.primitive, lse, labels, weight), terms)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::cross_entropy(x.primitive, labels, weight, config).0),
        }
    }
    fn nccl_device(device: &B::Device) -> Option<usize> {
        B::nccl_device(device)
    }

    fn rank_transfer_ints(
        send: Vec<Option<IntTensor<B>>>,
        recv: &[usize],
        width: usize,
        dtype: burn::tensor::DType,
        device: &B::Device,
        comm: &crate::collective::Comm,
    ) -> Option<Result<Option<IntTensor<B>>, crate::collective::CommError>> {
        B::rank_transfer_ints(send, recv, width, dtype, device, comm)
    }

    fn add_rows(
        base: FloatTensor<Self>,
        values: FloatTensor<Self>,
        indices: IntTensor<Self>,
        inverse: IntTensor<Self>,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::add_rows(base.primitive, values.primitive, indices, inverse))
    }
    fn ad_relu_dropout(
        x: FloatTensor<Self>,
        spec: ReluDropout,
        seed: Option<FloatTensor<Self>>,
        rows: Option<IntTensor<Self>>,
    ) -> FloatTensor<Self> {
        let seed = inner_opt::<B, C>(seed);
        match ReluDropoutBackward.prepare::<C>([x.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let (y, mask) = B::relu_dropout(x.primitive, spec, seed, rows);
                prep.finish((mask, spec), y)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::relu_dropout(x.primitive, spec, seed, rows).0),
        }
    }
    fn device_memory(device: &Self::Device) -> Option<(u64, u64)> {
        B::device_memory(device)
    }

    fn device_capacity(device: &Self::Device) -> Option<(u64, u64)> {
        B::device_capacity(device)
    }

    fn dense_product(
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
        ta: bool,
        tb: bool,
        math: crate::dense::ProductMath,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::dense_product(a.primitive, b.primitive, ta, tb, math))
    }

    fn dense_product_half(a: FloatTensor<Self>, b: FloatTensor<Self>, ta: bool, tb: bool) -> FloatTensor<Self> {
        untracked::<B, C>(B::dense_product_half(a.primitive, b.primitive, ta, tb))
    }

    fn dense_product_bias(
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
        bias: FloatTensor<Self>,
        math: crate::dense::ProductMath,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::dense_product_bias(a.primitive, b.primitive, bias.primitive, math))
    }

    fn dense_product_acc(
        acc: FloatTensor<Self>,
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
        ta: bool,
        tb: bool,
        math: crate::dense::ProductMath,
    ) -> FloatTensor<Self> {
        untracked::<B, C>(B::dense_product_acc(acc.primitive, a.primitive, b.primitive, ta, tb, math))
    }

    fn ad_linear(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        b: Option<FloatTensor<Self>>,
        precision: LinearPrecision,
    ) -> FloatTensor<Self> {
        let has_b = b.is_some();
        let nodes =
            [x.node.clone(), w.node.clone(), b.as_ref().map(|b| b.node.clone()).unwrap_or_else(|| x.node.clone())];
        let bi = b.map(|b| b.primitive);
        let terms = vec![Term::new(x.primitive, w.primitive)];
        match LinearBackward.prepare::<C>(nodes).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let (out, terms) = crate::dense::linear_forward::<B>(terms, bi, precision);
                prep.finish(LinearState { terms, has_b, precision }, out)
            }
            OpsKind::UnTracked(prep) => prep.finish(crate::dense::linear_forward::<B>(terms, bi, precision).0),
        }
    }

    fn ad_linear_pair(
        first: Term<Self>,
        second: Term<Self>,
        b: Option<FloatTensor<Self>>,
        precision: LinearPrecision,
    ) -> FloatTensor<Self> {
        let has_b = b.is_some();
        let nodes = [
            first.x.node.clone(),
            first.w.node.clone(),
            second.x.node.clone(),
            second.w.node.clone(),
            b.as_ref().map(|b| b.node.clone()).unwrap_or_else(|| first.x.node.clone()),
        ];
        let bi = b.map(|b| b.primitive);
        // the half copies are inputs of the forward only: their gradient goes to `x`
        let inner = |t: Term<Self>| Term { x: t.x.primitive, w: t.w.primitive, x_half: t.x_half.map(|h| h.primitive) };
        let terms = vec![inner(first), inner(second)];
        match LinearPairBackward.prepare::<C>(nodes).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let (out, terms) = crate::dense::linear_forward::<B>(terms, bi, precision);
                prep.finish(LinearState { terms, has_b, precision }, out)
            }
            OpsKind::UnTracked(prep) => prep.finish(crate::dense::linear_forward::<B>(terms, bi, precision).0),
        }
    }

    fn ad_aggregate_pair(
        g: &GraphPrimitive<Self>,
        x: FloatTensor<Self>,
        w_neigh: FloatTensor<Self>,
        w_root: FloatTensor<Self>,
        b: Option<FloatTensor<Self>>,
        reduce: Reduce,
        precision: LinearPrecision,
    ) -> FloatTensor<Self> {
        let (d_in, d_out) = {
            let s = w_neigh.primitive.shape();
            (s[0], s[1])
        };
        let n = g.csr.n_rows;
        // the fused backward's transposed SpMM is `d_out` wide: where the input needs no
        // gradient, or the output is wider than the input, the aggregate is kept instead (the
        // neighbour weight's gradient is then one product)
        if x.node.requirement.is_none() || d_out > d_in {
            let x_half = match precision {
                LinearPrecision::Half(h) => Some(prim(t2::<Self>(x.clone()).cast(h))),
                _ => None,
            };
            let neigh = Self::ad_spmm(g, None, x_half.clone().unwrap_or_else(|| x.clone()), reduce);
            let head = |t| crate::aggregate::head::<Self>(t, n);
            let root = Term { x: head(x), w: w_root, x_half: x_half.map(head) };
            return Self::ad_linear_pair(Term::new(neigh, w_neigh), root, b, precision);
        }
        let has_b = b.is_some();
        let nodes = [
            x.node.clone(),
            w_neigh.node.clone(),
            w_root.node.clone(),
            b.as_ref().map(|b| b.node.clone()).unwrap_or_else(|| x.node.clone()),
        ];
        let bi = b.map(|b| b.primitive);
        let forward = |bi| {
            crate::aggregate::pair_forward::<B>(
                g,
                x.primitive,
                w_neigh.primitive,
                w_root.primitive,
                bi,
                reduce,
                precision,
            )
        };
        match AggregatePairBackward.prepare::<C>(nodes).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let (out, saved) = forward(bi);
                prep.finish(AggregatePairState { g: g.clone(), saved, has_b }, out)
            }
            OpsKind::UnTracked(prep) => prep.finish(forward(bi).0),
        }
    }

    fn ad_spmm(
        g: &GraphPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        x: FloatTensor<Self>,
        reduce: Reduce,
    ) -> FloatTensor<Self> {
        let nodes = nodes2!(x, w.as_ref());
        // `x` is kept only for the weights' gradient: constant weights (data) keep nothing
        let keep_x = w.as_ref().is_some_and(|w| !w.node.requirement.is_none());
        let wi = w.map(|w| w.primitive);
        if reduce == Reduce::Max {
            match SpmmMaxBackward.prepare::<C>(nodes).compute_bound().stateful() {
                OpsKind::Tracked(prep) => {
                    let o = B::spmm(&g.csr, wi.clone(), x.primitive.clone(), reduce);
                    let argmax = o.argmax.expect("max reduce returns its argmax");
                    let x_state = keep_x.then_some(x.primitive);
                    prep.finish(SpmmMaxState { g: g.clone(), w: wi, x: x_state, argmax }, o.out)
                }
                OpsKind::UnTracked(prep) => prep.finish(B::spmm(&g.csr, wi, x.primitive, reduce).out),
            }
        } else {
            match SpmmBackward.prepare::<C>(nodes).compute_bound().stateful() {
                OpsKind::Tracked(prep) => {
                    let out = B::spmm(&g.csr, wi.clone(), x.primitive.clone(), reduce).out;
                    let x_state = keep_x.then_some(x.primitive);
                    prep.finish(SpmmState { g: g.clone(), w: wi, x: x_state, reduce }, out)
                }
                OpsKind::UnTracked(prep) => prep.finish(B::spmm(&g.csr, wi, x.primitive, reduce).out),
            }
        }
    }

    fn ad_sddmm(
        g: &GraphPrimitive<Self>,
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
        heads: usize,
    ) -> FloatTensor<Self> {
        match SddmmBackward.prepare::<C>([a.node.clone(), b.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let out = B::sddmm(&g.csr, a.primitive.clone(), b.primitive.clone(), heads);
                prep.finish((g.clone(), a.primitive, b.primitive, heads), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::sddmm(&g.csr, a.primitive, b.primitive, heads)),
        }
    }

    fn ad_edge_softmax(g: &GraphPrimitive<Self>, scores: FloatTensor<Self>) -> FloatTensor<Self> {
        match EdgeSoftmaxBackward.prepare::<C>([scores.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let y = B::edge_softmax(&g.csr, scores.primitive);
                prep.finish((g.csr.clone(), y.clone()), y)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::edge_softmax(&g.csr, scores.primitive)),
        }
    }

    fn ad_sampled_spmm(
        g: &GraphPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        x: FloatTensor<Self>,
        spec: SampleSpec,
        reduce: Reduce,
    ) -> FloatTensor<Self> {
        let nodes = nodes2!(x, w.as_ref());
        let wi = w.map(|w| w.primitive);
        match SampledSpmmBackward.prepare::<C>(nodes).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let out = B::sampled_spmm(&g.csr, wi.clone(), x.primitive.clone(), spec, reduce);
                let x_state = wi.as_ref().map(|_| x.primitive);
                prep.finish(SampledState { g: g.clone(), w: wi, x: x_state, spec, reduce }, out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::sampled_spmm(&g.csr, wi, x.primitive, spec, reduce)),
        }
    }

    fn ad_maxk(x: FloatTensor<Self>, k: usize, config: &KernelConfig) -> CbsrPrim<Self> {
        let c = B::maxk(x.primitive.clone(), k, config);
        track_selection::<B, C>(x, c)
    }

    fn ad_maxpool(x: FloatTensor<Self>, spec: PoolSpec) -> CbsrPrim<Self> {
        let c = B::maxpool(x.primitive.clone(), spec);
        track_selection::<B, C>(x, c)
    }

    fn ad_cbsr_to_dense(c: &CbsrPrim<Self>) -> FloatTensor<Self> {
        let ci = cbsr_inner(c);
        match ToDenseBackward.prepare::<C>([c.values.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let out = B::cbsr_to_dense(&ci);
                prep.finish(ci, out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::cbsr_to_dense(&ci)),
        }
    }

    fn ad_take_rows(x: FloatTensor<Self>, indices: IntTensor<Self>, inverse: IntTensor<Self>) -> FloatTensor<Self> {
        match TakeRowsBackward.prepare::<C>([x.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => prep.finish(inverse, B::float_select(x.primitive, 0, indices)),
            OpsKind::UnTracked(prep) => prep.finish(B::float_select(x.primitive, 0, indices)),
        }
    }

    fn ad_rank_exchange(
        state: FloatTensor<Self>,
        routes: &crate::collective::RankRoutesPrim<Self>,
    ) -> Result<FloatTensor<Self>, crate::collective::CommError> {
        let inner = crate::collective::RankRoutesPrim::<B> {
            owned: routes.owned,
            send: routes.send.clone(),
            recv: routes.recv.clone(),
            comm: routes.comm.clone(),
        };
        match RankExchangeBackward.prepare::<C>([state.node.clone()]).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let out = crate::collective::rank_forward::<B>(state.primitive, &inner)?;
                Ok(prep.finish(inner, out))
            }
            OpsKind::UnTracked(prep) => Ok(prep.finish(crate::collective::rank_forward::<B>(state.primitive, &inner)?)),
        }
    }

    fn ad_exchange(
        states: Vec<FloatTensor<Self>>,
        devices: Vec<B::Device>,
        routes: Vec<Vec<crate::exchange::Route<Self>>>,
    ) -> Vec<FloatTensor<Self>> {
        let routes: Vec<Vec<crate::exchange::Route<B>>> = routes
            .into_iter()
            .map(|l| {
                l.into_iter()
                    .map(|r| crate::exchange::Route { from: r.from, indices: r.indices, inverse: r.inverse })
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
        routes: Vec<Vec<crate::exchange::Route<Self>>>,
        send: Option<burn::tensor::FloatDType>,
    ) -> (Vec<FloatTensor<Self>>, crate::exchange::HaloInFlight<Self>) {
        let n = states.len();
        if n == 0 || n > 8 {
            // more parts: the rows move by differentiable moves now (the transfers take turns)
            let (halo, wait) = crate::exchange::forward_start::<Self>(&states, &devices, &routes, send);
            return (states, crate::exchange::HaloInFlight { halo, wait, tracked: None });
        }
        let routes: Vec<Vec<crate::exchange::Route<B>>> = routes
            .into_iter()
            .map(|l| {
                l.into_iter()
                    .filter(|r| r.indices.shape()[0] > 0)
                    .map(|r| crate::exchange::Route { from: r.from, indices: r.indices, inverse: r.inverse })
                    .collect()
            })
            .collect();
        let inner: Vec<FloatTensor<B>> = states.iter().map(|s| s.primitive.clone()).collect();
        let (halo, wait) = crate::exchange::forward_start::<B>(&inner, &devices, &routes, send);
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
        (own, crate::exchange::HaloInFlight { halo: Vec::new(), wait, tracked: Some(Box::new(rec)) })
    }

    fn ad_exchange_finish(
        halo: crate::exchange::HaloInFlight<Self>,
        after: Vec<FloatTensor<Self>>,
    ) -> Vec<Option<FloatTensor<Self>>> {
        let crate::exchange::HaloInFlight { halo, wait, tracked } = halo;
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

    fn ad_cbsr_spgemm(g: &GraphPrimitive<Self>, w: Option<FloatTensor<Self>>, c: &CbsrPrim<Self>) -> FloatTensor<Self> {
        let nodes = nodes2!(c.values, w.as_ref());
        let wi = w.map(|w| w.primitive);
        let ci = cbsr_inner(c);
        match SpgemmBackward.prepare::<C>(nodes).compute_bound().stateful() {
            OpsKind::Tracked(prep) => {
                let out = B::cbsr_spgemm(g, wi.clone(), &ci);
                prep.finish(SpgemmState { g: g.clone(), w: wi, c: ci }, out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::cbsr_spgemm(g, wi, &ci)),
        }
    }
}

// ---- linear layers over all nodes ----------------------------------------------------------

#[derive(Debug)]
struct LinearBackward;

#[derive(Debug)]
struct LinearPairBackward;

#[derive(Clone, Debug)]
struct LinearState<B: Backend> {
    /// Per product: what the forward kept of its input, its weight, its input's dtype.
    terms: Vec<SavedTerm<B>>,
    has_b: bool,
    precision: LinearPrecision,
}

/// Registers the gradients of a linear layer's parents: `[x_1, w_1, ..., x_t, w_t, b]`.
fn linear_grads<B: SparseGnnBackend, const N: usize>(ops: Ops<LinearState<B>, N>, grads: &mut Gradients) {
    let parents = ops.parents;
    let dy = grads.consume::<B>(&ops.node);
    let LinearState { terms, has_b, precision } = ops.state;
    let node_b = parents[N - 1].clone().filter(|_| has_b);
    let want: Vec<[bool; 2]> =
        (0..terms.len()).map(|t| [parents[2 * t].is_some(), parents[2 * t + 1].is_some()]).collect();
    let (per_term, db) = crate::dense::linear_backward::<B>(dy, terms, precision, &want, node_b.is_some());
    for (t, [dx, dw]) in per_term.into_iter().enumerate() {
        for (node, g) in [(parents[2 * t].clone(), dx), (parents[2 * t + 1].clone(), dw)] {
            if let (Some(node), Some(g)) = (node, g) {
                grads.register::<B>(node.id, g);
            }
        }
    }
    if let (Some(node), Some(g)) = (node_b, db) {
        grads.register::<B>(node.id, g);
    }
}

impl<B: SparseGnnBackend> Backward<B, 3> for LinearBackward {
    type State = LinearState<B>;

    fn backward(self, ops: Ops<Self::State, 3>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        linear_grads::<B, 3>(ops, grads);
    }
}

impl<B: SparseGnnBackend> Backward<B, 5> for LinearPairBackward {
    type State = LinearState<B>;

    fn backward(self, ops: Ops<Self::State, 5>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        linear_grads::<B, 5>(ops, grads);
    }
}

#[derive(Debug)]
struct AggregatePairBackward;

#[derive(Clone, Debug)]
struct AggregatePairState<B: Backend> {
    g: GraphPrimitive<B>,
    saved: crate::aggregate::PairSaved<B>,
    has_b: bool,
}

impl<B: SparseGnnBackend> Backward<B, 4> for AggregatePairBackward {
    type State = AggregatePairState<B>;

    fn backward(self, ops: Ops<Self::State, 4>, grads: &mut Gradients, _ck: &mut Checkpointer) {
        let [node_x, node_wn, node_wr, node_b] = ops.parents;
        let dy = grads.consume::<B>(&ops.node);
        let AggregatePairState { g, saved, has_b } = ops.state;
        let node_b = node_b.filter(|_| has_b);
        let want = [node_x.is_some(), node_wn.is_some(), node_wr.is_some(), node_b.is_some()];
        let out = crate::aggregate::pair_backward::<B>(&g, dy, saved, want);
        for (node, grad) in [node_x, node_wn, node_wr, node_b].into_iter().zip(out) {
            if let (Some(node), Some(grad)) = (node, grad) {
                grads.register::<B>(node.id, grad);
            }
        }
    }
}

/// Wraps the values of a selection (MaxK / pooling) so their gradient scatters back to `x`.
fn track_selection<B: SparseGnnBackend, C: CheckpointStrategy>(
    x: FloatTensor<Ad<B, C>>,
    c: CbsrPrim<B>,
) -> CbsrPrim<Ad<B, C>> {
    let CbsrPrim { values, indices, n, k, dim, packed } = c;
    let values = match SelectBackward.prepare::<C>([x.node.clone()]).compute_bound().stateful() {
        OpsKind::Tracked(prep) => {
            let pattern = CbsrPrim { values: values.clone(), indices: indices.clone(), n, k, dim, packed };
            prep.finish(pattern, values)
        }
        OpsKind::UnTracked(prep) => prep.finish(values),
    };
    CbsrPrim { values, indices, n, k, dim, packed }
}
