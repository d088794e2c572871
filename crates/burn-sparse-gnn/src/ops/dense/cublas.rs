//! Dense products through cuBLAS on the CUDA backend.
//!
//! cuBLAS is loaded at run time (`cudarc`, dynamic loading): the build needs no CUDA toolkit,
//! and where `libcublas.so` cannot be found the products fall back to Burn's matmul (see
//! [`crate::dense`]). The GEMM is enqueued on the CUDA stream CubeCL orders the caller's work on
//! (reported with each buffer by the patched `cubecl-cuda` in `vendor/`): it runs after the
//! kernels that produced its inputs and before the kernels that read its output, with no host
//! synchronisation, so several GPUs driven by one thread keep running side by side. Where no
//! stream is reported, a product synchronises CubeCL's queue, runs on a stream of its own and
//! waits for it (one host round trip per product).

use super::precision::ProductMath;
use burn::tensor::{DType, Shape, TensorMetadata};
use burn_cubecl::tensor::CubeTensor;
use cubecl::cuda::CudaRuntime;
use cudarc::cublas::{result as blas, sys as bsys};
use cudarc::cublaslt::{result as lt, sys as ltsys};
use cudarc::driver::{result as drv, sys as dsys};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

static PRODUCTS: AtomicUsize = AtomicUsize::new(0);

/// How many products of this process ran through cuBLAS.
pub fn products() -> usize {
    PRODUCTS.load(Ordering::Relaxed)
}

/// Whether libcublas can be loaded on this machine (checked once).
pub fn available() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only probes whether the shared library opens.
    *PRESENT.get_or_init(|| unsafe { bsys::is_culib_present() })
}

/// A cuBLAS handle bound to a stream of its own, per device, for the calling thread.
struct Blas {
    handle: bsys::cublasHandle_t,
    stream: dsys::CUstream,
    ctx: dsys::CUcontext,
}

thread_local! {
    static HANDLES: RefCell<HashMap<usize, Blas>> = RefCell::new(HashMap::new());
}

/// Why a product could not run through cuBLAS (the caller falls back to Burn's matmul).
#[derive(Debug)]
pub(crate) struct Unavailable(pub String);

fn blas_for(device: usize) -> Result<(bsys::cublasHandle_t, dsys::CUstream), Unavailable> {
    HANDLES.with(|h| {
        let mut map = h.borrow_mut();
        if let Some(b) = map.get(&device) {
            // SAFETY: the primary context was retained for this device and stays alive.
            unsafe { drv::ctx::set_current(b.ctx) }.map_err(|e| Unavailable(format!("context: {e:?}")))?;
            return Ok((b.handle, b.stream));
        }
        let err = |what: &str, e: &dyn std::fmt::Debug| Unavailable(format!("{what}: {e:?}"));
        let dev = drv::device::get(device as i32).map_err(|e| err("device", &e))?;
        // SAFETY: `dev` is a valid device; CubeCL runs on the same primary context.
        let ctx = unsafe { drv::primary_ctx::retain(dev) }.map_err(|e| err("primary context", &e))?;
        unsafe { drv::ctx::set_current(ctx) }.map_err(|e| err("context", &e))?;
        let stream = drv::stream::create(drv::stream::StreamKind::NonBlocking).map_err(|e| err("stream", &e))?;
        let handle = blas::create_handle().map_err(|e| err("cublas handle", &e))?;
        // SAFETY: both were just created in the current context.
        unsafe { blas::set_stream(handle, stream as bsys::cudaStream_t) }.map_err(|e| err("cublas stream", &e))?;
        map.insert(device, Blas { handle, stream, ctx });
        Ok((handle, stream))
    })
}

/// A row-major operand: the device pointer, its leading dimension (row stride in elements), its
/// dtype and the stream CubeCL orders work on it on (0 where not reported).
fn operand(t: &CubeTensor<CudaRuntime>) -> Result<(u64, usize, DType, usize), Unavailable> {
    let strides = t.meta.strides();
    if strides.len() != 2 || strides[1] != 1 {
        return Err(Unavailable("operand is not row-major".into()));
    }
    let res = t.client.get_resource(t.handle.clone()).map_err(|e| Unavailable(format!("resource: {e:?}")))?;
    Ok((res.resource().ptr, strides[0], t.dtype, res.resource().stream))
}

