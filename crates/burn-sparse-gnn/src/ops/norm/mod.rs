//! Batch normalisation of node states (`[n, c]`, statistics per column over the rows),
//! differentiable in the states and the affine parameters, in two kernels forward and two
//! backward (see `sparse_gnn_kernels::norm`) where Burn's `BatchNorm` composes about twenty
//! tensor ops each way.
//!
//! ```
//! use burn::backend::{Autodiff, NdArray};
//! use burn::tensor::Tensor;
//! type B = Autodiff<NdArray>;
//! let dev = Default::default();
//! let x = Tensor::<B, 2>::from_floats([[1.0, 10.0], [3.0, 14.0]], &dev).require_grad();
//! let gamma = Tensor::<B, 1>::from_floats([2.0, 1.0], &dev).require_grad();
//! let beta = Tensor::<B, 1>::from_floats([0.5, 0.0], &dev);
//! let (y, mean, var) = burn_sparse_gnn::ops::batch_norm(x.clone(), gamma, beta, 1e-5).unwrap();
//! let y = y.to_data().to_vec::<f32>().unwrap();
//! let want = [-1.5, -1.0, 2.5, 1.0];
//! assert!(y.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-3), "{y:?}");
//! assert_eq!(mean.to_data().to_vec::<f32>().unwrap(), vec![2.0, 12.0]);
//! assert_eq!(var.to_data().to_vec::<f32>().unwrap(), vec![1.0, 4.0]);
//! ```

mod autodiff;
mod cube;
mod host;

use crate::error::OpError;
use crate::ops::loss::arithmetic;
use crate::ops::primitive::{prim, t2};
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::{FloatDType, Tensor, TensorPrimitive};

/// Batch normalisation over the rows of `[n, c]` states.
///
/// Part of [`crate::backend::SparseGnnBackend`] (see its conventions).
pub trait NormOps: Backend {
    /// The columns' `(mean, 1 / sqrt(var + eps), var)` of `x` (`[n, c]`, `n >= 1`), each
    /// `[c]`, f32 (f64 for f64 states); `var` is the biased variance. Composed tensor ops by
    /// default.
    fn batch_norm_stats(x: FloatTensor<Self>, eps: f64) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        composed_stats::<Self>(x, eps)
    }

    /// `(x - mean) * invstd * gamma + beta` per column, in the dtype of `x`. Composed tensor
    /// ops by default.
    fn batch_norm_apply(
        x: FloatTensor<Self>,
        mean: FloatTensor<Self>,
        invstd: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        composed_apply::<Self>(x, mean, invstd, gamma, beta)
    }

    /// The gradients `(dx, dgamma, dbeta)` of [`Self::batch_norm_apply`] with the batch's own
    /// statistics, from `dy`: `dx` in the dtype of `x`, the others f32 (f64 for f64 states).
    /// Composed tensor ops by default.
    fn batch_norm_grad(
        x: FloatTensor<Self>,
        dy: FloatTensor<Self>,
        mean: FloatTensor<Self>,
        invstd: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        composed_grad::<Self>(x, dy, mean, invstd, gamma)
    }

    /// The running statistics after a batch: `old * (1 - momentum) + batch * momentum` of the
    /// means and of the variances (`[c]` each, f32; not tracked). Composed tensor ops by default
    /// (six launches); backends with kernels do both in one.
    fn batch_norm_running(
        old_mean: FloatTensor<Self>,
        old_var: FloatTensor<Self>,
        mean: FloatTensor<Self>,
        var: FloatTensor<Self>,
        momentum: f64,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let blend = |old: FloatTensor<Self>, new: FloatTensor<Self>| {
            let f32 = |t| Tensor::<Self, 1>::from_primitive(TensorPrimitive::Float(t)).cast(FloatDType::F32);
            prim1::<Self>(f32(old).mul_scalar(1.0 - momentum).add(f32(new).mul_scalar(momentum)))
        };
        (blend(old_mean, mean), blend(old_var, var))
    }

    /// Differentiable batch normalisation with the batch's statistics: `(y, mean, var)`, only
    /// `y` tracked (in `x`, `gamma` and `beta`).
    fn ad_batch_norm(
        x: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
        beta: FloatTensor<Self>,
        eps: f64,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let (mean, invstd, var) = Self::batch_norm_stats(x.clone(), eps);
        (Self::batch_norm_apply(x, mean.clone(), invstd, gamma, beta), mean, var)
    }
}

/// Batch normalisation of `x` (`[n, c]`) with the batch's statistics and the affine map
/// `gamma`, `beta` (`[c]`): `(y, mean, var)`, the batch's column means and biased variances
/// (not tracked; for running statistics). Differentiable in `x`, `gamma` and `beta`. Errors
/// when `x` has no rows or the parameters are not `[c]`.
pub fn batch_norm<B: NormOps>(
    x: Tensor<B, 2>,
    gamma: Tensor<B, 1>,
    beta: Tensor<B, 1>,
    eps: f64,
) -> Result<(Tensor<B, 2>, Tensor<B, 1>, Tensor<B, 1>), OpError> {
    let [n, c] = x.dims();
    if n == 0 {
        return Err(OpError::Shape {
            op: "batch_norm",
            what: "states",
            got: vec![n, c],
            expected: "at least one row".into(),
        });
    }
    for (what, t) in [("gamma", &gamma), ("beta", &beta)] {
        if t.dims()[0] != c {
            return Err(OpError::Shape { op: "batch_norm", what, got: t.dims().to_vec(), expected: format!("[{c}]") });
        }
    }
    let (y, mean, var) = B::ad_batch_norm(
        x.into_primitive().tensor(),
        gamma.into_primitive().tensor(),
        beta.into_primitive().tensor(),
        eps,
    );
    let t1 = |t| Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(t));
    Ok((Tensor::from_primitive(TensorPrimitive::Float(y)), t1(mean), t1(var)))
}

