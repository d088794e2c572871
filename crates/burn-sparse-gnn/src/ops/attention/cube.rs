//! `CubeBackend` implementation of [`super::AttentionOps`]: the CubeCL kernels of `sparse-gnn-kernels`.

use super::AttentionOps;
use crate::ops::cube_launch::*;
use crate::ops::primitive::CsrPrim;
use crate::ops::primitive::CsrPrimitive;
use crate::ops::primitive::GraphPrimitive;
use burn::tensor::DType;
use burn::tensor::TensorMetadata;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::BoolElement;
use burn_cubecl::CubeBackend;
use burn_cubecl::CubeRuntime;
use burn_cubecl::FloatElement;
use burn_cubecl::IntElement;
use sparse_gnn_kernels::attention::kernel::{
    launch_gat_attention, launch_gat_attention_grad, GatAttentionGradIn, RowsDev,
};
use sparse_gnn_kernels::sddmm::kernel::launch_sddmm;
use sparse_gnn_kernels::softmax::kernel::launch_edge_softmax;

fn rows_dev<R: CubeRuntime>(c: &CsrPrim<Ft<R>>) -> RowsDev<R> {
    RowsDev { n_rows: c.n_rows, row_ptr: bind(&c.row_ptr), col_idx: bind(&c.col_idx) }
}

/// `t` contiguous in the float type `dtype` (itself where it is one already).
fn as_dtype<R: CubeRuntime>(t: Ft<R>, dtype: DType) -> Ft<R> {
    into_contiguous(if t.dtype == dtype { t } else { burn_cubecl::kernel::cast(t, dtype) })
}

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

    fn gat_attention(csr: &CsrPrimitive<Self>, s_dst: Ft<R>, s_src: Ft<R>, negative_slope: f64) -> Ft<R> {
        let s_dst = into_contiguous(s_dst);
        let s_src = as_dtype(s_src, s_dst.dtype);
        let heads = s_dst.shape()[1];
        let alpha = empty(&s_dst, [csr.nnz, heads], s_dst.dtype);
        let dtype = dtype_of(&s_dst);
        launch_gat_attention::<R>(
            &s_dst.client,
            rows_dev(csr),
            bind(&s_dst),
            bind(&s_src),
            bind(&alpha),
            heads,
            negative_slope as f32,
            dtype,
        );
        sample(&alpha);
        alpha
    }

    fn gat_attention_grad(
        g: &GraphPrimitive<Self>,
        s_dst: Ft<R>,
        s_src: Ft<R>,
        alpha: Ft<R>,
        d_alpha: Ft<R>,
        negative_slope: f64,
    ) -> (Ft<R>, Ft<R>) {
        let alpha = into_contiguous(alpha);
        let dt = alpha.dtype;
        let (s_dst, s_src, d_alpha) = (as_dtype(s_dst, dt), as_dtype(s_src, dt), as_dtype(d_alpha, dt));
        let heads = alpha.shape()[1];
        let d_s_dst = empty(&alpha, [g.csr.n_rows, heads], dt);
        let d_s_src = empty(&alpha, [g.csr.n_cols, heads], dt);
        let dots = empty(&alpha, [g.csr.n_rows, heads], DType::F32);
        let t_perm = i32_array(g.t_perm.clone());
        let dtype = dtype_of(&alpha);
        launch_gat_attention_grad::<R>(
            &alpha.client,
            rows_dev(&g.csr),
            rows_dev(&g.csc),
            bind(&t_perm),
            GatAttentionGradIn {
                s_dst: bind(&s_dst),
                s_src: bind(&s_src),
                alpha: bind(&alpha),
                d_alpha: bind(&d_alpha),
            },
            bind(&dots),
            bind(&d_s_dst),
            bind(&d_s_src),
            heads,
            negative_slope as f32,
            dtype,
        );
        sample(&d_s_src);
        (d_s_dst, d_s_src)
    }
}
