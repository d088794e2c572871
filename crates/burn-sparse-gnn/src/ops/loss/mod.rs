//! Weighted softmax cross-entropy of logit rows, differentiable, with the logits' gradient
//! written over the logits (see `sparse_gnn_kernels::loss`): the training loss of node
//! classification, `sum_i w_i * -log softmax(x_i)[y_i]`, in two passes and without the `[n, c]`
//! temporaries of the composed ops. The binary cross-entropy with logits of link prediction
//! ([`binary_cross_entropy`]) the same way: one kernel forward, one backward.

mod autodiff;
mod cube;
mod host;

use crate::error::OpError;
use crate::ops::primitive::prim;
use crate::ops::primitive::t2;
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::ops::IntTensor;
use burn::tensor::FloatDType;
use burn::tensor::Int;
use burn::tensor::Tensor;
use burn::tensor::TensorPrimitive;
use sparse_gnn_kernels::config::KernelConfig;

/// The weighted softmax cross-entropy of logit rows.
///
/// Part of [`crate::backend::SparseGnnBackend`] (see its conventions).
pub trait LossOps: Backend {
    /// Weighted softmax cross-entropy of the logit rows `x` (`[n, c]`, see [`crate::loss`]):
    /// per row `weight[i] * (lse[i] - x[i, labels[i]])` and `lse[i]`, the row's log-sum-exp
    /// (both `[n]`, f32; f64 for f64 logits). Composed tensor ops by default; backends with
    /// kernels do it in one pass (`config`: the plane choice of the kernel).
    fn cross_entropy(
        x: FloatTensor<Self>,
        labels: IntTensor<Self>,
        weight: FloatTensor<Self>,
        config: &KernelConfig,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let _ = config;
        crate::ops::loss::composed_forward::<Self>(x, labels, weight)
    }

    /// The logits' gradient of [`Self::cross_entropy`]'s terms from their gradient
    /// `dterms` (`[n]`): `dterms[i] * weight[i] * (softmax(x[i]) - onehot(labels[i]))`, in the
    /// dtype of `x`. Composed tensor ops by default; backends with kernels write it over `x`
    /// where nothing else holds it.
    fn cross_entropy_grad(
        x: FloatTensor<Self>,
        lse: FloatTensor<Self>,
        labels: IntTensor<Self>,
        weight: FloatTensor<Self>,
        dterms: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        crate::ops::loss::composed_grad::<Self>(x, lse, labels, weight, dterms)
    }

    /// Differentiable [`Self::cross_entropy`] (its terms).
    fn ad_cross_entropy(
        x: FloatTensor<Self>,
        labels: IntTensor<Self>,
        weight: FloatTensor<Self>,
        config: &KernelConfig,
    ) -> FloatTensor<Self> {
        Self::cross_entropy(x, labels, weight, config).0
    }

    /// Binary cross-entropy with logits of the scores `s` (`[p]`, see [`binary_cross_entropy`]):
    /// per score `w * (y * softplus(-s) + (1 - y) * softplus(s))` (`[p]`, f32; f64 for f64
    /// scores), `labels` `y` and `weight` `w` (f32) each `[p]` or `[1]` (one for all). Composed
    /// tensor ops by default; backends with kernels do it in one pass.
    fn binary_cross_entropy(
        s: FloatTensor<Self>,
        labels: FloatTensor<Self>,
        weight: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        composed_binary::<Self>(s, labels, weight)
    }

    /// The scores' gradient of [`Self::binary_cross_entropy`]'s terms from their gradient
    /// `dterms` (`[p]`): `dterms * w * (sigmoid(s) - y)`, in the dtype of `s`. Composed tensor ops
    /// by default; backends with kernels write it over `s` where nothing else holds it.
    fn binary_cross_entropy_grad(
        s: FloatTensor<Self>,
        labels: FloatTensor<Self>,
        weight: FloatTensor<Self>,
        dterms: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        composed_binary_grad::<Self>(s, labels, weight, dterms)
    }

    /// Differentiable (in the scores) [`Self::binary_cross_entropy`].
    fn ad_binary_cross_entropy(
        s: FloatTensor<Self>,
        labels: FloatTensor<Self>,
        weight: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        Self::binary_cross_entropy(s, labels, weight)
    }
}

/// Rows per block of [`sum_terms`]' first reduction.
const SUM_BLOCK: usize = 1024;

