//! `CubeBackend` implementation of [`super::AttentionOps`]: the CubeCL kernels of `sparse-gnn-kernels`.

use super::AttentionOps;
use crate::ops::cube_launch::*;
use crate::ops::primitive::CsrPrimitive;
use burn::tensor::TensorMetadata;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::BoolElement;
use burn_cubecl::CubeBackend;
use burn_cubecl::CubeRuntime;
use burn_cubecl::FloatElement;
use burn_cubecl::IntElement;
use sparse_gnn_kernels::sddmm::kernel::launch_sddmm;
use sparse_gnn_kernels::softmax::kernel::launch_edge_softmax;

impl<R, F, I, BT> AttentionOps for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn sddmm(csr: &CsrPrimitive<Self>, a: Ft<R>, b: Ft<R>, heads: usize) -> Ft<R> {
        let (a, b) = (mat(a), mat(b));
        let out = empty(&a, [csr.nnz, heads], a.dtype);
        let dtype = dtype_of(&a);
        launch_sddmm::<R>(&a.client, &csr_dev(csr), bind(&a), bind(&b), None, bind(&out), heads, dtype);
        sample(&out);
        out
    }

    fn edge_softmax(csr: &CsrPrimitive<Self>, scores: Ft<R>) -> Ft<R> {
        let scores = into_contiguous(scores);
        let heads = scores.shape()[1];
        let out = empty(&scores, [csr.nnz, heads], scores.dtype);
        let dtype = dtype_of(&scores);
        launch_edge_softmax::<R>(
            &scores.client,
            csr.n_rows,
            bind(&csr.row_ptr),
            bind(&scores),
            None,
            bind(&out),
            heads,
            dtype,
            csr.kernels.planes,
        );
        out
    }

    fn edge_softmax_grad(csr: &CsrPrimitive<Self>, y: Ft<R>, dy: Ft<R>) -> Ft<R> {
        let (y, dy) = (into_contiguous(y), into_contiguous(dy));
        let heads = y.shape()[1];
        let out = empty(&y, [csr.nnz, heads], y.dtype);
        let dtype = dtype_of(&y);
        launch_edge_softmax::<R>(
            &y.client,
            csr.n_rows,
            bind(&csr.row_ptr),
            bind(&y),
            Some(bind(&dy)),
            bind(&out),
            heads,
            dtype,
            csr.kernels.planes,
        );
        out
    }
}
