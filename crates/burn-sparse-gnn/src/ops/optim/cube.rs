//! `CubeBackend` implementation of [`super::OptimOps`]: the CubeCL kernel of `sparse-gnn-kernels`.

use super::AdamStep;
use super::OptimOps;
use crate::ops::cube_launch::*;
use burn::tensor::TensorMetadata;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::BoolElement;
use burn_cubecl::CubeBackend;
use burn_cubecl::CubeRuntime;
use burn_cubecl::FloatElement;
use burn_cubecl::IntElement;
use sparse_gnn_kernels::optim::launch_adam;

impl<R, F, I, BT> OptimOps for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn adam_step(param: Ft<R>, grad: Ft<R>, moment_1: Ft<R>, moment_2: Ft<R>, step: AdamStep) -> [Ft<R>; 3] {
        let dtype = param.dtype;
        let same = |t: Ft<R>| into_contiguous(if t.dtype == dtype { t } else { burn_cubecl::kernel::cast(t, dtype) });
        let (param, grad, moment_1, moment_2) = (into_contiguous(param), same(grad), same(moment_1), same(moment_2));
        let shape = param.shape();
        let out = [0; 3].map(|_| empty(&param, shape.clone(), dtype));
        launch_adam::<R>(
            &param.client,
            bind(&param),
            bind(&grad),
            bind(&moment_1),
            bind(&moment_2),
            bind(&out[0]),
            bind(&out[1]),
            bind(&out[2]),
            shape.num_elements(),
            step,
            dtype_of(&param),
        );
        sample(&out[0]);
        out
    }
}