fn data_type(d: DType) -> Option<bsys::cudaDataType> {
    match d {
        DType::F32 => Some(bsys::cudaDataType::CUDA_R_32F),
        DType::F16 => Some(bsys::cudaDataType::CUDA_R_16F),
        DType::BF16 => Some(bsys::cudaDataType::CUDA_R_16BF),
        _ => None,
    }
}

/// `op(a) @ op(b)` into a new `[m, n]` f32 tensor (`ta` / `tb`: the operand is used
/// transposed), with `math`: f32 inputs in exact f32 or TF32, f16 / bf16 inputs with f32
/// accumulation; with `half_out` and half inputs the result has the inputs' type (rounded once
/// from the f32 accumulator). Inputs are row-major (pitched rows allowed). With `acc` (a
/// contiguous f32 `[m, n]` tensor no other tensor shares) the product is added to its buffer in
/// place (`beta = 1`) and the result is `acc` (the caller drops its own handle); on an error
/// `acc` is unchanged.
pub(crate) fn gemm(
    a: &CubeTensor<CudaRuntime>,
    b: &CubeTensor<CudaRuntime>,
    ta: bool,
    tb: bool,
    math: ProductMath,
    acc: Option<&CubeTensor<CudaRuntime>>,
    half_out: bool,
) -> Result<CubeTensor<CudaRuntime>, Unavailable> {
    if !available() {
        return Err(Unavailable("libcublas was not found".into()));
    }
    let (sa, sb) = (a.meta.shape(), b.meta.shape());
    let (m, k) = if ta { (sa[1], sa[0]) } else { (sa[0], sa[1]) };
    let (kb, n) = if tb { (sb[1], sb[0]) } else { (sb[0], sb[1]) };
    if k != kb {
        return Err(Unavailable(format!("inner sizes {k} and {kb} differ")));
    }
    let limit = i32::MAX as usize;
    if [m, n, k, a.meta.strides()[0], b.meta.strides()[0]].iter().any(|&v| v > limit) {
        return Err(Unavailable("a size exceeds cuBLAS's 32-bit limit".into()));
    }
    let (a_ty, b_ty) = (data_type(a.dtype), data_type(b.dtype));
    let (Some(a_ty), Some(b_ty)) = (a_ty, b_ty) else {
        return Err(Unavailable(format!("dtypes {:?} / {:?}", a.dtype, b.dtype)));
    };
    if a.dtype != b.dtype {
        return Err(Unavailable(format!("operand dtypes differ: {:?} / {:?}", a.dtype, b.dtype)));
    }
    let out_dtype = match (half_out, a.dtype) {
        (false, _) => DType::F32,
        (true, DType::F16 | DType::BF16) if acc.is_none() => a.dtype,
        (true, d) => return Err(Unavailable(format!("a {d:?} output needs half inputs and no accumulator"))),
    };
    let compute = match (math, a.dtype) {
        (ProductMath::Tf32, DType::F32) => bsys::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32,
        (_, DType::F32) => bsys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
        _ => bsys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
    };
    if let Some(acc) = &acc {
        let strides = acc.meta.strides();
        if acc.shape().dims::<2>() != [m, n] || acc.dtype != DType::F32 || strides[0] != n || strides[1] != 1 {
            return Err(Unavailable("the accumulator is not a contiguous f32 [m, n] tensor".into()));
        }
        if !acc.can_mut() {
            return Err(Unavailable("the accumulator is shared".into()));
        }
    }
    let accumulate = acc.is_some();
    let beta = if accumulate { 1.0f32 } else { 0.0f32 };
    let out = match acc {
        Some(acc) => acc.clone(),
        None => burn_cubecl::ops::numeric::empty_device_contiguous_dtype(
            a.client.clone(),
            a.device.clone(),
            Shape::new([m, n]),
            out_dtype,
        ),
    };
    if m == 0 || n == 0 || (k == 0 && accumulate) {
        return Ok(out);
    }
    if k == 0 {
        // an empty reduction
        return Ok(burn_cubecl::ops::numeric::zeros_client(
            a.client.clone(),
            a.device.clone(),
            Shape::new([m, n]),
            out_dtype,
        ));
    }
    let (pa, lda, _, _) = operand(a)?;
    let (pb, ldb, _, _) = operand(b)?;
    let (pc, _, _, cube_stream) = operand(&out)?;
    let (handle, own_stream) = blas_for(a.device.index)?;
    // on CubeCL's stream where it is reported; otherwise on our own, after CubeCL's queue drained
    let stream = if cube_stream != 0 {
        cube_stream as dsys::CUstream
    } else {
        cubecl::future::block_on(a.client.sync()).map_err(|e| Unavailable(format!("sync: {e:?}")))?;
        own_stream
    };
    // SAFETY: the handle and the stream live in the current (primary) context.
    unsafe { blas::set_stream(handle, stream as bsys::cudaStream_t) }
        .map_err(|e| Unavailable(format!("cublas stream: {e:?}")))?;
    let alpha = 1.0f32;
    // row-major C = A B is column-major C^T = B^T A^T: a row-major operand is its transpose in
    // column-major order, so an untransposed operand is passed as is (`N`)
    let op = |t: bool| if t { bsys::cublasOperation_t::CUBLAS_OP_T } else { bsys::cublasOperation_t::CUBLAS_OP_N };
    // SAFETY: pointers come from live CubeCL buffers of the checked shapes and strides; on
    // CubeCL's stream a buffer released after the call is reused only by work queued after the
    // GEMM, and on our own stream the call waits for the GEMM before returning.
    let result = unsafe {
        blas::gemm_ex(
            handle,
            op(tb),
            op(ta),
            n as i32,
            m as i32,
            k as i32,
            &alpha as *const f32 as *const std::ffi::c_void,
            pb as *const std::ffi::c_void,
            b_ty,
            ldb as i32,
            pa as *const std::ffi::c_void,
            a_ty,
            lda as i32,
            &beta as *const f32 as *const std::ffi::c_void,
            pc as *mut std::ffi::c_void,
            data_type(out_dtype).expect("f32 or the inputs' half type"),
            n as i32,
            compute,
            bsys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT_TENSOR_OP,
        )
    };
    result.map_err(|e| Unavailable(format!("cublasGemmEx: {e:?}")))?;
    if cube_stream == 0 {
        // SAFETY: the stream belongs to this thread's handle.
        unsafe { drv::stream::synchronize(stream) }.map_err(|e| Unavailable(format!("stream: {e:?}")))?;
    }
    PRODUCTS.fetch_add(1, Ordering::Relaxed);
    debug_assert_eq!(out.shape().dims::<2>(), [m, n]);
    Ok(out)
}

