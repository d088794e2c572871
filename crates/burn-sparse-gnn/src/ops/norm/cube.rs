//! `CubeBackend` implementation of [`super::NormOps`]: the CubeCL kernels of `sparse-gnn-kernels`.

use super::NormOps;
use crate::ops::cube_launch::*;
use burn::tensor::DType;
use burn::tensor::TensorMetadata;
use burn_cubecl::BoolElement;
use burn_cubecl::CubeBackend;
use burn_cubecl::CubeRuntime;
use burn_cubecl::FloatElement;
use burn_cubecl::IntElement;
use sparse_gnn_kernels::norm as kernel;

impl<R, F, I, BT> NormOps for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn batch_norm_stats(x: Ft<R>, eps: f64) -> (Ft<R>, Ft<R>, Ft<R>) {
        let x = mat(x);
        let c = x.shape()[1];
        let [mean, invstd, var] = [0; 3].map(|_| empty(&x, [c], DType::F32));
        kernel::launch_stats::<R>(
            &x.client,
            bind(&x),
            [bind(&mean), bind(&invstd), bind(&var)],
            eps as f32,
            dtype_of(&x),
        );
        sample(&var);
        (mean, invstd, var)
    }

    fn batch_norm_apply(x: Ft<R>, mean: Ft<R>, invstd: Ft<R>, gamma: Ft<R>, beta: Ft<R>) -> Ft<R> {
        let x = mat(x);
        let [mean, invstd, gamma, beta] = [mean, invstd, gamma, beta].map(f32_array);
        let y = empty(&x, x.shape(), x.dtype);
        kernel::launch_normalize::<R>(
            &x.client,
            bind(&x),
            [bind(&mean), bind(&invstd), bind(&gamma), bind(&beta)],
            bind(&y),
            dtype_of(&x),
        );
        sample(&y);
        y
    }

    fn batch_norm_running(old_mean: Ft<R>, old_var: Ft<R>, mean: Ft<R>, var: Ft<R>, momentum: f64) -> (Ft<R>, Ft<R>) {
        let [old_mean, old_var, mean, var] = [old_mean, old_var, mean, var].map(f32_array);
        let c = old_mean.shape()[0];
        let [new_mean, new_var] = [0; 2].map(|_| empty(&old_mean, [c], DType::F32));
        kernel::launch_running_stats::<R>(
            &old_mean.client,
            [bind(&old_mean), bind(&old_var)],
            [bind(&mean), bind(&var)],
            [bind(&new_mean), bind(&new_var)],
            momentum as f32,
        );
        sample(&new_var);
        (new_mean, new_var)
    }

    fn batch_norm_grad(x: Ft<R>, dy: Ft<R>, mean: Ft<R>, invstd: Ft<R>, gamma: Ft<R>) -> (Ft<R>, Ft<R>, Ft<R>) {
        let x = mat(x);
        let dtype = x.dtype;
        let dy = mat(if dy.dtype == dtype { dy } else { burn_cubecl::kernel::cast(dy, dtype) });
        let [mean, invstd, gamma] = [mean, invstd, gamma].map(f32_array);
        let c = x.shape()[1];
        let [dgamma, dbeta] = [0; 2].map(|_| empty(&x, [c], DType::F32));
        let dx = empty(&x, x.shape(), dtype);
        kernel::launch_grad::<R>(
            &x.client,
            bind(&x),
            bind(&dy),
            [bind(&mean), bind(&invstd), bind(&gamma)],
            [bind(&dbeta), bind(&dgamma)],
            bind(&dx),
            dtype_of(&x),
        );
        sample(&dx);
        (dx, dgamma, dbeta)
    }
}
