//! One case on one backend: forward output and gradients ([`evaluate`]), and the f64 CPU
//! reference of the forward output ([`reference_forward`]).

use super::cases::Inputs;
use super::op::Op;
use super::tensors::{host, host_int, tensor, upstream};
use crate::backend::SparseGnnAutodiffBackend;
use crate::graph::csr::Csr;
use crate::graph::{Graph, GraphOptions};
use crate::ops;
use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{FloatDType, Tensor};
use sparse_gnn_kernels::cbsr::reference as cbsr_ref;
use sparse_gnn_kernels::maxk::reference as maxk_ref;
use sparse_gnn_kernels::pool::reference as pool_ref;
use sparse_gnn_kernels::sample::reference as sample_ref;
use sparse_gnn_kernels::sddmm::reference as sddmm_ref;
use sparse_gnn_kernels::softmax::reference as softmax_ref;
use sparse_gnn_kernels::spmm::reference::{self as spmm_ref, EdgeWeights};

/// The f64 CPU backend every gradient is compared with.
pub type RefBackend = Autodiff<NdArray<f64, i64>>;

/// What an evaluation on one backend produced.
#[derive(Clone, Debug)]
pub struct Evaluation {
    /// Forward output, flattened.
    pub out: Vec<f64>,
    /// Column ids of a selection (MaxK / pooling).
    pub indices: Option<Vec<i64>>,
    /// `(input name, gradient)` of the loss `sum(out * r)`.
    pub grads: Vec<(&'static str, Vec<f64>)>,
}

/// Runs `op` on backend `B` under autodiff: the output and the gradients of `sum(out * r)`
/// for a fixed random `r`.
pub fn evaluate<B: SparseGnnAutodiffBackend>(
    dev: &B::Device,
    adj: &Csr,
    gopts: GraphOptions,
    op: &Op,
    inp: &Inputs,
    seed: u64,
    dtype: Option<FloatDType>,
) -> Evaluation {
    let g = Graph::<B>::new(adj, dev, gopts);
    // op inputs in the storage type (the cast is differentiable: gradients reach the leaves)
    let down = |t: Tensor<B, 2>| match dtype {
        Some(d) => t.cast(d),
        None => t,
    };
    let up = |t: Tensor<B, 2>| match dtype {
        Some(_) => t.cast(<B::FloatElem as burn::tensor::Element>::dtype()),
        None => t,
    };
    let (nr, nc, nnz, f) = (adj.n_rows(), adj.n_cols(), adj.nnz(), inp.f);
    let x = tensor::<B, 2>(
        &inp.x,
        [if matches!(op, Op::Maxk { .. } | Op::MaxkDense { .. } | Op::Maxpool { .. }) { nr } else { nc }, f],
        dev,
    )
    .require_grad();
    let w = inp.w.as_ref().map(|w| {
        let h = w.len() / nnz.max(1);
        tensor::<B, 2>(w, [nnz, h.max(1)], dev).require_grad()
    });
    let mut indices = None;
    let mut extra: Vec<(&'static str, Tensor<B, 2>)> = Vec::new();
    let out: Tensor<B, 2> = match *op {
        Op::Spmm { reduce, .. } => {
            up(ops::try_spmm(&g, w.clone().map(down), down(x.clone()), reduce).expect("valid case"))
        }
        Op::Sddmm { heads } => {
            let a = tensor::<B, 2>(&inp.y, [nr, f], dev).require_grad();
            extra.push(("a", a.clone()));
            up(ops::try_sddmm(&g, down(a), down(x.clone()), heads).expect("valid case"))
        }
        Op::EdgeSoftmax { heads } => {
            let s = tensor::<B, 2>(&inp.y, [nnz, heads], dev).require_grad();
            extra.push(("scores", s.clone()));
            up(ops::try_edge_softmax(&g, down(s)).expect("valid case"))
        }
        Op::Sampled { spec, reduce, .. } => {
            up(ops::try_sampled_spmm(&g, w.clone().map(down), down(x.clone()), spec, reduce).expect("valid case"))
        }
        Op::Maxk { k } => {
            let c = ops::try_maxk_with(down(x.clone()), k, g.kernel_config()).expect("valid case");
            indices = Some(host_int(c.indices()));
            up(c.values())
        }
        Op::MaxkDense { k } => {
            up(ops::try_maxk_with(down(x.clone()), k, g.kernel_config()).expect("valid case").to_dense())
        }
        Op::Maxpool { spec } => {
            let c = ops::try_maxpool(down(x.clone()), spec).expect("valid case");
            indices = Some(host_int(c.indices()));
            up(c.values())
        }
        Op::CbsrSpgemm { k, .. } => {
            let c = ops::try_maxk_with(down(x.clone()), k, g.kernel_config()).expect("valid case");
            let w1 = w.clone().map(|w| down(w).reshape([nnz]));
            up(ops::try_cbsr_spgemm(&g, w1, &c).expect("valid case"))
        }
    };
    let r_host = upstream(out.dims()[0] * out.dims()[1], seed);
    let r = tensor::<B, 2>(&r_host, out.dims(), dev);
    let out_host = host(out.clone());
    let grads = (out * r).sum().backward();
    let mut gl = Vec::new();
    let uses_x = !matches!(op, Op::EdgeSoftmax { .. });
    if uses_x {
        if let Some(gx) = x.grad(&grads) {
            gl.push(("x", host(gx)));
        }
    }
    for (name, t) in extra {
        if let Some(gt) = t.grad(&grads) {
            gl.push((name, host(gt)));
        }
    }
    if let Some(w) = w {
        if let Some(gw) = w.grad(&grads) {
            gl.push(("w", host(gw)));
        }
    }
    Evaluation { out: out_host, indices, grads: gl }
}

/// The CPU reference of the forward output (and selection indices).
pub fn reference_forward(adj: &Csr, op: &Op, inp: &Inputs) -> (Vec<f64>, Option<Vec<i64>>) {
    let csr = adj.as_ref();
    let f = inp.f;
    let ew = |heads: usize| inp.w.as_ref().map(|w| EdgeWeights { values: w, heads: heads.max(1) });
    let idx64 = |v: Vec<u32>| v.into_iter().map(|c| c as i64).collect::<Vec<_>>();
    match *op {
        Op::Spmm { reduce, heads } => (spmm_ref::spmm(&csr, ew(heads), &inp.x, f, reduce).0, None),
        Op::Sddmm { heads } => (sddmm_ref::sddmm(&csr, &inp.y, &inp.x, f, heads), None),
        Op::EdgeSoftmax { heads } => (softmax_ref::edge_softmax(&csr, &inp.y, heads), None),
        Op::Sampled { spec, reduce, .. } => (sample_ref::sampled_spmm(&csr, ew(1), &inp.x, f, &spec, reduce), None),
        Op::Maxk { k } => {
            let (v, i) = maxk_ref::maxk(&inp.x, adj.n_rows(), f, k);
            (v, Some(idx64(i)))
        }
        Op::MaxkDense { k } => {
            let (v, i) = maxk_ref::maxk(&inp.x, adj.n_rows(), f, k);
            (cbsr_ref::to_dense(&v, &i, adj.n_rows(), k, f), None)
        }
        Op::Maxpool { spec } => {
            let (v, i) = pool_ref::maxpool(&inp.x, adj.n_rows(), f, &spec);
            (v, Some(idx64(i)))
        }
        Op::CbsrSpgemm { k, .. } => {
            let (v, i) = maxk_ref::maxk(&inp.x, adj.n_cols(), f, k);
            (cbsr_ref::spgemm(&csr, inp.w.as_deref(), &v, &i, k, f), None)
        }
    }
}

/// Forward output only, on the f64 CPU backend (no autodiff bookkeeping).
pub(super) fn evaluate_forward(
    dev: &burn::tensor::Device<RefBackend>,
    adj: &Csr,
    gopts: GraphOptions,
    op: &Op,
    inp: &Inputs,
) -> Vec<f64> {
    type Inner = <RefBackend as AutodiffBackend>::InnerBackend;
    let g = Graph::<Inner>::new(adj, dev, gopts);
    let (nr, nc, nnz, f) = (adj.n_rows(), adj.n_cols(), adj.nnz(), inp.f);
    let sel = matches!(op, Op::Maxk { .. } | Op::MaxkDense { .. } | Op::Maxpool { .. });
    let x = tensor::<Inner, 2>(&inp.x, [if sel { nr } else { nc }, f], dev);
    let w = inp.w.as_ref().map(|w| tensor::<Inner, 2>(w, [nnz, (w.len() / nnz.max(1)).max(1)], dev));
    let out = match *op {
        Op::Spmm { reduce, .. } => ops::try_spmm(&g, w, x, reduce).expect("valid"),
        Op::Sddmm { heads } => ops::try_sddmm(&g, tensor::<Inner, 2>(&inp.y, [nr, f], dev), x, heads).expect("valid"),
        Op::EdgeSoftmax { heads } => {
            ops::try_edge_softmax(&g, tensor::<Inner, 2>(&inp.y, [nnz, heads], dev)).expect("valid")
        }
        Op::Sampled { spec, reduce, .. } => ops::try_sampled_spmm(&g, w, x, spec, reduce).expect("valid"),
        Op::Maxk { k } => ops::maxk(x, k).values(),
        Op::MaxkDense { k } => ops::maxk(x, k).to_dense(),
        Op::Maxpool { spec } => ops::maxpool(x, spec).values(),
        Op::CbsrSpgemm { k, .. } => {
            let c = ops::maxk(x, k);
            ops::try_cbsr_spgemm(&g, w.map(|w| w.reshape([nnz])), &c).expect("valid")
        }
    };
    host(out)
}
