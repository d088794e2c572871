//! `CubeBackend` (CUDA, wgpu, any CubeCL runtime): every sparse op launches the CubeCL kernels
//! of `sparse-gnn-kernels`. Kernels take their float type from the tensor (`#[define]`), so f32,
//! f16 and bf16 tensors all work on a `CubeBackend<R, f32, ..>`.

use crate::backend::{CbsrPrim, CsrPrimitive, PoolSpec, Reduce, ReluDropout, SampleSpec, SparseGnnBackend, SpmmOutput};
use crate::graph::SspmmStrategy;
use crate::graph::{CsrPrim, GraphPrimitive, GroupsPrim};
use burn::tensor::{DType, Shape, TensorMetadata};
use burn_cubecl::kernel::{into_contiguous, into_contiguous_aligned};
use burn_cubecl::ops::numeric::empty_device_contiguous_dtype;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::{BoolElement, CubeBackend, CubeRuntime, FloatElement, IntElement};
use cubecl::prelude::{StorageType, TensorBinding};
use sparse_gnn_kernels::cbsr::convert::{launch_gather, launch_pack, launch_scatter, launch_unpack};
use sparse_gnn_kernels::cbsr::spgemm::{launch_spgemm, launch_spgemm_grad_w};
use sparse_gnn_kernels::cbsr::sspmm::{launch_sspmm_gather, launch_sspmm_outer};
use sparse_gnn_kernels::cbsr::CbsrDev;
use sparse_gnn_kernels::config::KernelConfig;
use sparse_gnn_kernels::device::CsrDev;
use sparse_gnn_kernels::dropout::{keep_scale, launch_masked_scale, launch_relu_dropout, mask_words};
use sparse_gnn_kernels::loss::{launch_cross_entropy, launch_cross_entropy_grad};
use sparse_gnn_kernels::maxk::kernel::launch_maxk;
use sparse_gnn_kernels::pool::kernel::launch_maxpool;
use sparse_gnn_kernels::rows::{launch_add_rows, launch_rows_from_half, launch_rows_inv_degree, launch_rows_to_half};
use sparse_gnn_kernels::sample::kernel::{launch_sample_scale, launch_sampled_spmm};
use sparse_gnn_kernels::sddmm::kernel::launch_sddmm;
use sparse_gnn_kernels::softmax::kernel::launch_edge_softmax;
use sparse_gnn_kernels::spmm::hot::HotDev;
use sparse_gnn_kernels::spmm::kernel::{launch_spmm, MaxGradMask};

type Ft<R> = CubeTensor<R>;

fn bind<R: CubeRuntime>(t: &CubeTensor<R>) -> TensorBinding<R> {
    t.clone().binding()
}

/// Peak-memory sample (see [`crate::memory`]) with the output of a launch allocated.
fn sample<R: CubeRuntime>(t: &CubeTensor<R>) {
    sample_with(t, 0);
}

/// [`sample`] with `extra` bytes a launch allocates after its output and frees before it
/// returns (the SpMM's staging rows of split rows), which are in use while it runs.
fn sample_with<R: CubeRuntime>(t: &CubeTensor<R>, extra: u64) {
    if crate::memory::sampling() {
        if let Ok(m) = t.client.memory_usage() {
            crate::memory::record(m.bytes_in_use + extra);
        }
        #[cfg(feature = "cuda")]
        if let Some(d) = (&t.device as &dyn std::any::Any).downcast_ref::<cubecl::cuda::CudaDevice>() {
            if let Some((free, total)) = crate::cublas::memory_info(d.index) {
                crate::memory::record_device(total.saturating_sub(free) + extra);
            }
        }
    }
}

