//! `CubeBackend` implementation of [`super::RowOps`]: the CubeCL kernels of `sparse-gnn-kernels`.

use super::RowOps;
use crate::ops::cube_launch::*;
use burn::tensor::DType;
use burn::tensor::TensorMetadata;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::BoolElement;
use burn_cubecl::CubeBackend;
use burn_cubecl::CubeRuntime;
use burn_cubecl::FloatElement;
use burn_cubecl::IntElement;
use sparse_gnn_kernels::config::KernelConfig;
use sparse_gnn_kernels::rows::launch_add_rows;
use sparse_gnn_kernels::rows::launch_rows_from_half;
use sparse_gnn_kernels::rows::launch_rows_inv_degree;
use sparse_gnn_kernels::rows::launch_rows_to_half;
use sparse_gnn_kernels::rows::launch_take_rows;

impl<R, F, I, BT> RowOps for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn add_rows(base: Ft<R>, values: Ft<R>, indices: Ft<R>, inverse: Ft<R>) -> Ft<R> {
        let _ = inverse;
        let (m, w) = (values.shape()[0], values.shape()[1]);
        if m == 0 || w == 0 {
            return base;
        }
        // in place where nothing else reads `base`; otherwise into a copy; `values` converted
        // on the fly where its dtype differs
        let target = writable(base);
        let values = mat(values);
        let indices = i32_array(indices);
        launch_add_rows::<R>(
            &target.client,
            bind(&target),
            bind(&indices),
            bind(&values),
            dtype_of(&target),
            dtype_of(&values),
        );
        sample(&target);
        target
    }

    fn ad_take_rows(x: Ft<R>, indices: Ft<R>, inverse: Ft<R>) -> Ft<R> {
        Self::ad_take_rows_as(x, indices, inverse, None)
    }

    fn ad_take_rows_as(x: Ft<R>, indices: Ft<R>, inverse: Ft<R>, dtype: Option<burn::tensor::FloatDType>) -> Ft<R> {
        let _ = inverse;
        let x = mat(x);
        let indices = i32_array(indices);
        let out_dtype = dtype.map(DType::from).unwrap_or(x.dtype);
        let out = empty(&x, [indices.shape()[0], x.shape()[1]], out_dtype);
        launch_take_rows::<R>(&x.client, bind(&x), bind(&indices), bind(&out), dtype_of(&x), out_dtype.into());
        sample(&out);
        out
    }

    fn rows_to_half(x: Ft<R>, half: burn::tensor::FloatDType, config: &KernelConfig) -> (Ft<R>, Ft<R>) {
        let x = mat(x);
        let [n, f] = [x.shape()[0], x.shape()[1]];
        let half_dtype = DType::from(half);
        let x_half = empty(&x, [n, f], half_dtype);
        let scale = empty(&x, [n, 1], x.dtype);
        launch_rows_to_half::<R>(
            &x.client,
            bind(&x),
            bind(&x_half),
            bind(&scale),
            dtype_of(&x),
            half_dtype.into(),
            config.planes,
        );
        sample(&x_half);
        (x_half, scale)
    }

    fn inv_degree_rows(row_ptr: Ft<R>, x: Ft<R>, dtype: burn::tensor::FloatDType) -> Ft<R> {
        let x = mat(x);
        let row_ptr = i32_array(row_ptr);
        let [n, f] = [x.shape()[0], x.shape()[1]];
        let out_dtype = DType::from(dtype);
        let out = empty(&x, [n, f], out_dtype);
        launch_rows_inv_degree::<R>(&x.client, bind(&x), bind(&row_ptr), bind(&out), dtype_of(&x), out_dtype.into());
        sample(&out);
        out
    }

    fn rows_from_half(x_half: Ft<R>, scale: Ft<R>, dtype: burn::tensor::FloatDType) -> Ft<R> {
        let x_half = mat(x_half);
        let scale = into_contiguous(scale);
        let [n, f] = [x_half.shape()[0], x_half.shape()[1]];
        let out_dtype = DType::from(dtype);
        if scale.dtype != out_dtype {
            // the scales are kept in the dtype of the original input; another output dtype
            // takes the composed ops
            return crate::ops::rows::unscale_rows::<Self>(x_half, scale, dtype);
        }
        let out = empty(&x_half, [n, f], out_dtype);
        launch_rows_from_half::<R>(
            &x_half.client,
            bind(&x_half),
            bind(&scale),
            bind(&out),
            out_dtype.into(),
            dtype_of(&x_half),
        );
        sample(&out);
        out
    }
}
