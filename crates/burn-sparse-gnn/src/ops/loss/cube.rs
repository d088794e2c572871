//! `CubeBackend` implementation of [`super::LossOps`]: the CubeCL kernels of `sparse-gnn-kernels`.

use super::LossOps;
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
use sparse_gnn_kernels::loss::launch_cross_entropy;
use sparse_gnn_kernels::loss::launch_cross_entropy_grad;
use sparse_gnn_kernels::loss::{launch_binary_cross_entropy, launch_binary_cross_entropy_grad};

impl<R, F, I, BT> LossOps for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn cross_entropy(x: Ft<R>, labels: Ft<R>, weight: Ft<R>, config: &KernelConfig) -> (Ft<R>, Ft<R>) {
        let x = mat(x);
        let n = x.shape()[0];
        let (labels, weight) = (i32_array(labels), f32_array(weight));
        let lse = empty(&x, [n], DType::F32);
        let terms = empty(&x, [n], DType::F32);
        launch_cross_entropy::<R>(
            &x.client,
            bind(&x),
            bind(&labels),
            bind(&weight),
            bind(&lse),
            bind(&terms),
            dtype_of(&x),
            config.planes,
        );
        sample(&terms);
        (terms, lse)
    }

    fn cross_entropy_grad(x: Ft<R>, lse: Ft<R>, labels: Ft<R>, weight: Ft<R>, dterms: Ft<R>) -> Ft<R> {
        // the gradient goes over the logits where nothing else holds them
        let target = writable(x);
        let (labels, weight, lse, dterms) = (i32_array(labels), f32_array(weight), f32_array(lse), f32_array(dterms));
        launch_cross_entropy_grad::<R>(
            &target.client,
            bind(&target),
            bind(&labels),
            bind(&weight),
            bind(&lse),
            bind(&dterms),
            dtype_of(&target),
        );
        sample(&target);
        target
    }

    fn binary_cross_entropy(s: Ft<R>, labels: Ft<R>, weight: Ft<R>) -> Ft<R> {
        let s = into_contiguous(s);
        let (labels, weight) = (f32_array(labels), f32_array(weight));
        let terms = empty(&s, [s.shape()[0]], DType::F32);
        launch_binary_cross_entropy::<R>(&s.client, bind(&s), bind(&labels), bind(&weight), bind(&terms), dtype_of(&s));
        sample(&terms);
        terms
    }

    fn binary_cross_entropy_grad(s: Ft<R>, labels: Ft<R>, weight: Ft<R>, dterms: Ft<R>) -> Ft<R> {
        // the gradient goes over the scores where nothing else holds them
        let target = writable(s);
        let (labels, weight, dterms) = (f32_array(labels), f32_array(weight), f32_array(dterms));
        launch_binary_cross_entropy_grad::<R>(
            &target.client,
            bind(&target),
            bind(&labels),
            bind(&weight),
            bind(&dterms),
            dtype_of(&target),
        );
        sample(&target);
        target
    }
}