/// The sum of `terms` (`[n]`, e.g. [`cross_entropy_rows`]) as a `[1]` tensor, the same bits
/// every run, differentiable: blocks of 1,024 terms (the last padded with zeros) are summed
/// along their axis, then the blocks' sums. CubeCL's whole-tensor `sum` adds partial sums with
/// float atomics, in an order that varies from run to run; one reduction along the axis of
/// `[n]` is deterministic but runs on a single cube (about 70 ms per training step at 2.4M rows
/// on an H200).
pub fn sum_terms<B: Backend>(terms: Tensor<B, 1>) -> Tensor<B, 1> {
    let [n] = terms.dims();
    if n <= SUM_BLOCK {
        return terms.sum_dim(0);
    }
    let blocks = n.div_ceil(SUM_BLOCK);
    let padded = match blocks * SUM_BLOCK - n {
        0 => terms,
        pad => {
            let zeros = Tensor::<B, 1>::zeros([pad], (&terms.device(), terms.dtype()));
            Tensor::cat(vec![terms, zeros], 0)
        }
    };
    padded.reshape([blocks, SUM_BLOCK]).sum_dim(1).reshape([blocks]).sum_dim(0)
}

/// Per row `i` of the logits `x` (`[n, c]`): `weight[i] * -log softmax(x[i])[labels[i]]`
/// (`[n]`, f32; f64 for f64 logits), differentiable in `x`. Sum it for the loss. `labels` (`[n]`) must lie in
/// `0..c`; `weight` is `[n]` (0 for rows outside the loss). `config` picks the kernels' plane
/// use. Errors when the shapes disagree.
pub fn cross_entropy_rows<B: LossOps>(
    x: Tensor<B, 2>,
    labels: Tensor<B, 1, Int>,
    weight: Tensor<B, 1>,
    config: &KernelConfig,
) -> Result<Tensor<B, 1>, OpError> {
    let n = x.dims()[0];
    for (what, got) in [("labels", labels.dims()), ("weights", weight.dims())] {
        if got[0] != n {
            return Err(OpError::Shape {
                op: "cross_entropy_rows",
                what,
                got: got.to_vec(),
                expected: format!("[{n}] (one per row of the logits)"),
            });
        }
    }
    let terms = B::ad_cross_entropy(
        x.into_primitive().tensor(),
        labels.into_primitive(),
        weight.into_primitive().tensor(),
        config,
    );
    Ok(Tensor::from_primitive(TensorPrimitive::Float(terms)))
}

/// Per score `s[i]` (`[p]`): the binary cross-entropy with logits
/// `w[i] * (y[i] * softplus(-s[i]) + (1 - y[i]) * softplus(s[i]))` (`[p]`, f32; f64 for f64
/// scores), differentiable in `s` (the gradient `w * (sigmoid(s) - y)` per unit of the term's
/// gradient). Sum it for the loss. `labels` (0 or 1; values in between are soft labels) and
/// `weight` (0 for scores outside the loss) are each `[p]` or `[1]` (one for every score); they
/// are not differentiated. One kernel forward and one backward on the CubeCL backends, where
/// Burn's composed ops (`relu(s) + log1p(exp(-|s|))` and the label mix) take about a dozen over
/// every score and keep several of them for the backward pass. Errors when the shapes disagree.
pub fn binary_cross_entropy<B: LossOps>(
    scores: Tensor<B, 1>,
    labels: Tensor<B, 1>,
    weight: Tensor<B, 1>,
) -> Result<Tensor<B, 1>, OpError> {
    let [p] = scores.dims();
    for (what, got) in [("labels", labels.dims()), ("weights", weight.dims())] {
        if got[0] != p && got[0] != 1 {
            return Err(OpError::Shape {
                op: "binary_cross_entropy",
                what,
                got: got.to_vec(),
                expected: format!("[{p}] (one per score) or [1] (one for all)"),
            });
        }
    }
    let f32 = |t: Tensor<B, 1>| t.cast(FloatDType::F32).into_primitive().tensor();
    let terms = B::ad_binary_cross_entropy(scores.into_primitive().tensor(), f32(labels), f32(weight));
    Ok(Tensor::from_primitive(TensorPrimitive::Float(terms)))
}

/// `[1]` (one entry for all) broadcast to `[p]`.
fn entries<B: Backend>(t: FloatTensor<B>, p: usize, math: FloatDType) -> Tensor<B, 1> {
    let t = Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(t)).cast(math);
    match t.dims() {
        [1] if p != 1 => t.expand([p]),
        _ => t,
    }
}

