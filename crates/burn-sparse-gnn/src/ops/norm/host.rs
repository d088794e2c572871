//! NdArray implementation of [`super::NormOps`]: the CPU references of `sparse-gnn-kernels`
//! (column sums in f64, in row order), so that a run gives the same statistics and gradients
//! in every process (Burn's NdArray reductions vectorise by the buffer's alignment, which
//! changes the summation order from one process to the next: a MUTAG GIN run scored 0.84 to
//! 0.95 on one seed). The affine map stays the trait's composed default (element-wise, already
//! deterministic).

use super::NormOps;
use crate::ops::host_io::{read_f, width, write_f};
use crate::ops::loss::arithmetic;
use burn::tensor::ops::FloatTensor;
use burn::tensor::DType;
use burn_ndarray::FloatNdArrayElement;
use burn_ndarray::IntNdArrayElement;
use burn_ndarray::NdArray;
use burn_ndarray::NdArrayTensor;
use burn_ndarray::QuantElement;
use burn_ndarray::SharedArray;
use sparse_gnn_kernels::norm::{reference_grad, reference_stats};

impl<E: FloatNdArrayElement, I: IntNdArrayElement, Q: QuantElement> NormOps for NdArray<E, I, Q>
where
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
    fn batch_norm_stats(x: FloatTensor<Self>, eps: f64) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let device = <Self as burn::tensor::ops::FloatTensorOps<Self>>::float_device(&x);
        let x = read_f::<Self>(x);
        let (mean, var) = reference_stats(&x.data, width(&x));
        let invstd = var.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
        let dtype = stats_dtype(x.dtype);
        let c = mean.len();
        let out = |v: Vec<f64>| write_f::<Self>(v, vec![c], dtype, &device);
        (out(mean), out(invstd), out(var))
    }

    fn batch_norm_grad(
        x: FloatTensor<Self>,
        dy: FloatTensor<Self>,
        mean: FloatTensor<Self>,
        invstd: FloatTensor<Self>,
        gamma: FloatTensor<Self>,
    ) -> (FloatTensor<Self>, FloatTensor<Self>, FloatTensor<Self>) {
        let device = <Self as burn::tensor::ops::FloatTensorOps<Self>>::float_device(&x);
        let x = read_f::<Self>(x);
        let c = width(&x);
        let dy = read_f::<Self>(dy).data;
        let (mean, invstd, gamma) =
            (read_f::<Self>(mean).data, read_f::<Self>(invstd).data, read_f::<Self>(gamma).data);
        let (dx, dgamma, dbeta) = reference_grad(&x.data, &dy, &mean, &invstd, &gamma, c);
        let rows = x.data.len() / c.max(1);
        let side = |v: Vec<f64>| write_f::<Self>(v, vec![c], stats_dtype(x.dtype), &device);
        (write_f::<Self>(dx, vec![rows, c], x.dtype, &device), side(dgamma), side(dbeta))
    }
}

/// The dtype of the statistics and the parameters' gradients: f32, f64 for f64 states.
fn stats_dtype(x: DType) -> DType {
    arithmetic(x).into()
}
