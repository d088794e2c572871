//! `CubeBackend` implementation of [`super::CbsrOps`]: the CubeCL kernels of `sparse-gnn-kernels`.

use super::CbsrOps;
use crate::ops::cube_launch::*;
use crate::ops::primitive::CbsrPrim;
use crate::ops::primitive::CsrPrimitive;
use crate::ops::primitive::GraphPrimitive;
use crate::ops::primitive::PoolSpec;
use crate::ops::primitive::SspmmStrategy;
use burn::tensor::DType;
use burn::tensor::TensorMetadata;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::BoolElement;
use burn_cubecl::CubeBackend;
use burn_cubecl::CubeRuntime;
use burn_cubecl::FloatElement;
use burn_cubecl::IntElement;
use sparse_gnn_kernels::cbsr::convert::launch_gather;
use sparse_gnn_kernels::cbsr::convert::launch_pack;
use sparse_gnn_kernels::cbsr::convert::launch_scatter;
use sparse_gnn_kernels::cbsr::convert::launch_unpack;
use sparse_gnn_kernels::cbsr::spgemm::launch_spgemm;
use sparse_gnn_kernels::cbsr::spgemm::launch_spgemm_grad_w;
use sparse_gnn_kernels::cbsr::sspmm::launch_sspmm_gather;
use sparse_gnn_kernels::cbsr::sspmm::launch_sspmm_outer;
use sparse_gnn_kernels::config::KernelConfig;
use sparse_gnn_kernels::maxk::kernel::launch_maxk;
use sparse_gnn_kernels::pool::kernel::launch_maxpool;

