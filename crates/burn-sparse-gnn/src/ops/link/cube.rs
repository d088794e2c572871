//! `CubeBackend` implementation of [`super::LinkOps`]: the CubeCL kernels of `sparse-gnn-kernels`.

use super::LinkOps;
use crate::ops::cube_launch::*;
use crate::ops::primitive::CsrPrimitive;
use burn::tensor::DType;
use burn::tensor::Shape;
use burn::tensor::TensorMetadata;
use burn_cubecl::ops::numeric::empty_device_contiguous_dtype;
use burn_cubecl::BoolElement;
use burn_cubecl::CubeBackend;
use burn_cubecl::CubeRuntime;
use burn_cubecl::FloatElement;
use burn_cubecl::IntElement;
use sparse_gnn_kernels::link as kernel;
use sparse_gnn_kernels::pair_rows::launch_pair_rows_sum;

impl<R, F, I, BT> LinkOps for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn permutation(n: usize, keys: [u32; kernel::ROUNDS], inverse: bool, device: &R::Device) -> Ft<R> {
        let client = R::client(device);
        let out =
            empty_device_contiguous_dtype::<R>(client.clone(), device.clone(), Shape::new([n.max(1)]), DType::I32);
        kernel::launch_permutation::<R>(&client, bind(&out), n, &keys, inverse);
        out
    }

    fn pair_rows_sum(row_ptr: Ft<R>, perm: Option<Ft<R>>, dy: Ft<R>, n: usize) -> Ft<R> {
        let dy = mat(dy);
        let f = dy.shape()[1];
        let out = empty(&dy, [n, f], dy.dtype);
        let row_ptr = i32_array(row_ptr);
        let perm = perm.map(i32_array);
        launch_pair_rows_sum::<R>(
            &dy.client,
            bind(&row_ptr),
            perm.as_ref().map(bind),
            bind(&dy),
            bind(&out),
            dtype_of(&dy),
        );
        sample(&out);
        out
    }

    fn pair_mask(pattern: &CsrPrimitive<Self>, known: &CsrPrimitive<Self>, pa: Ft<R>, pb: Ft<R>) -> Ft<R> {
        let (pa, pb) = (i32_array(pa), i32_array(pb));
        let out = empty(&pa, [pattern.nnz.max(1)], DType::I32);
        kernel::launch_pair_mask::<R>(
            &pa.client,
            (bind(&pattern.row_ptr), bind(&pattern.col_idx)),
            (bind(&known.row_ptr), bind(&known.col_idx)),
            bind(&pa),
            bind(&pb),
            bind(&out),
            pattern.n_rows,
            pattern.nnz,
        );
        out
    }
}