/// Device bindings of `c`'s rows over the columns `col_idx` (`nnz` edges, split by the edge
/// groups `g`), with the hot-column split `hot` if given (its 1-D arrays are never pitched).
fn bind_csr<R: CubeRuntime>(
    c: &CsrPrim<CubeTensor<R>>,
    col_idx: &CubeTensor<R>,
    nnz: usize,
    g: &GroupsPrim<CubeTensor<R>>,
    hot: Option<HotDev<R>>,
) -> CsrDev<R> {
    let config = c.kernels;
    CsrDev {
        n_rows: c.n_rows,
        n_cols: c.n_cols,
        nnz,
        max_degree: c.max_degree,
        row_ptr: bind(&c.row_ptr),
        col_idx: bind(col_idx),
        n_groups: g.len,
        n_slots: g.n_slots,
        n_finish: g.n_finish,
        group_width: g.width,
        group_ptr: bind(&g.ptr),
        group_row: bind(&g.row),
        group_slot: bind(&g.slot),
        finish_rows: bind(&g.finish_rows),
        finish_ptr: bind(&g.finish_ptr),
        hot,
        config,
    }
}

/// Device bindings of a CSR primitive with the edge groups of the CBSR kernels.
pub(crate) fn csr_dev_cbsr<R: CubeRuntime>(c: &CsrPrim<CubeTensor<R>>) -> CsrDev<R> {
    bind_csr(c, &c.col_idx, c.nnz, &c.cbsr_groups, None)
}

/// Device bindings of a CSR primitive with the SpMM-family edge groups and its hot-column
/// split (the cold edges keep the full row pointer, for the degrees of the mean).
pub(crate) fn csr_dev<R: CubeRuntime>(c: &CsrPrim<CubeTensor<R>>) -> CsrDev<R> {
    let hot = c.hot.as_ref().map(|h| HotDev {
        len: h.len,
        nnz: h.nnz,
        hot_ptr: bind(&h.hot_ptr),
        hot_rank: bind(&h.hot_rank),
        cols: bind(&h.cols),
        cold: Box::new(bind_csr(c, &h.cold_col, h.cold_nnz, &h.cold_groups, None)),
        forced: h.forced,
    });
    bind_csr(c, &c.col_idx, c.nnz, &c.groups, hot)
}

/// Widths up to this are stored with packed u8 column ids (MaxK-GNN's 5-byte entries).
pub(crate) const PACK_MAX_DIM: usize = 256;

fn cbsr_dev<R: CubeRuntime>(
    c: &CbsrPrim<CubeBackend<R, impl FloatElement, impl IntElement, impl BoolElement>>,
) -> (CbsrDev<R>, CubeTensor<R>, CubeTensor<R>) {
    let values = into_contiguous(c.values.clone());
    let indices = into_contiguous(c.indices.clone());
    let dev = CbsrDev { values: bind(&values), indices: bind(&indices), n: c.n, k: c.k, dim: c.dim, packed: c.packed };
    (dev, values, indices)
}

fn dtype_of<R: CubeRuntime>(t: &CubeTensor<R>) -> StorageType {
    t.dtype.into()
}

/// A row-major 2-D input the kernels can read (pitched rows allowed).
fn mat<R: CubeRuntime>(t: CubeTensor<R>) -> CubeTensor<R> {
    into_contiguous_aligned(t)
}

fn zeros<R: CubeRuntime>(like: &CubeTensor<R>, shape: impl Into<Shape>, dtype: DType) -> CubeTensor<R> {
    burn_cubecl::ops::numeric::zeros_client(like.client.clone(), like.device.clone(), shape.into(), dtype)
}

fn empty<R: CubeRuntime>(like: &CubeTensor<R>, shape: impl Into<Shape>, dtype: DType) -> CubeTensor<R> {
    empty_device_contiguous_dtype(like.client.clone(), like.device.clone(), shape.into(), dtype)
}

/// `t` itself where a kernel may write it in place (nothing else holds its buffer, rows
/// contiguous), else a contiguous copy.
fn writable<R: CubeRuntime>(t: CubeTensor<R>) -> CubeTensor<R> {
    if t.can_mut() && t.is_contiguous() {
        t
    } else {
        t.copy()
    }
}

/// A contiguous i32 copy of an integer tensor (the tensor itself where it is one already).
fn i32_array<R: CubeRuntime>(t: CubeTensor<R>) -> CubeTensor<R> {
    into_contiguous(if t.dtype == DType::I32 { t } else { burn_cubecl::kernel::cast(t, DType::I32) })
}