impl<R, F, I, BT> CbsrOps for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn maxk(x: Ft<R>, k: usize, config: &KernelConfig) -> CbsrPrim<Self> {
        let x = mat(x);
        let [n, dim] = [x.shape()[0], x.shape()[1]];
        let packed = dim <= PACK_MAX_DIM;
        let values = empty(&x, [n, k], x.dtype);
        let indices = if packed { empty(&x, [n, k.div_ceil(4)], DType::U32) } else { empty(&x, [n, k], DType::I32) };
        let dtype = dtype_of(&x);
        match launch_maxk::<R>(&x.client, bind(&x), bind(&values), bind(&indices), k, packed, dtype, config) {
            Ok(()) => {
                sample(&values);
                CbsrPrim { values, indices, n, k, dim, packed }
            }
            Err(e) => {
                crate::fallback::record("maxk", &e);
                crate::ops::cbsr::host::maxk::<Self>(x, k)
            }
        }
    }

    fn maxpool(x: Ft<R>, spec: PoolSpec) -> CbsrPrim<Self> {
        let x = mat(x);
        let [n, dim] = [x.shape()[0], x.shape()[1]];
        let k = spec.k();
        let values = empty(&x, [n, k], x.dtype);
        let flat = empty(&x, [n, k], DType::I32);
        let dtype = dtype_of(&x);
        launch_maxpool::<R>(&x.client, bind(&x), bind(&values), bind(&flat), spec, dtype);
        if dim <= PACK_MAX_DIM {
            let packed = empty(&x, [n, k.div_ceil(4)], DType::U32);
            launch_pack::<R>(&x.client, bind(&flat), n, k, bind(&packed));
            CbsrPrim { values, indices: packed, n, k, dim, packed: true }
        } else {
            CbsrPrim { values, indices: flat, n, k, dim, packed: false }
        }
    }

    fn cbsr_to_dense(c: &CbsrPrim<Self>) -> Ft<R> {
        let (dev, values, _i) = cbsr_dev(c);
        let out = zeros(&values, [c.n, c.dim], values.dtype);
        launch_scatter::<R>(&values.client, &dev, bind(&out), dtype_of(&values));
        out
    }

    fn cbsr_gather(x: Ft<R>, pattern: &CbsrPrim<Self>) -> Ft<R> {
        let x = mat(x);
        let (dev, _v, _i) = cbsr_dev(pattern);
        let out = empty(&x, [pattern.n, pattern.k], x.dtype);
        let dtype = dtype_of(&x);
        launch_gather::<R>(&x.client, bind(&x), &dev, bind(&out), dtype);
        out
    }

    fn cbsr_spgemm(g: &GraphPrimitive<Self>, w: Option<Ft<R>>, c: &CbsrPrim<Self>) -> Ft<R> {
        let (dev, values, _i) = cbsr_dev(c);
        let dtype = dtype_of(&values);
        let atomic = g.policy.spgemm_atomic && values.dtype == DType::F32;
        let out = if atomic {
            zeros(&values, [g.csr.n_rows, c.dim], values.dtype)
        } else {
            empty(&values, [g.csr.n_rows, c.dim], values.dtype)
        };
        let (w, _) = weights(w);
        match launch_spgemm::<R>(
            &values.client,
            &csr_dev_cbsr(&g.csr),
            w.as_ref().map(bind),
            &dev,
            bind(&out),
            atomic,
            dtype,
        ) {
            Ok(()) => {
                sample(&out);
                out
            }
            Err(e) => {
                crate::fallback::record("cbsr spgemm", &e);
                crate::ops::cbsr::host::cbsr_spgemm::<Self>(g, w, c)
            }
        }
    }

    fn cbsr_sspmm(g: &GraphPrimitive<Self>, w: Option<Ft<R>>, dy: Ft<R>, pattern: &CbsrPrim<Self>) -> Ft<R> {
        let dy = mat(dy);
        let (dev, _v, _i) = cbsr_dev(pattern);
        let dtype = dtype_of(&dy);
        let (w, _) = weights(w);
        // the atomic kernel accumulates in f32 whatever `dy`'s type: a half `dy` gets its
        // `[n, k]` gradient cast back to the half type (k values per node, a small pass)
        if g.policy.sspmm == SspmmStrategy::OuterAtomic {
            let out = zeros(&dy, [pattern.n, pattern.k], DType::F32);
            match launch_sspmm_outer::<R>(
                &dy.client,
                &csr_dev_cbsr(&g.csr),
                w.as_ref().map(bind),
                bind(&dy),
                &dev,
                bind(&out),
                dtype,
            ) {
                Ok(()) => {
                    sample(&out);
                    return if dy.dtype == DType::F32 { out } else { burn_cubecl::kernel::cast(out, dy.dtype) };
                }
                // the deterministic gather below needs no shared memory for the dy row
                Err(e) => log::info!("{e}: the SSpMM gathers over the transpose instead"),
            }
        }
        let out = empty(&dy, [pattern.n, pattern.k], dy.dtype);
        launch_sspmm_gather::<R>(
            &dy.client,
            &csr_dev_cbsr(&g.csc),
            bind(&g.t_perm),
            w.as_ref().map(bind),
            bind(&dy),
            &dev,
            bind(&out),
            dtype,
        );
        sample(&out);
        out
    }

    fn cbsr_spgemm_grad_w(csr: &CsrPrimitive<Self>, dy: Ft<R>, c: &CbsrPrim<Self>) -> Ft<R> {
        let dy = mat(dy);
        let (dev, _v, _i) = cbsr_dev(c);
        let out = empty(&dy, [csr.nnz], dy.dtype);
        let dtype = dtype_of(&dy);
        launch_spgemm_grad_w::<R>(&dy.client, &csr_dev_cbsr(csr), bind(&dy), &dev, bind(&out), dtype);
        out
    }

    fn cbsr_indices(c: &CbsrPrim<Self>) -> CubeTensor<R> {
        if !c.packed {
            return c.indices.clone();
        }
        let (dev, values, _i) = cbsr_dev(c);
        let out = empty(&values, [c.n, c.k], DType::I32);
        launch_unpack::<R>(&values.client, &dev, bind(&out));
        out
    }
}
