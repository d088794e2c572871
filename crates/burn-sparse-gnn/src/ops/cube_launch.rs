//! What the `CubeBackend` implementations of the op families share: bindings of primitives to
//! kernel arguments, output allocation and peak-memory samples. Kernels take their float type
//! from the tensor (`#[define]`), so f32, f16 and bf16 tensors all work on a
//! `CubeBackend<R, f32, ..>`.

use crate::ops::primitive::CbsrPrim;
use crate::ops::primitive::CsrPrim;
use crate::ops::primitive::GroupsPrim;
use burn::tensor::DType;
use burn::tensor::Shape;
use burn::tensor::TensorMetadata;
use burn_cubecl::kernel::into_contiguous;
use burn_cubecl::kernel::into_contiguous_aligned;
use burn_cubecl::ops::numeric::empty_device_contiguous_dtype;
use burn_cubecl::tensor::CubeTensor;
use burn_cubecl::BoolElement;
use burn_cubecl::CubeBackend;
use burn_cubecl::CubeRuntime;
use burn_cubecl::FloatElement;
use burn_cubecl::IntElement;
use cubecl::prelude::StorageType;
use cubecl::prelude::TensorBinding;
use sparse_gnn_kernels::cbsr::CbsrDev;
use sparse_gnn_kernels::device::CsrDev;
use sparse_gnn_kernels::spmm::hot::HotDev;

pub(crate) type Ft<R> = CubeTensor<R>;

pub(crate) fn bind<R: CubeRuntime>(t: &CubeTensor<R>) -> TensorBinding<R> {
    t.clone().binding()
}

/// Peak-memory sample (see [`crate::ops::device::peak`]) with the output of a launch allocated.
pub(crate) fn sample<R: CubeRuntime>(t: &CubeTensor<R>) {
    sample_with(t, 0);
}

/// [`sample`] with `extra` bytes a launch allocates after its output and frees before it
/// returns (the SpMM's staging rows of split rows), which are in use while it runs.
pub(crate) fn sample_with<R: CubeRuntime>(t: &CubeTensor<R>, extra: u64) {
    if crate::ops::device::peak::sampling() {
        if let Ok(m) = t.client.memory_usage() {
            crate::ops::device::peak::record(m.bytes_in_use + extra);
        }
        #[cfg(feature = "cuda")]
        if let Some(d) = (&t.device as &dyn std::any::Any).downcast_ref::<cubecl::cuda::CudaDevice>() {
            if let Some((free, total)) = crate::ops::dense::cublas::memory_info(d.index) {
                crate::ops::device::peak::record_device(total.saturating_sub(free) + extra);
            }
        }
    }
}

/// Device bindings of `c`'s rows over the columns `col_idx` (`nnz` edges, split by the edge
/// groups `g`), with the hot-column split `hot` if given (its 1-D arrays are never pitched).
pub(crate) fn bind_csr<R: CubeRuntime>(
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

pub(crate) fn cbsr_dev<R: CubeRuntime>(
    c: &CbsrPrim<CubeBackend<R, impl FloatElement, impl IntElement, impl BoolElement>>,
) -> (CbsrDev<R>, CubeTensor<R>, CubeTensor<R>) {
    let values = into_contiguous(c.values.clone());
    let indices = into_contiguous(c.indices.clone());
    let dev = CbsrDev { values: bind(&values), indices: bind(&indices), n: c.n, k: c.k, dim: c.dim, packed: c.packed };
    (dev, values, indices)
}

pub(crate) fn dtype_of<R: CubeRuntime>(t: &CubeTensor<R>) -> StorageType {
    t.dtype.into()
}

/// A row-major 2-D input the kernels can read (pitched rows allowed).
pub(crate) fn mat<R: CubeRuntime>(t: CubeTensor<R>) -> CubeTensor<R> {
    into_contiguous_aligned(t)
}

pub(crate) fn zeros<R: CubeRuntime>(like: &CubeTensor<R>, shape: impl Into<Shape>, dtype: DType) -> CubeTensor<R> {
    burn_cubecl::ops::numeric::zeros_client(like.client.clone(), like.device.clone(), shape.into(), dtype)
}

pub(crate) fn empty<R: CubeRuntime>(like: &CubeTensor<R>, shape: impl Into<Shape>, dtype: DType) -> CubeTensor<R> {
    empty_device_contiguous_dtype(like.client.clone(), like.device.clone(), shape.into(), dtype)
}

/// `t` itself where a kernel may write it in place (nothing else holds its buffer, rows
/// contiguous), else a contiguous copy.
pub(crate) fn writable<R: CubeRuntime>(t: CubeTensor<R>) -> CubeTensor<R> {
    if t.can_mut() && t.is_contiguous() {
        t
    } else {
        t.copy()
    }
}

/// A contiguous i32 copy of an integer tensor (the tensor itself where it is one already).
pub(crate) fn i32_array<R: CubeRuntime>(t: CubeTensor<R>) -> CubeTensor<R> {
    into_contiguous(if t.dtype == DType::I32 { t } else { burn_cubecl::kernel::cast(t, DType::I32) })
}

/// The first entry of each of the i32 arrays `ts` (contiguous, on one device), read back in one
/// transfer: one wait for the device where reading them one by one waits once per array, and
/// no launch to gather them first. An array that could not be read gives 0.
pub(crate) fn read_first_i32<R: CubeRuntime>(ts: &[&CubeTensor<R>]) -> Vec<i64> {
    let Some(first) = ts.first() else { return Vec::new() };
    let handles = ts.iter().map(|t| t.handle.clone()).collect();
    let bytes = first.client.read(handles);
    bytes
        .iter()
        .map(|b| match b.get(..4) {
            Some(&[a, b, c, d]) => i32::from_le_bytes([a, b, c, d]) as i64,
            _ => 0,
        })
        .collect()
}

/// A contiguous f32 copy of a float tensor (the tensor itself where it is one already).
pub(crate) fn f32_array<R: CubeRuntime>(t: CubeTensor<R>) -> CubeTensor<R> {
    into_contiguous(if t.dtype == DType::F32 { t } else { burn_cubecl::kernel::cast(t, DType::F32) })
}

/// Edge weights as a contiguous `[nnz * heads]` array and their head count.
pub(crate) fn weights<R: CubeRuntime>(w: Option<Ft<R>>) -> (Option<CubeTensor<R>>, usize) {
    match w {
        None => (None, 1),
        Some(w) => {
            let s = w.shape();
            let heads = if s.num_dims() == 1 { 1 } else { s[1] };
            (Some(into_contiguous(w)), heads)
        }
    }
}
/// A CUDA tensor as a tensor of `R` (`None` where `R` is another runtime).
#[cfg(feature = "cuda")]
pub(crate) fn from_cuda<R: CubeRuntime>(t: CubeTensor<cubecl::cuda::CudaRuntime>) -> Option<CubeTensor<R>> {
    let t: Box<dyn std::any::Any> = Box::new(t);
    t.downcast::<CubeTensor<R>>().ok().map(|t| *t)
}

/// A tensor of `R` as a CUDA tensor, made contiguous (`None` where `R` is another runtime).
#[cfg(feature = "cuda")]
pub(crate) fn to_cuda<R: CubeRuntime>(t: CubeTensor<R>) -> Option<CubeTensor<cubecl::cuda::CudaRuntime>> {
    let t: Box<dyn std::any::Any> = Box::new(into_contiguous(t));
    t.downcast::<CubeTensor<cubecl::cuda::CudaRuntime>>().ok().map(|t| *t)
}