/// A contiguous f32 copy of a float tensor (the tensor itself where it is one already).
fn f32_array<R: CubeRuntime>(t: CubeTensor<R>) -> CubeTensor<R> {
    into_contiguous(if t.dtype == DType::F32 { t } else { burn_cubecl::kernel::cast(t, DType::F32) })
}

/// Edge weights as a contiguous `[nnz * heads]` array and their head count.
fn weights<R: CubeRuntime>(w: Option<Ft<R>>) -> (Option<CubeTensor<R>>, usize) {
    match w {
        None => (None, 1),
        Some(w) => {
            let s = w.shape();
            let heads = if s.num_dims() == 1 { 1 } else { s[1] };
            (Some(into_contiguous(w)), heads)
        }
    }
}

impl<R, F, I, BT> SparseGnnBackend for CubeBackend<R, F, I, BT>
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
                crate::host::maxk::<Self>(x, k)
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
                crate::host::cbsr_spgemm::<Self>(g, w, c)
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
    fn dense_product(a: Ft<R>, b: Ft<R>, ta: bool, tb: bool, math: crate::dense::ProductMath) -> Ft<R> {
        let _ = &math;
        #[cfg(feature = "cuda")]
        if let Some(out) = cublas_product::<R>(&a, &b, ta, tb, math, None, false) {
            sample(&out);
            return out;
        }
        let out = crate::dense::burn_product::<Self>(a, b, ta, tb);
        sample(&out);
        out
    }
    fn dense_product_half(a: Ft<R>, b: Ft<R>, ta: bool, tb: bool) -> Ft<R> {
        #[cfg(feature = "cuda")]
        if let Some(out) = cublas_product::<R>(&a, &b, ta, tb, crate::dense::ProductMath::F32, None, true) {
            sample(&out);
            return out;
        }
        let half = a.dtype;
        let out = crate::dense::half_product::<Self>(Self::dense_product(a, b, ta, tb, Default::default()), half);
        sample(&out);
        out
    }
    fn dense_product_bias(a: Ft<R>, b: Ft<R>, bias: Ft<R>, math: crate::dense::ProductMath) -> Ft<R> {
        #[cfg(feature = "cuda")]
        if let Some(out) = cublas_product_bias::<R>(&a, &b, &bias, math) {
            sample(&out);
            return out;
        }
        crate::dense::add_row_bias::<Self>(Self::dense_product(a, b, false, false, math), bias)
    }
    fn dense_product_acc(acc: Ft<R>, a: Ft<R>, b: Ft<R>, ta: bool, tb: bool, math: crate::dense::ProductMath) -> Ft<R> {
        // cuBLAS adds the product to `acc` in place where no other tensor shares it
        #[cfg(feature = "cuda")]
        if acc.can_mut() {
            if let Some(out) = cublas_product::<R>(&a, &b, ta, tb, math, Some(&acc), false) {
                sample(&out);
                return out;
            }
        }
        let p = Self::dense_product(a, b, ta, tb, math);
        crate::dense::t2::<Self>(acc).add(crate::dense::t2::<Self>(p)).into_primitive().tensor()
    }
    fn transfer_all(pieces: Vec<(Ft<R>, R::Device)>) -> Vec<Ft<R>> {
        #[cfg(feature = "cuda")]
        let pieces = match nccl_transfer::<R>(pieces) {
            Ok(out) => return out,
            Err(pieces) => pieces,
        };
        pieces
            .into_iter()
            .map(|(t, d)| <Self as burn::tensor::ops::FloatTensorOps<Self>>::float_to_device(t, &d))
            .collect()
    }

    fn nccl_device(device: &R::Device) -> Option<usize> {
        #[cfg(feature = "cuda")]
        if let Some(d) = (device as &dyn std::any::Any).downcast_ref::<cubecl::cuda::CudaDevice>() {
            return Some(d.index);
        }
        let _ = device;
        None
    }

    fn rank_transfer(
        send: Vec<Option<Ft<R>>>,
        recv: &[usize],
        width: usize,
        dtype: DType,
        device: &R::Device,
        comm: &crate::collective::Comm,
    ) -> Option<Result<Option<Ft<R>>, crate::collective::CommError>> {
        #[cfg(feature = "cuda")]
        return nccl_rank_transfer::<R>(send, recv, width, dtype, device, comm);
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (send, recv, width, dtype, device, comm);
            None
        }
    }

    fn rank_transfer_ints(
        send: Vec<Option<Ft<R>>>,
        recv: &[usize],
        width: usize,
        dtype: DType,
        device: &R::Device,
        comm: &crate::collective::Comm,
    ) -> Option<Result<Option<Ft<R>>, crate::collective::CommError>> {
        // integer and float tensors are both `CubeTensor`s: the same bytes move
        Self::rank_transfer(send, recv, width, dtype, device, comm)
    }

    fn rank_all_gather(
        x: Ft<R>,
        comm: &crate::collective::Comm,
    ) -> Option<Result<Ft<R>, crate::collective::CommError>> {
        #[cfg(feature = "cuda")]
        {
            let c = comm.nccl()?;
            let x = to_cuda(x)?;
            Some(
                crate::nccl::rank_all_gather(c, x, comm.world())
                    .map(|t| from_cuda::<R>(t).expect("R is CudaRuntime"))
                    .map_err(|e| crate::collective::CommError::Config(format!("NCCL all-gather: {}", e.0))),
            )
        }
        #[cfg(not(feature = "cuda"))]
        {
            let _ = (x, comm);
            None
        }
    }

    fn float_from_host(bytes: &[u8], shape: [usize; 2], dtype: DType, device: &R::Device) -> Ft<R> {
        #[cfg(feature = "cuda")]
        if let Some(t) = pinned_upload::<R>(bytes, shape, dtype, device) {
            return t;
        }
        <Self as burn::tensor::ops::FloatTensorOps<Self>>::float_from_data(
            burn::tensor::TensorData::from_bytes_vec(bytes.to_vec(), shape, dtype),
            device,
        )
    }

    fn transfer_start(groups: Vec<(Vec<Ft<R>>, R::Device)>) -> (Vec<Ft<R>>, crate::exchange::TransferWait) {
        #[cfg(feature = "cuda")]
        let groups = match nccl_start::<R>(groups) {
            Ok(out) => return out,
            Err(groups) => groups,
        };
        crate::exchange::move_groups::<Self>(groups)
    }

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

    fn add_rows(base: Ft<R>, values: Ft<R>, indices: Ft<R>, inverse: Ft<R>) -> Ft<R> {
        let (m, w) = (values.shape()[0], values.shape()[1]);
        if m == 0 || w == 0 {
            return base;
        }
        if values.dtype != base.dtype {
            return <Self as burn::tensor::ops::FloatTensorOps<Self>>::float_add(
                base,
                crate::exchange::gather_back::<Self>(values, inverse),
            );
        }
        // in place where nothing else reads `base`; otherwise into a copy
        let target = writable(base);
        let values = mat(values);
        let indices = i32_array(indices);
        launch_add_rows::<R>(&target.client, bind(&target), bind(&indices), bind(&values), dtype_of(&target));
        sample(&target);
        target
    }

    fn device_memory(device: &R::Device) -> Option<(u64, u64)> {
        let client = R::client(device);
        client.memory_usage().ok().map(|m| (m.bytes_reserved, m.bytes_in_use))
    }

    fn device_capacity(device: &R::Device) -> Option<(u64, u64)> {
        #[cfg(feature = "cuda")]
        {
            use std::any::Any;
            if let Some(d) = (device as &dyn Any).downcast_ref::<cubecl::cuda::CudaDevice>() {
                return crate::cublas::memory_info(d.index);
            }
        }
        let _ = device;
        None
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
            return crate::backend::unscale_rows::<Self>(x_half, scale, dtype);
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

/// A CUDA tensor as a tensor of `R` (`None` where `R` is another runtime).
#[cfg(feature = "cuda")]
fn from_cuda<R: CubeRuntime>(t: CubeTensor<cubecl::cuda::CudaRuntime>) -> Option<CubeTensor<R>> {
    let t: Box<dyn std::any::Any> = Box::new(t);
    t.downcast::<CubeTensor<R>>().ok().map(|t| *t)
}

/// [`SparseGnnBackend::rank_transfer`] through this rank's NCCL communicator where `R` is the
/// CUDA runtime and the communicator is set up; `None` otherwise.
#[cfg(feature = "cuda")]
#[allow(clippy::type_complexity)]
fn nccl_rank_transfer<R: CubeRuntime>(
    send: Vec<Option<Ft<R>>>,
    recv: &[usize],
    width: usize,
    dtype: DType,
    device: &R::Device,
    comm: &crate::collective::Comm,
) -> Option<Result<Option<Ft<R>>, crate::collective::CommError>> {
    use cubecl::cuda::CudaDevice;
    use std::any::Any;
    let c = comm.nccl()?;
    let d = (device as &dyn Any).downcast_ref::<CudaDevice>()?;
    let mut cuda = Vec::with_capacity(send.len());
    for t in send {
        cuda.push(match t {
            Some(t) => Some(to_cuda(t)?),
            None => None,
        });
    }
    Some(
        crate::nccl::rank_transfer(c, cuda, recv, width, dtype, d)
            .map(|t| t.map(|t| from_cuda::<R>(t).expect("R is CudaRuntime")))
            .map_err(|e| crate::collective::CommError::Config(format!("NCCL row transfer: {}", e.0))),
    )
}

/// A tensor of `R` as a CUDA tensor, made contiguous (`None` where `R` is another runtime).
#[cfg(feature = "cuda")]
fn to_cuda<R: CubeRuntime>(t: CubeTensor<R>) -> Option<CubeTensor<cubecl::cuda::CudaRuntime>> {
    let t: Box<dyn std::any::Any> = Box::new(into_contiguous(t));
    t.downcast::<CubeTensor<cubecl::cuda::CudaRuntime>>().ok().map(|t| *t)
}

/// The pieces through one NCCL group where they are CUDA tensors between CUDA devices and NCCL
/// loads; otherwise (or when the group cannot run) the pieces back, for moves one by one.
#[cfg(feature = "cuda")]
fn nccl_transfer<R: CubeRuntime>(pieces: Vec<(Ft<R>, R::Device)>) -> Result<Vec<Ft<R>>, Vec<(Ft<R>, R::Device)>> {
    use cubecl::cuda::{CudaDevice, CudaRuntime};
    use std::any::Any;
    if pieces.len() < 2 || !crate::nccl::available() {
        return Err(pieces);
    }
    let mut cuda = Vec::with_capacity(pieces.len());
    for (t, d) in &pieces {
        let t = (t as &dyn Any).downcast_ref::<CubeTensor<CudaRuntime>>();
        let d = (d as &dyn Any).downcast_ref::<CudaDevice>();
        match (t, d) {
            (Some(t), Some(d)) => cuda.push((into_contiguous(t.clone()), d.clone())),
            _ => return Err(pieces),
        }
    }
    match crate::nccl::transfer(cuda) {
        Ok(out) => Ok(out.into_iter().map(|t| from_cuda::<R>(t).expect("R is CudaRuntime")).collect()),
        Err(e) => {
            static LOGGED: std::sync::Once = std::sync::Once::new();
            LOGGED.call_once(|| log::warn!("grouped NCCL transfers unavailable ({}): tensors move one by one", e.0));
            Err(pieces)
        }
    }
}

/// [`SparseGnnBackend::transfer_start`] through one NCCL group where `R` is the CUDA runtime
/// and NCCL loads (every piece off its group's device); the groups back otherwise.
#[cfg(feature = "cuda")]
#[allow(clippy::type_complexity)]
fn nccl_start<R: CubeRuntime>(
    groups: Vec<(Vec<Ft<R>>, R::Device)>,
) -> Result<(Vec<Ft<R>>, crate::exchange::TransferWait), Vec<(Vec<Ft<R>>, R::Device)>> {
    use cubecl::cuda::{CudaDevice, CudaRuntime};
    use std::any::Any;
    if groups.is_empty() || !crate::nccl::available() {
        return Err(groups);
    }
    let mut cuda = Vec::with_capacity(groups.len());
    for (pieces, d) in &groups {
        let Some(d) = (d as &dyn Any).downcast_ref::<CudaDevice>() else { return Err(groups) };
        let mut list = Vec::with_capacity(pieces.len());
        for t in pieces {
            match (t as &dyn Any).downcast_ref::<CubeTensor<CudaRuntime>>() {
                Some(t) if t.device.index != d.index => list.push(into_contiguous(t.clone())),
                _ => return Err(groups),
            }
        }
        cuda.push((list, d.clone()));
    }
    match crate::nccl::start(cuda) {
        Ok((out, pending)) => {
            let out = out.into_iter().map(|t| from_cuda::<R>(t).expect("R is CudaRuntime")).collect();
            let wait = crate::exchange::TransferWait::new(move || {
                if let Err(e) = pending.wait() {
                    log::error!("waiting for a grouped transfer: {}", e.0);
                }
            });
            Ok((out, wait))
        }
        Err(e) => {
            static LOGGED: std::sync::Once = std::sync::Once::new();
            LOGGED.call_once(|| log::warn!("grouped NCCL transfers unavailable ({}): tensors move one by one", e.0));
            Err(groups)
        }
    }
}

/// A tensor uploaded through the pinned staging buffer of [`crate::nccl::upload`] where `R`
/// is the CUDA runtime; `None` (logged once) to upload through Burn.
#[cfg(feature = "cuda")]
fn pinned_upload<R: CubeRuntime>(bytes: &[u8], shape: [usize; 2], dtype: DType, device: &R::Device) -> Option<Ft<R>> {
    use cubecl::cuda::CudaDevice;
    use std::any::Any;
    let d = (device as &dyn Any).downcast_ref::<CudaDevice>()?;
    match crate::nccl::upload(bytes, shape, dtype, d) {
        Ok(t) => from_cuda::<R>(t),
        Err(e) => {
            static LOGGED: std::sync::Once = std::sync::Once::new();
            LOGGED.call_once(|| log::warn!("pinned uploads unavailable ({}): rows upload through Burn", e.0));
            None
        }
    }
}

/// The product through cuBLAS where `R` is the CUDA runtime and libcublas loads; `None` to fall
/// back to Burn's matmul (logged once).
#[cfg(feature = "cuda")]
fn cublas_product_bias<R: CubeRuntime>(
    a: &CubeTensor<R>,
    b: &CubeTensor<R>,
    bias: &CubeTensor<R>,
    math: crate::dense::ProductMath,
) -> Option<CubeTensor<R>> {
    use cubecl::cuda::CudaRuntime;
    use std::any::Any;
    let a = (a as &dyn Any).downcast_ref::<CubeTensor<CudaRuntime>>()?;
    let b = (b as &dyn Any).downcast_ref::<CubeTensor<CudaRuntime>>()?;
    let bias = (bias as &dyn Any).downcast_ref::<CubeTensor<CudaRuntime>>()?;
    let (a, b, bias) =
        (into_contiguous_aligned(a.clone()), into_contiguous_aligned(b.clone()), into_contiguous(bias.clone()));
    match crate::cublas::gemm_bias(&a, &b, &bias, math) {
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
    math: crate::dense::ProductMath,
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
    match crate::cublas::gemm(&a, &b, ta, tb, math, acc, half_out) {
        Ok(out) => from_cuda::<R>(out),
        Err(e) => {
            static LOGGED: std::sync::Once = std::sync::Once::new();
            LOGGED.call_once(|| log::warn!("cuBLAS unavailable ({}): dense products run on Burn's matmul", e.0));
            None
        }
    }
}