/// `log(1 + exp(v))` without overflow.
fn softplus<B: Backend>(v: Tensor<B, 1>) -> Tensor<B, 1> {
    v.clone().clamp_min(0.0) + v.abs().neg().exp().log1p()
}

/// The composed forward pass of the binary cross-entropy: its terms, `[p]`, f32 (f64 for f64
/// scores).
pub(crate) fn composed_binary<B: Backend>(
    s: FloatTensor<B>,
    labels: FloatTensor<B>,
    weight: FloatTensor<B>,
) -> FloatTensor<B> {
    let s = Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(s));
    let math = arithmetic(s.dtype());
    let s = s.cast(math);
    let p = s.dims()[0];
    let (y, w) = (entries::<B>(labels, p, math), entries::<B>(weight, p, math));
    let terms = (softplus(s.clone().neg()) * y.clone() + softplus(s) * y.neg().add_scalar(1.0)) * w;
    terms.into_primitive().tensor()
}

/// The composed backward pass of the binary cross-entropy: the scores' gradient (dtype of `s`).
pub(crate) fn composed_binary_grad<B: Backend>(
    s: FloatTensor<B>,
    labels: FloatTensor<B>,
    weight: FloatTensor<B>,
    dterms: FloatTensor<B>,
) -> FloatTensor<B> {
    let s = Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(s));
    let dtype = FloatDType::from(s.dtype());
    let math = arithmetic(s.dtype());
    let p = s.dims()[0];
    let (y, w) = (entries::<B>(labels, p, math), entries::<B>(weight, p, math));
    let g = Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(dterms)).cast(math);
    let ds = (burn::tensor::activation::sigmoid(s.cast(math)) - y) * w * g;
    ds.cast(dtype).into_primitive().tensor()
}

/// The arithmetic type for logits (or node states) of type `dtype`: f64 for f64 (the CPU
/// reference backend), f32 otherwise. Batch normalisation's composed ops use it too.
pub(crate) fn arithmetic(dtype: burn::tensor::DType) -> FloatDType {
    match dtype {
        burn::tensor::DType::F64 => FloatDType::F64,
        _ => FloatDType::F32,
    }
}

/// The composed forward pass: `(terms, lse)`, both `[n]`, f32 (f64 for f64 logits).
pub(crate) fn composed_forward<B: Backend>(
    x: FloatTensor<B>,
    labels: IntTensor<B>,
    weight: FloatTensor<B>,
) -> (FloatTensor<B>, FloatTensor<B>) {
    let x = t2::<B>(x);
    let math = arithmetic(x.dtype());
    let x = x.cast(math);
    let m = x.clone().max_dim(1);
    let lse = (x.clone() - m.clone()).exp().sum_dim(1).log() + m;
    let labels = Tensor::<B, 1, Int>::from_primitive(labels).unsqueeze_dim::<2>(1);
    let picked = x.gather(1, labels);
    let w = Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(weight)).cast(math);
    let terms = (lse.clone() - picked).squeeze_dim::<1>(1) * w;
    (terms.into_primitive().tensor(), lse.squeeze_dim::<1>(1).into_primitive().tensor())
}

/// The composed backward pass: the logits' gradient (dtype of `x`).
pub(crate) fn composed_grad<B: Backend>(
    x: FloatTensor<B>,
    lse: FloatTensor<B>,
    labels: IntTensor<B>,
    weight: FloatTensor<B>,
    dterms: FloatTensor<B>,
) -> FloatTensor<B> {
    let x = t2::<B>(x);
    let dtype = FloatDType::from(x.dtype());
    let math = arithmetic(x.dtype());
    let [_, c] = x.dims();
    let lse = Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(lse)).cast(math);
    let p = (x.cast(math) - lse.unsqueeze_dim::<2>(1)).exp();
    let labels = Tensor::<B, 1, Int>::from_primitive(labels);
    let n = labels.dims()[0];
    let cols = Tensor::<B, 1, Int>::arange(0..c as i64, &labels.device()).unsqueeze_dim::<2>(0).expand([n, c]);
    let hit = cols.equal(labels.unsqueeze_dim::<2>(1).expand([n, c])).float().cast(math);
    let w = Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(weight)).cast(math);
    let g = Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(dterms)).cast(math) * w;
    prim(((p - hit) * g.unsqueeze_dim::<2>(1)).cast(dtype))
}