/// `(free, total)` bytes of CUDA device `device` as the driver reports them (in the device's
/// primary context, which CubeCL uses too); `None` when the driver does not answer.
pub(crate) fn memory_info(device: usize) -> Option<(u64, u64)> {
    // the primary context is retained once per device (sampling calls this at every launch)
    static CTXS: std::sync::Mutex<Vec<(usize, usize)>> = std::sync::Mutex::new(Vec::new());
    let ctx = {
        let mut ctxs = CTXS.lock().unwrap_or_else(|e| e.into_inner());
        match ctxs.iter().find(|(d, _)| *d == device) {
            Some(&(_, c)) => c as dsys::CUcontext,
            None => {
                let dev = drv::device::get(device as i32).ok()?;
                let c = unsafe { drv::primary_ctx::retain(dev) }.ok()?;
                ctxs.push((device, c as usize));
                c
            }
        }
    };
    unsafe { drv::ctx::set_current(ctx) }.ok()?;
    let (free, total) = drv::mem_get_info().ok()?;
    Some((free as u64, total as u64))
}

/// Workspace of cuBLASLt's matmuls, per device (allocated once, held for the process).
const LT_WORKSPACE: usize = 32 << 20;

/// A cuBLASLt handle and workspace per device for the calling thread, with the algorithm the
/// heuristic chose per product shape.
struct Lt {
    handle: ltsys::cublasLtHandle_t,
    workspace: u64,
    algos: HashMap<(usize, usize, usize, usize, usize, DType, bool), ltsys::cublasLtMatmulAlgo_t>,
}