/// The running statistics of a batch normalisation after a batch: `(mean, var)` with
/// `running = old * (1 - momentum) + batch * momentum` for the means and the variances (`[c]`
/// each), in the dtype of `old_mean`, not tracked: one kernel on the CubeCL backends for both,
/// where the composed update takes six launches. Errors when the four are not of one length.
pub fn batch_norm_running<B: NormOps>(
    old_mean: Tensor<B, 1>,
    old_var: Tensor<B, 1>,
    mean: Tensor<B, 1>,
    var: Tensor<B, 1>,
    momentum: f64,
) -> Result<(Tensor<B, 1>, Tensor<B, 1>), OpError> {
    let [c] = old_mean.dims();
    for (what, t) in [("running variances", &old_var), ("batch means", &mean), ("batch variances", &var)] {
        if t.dims()[0] != c {
            return Err(OpError::Shape {
                op: "batch_norm_running",
                what,
                got: t.dims().to_vec(),
                expected: format!("[{c}] (as the running means)"),
            });
        }
    }
    let dtype = FloatDType::from(old_mean.dtype());
    let p = |t: Tensor<B, 1>| t.detach().into_primitive().tensor();
    let (m, v) = B::batch_norm_running(p(old_mean), p(old_var), p(mean), p(var), momentum);
    Ok((t1::<B>(m, dtype), t1::<B>(v, dtype)))
}

fn prim1<B: Backend>(t: Tensor<B, 1>) -> FloatTensor<B> {
    t.into_primitive().tensor()
}

fn t1<B: Backend>(t: FloatTensor<B>, dtype: FloatDType) -> Tensor<B, 1> {
    Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(t)).cast(dtype)
}

fn row<B: Backend>(t: Tensor<B, 1>) -> Tensor<B, 2> {
    t.unsqueeze_dim::<2>(0)
}

pub(crate) fn composed_stats<B: Backend>(
    x: FloatTensor<B>,
    eps: f64,
) -> (FloatTensor<B>, FloatTensor<B>, FloatTensor<B>) {
    let x = t2::<B>(x);
    let x = x.clone().cast(arithmetic(x.dtype()));
    let mean = x.clone().mean_dim(0);
    let var = (x - mean.clone()).square().mean_dim(0);
    let invstd = var.clone().add_scalar(eps).sqrt().recip();
    let flat = |t: Tensor<B, 2>| {
        let [_, c] = t.dims();
        t.reshape([c]).into_primitive().tensor()
    };
    (flat(mean), flat(invstd), flat(var))
}

pub(crate) fn composed_apply<B: Backend>(
    x: FloatTensor<B>,
    mean: FloatTensor<B>,
    invstd: FloatTensor<B>,
    gamma: FloatTensor<B>,
    beta: FloatTensor<B>,
) -> FloatTensor<B> {
    let x = t2::<B>(x);
    let dtype = FloatDType::from(x.dtype());
    let math = arithmetic(x.dtype());
    let y = (x.cast(math) - row(t1::<B>(mean, math))) * row(t1::<B>(invstd, math)) * row(t1::<B>(gamma, math))
        + row(t1::<B>(beta, math));
    prim(y.cast(dtype))
}

pub(crate) fn composed_grad<B: Backend>(
    x: FloatTensor<B>,
    dy: FloatTensor<B>,
    mean: FloatTensor<B>,
    invstd: FloatTensor<B>,
    gamma: FloatTensor<B>,
) -> (FloatTensor<B>, FloatTensor<B>, FloatTensor<B>) {
    let x = t2::<B>(x);
    let dtype = FloatDType::from(x.dtype());
    let math = arithmetic(x.dtype());
    let [n, _] = x.dims();
    let r = row(t1::<B>(invstd, math));
    let xhat = (x.cast(math) - row(t1::<B>(mean, math))) * r.clone();
    let dy = t2::<B>(dy).cast(math);
    let dbeta = dy.clone().sum_dim(0);
    let dgamma = (dy.clone() * xhat.clone()).sum_dim(0);
    let count = n as f64;
    let dx = (dy - dbeta.clone().div_scalar(count) - xhat * dgamma.clone().div_scalar(count))
        * r
        * row(t1::<B>(gamma, math));
    let flat = |t: Tensor<B, 2>| {
        let [_, c] = t.dims();
        t.reshape([c]).into_primitive().tensor()
    };
    (prim(dx.cast(dtype)), flat(dgamma), flat(dbeta))
}
