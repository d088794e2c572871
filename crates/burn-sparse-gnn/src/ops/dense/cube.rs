//! `CubeBackend` implementation of [`super::DenseOps`]: the CubeCL kernels of `sparse-gnn-kernels`.

use super::DenseOps;
use crate::ops::cube_launch::*;
#[cfg(feature = "cuda")]
use burn_cubecl::kernel::into_contiguous;
#[cfg(feature = "cuda")]
use burn_cubecl::kernel::into_contiguous_aligned;
#[cfg(feature = "cuda")]
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::BoolElement;
use burn_cubecl::CubeBackend;
use burn_cubecl::CubeRuntime;
use burn_cubecl::FloatElement;
use burn_cubecl::IntElement;

impl<R, F, I, BT> DenseOps for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn dense_product(a: Ft<R>, b: Ft<R>, ta: bool, tb: bool, math: crate::ops::dense::precision::ProductMath) -> Ft<R> {
        let _ = &math;
        #[cfg(feature = "cuda")]
        if let Some(out) = cublas_product::<R>(&a, &b, ta, tb, math, None, false) {
            sample(&out);
            return out;
        }
        let out = crate::ops::dense::burn_product::<Self>(a, b, ta, tb);
        sample(&out);
        out
    }

    fn dense_product_half(a: Ft<R>, b: Ft<R>, ta: bool, tb: bool) -> Ft<R> {
        #[cfg(feature = "cuda")]
        if let Some(out) =
            cublas_product::<R>(&a, &b, ta, tb, crate::ops::dense::precision::ProductMath::F32, None, true)
        {
            sample(&out);
            return out;
        }
        let half = a.dtype;
        let out = crate::ops::dense::half_product::<Self>(Self::dense_product(a, b, ta, tb, Default::default()), half);
        sample(&out);
        out
    }

    fn dense_product_bias(a: Ft<R>, b: Ft<R>, bias: Ft<R>, math: crate::ops::dense::precision::ProductMath) -> Ft<R> {
        #[cfg(feature = "cuda")]
        if let Some(out) = cublas_product_bias::<R>(&a, &b, &bias, math) {
            sample(&out);
            return out;
        }
        crate::ops::dense::add_row_bias::<Self>(Self::dense_product(a, b, false, false, math), bias)
    }

    fn dense_product_acc(
        acc: Ft<R>,
        a: Ft<R>,
        b: Ft<R>,
        ta: bool,
        tb: bool,
        math: crate::ops::dense::precision::ProductMath,
    ) -> Ft<R> {
        // cuBLAS adds the product to `acc` in place where no other tensor shares it
        #[cfg(feature = "cuda")]
        if acc.can_mut() {
            if let Some(out) = cublas_product::<R>(&a, &b, ta, tb, math, Some(&acc), false) {
                sample(&out);
                return out;
            }
        }
        let p = Self::dense_product(a, b, ta, tb, math);
        crate::ops::primitive::t2::<Self>(acc).add(crate::ops::primitive::t2::<Self>(p)).into_primitive().tensor()
    }
}

/// The product through cuBLAS where `R` is the CUDA runtime and libcublas loads; `None` to fall
/// back to Burn's matmul (logged once).
#[cfg(feature = "cuda")]
fn cublas_product_bias<R: CubeRuntime>(
    a: &CubeTensor<R>,
    b: &CubeTensor<R>,
    bias: &CubeTensor<R>,
    math: crate::ops::dense::precision::ProductMath,
) -> Option<CubeTensor<R>> {
    use cubecl::cuda::CudaRuntime;
    use std::any::Any;
    let a = (a as &dyn Any).downcast_ref::<CubeTensor<CudaRuntime>>()?;
    let b = (b as &dyn Any).downcast_ref::<CubeTensor<CudaRuntime>>()?;
    let bias = (bias as &dyn Any).downcast_ref::<CubeTensor<CudaRuntime>>()?;
    let (a, b, bias) =
        (into_contiguous_aligned(a.clone()), into_contiguous_aligned(b.clone()), into_contiguous(bias.clone()));
    match crate::ops::dense::cublas::gemm_bias(&a, &b, &bias, math) {
        Ok(out) => from_cuda::<R>(out),
        Err(e) => {
            static LOGGED: std::sync::Once = std::sync::Once::new();
            LOGGED.call_once(|| {
                log::info!("cuBLASLt bias epilogue unavailable ({}): the bias is added after the product", e.0)
            });
            None
        }
    }
}

#[cfg(feature = "cuda")]
fn cublas_product<R: CubeRuntime>(
    a: &CubeTensor<R>,
    b: &CubeTensor<R>,
    ta: bool,
    tb: bool,
    math: crate::ops::dense::precision::ProductMath,
    acc: Option<&CubeTensor<R>>,
    half_out: bool,
) -> Option<CubeTensor<R>> {
    use cubecl::cuda::CudaRuntime;
    use std::any::Any;
    let a = (a as &dyn Any).downcast_ref::<CubeTensor<CudaRuntime>>()?;
    let b = (b as &dyn Any).downcast_ref::<CubeTensor<CudaRuntime>>()?;
    let acc = match acc {
        Some(acc) => Some((acc as &dyn Any).downcast_ref::<CubeTensor<CudaRuntime>>()?),
        None => None,
    };
    let (a, b) = (into_contiguous_aligned(a.clone()), into_contiguous_aligned(b.clone()));
    match crate::ops::dense::cublas::gemm(&a, &b, ta, tb, math, acc, half_out) {
        Ok(out) => from_cuda::<R>(out),
        Err(e) => {
            static LOGGED: std::sync::Once = std::sync::Once::new();
            LOGGED.call_once(|| log::warn!("cuBLAS unavailable ({}): dense products run on Burn's matmul", e.0));
            None
        }
    }
}