thread_local! {
    static LT_HANDLES: RefCell<HashMap<usize, Lt>> = RefCell::new(HashMap::new());
}

/// Whether libcublasLt can be loaded on this machine (checked once).
fn lt_available() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only probes whether the shared library opens.
    *PRESENT.get_or_init(|| unsafe { ltsys::is_culib_present() })
}

fn lt_type(d: DType) -> Option<ltsys::cudaDataType> {
    match d {
        DType::F32 => Some(ltsys::cudaDataType::CUDA_R_32F),
        DType::F16 => Some(ltsys::cudaDataType::CUDA_R_16F),
        DType::BF16 => Some(ltsys::cudaDataType::CUDA_R_16BF),
        _ => None,
    }
}

/// The descriptors of one cuBLASLt product, destroyed on drop.
struct LtDescs {
    desc: ltsys::cublasLtMatmulDesc_t,
    layouts: [ltsys::cublasLtMatrixLayout_t; 3],
}

impl Drop for LtDescs {
    fn drop(&mut self) {
        // SAFETY: each was created once by cuBLASLt and is destroyed once here.
        unsafe {
            let _ = lt::destroy_matmul_desc(self.desc);
            for l in self.layouts {
                let _ = lt::destroy_matrix_layout(l);
            }
        }
    }
}

/// A cuBLASLt heuristic preference, destroyed on drop.
struct LtPref(ltsys::cublasLtMatmulPreference_t);

impl Drop for LtPref {
    fn drop(&mut self) {
        // SAFETY: created once by cuBLASLt and destroyed once here.
        unsafe {
            let _ = lt::destroy_matmul_pref(self.0);
        }
    }
}

