//! `CubeBackend` implementation of [`super::DropoutOps`]: the CubeCL kernels of `sparse-gnn-kernels`.

use super::DropoutOps;
use crate::ops::cube_launch::*;
use crate::ops::primitive::ReluDropout;
use burn::tensor::DType;
use burn::tensor::TensorMetadata;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::BoolElement;
use burn_cubecl::CubeBackend;
use burn_cubecl::CubeRuntime;
use burn_cubecl::FloatElement;
use burn_cubecl::IntElement;
use sparse_gnn_kernels::dropout::keep_scale;
use sparse_gnn_kernels::dropout::launch_masked_scale;
use sparse_gnn_kernels::dropout::launch_relu_dropout;
use sparse_gnn_kernels::dropout::mask_words;

impl<R, F, I, BT> DropoutOps for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn relu_dropout(x: Ft<R>, spec: ReluDropout, seed: Option<Ft<R>>, rows: Option<Ft<R>>) -> (Ft<R>, Ft<R>) {
        let x = into_contiguous(x);
        let [n, d] = [x.shape()[0], x.shape()[1]];
        let y = empty(&x, [n, d], x.dtype);
        let mask = empty(&x, [mask_words(n, d).max(1)], DType::U32);
        let seed = seed.map(f32_array);
        let rows = rows.map(i32_array);
        launch_relu_dropout::<R>(
            &x.client,
            bind(&x),
            rows.as_ref().map(bind),
            seed.as_ref().map(bind),
            bind(&y),
            bind(&mask),
            n,
            d,
            spec,
            dtype_of(&x),
        );
        sample(&y);
        (y, mask)
    }

    fn relu_dropout_grad(dy: Ft<R>, mask: Ft<R>, spec: ReluDropout) -> Ft<R> {
        let dy = into_contiguous(dy);
        let [n, d] = [dy.shape()[0], dy.shape()[1]];
        let dx = empty(&dy, [n, d], dy.dtype);
        launch_masked_scale::<R>(
            &dy.client,
            bind(&dy),
            bind(&mask),
            bind(&dx),
            n,
            d,
            keep_scale(spec.prob),
            dtype_of(&dy),
        );
        sample(&dx);
        dx
    }
}
