//! `CubeBackend` implementation of [`super::AggregationOps`]: the CubeCL kernels of `sparse-gnn-kernels`.

use super::AggregationOps;
use crate::ops::cube_launch::*;
use crate::ops::primitive::CsrPrimitive;
use crate::ops::primitive::GraphPrimitive;
use crate::ops::primitive::Reduce;
use crate::ops::primitive::SampleSpec;
use crate::ops::primitive::SpmmOutput;
use burn::tensor::DType;
use burn::tensor::TensorMetadata;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::BoolElement;
use burn_cubecl::CubeBackend;
use burn_cubecl::CubeRuntime;
use burn_cubecl::FloatElement;
use burn_cubecl::IntElement;
use sparse_gnn_kernels::sample::kernel::launch_sample_scale;
use sparse_gnn_kernels::sample::kernel::launch_sampled_spmm;
use sparse_gnn_kernels::sddmm::kernel::launch_sddmm;
use sparse_gnn_kernels::spmm::kernel::launch_spmm;
use sparse_gnn_kernels::spmm::kernel::MaxGradMask;

impl<R, F, I, BT> AggregationOps for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn spmm(csr: &CsrPrimitive<Self>, w: Option<Ft<R>>, x: Ft<R>, reduce: Reduce) -> SpmmOutput<Self> {
        let x = mat(x);
        let f = x.shape()[1];
        let out = empty(&x, [csr.n_rows, f], x.dtype);
        let argmax = (reduce == Reduce::Max).then(|| empty(&x, [csr.n_rows, f], DType::I32));
        let (w, heads) = weights(w);
        let dtype = dtype_of(&x);
        let staged = launch_spmm::<R>(
            &x.client,
            &csr_dev(csr),
            w.as_ref().map(bind),
            heads,
            bind(&x),
            bind(&out),
            argmax.as_ref().map(bind),
            reduce,
            None,
            dtype,
        );
        sample_with(&out, staged);
        SpmmOutput { out, argmax }
    }

    fn spmm_max_grad_x(g: &GraphPrimitive<Self>, w: Option<Ft<R>>, dout: Ft<R>, argmax: CubeTensor<R>) -> Ft<R> {
        let dout = mat(dout);
        let argmax = mat(argmax);
        let f = dout.shape()[1];
        let out = empty(&dout, [g.csc.n_rows, f], dout.dtype);
        let (w, heads) = weights(w);
        let dtype = dtype_of(&dout);
        let mask = MaxGradMask { perm: bind(&g.t_perm), argmax: bind(&argmax) };
        launch_spmm::<R>(
            &dout.client,
            &csr_dev(&g.csc),
            w.as_ref().map(bind),
            heads,
            bind(&dout),
            bind(&out),
            None,
            Reduce::Sum,
            Some(mask),
            dtype,
        );
        out
    }

    fn spmm_max_grad_w(csr: &CsrPrimitive<Self>, heads: usize, dout: Ft<R>, x: Ft<R>, argmax: CubeTensor<R>) -> Ft<R> {
        let (dout, x, argmax) = (mat(dout), mat(x), mat(argmax));
        let out = empty(&dout, [csr.nnz, heads], dout.dtype);
        let dtype = dtype_of(&dout);
        launch_sddmm::<R>(
            &dout.client,
            &csr_dev(csr),
            bind(&dout),
            bind(&x),
            Some(bind(&argmax)),
            bind(&out),
            heads,
            dtype,
        );
        out
    }

    fn edge_sample_scale(csr: &CsrPrimitive<Self>, spec: SampleSpec, reduce: Reduce, like: &Ft<R>) -> Ft<R> {
        let out = zeros(like, [csr.nnz], like.dtype);
        let dtype = dtype_of(like);
        launch_sample_scale::<R>(&like.client, csr.n_rows, bind(&csr.row_ptr), bind(&out), spec, reduce, dtype);
        out
    }

    fn sampled_spmm(csr: &CsrPrimitive<Self>, w: Option<Ft<R>>, x: Ft<R>, spec: SampleSpec, reduce: Reduce) -> Ft<R> {
        let x = mat(x);
        let f = x.shape()[1];
        let out = empty(&x, [csr.n_rows, f], x.dtype);
        let (w, heads) = weights(w);
        let dtype = dtype_of(&x);
        launch_sampled_spmm::<R>(
            &x.client,
            csr.n_rows,
            bind(&csr.row_ptr),
            bind(&csr.col_idx),
            w.as_ref().map(bind),
            heads,
            bind(&x),
            bind(&out),
            spec,
            reduce,
            dtype,
            &csr.kernels.sample,
        );
        out
    }
}