/// `a @ b + bias` into a new `[m, n]` f32 tensor: `a` `[m, k]` and `b` `[k, n]` row-major (f32
/// with `math`, or both f16 / bf16), `bias` `[n]` f32 added to every row by cuBLASLt's bias
/// epilogue, so the bias costs no pass of its own. Enqueued on CubeCL's stream like [`gemm`];
/// refuses (the caller adds the bias itself) where cuBLASLt is missing or no stream is reported.
pub(crate) fn gemm_bias(
    a: &CubeTensor<CudaRuntime>,
    b: &CubeTensor<CudaRuntime>,
    bias: &CubeTensor<CudaRuntime>,
    math: ProductMath,
) -> Result<CubeTensor<CudaRuntime>, Unavailable> {
    if !available() || !lt_available() {
        return Err(Unavailable("libcublasLt was not found".into()));
    }
    let (sa, sb) = (a.meta.shape(), b.meta.shape());
    let (m, k, n) = (sa[0], sa[1], sb[1]);
    if sb[0] != k || bias.shape().num_elements() != n || bias.dtype != DType::F32 {
        return Err(Unavailable("shapes or bias dtype do not match".into()));
    }
    if a.dtype != b.dtype || m == 0 || n == 0 || k == 0 {
        return Err(Unavailable("operand dtypes differ or a size is 0".into()));
    }
    let (Some(in_ty), Some(f32_ty)) = (lt_type(a.dtype), lt_type(DType::F32)) else {
        return Err(Unavailable(format!("dtype {:?}", a.dtype)));
    };
    let (pa, lda, _, cube_stream) = operand(a)?;
    let (pb, ldb, _, _) = operand(b)?;
    if cube_stream == 0 {
        return Err(Unavailable("no CubeCL stream reported".into()));
    }
    let bias_res =
        bias.client.get_resource(bias.handle.clone()).map_err(|e| Unavailable(format!("resource: {e:?}")))?;
    let pbias = bias_res.resource().ptr;
    let out = burn_cubecl::ops::numeric::empty_device_contiguous_dtype(
        a.client.clone(),
        a.device.clone(),
        Shape::new([m, n]),
        DType::F32,
    );
    let (pc, _, _, _) = operand(&out)?;
    let err = |what: &str, e: &dyn std::fmt::Debug| Unavailable(format!("cublasLt {what}: {e:?}"));
    // the cuBLAS context of this device is current after `blas_for`
    blas_for(a.device.index)?;
    let compute = match (math, a.dtype) {
        (ProductMath::Tf32, DType::F32) => ltsys::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32,
        _ => ltsys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
    };
    // row-major D = A B + bias is column-major D^T = B^T A^T + bias (one entry per row of D^T)
    let descs = LtDescs {
        desc: lt::create_matmul_desc(compute, f32_ty).map_err(|e| err("desc", &e))?,
        layouts: [
            lt::create_matrix_layout(in_ty, n as u64, k as u64, ldb as i64).map_err(|e| err("layout", &e))?,
            lt::create_matrix_layout(in_ty, k as u64, m as u64, lda as i64).map_err(|e| err("layout", &e))?,
            lt::create_matrix_layout(f32_ty, n as u64, m as u64, n as i64).map_err(|e| err("layout", &e))?,
        ],
    };
    let epilogue = ltsys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_BIAS;
    let bias_ptr = pbias as *const std::ffi::c_void;
    // SAFETY: the attribute buffers outlive the calls and have the sizes passed.
    unsafe {
        lt::set_matmul_desc_attribute(
            descs.desc,
            ltsys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_EPILOGUE,
            &epilogue as *const _ as *const std::ffi::c_void,
            std::mem::size_of_val(&epilogue),
        )
        .map_err(|e| err("epilogue", &e))?;
        lt::set_matmul_desc_attribute(
            descs.desc,
            ltsys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_BIAS_POINTER,
            &bias_ptr as *const _ as *const std::ffi::c_void,
            std::mem::size_of_val(&bias_ptr),
        )
        .map_err(|e| err("bias pointer", &e))?;
    }
    let key = (m, n, k, lda, ldb, a.dtype, compute == ltsys::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32);
    LT_HANDLES.with(|h| {
        let mut map = h.borrow_mut();
        if !map.contains_key(&a.device.index) {
            let handle = lt::create_handle().map_err(|e| err("handle", &e))?;
            // SAFETY: a plain device allocation in the current context, kept for the process.
            let workspace = unsafe { drv::malloc_sync(LT_WORKSPACE) }.map_err(|e| err("workspace", &e))?;
            map.insert(a.device.index, Lt { handle, workspace, algos: HashMap::new() });
        }
        let ctx = map.get_mut(&a.device.index).expect("inserted above");
        let algo = match ctx.algos.get(&key) {
            Some(algo) => *algo,
            None => {
                let pref = LtPref(lt::create_matmul_pref().map_err(|e| err("preference", &e))?);
                let ws = LT_WORKSPACE as u64;
                // SAFETY: as above; the heuristic reads the descriptors only.
                let found = unsafe {
                    lt::set_matmul_pref_attribute(
                        pref.0,
                        ltsys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                        &ws as *const u64 as *const std::ffi::c_void,
                        std::mem::size_of::<u64>(),
                    )
                    .map_err(|e| err("workspace preference", &e))?;
                    lt::get_matmul_algo_heuristic(
                        ctx.handle,
                        descs.desc,
                        descs.layouts[0],
                        descs.layouts[1],
                        descs.layouts[2],
                        descs.layouts[2],
                        pref.0,
                    )
                    .map_err(|e| err("heuristic", &e))?
                };
                ctx.algos.insert(key, found.algo);
                found.algo
            }
        };
        let (alpha, beta) = (1.0f32, 0.0f32);
        // SAFETY: pointers come from live CubeCL buffers of the checked shapes, the bias buffer
        // holds `n` f32, and the product runs on CubeCL's stream in order with the kernels
        // that produce its inputs and read its output.
        unsafe {
            lt::matmul(
                ctx.handle,
                descs.desc,
                &alpha as *const f32 as *const std::ffi::c_void,
                &beta as *const f32 as *const std::ffi::c_void,
                pb as *const std::ffi::c_void,
                descs.layouts[0],
                pa as *const std::ffi::c_void,
                descs.layouts[1],
                pc as *const std::ffi::c_void,
                descs.layouts[2],
                pc as *mut std::ffi::c_void,
                descs.layouts[2],
                &algo,
                ctx.workspace as *mut std::ffi::c_void,
                LT_WORKSPACE,
                cube_stream as ltsys::cudaStream_t,
            )
        }
        .map_err(|e| err("matmul", &e))
    })?;
    PRODUCTS.fetch_add(1, Ordering::Relaxed);
    Ok(out)
}
