//! The backend extension trait: one method per sparse kernel, plus the differentiable entry
//! points that `Autodiff<B>` overrides with hand-written backward passes.

use crate::graph::{CsrPrim, GraphPrimitive};
use burn::tensor::backend::Backend;
use burn::tensor::ops::{FloatTensor, IntTensor};
use burn::tensor::{DType, FloatDType, Tensor};
use sparse_gnn_kernels::config::KernelConfig;

pub use sparse_gnn_kernels::dropout::ReluDropout;
pub use sparse_gnn_kernels::pool::{PoolLayout, PoolSpec};
pub use sparse_gnn_kernels::sample::{SampleSpec, Sampling};
pub use sparse_gnn_kernels::spmm::Reduce;

/// CSR structure primitive of backend `B`.
pub type CsrPrimitive<B> = CsrPrim<IntTensor<B>>;

/// A CBSR matrix (MaxK-GNN's compressed balanced sparse rows): `k` entries per row.
#[derive(Clone, Debug)]
pub struct CbsrPrim<B: Backend> {
    /// `[n, k]` values.
    pub values: FloatTensor<B>,
    /// Column ids: `[n, k]` i32, or, when `packed`, `[n, ceil(k / 4)]` words holding four u8
    /// column ids each (entry `t` in byte `t % 4` of word `t / 4`), used when `dim <= 256`.
    pub indices: IntTensor<B>,
    /// Rows.
    pub n: usize,
    /// Entries per row.
    pub k: usize,
    /// Width of the dense rows the entries come from.
    pub dim: usize,
    /// Whether `indices` is packed.
    pub packed: bool,
}

/// Output of an SpMM kernel.
#[derive(Clone, Debug)]
pub struct SpmmOutput<B: Backend> {
    /// `[n_rows, f]`.
    pub out: FloatTensor<B>,
    /// For [`Reduce::Max`]: `[n_rows, f]` i32 winning edge ids (CSR order), -1 for empty rows.
    pub argmax: Option<IntTensor<B>>,
}

/// Sparse kernels of the project, implemented for NdArray (CPU reference), `CubeBackend`
/// (CubeCL kernels on CUDA / wgpu) and `Autodiff<B>`.
///
/// Conventions: `csr` is a CSR structure with row = destination; edge weights `w` are
/// `[nnz, heads]` (or `[nnz]` for one head) in CSR edge order, `heads` dividing the feature
/// width; node features are `[n, f]` row-major. Methods without the `ad_` prefix are plain
/// kernels: on `Autodiff<B>` their outputs are not tracked. The `ad_` methods are the
/// differentiable operations; their default is the kernel, `Autodiff<B>` records a backward.
pub trait SparseGnnBackend: Backend {
    /// `out[i] = reduce_{e in row i} w[e] * x[col e]` (see [`Reduce`]).
    fn spmm(
        csr: &CsrPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        x: FloatTensor<Self>,
        reduce: Reduce,
    ) -> SpmmOutput<Self>;

    /// Max-reduce gradient for `x`: `dx[j, c] = sum_{e=(i,j): argmax[i,c]=e} w[e] dout[i, c]`,
    /// computed over the transpose (no atomics).
    fn spmm_max_grad_x(
        g: &GraphPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        dout: FloatTensor<Self>,
        argmax: IntTensor<Self>,
    ) -> FloatTensor<Self>;

    /// Max-reduce gradient for the edge weights (`[nnz, heads]`).
    fn spmm_max_grad_w(
        csr: &CsrPrimitive<Self>,
        heads: usize,
        dout: FloatTensor<Self>,
        x: FloatTensor<Self>,
        argmax: IntTensor<Self>,
    ) -> FloatTensor<Self>;

    /// `out[e, h] = <a[row e, head h], b[col e, head h]>`, `[nnz, heads]`.
    fn sddmm(csr: &CsrPrimitive<Self>, a: FloatTensor<Self>, b: FloatTensor<Self>, heads: usize) -> FloatTensor<Self>;

    /// Softmax of `scores` (`[nnz, heads]`) over the edges of each row, max-subtracted.
    fn edge_softmax(csr: &CsrPrimitive<Self>, scores: FloatTensor<Self>) -> FloatTensor<Self>;

    /// Backward of [`SparseGnnBackend::edge_softmax`] from its output `y` and gradient `dy`.
    fn edge_softmax_grad(csr: &CsrPrimitive<Self>, y: FloatTensor<Self>, dy: FloatTensor<Self>) -> FloatTensor<Self>;

    /// Per-edge scale of a sampled aggregation (`[nnz]`, dtype of `like`): 0 if the edge is
    /// not sampled, 1 (sum) or `1 / kept` (mean) otherwise.
    fn edge_sample_scale(
        csr: &CsrPrimitive<Self>,
        spec: SampleSpec,
        reduce: Reduce,
        like: &FloatTensor<Self>,
    ) -> FloatTensor<Self>;

    /// ES-SpMM: SpMM over at most `spec.width` sampled edges per row, normalised by the
    /// sampled count for [`Reduce::Mean`].
    fn sampled_spmm(
        csr: &CsrPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        x: FloatTensor<Self>,
        spec: SampleSpec,
        reduce: Reduce,
    ) -> FloatTensor<Self>;

    /// MaxK selection of the `k` largest entries of each row into CBSR (`config`: the plane
    /// choice and selection method of the kernel).
    fn maxk(x: FloatTensor<Self>, k: usize, config: &KernelConfig) -> CbsrPrim<Self>;

    /// k-max-pooling selection into CBSR.
    fn maxpool(x: FloatTensor<Self>, spec: PoolSpec) -> CbsrPrim<Self>;

    /// Dense `[n, dim]` matrix of a CBSR matrix.
    fn cbsr_to_dense(c: &CbsrPrim<Self>) -> FloatTensor<Self>;

    /// Values of dense `x` (`[n, dim]`) at the pattern of `pattern` (its values are ignored).
    fn cbsr_gather(x: FloatTensor<Self>, pattern: &CbsrPrim<Self>) -> FloatTensor<Self>;

    /// CBSR SpGEMM: `out[i] = sum_{e=(i,j)} w[e] * scatter(c[j])`, `[n_rows, dim]`.
    fn cbsr_spgemm(g: &GraphPrimitive<Self>, w: Option<FloatTensor<Self>>, c: &CbsrPrim<Self>) -> FloatTensor<Self>;

    /// SSpMM: `dvalues[j, t] = sum_{e=(i,j)} w[e] * dy[i, idx[j, t]]`, `[n_cols, k]`.
    fn cbsr_sspmm(
        g: &GraphPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        dy: FloatTensor<Self>,
        pattern: &CbsrPrim<Self>,
    ) -> FloatTensor<Self>;

    /// Edge-weight gradient of the SpGEMM: `dw[e] = sum_t dy[i, idx[j, t]] * values[j, t]`.
    fn cbsr_spgemm_grad_w(csr: &CsrPrimitive<Self>, dy: FloatTensor<Self>, c: &CbsrPrim<Self>) -> FloatTensor<Self>;

    /// Unpacked `[n, k]` i32 column ids of a CBSR matrix.
    fn cbsr_indices(c: &CbsrPrim<Self>) -> IntTensor<Self>;

    /// `op(a) @ op(b)` of 2-D tensors (`ta` / `tb`: the operand is used transposed) into an
    /// f32 tensor: f32 inputs with `math`, f16 / bf16 inputs (both the same) with f32
    /// accumulation. Burn's matmul by default; cuBLAS on CUDA (see [`crate::dense`]).
    fn dense_product(
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
        ta: bool,
        tb: bool,
        math: crate::dense::ProductMath,
    ) -> FloatTensor<Self> {
        let _ = math;
        crate::dense::burn_product::<Self>(a, b, ta, tb)
    }

    /// `op(a) @ op(b)` of half inputs (both f16 or both bf16) into a tensor of their type:
    /// f32 accumulation, one rounding at the end (what `torch.matmul` returns for half
    /// tensors). cuBLAS on CUDA; elsewhere [`SparseGnnBackend::dense_product`] then a cast.
    /// Inputs of another type give the f32 product.
    fn dense_product_half(a: FloatTensor<Self>, b: FloatTensor<Self>, ta: bool, tb: bool) -> FloatTensor<Self> {
        let half = burn::tensor::TensorMetadata::dtype(&a);
        crate::dense::half_product::<Self>(Self::dense_product(a, b, ta, tb, Default::default()), half)
    }

    /// `acc + op(a) @ op(b)` for an f32 `acc` of the product's shape (see
    /// [`SparseGnnBackend::dense_product`]): a sum of products without a separate addition
    /// pass where the backend adds in place (cuBLAS with `beta = 1` on CUDA, when no other
    /// tensor shares `acc`); the product then an addition by default.
    fn dense_product_acc(
        acc: FloatTensor<Self>,
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
        ta: bool,
        tb: bool,
        math: crate::dense::ProductMath,
    ) -> FloatTensor<Self> {
        let p = Self::dense_product(a, b, ta, tb, math);
        crate::dense::prim(crate::dense::t2::<Self>(acc) + crate::dense::t2::<Self>(p))
    }

    /// `a @ b + bias` (`bias`: `[n]` f32, added to every row) into an f32 `[m, n]` tensor (see
    /// [`SparseGnnBackend::dense_product`]): on CUDA the bias is cuBLASLt's epilogue of the
    /// product, elsewhere an addition after it.
    fn dense_product_bias(
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
        bias: FloatTensor<Self>,
        math: crate::dense::ProductMath,
    ) -> FloatTensor<Self> {
        crate::dense::add_row_bias::<Self>(Self::dense_product(a, b, false, false, math), bias)
    }

    /// Device memory held by this process on `device`: `(bytes reserved, bytes in use)`, where
    /// the backend can tell (CubeCL memory pools); `None` on the CPU.
    fn device_memory(_device: &Self::Device) -> Option<(u64, u64)> {
        None
    }

    /// The device's memory as its driver reports it: `(bytes free, bytes in all)`, where the
    /// backend can tell (CUDA); `None` elsewhere. Memory this process's pools reserve counts
    /// as used.
    fn device_capacity(_device: &Self::Device) -> Option<(u64, u64)> {
        None
    }

    // ---- differentiable operations --------------------------------------------------------

    /// Differentiable [`SparseGnnBackend::spmm`] (gradients for `x` and `w`).
    fn ad_spmm(
        g: &GraphPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        x: FloatTensor<Self>,
        reduce: Reduce,
    ) -> FloatTensor<Self> {
        Self::spmm(&g.csr, w, x, reduce).out
    }

    /// Differentiable [`SparseGnnBackend::sddmm`].
    fn ad_sddmm(
        g: &GraphPrimitive<Self>,
        a: FloatTensor<Self>,
        b: FloatTensor<Self>,
        heads: usize,
    ) -> FloatTensor<Self> {
        Self::sddmm(&g.csr, a, b, heads)
    }

    /// Differentiable [`SparseGnnBackend::edge_softmax`].
    fn ad_edge_softmax(g: &GraphPrimitive<Self>, scores: FloatTensor<Self>) -> FloatTensor<Self> {
        Self::edge_softmax(&g.csr, scores)
    }

    /// Differentiable [`SparseGnnBackend::sampled_spmm`]: the backward uses the same sample.
    fn ad_sampled_spmm(
        g: &GraphPrimitive<Self>,
        w: Option<FloatTensor<Self>>,
        x: FloatTensor<Self>,
        spec: SampleSpec,
        reduce: Reduce,
    ) -> FloatTensor<Self> {
        Self::sampled_spmm(&g.csr, w, x, spec, reduce)
    }

    /// Differentiable [`SparseGnnBackend::maxk`]: the values carry the gradient to `x`.
    fn ad_maxk(x: FloatTensor<Self>, k: usize, config: &KernelConfig) -> CbsrPrim<Self> {
        Self::maxk(x, k, config)
    }

    /// Differentiable [`SparseGnnBackend::maxpool`].
    fn ad_maxpool(x: FloatTensor<Self>, spec: PoolSpec) -> CbsrPrim<Self> {
        Self::maxpool(x, spec)
    }

    /// Differentiable [`SparseGnnBackend::cbsr_to_dense`].
    fn ad_cbsr_to_dense(c: &CbsrPrim<Self>) -> FloatTensor<Self> {
        Self::cbsr_to_dense(c)
    }

    /// Differentiable rows `indices` (distinct) of a 2-D `x`: `x.select(0, indices)`, whose
    /// gradient is gathered through `inverse` (`[rows of x]`: the entry of `indices` naming each
    /// row, or `indices.len()` for a row not selected). See [`crate::rows`].
    fn ad_take_rows(x: FloatTensor<Self>, indices: IntTensor<Self>, inverse: IntTensor<Self>) -> FloatTensor<Self> {
        let _ = inverse;
        Self::float_select(x, 0, indices)
    }

    /// Moves each tensor to the device next to it, all moves of the call together (the
    /// transfers of a halo exchange). Not differentiable: [`crate::exchange::exchange`] is.
    /// Default: `float_to_device` one after another; on CUDA one NCCL group, both directions of
    /// every link at once ([`crate::nccl`]).
    fn transfer_all(pieces: Vec<(FloatTensor<Self>, Self::Device)>) -> Vec<FloatTensor<Self>> {
        pieces.into_iter().map(|(t, d)| Self::float_to_device(t, &d)).collect()
    }

    /// `base` (`[n, w]`) with row `i` of `values` (`[m, w]`, same dtype and device) added to its
    /// row `indices[i]`, for distinct `indices` (`[m]`); `inverse` (`[n]`) is their inverse map
    /// as in [`crate::rows::RowIndex`]. The halo exchange's backward adds the returned halo
    /// gradients to the senders' gradients this way. Not differentiable. Default: the composed
    /// ops `base + [values; 0].select(inverse)` (three passes over `n` rows); backends with
    /// kernels add the `m` rows in place (one copy of `base` where it is shared). Both are
    /// deterministic and give the same values.
    fn add_rows(
        base: FloatTensor<Self>,
        values: FloatTensor<Self>,
        indices: IntTensor<Self>,
        inverse: IntTensor<Self>,
    ) -> FloatTensor<Self> {
        let _ = indices;
        Self::float_add(base, crate::exchange::gather_back::<Self>(values, inverse))
    }

    /// A `[rows, width]` float tensor of `dtype` on `device` from its row-major little-endian
    /// `bytes` (`rows * width * dtype.size()` of them; the rows a multi-process exchange
    /// received). The default copies them into a [`TensorData`](burn::tensor::TensorData); on
    /// CUDA they go through a pinned staging buffer kept by the process (one copy on the host,
    /// then a DMA transfer), several times faster for rows of hundreds of MB.
    fn float_from_host(bytes: &[u8], shape: [usize; 2], dtype: DType, device: &Self::Device) -> FloatTensor<Self> {
        Self::float_from_data(burn::tensor::TensorData::from_bytes_vec(bytes.to_vec(), shape, dtype), device)
    }

    /// This device's CUDA index where the rows of a multi-process run can move through NCCL
    /// (`None` on other backends): what [`crate::collective::Comm::setup_rows`] takes.
    fn nccl_device(device: &Self::Device) -> Option<usize> {
        let _ = device;
        None
    }

    /// Moves rows between the ranks of a multi-process run on the devices: `send[q]` (rows on
    /// this rank's device, `None`: nothing) to rank `q`, and `recv[q]` rows of `width` values
    /// of `dtype` from every rank `q`, returned as one tensor in rank order (`None`: nothing
    /// arrives). `None` where the backend cannot (the caller reports it); on CUDA one NCCL
    /// group on the communicator [`crate::collective::Comm::setup_rows`] made.
    fn rank_transfer(
        send: Vec<Option<FloatTensor<Self>>>,
        recv: &[usize],
        width: usize,
        dtype: DType,
        device: &Self::Device,
        comm: &crate::collective::Comm,
    ) -> Option<Result<Option<FloatTensor<Self>>, crate::collective::CommError>> {
        let _ = (send, recv, width, dtype, device, comm);
        None
    }

    /// [`Self::rank_transfer`] of integer rows (the column ids of CBSR states, in the dtype
    /// they are stored in): the same NCCL group, not differentiable. `None` where the backend
    /// cannot.
    fn rank_transfer_ints(
        send: Vec<Option<IntTensor<Self>>>,
        recv: &[usize],
        width: usize,
        dtype: DType,
        device: &Self::Device,
        comm: &crate::collective::Comm,
    ) -> Option<Result<Option<IntTensor<Self>>, crate::collective::CommError>> {
        let _ = (send, recv, width, dtype, device, comm);
        None
    }

    /// Every rank's `x` (`[rows, width]`, the same shape and dtype on every rank) stacked in
    /// rank order, `[world * rows, width]`, on the devices. `None` where the backend cannot;
    /// on CUDA `ncclAllGather` on the communicator [`crate::collective::Comm::setup_rows`] made.
    fn rank_all_gather(
        x: FloatTensor<Self>,
        comm: &crate::collective::Comm,
    ) -> Option<Result<FloatTensor<Self>, crate::collective::CommError>> {
        let _ = (x, comm);
        None
    }

    /// Differentiable halo exchange of one rank of a multi-process run (see
    /// [`crate::collective`]): `state` followed by the rows the other ranks send it.
    fn ad_rank_exchange(
        state: FloatTensor<Self>,
        routes: &crate::collective::RankRoutesPrim<Self>,
    ) -> Result<FloatTensor<Self>, crate::collective::CommError> {
        crate::collective::rank_forward::<Self>(state, routes)
    }

    /// Differentiable halo exchange (see [`crate::exchange`]): per part `p`, `states[p]`
    /// followed by the rows its routes select from the other parts' states, on `devices[p]`.
    fn ad_exchange(
        states: Vec<FloatTensor<Self>>,
        devices: Vec<Self::Device>,
        routes: Vec<Vec<crate::exchange::Route<Self>>>,
    ) -> Vec<FloatTensor<Self>> {
        crate::exchange::forward::<Self>(states, &devices, &routes)
    }

    /// Starts moving, per group, its pieces (2-D, one width and dtype, on any devices) into one
    /// tensor on the group's device, rows in order; returns those tensors and what their
    /// readers must wait for ([`crate::exchange::TransferWait`]). Not differentiable:
    /// [`crate::exchange::exchange_start`] is. Default: each piece moves by `float_to_device`
    /// and the pieces of a group are concatenated, all before it returns; on CUDA one NCCL
    /// group on streams of its own, received straight into the group's tensor, and the compute
    /// streams wait only when the returned wait runs.
    fn transfer_start(
        groups: Vec<(Vec<FloatTensor<Self>>, Self::Device)>,
    ) -> (Vec<FloatTensor<Self>>, crate::exchange::TransferWait) {
        crate::exchange::move_groups::<Self>(groups)
    }

    /// Differentiable first half of an exchange in two halves (see
    /// [`crate::exchange::exchange_start`]): each part's own rows (its state) and the halo rows
    /// in flight, in the `send` type.
    fn ad_exchange_start(
        states: Vec<FloatTensor<Self>>,
        devices: Vec<Self::Device>,
        routes: Vec<Vec<crate::exchange::Route<Self>>>,
        send: Option<FloatDType>,
    ) -> (Vec<FloatTensor<Self>>, crate::exchange::HaloInFlight<Self>) {
        let (halo, wait) = crate::exchange::forward_start::<Self>(&states, &devices, &routes, send);
        (states, crate::exchange::HaloInFlight { halo, wait, tracked: None })
    }

    /// Differentiable second half (see [`crate::exchange::exchange_finish`]): the halo rows,
    /// readable once the devices waited for them. `after`: tensors computed from the own rows
    /// since the start (they order the backward pass).
    fn ad_exchange_finish(
        halo: crate::exchange::HaloInFlight<Self>,
        after: Vec<FloatTensor<Self>>,
    ) -> Vec<Option<FloatTensor<Self>>> {
        let _ = after;
        let crate::exchange::HaloInFlight { halo, wait, .. } = halo;
        wait.run();
        halo
    }

    /// Differentiable [`SparseGnnBackend::cbsr_spgemm`] (backward: SSpMM).
    fn ad_cbsr_spgemm(g: &GraphPrimitive<Self>, w: Option<FloatTensor<Self>>, c: &CbsrPrim<Self>) -> FloatTensor<Self> {
        Self::cbsr_spgemm(g, w, c)
    }

    /// Differentiable `x @ w + b` over all nodes with the arithmetic of `precision` (see
    /// [`crate::dense::LinearPrecision`]).
    fn ad_linear(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        b: Option<FloatTensor<Self>>,
        precision: crate::dense::LinearPrecision,
    ) -> FloatTensor<Self> {
        crate::dense::linear_forward::<Self>(vec![crate::dense::Term::new(x, w)], b, precision).0
    }

    /// Differentiable `x1 @ w1 + x2 @ w2 + b` over all nodes (see [`crate::ops::linear_pair`]):
    /// one output buffer for both products where the backend accumulates in place.
    fn ad_linear_pair(
        first: crate::dense::Term<Self>,
        second: crate::dense::Term<Self>,
        b: Option<FloatTensor<Self>>,
        precision: crate::dense::LinearPrecision,
    ) -> FloatTensor<Self> {
        crate::dense::linear_forward::<Self>(vec![first, second], b, precision).0
    }

    /// Differentiable `aggr(x) @ w_neigh + x[..n] @ w_root + b` with a mean or sum
    /// aggregation over `g` (see [`crate::ops::aggregate_pair`]).
    #[allow(clippy::too_many_arguments)]
    fn ad_aggregate_pair(
        g: &GraphPrimitive<Self>,
        x: FloatTensor<Self>,
        w_neigh: FloatTensor<Self>,
        w_root: FloatTensor<Self>,
        b: Option<FloatTensor<Self>>,
        reduce: Reduce,
        precision: crate::dense::LinearPrecision,
    ) -> FloatTensor<Self> {
        crate::aggregate::pair_forward::<Self>(g, x, w_neigh, w_root, b, reduce, precision).0
    }

    /// The half copy of `x` (`[n, d]`) and its row scales (`[n, 1]`, dtype of `x`): each row
    /// divided by its largest magnitude (at least 1e-30) and rounded to `half`, so nothing
    /// overflows. Composed tensor ops by default; backends with kernels do it in one pass
    /// (`config`: the plane choice of the kernel).
    fn rows_to_half(
        x: FloatTensor<Self>,
        half: FloatDType,
        config: &KernelConfig,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let _ = config;
        half_rows::<Self>(x, half)
    }

    /// `x_half * scale` (`scale`: `[n, 1]`, one factor per row) in `dtype`: the rounded `x` of
    /// [`SparseGnnBackend::rows_to_half`], or any row scaling (`x_half` may have any float
    /// type; the mean's backward scales its gradient by `1 / deg` this way). Composed tensor
    /// ops by default; backends with kernels do it in one pass.
    fn rows_from_half(x_half: FloatTensor<Self>, scale: FloatTensor<Self>, dtype: FloatDType) -> FloatTensor<Self> {
        unscale_rows::<Self>(x_half, scale, dtype)
    }

    /// `x / max(deg, 1)` per row in `dtype`, the degrees from `row_ptr` (`[n + 1]`, one row of
    /// `x` per row): the chain rule of the mean aggregation. Composed tensor ops by default (the
    /// degrees, their reciprocal taken in f32 and rounded to `dtype`, then
    /// [`SparseGnnBackend::rows_from_half`]); backends with kernels do it in one pass with the
    /// same arithmetic.
    fn inv_degree_rows(row_ptr: IntTensor<Self>, x: FloatTensor<Self>, dtype: FloatDType) -> FloatTensor<Self> {
        crate::aggregate::inv_degree_rows_composed::<Self>(row_ptr, x, dtype)
    }

    /// Weighted softmax cross-entropy of the logit rows `x` (`[n, c]`, see [`crate::loss`]):
    /// per row `weight[i] * (lse[i] - x[i, labels[i]])` and `lse[i]`, the row's log-sum-exp
    /// (both `[n]`, f32; f64 for f64 logits). Composed tensor ops by default; backends with
    /// kernels do it in one pass (`config`: the plane choice of the kernel).
    fn cross_entropy(
        x: FloatTensor<Self>,
        labels: IntTensor<Self>,
        weight: FloatTensor<Self>,
        config: &KernelConfig,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let _ = config;
        crate::loss::composed_forward::<Self>(x, labels, weight)
    }

    /// The logits' gradient of [`SparseGnnBackend::cross_entropy`]'s terms from their gradient
    /// `dterms` (`[n]`): `dterms[i] * weight[i] * (softmax(x[i]) - onehot(labels[i]))`, in the
    /// dtype of `x`. Composed tensor ops by default; backends with kernels write it over `x`
    /// where nothing else holds it.
    fn cross_entropy_grad(
        x: FloatTensor<Self>,
        lse: FloatTensor<Self>,
        labels: IntTensor<Self>,
        weight: FloatTensor<Self>,
        dterms: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        crate::loss::composed_grad::<Self>(x, lse, labels, weight, dterms)
    }

    /// Differentiable [`SparseGnnBackend::cross_entropy`] (its terms).
    fn ad_cross_entropy(
        x: FloatTensor<Self>,
        labels: IntTensor<Self>,
        weight: FloatTensor<Self>,
        config: &KernelConfig,
    ) -> FloatTensor<Self> {
        Self::cross_entropy(x, labels, weight, config).0
    }

    /// ReLU and / or dropout of a 2-D `x` in one pass with a counter-based mask (see
    /// [`crate::dropout`]): the output and the mask words (`[n * ceil(d / 32)]`, one bit per
    /// entry, as i32 bit patterns). `seed`: `[2]` floats in `[0, 1)` (read when
    /// `spec.prob > 0`); `rows`: each row's global id (the row index when `None`). Computed on
    /// the host by default (the CPU backends); backends with kernels override it.
    fn relu_dropout(
        x: FloatTensor<Self>,
        spec: ReluDropout,
        seed: Option<FloatTensor<Self>>,
        rows: Option<IntTensor<Self>>,
    ) -> (FloatTensor<Self>, IntTensor<Self>) {
        crate::dropout::host_relu_dropout::<Self>(x, spec, seed, rows)
    }

    /// The gradient of [`SparseGnnBackend::relu_dropout`]: `dy` where the mask bit is set,
    /// times `1 / (1 - spec.prob)`, 0 elsewhere. On the host by default.
    fn relu_dropout_grad(dy: FloatTensor<Self>, mask: IntTensor<Self>, spec: ReluDropout) -> FloatTensor<Self> {
        crate::dropout::host_relu_dropout_grad::<Self>(dy, mask, spec)
    }

    /// Differentiable [`SparseGnnBackend::relu_dropout`] (backward: the masked scale).
    fn ad_relu_dropout(
        x: FloatTensor<Self>,
        spec: ReluDropout,
        seed: Option<FloatTensor<Self>>,
        rows: Option<IntTensor<Self>>,
    ) -> FloatTensor<Self> {
        Self::relu_dropout(x, spec, seed, rows).0
    }
}

/// A backend whose autodiff inner backend also has the sparse ops (what training needs: the
/// validation model runs on the inner backend).
pub trait SparseGnnAutodiffBackend:
    SparseGnnBackend + burn::tensor::backend::AutodiffBackend<InnerBackend: SparseGnnBackend>
{
}

impl<B, C> SparseGnnAutodiffBackend for burn::backend::Autodiff<B, C>
where
    B: SparseGnnBackend,
    C: burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy,
{
}

/// The half-precision copy of `x` (`[n, d]`) kept by a half-precision linear layer
/// ([`crate::dense::LinearPrecision::Half`]):
/// each row divided by its largest magnitude (`scale`, `[n, 1]` in the dtype of `x`) before the
/// cast, so no value overflows the half type (f16 stops at 65,504) and every row keeps the full
/// half-precision mantissa relative to its largest entry.
pub(crate) fn half_rows<B: Backend>(x: FloatTensor<B>, half: FloatDType) -> (FloatTensor<B>, FloatTensor<B>) {
    let x: Tensor<B, 2> = Tensor::from_primitive(burn::tensor::TensorPrimitive::Float(x));
    let scale = x.clone().abs().max_dim(1).clamp_min(1e-30);
    let x_half = (x / scale.clone()).cast(half);
    (x_half.into_primitive().tensor(), scale.into_primitive().tensor())
}

/// `x_half * scale` in `dtype`: the rounded `x` of [`half_rows`].
pub(crate) fn unscale_rows<B: Backend>(
    x_half: FloatTensor<B>,
    scale: FloatTensor<B>,
    dtype: FloatDType,
) -> FloatTensor<B> {
    let xh: Tensor<B, 2> = Tensor::from_primitive(burn::tensor::TensorPrimitive::Float(x_half));
    let s: Tensor<B, 2> = Tensor::from_primitive(burn::tensor::TensorPrimitive::Float(scale));
    (xh.cast(dtype) * s).into_primitive().tensor()
}

/// `x^T dy` for `[n, a]` and `[n, b]` node matrices as a sum of per-chunk products (`chunk`
/// rows each; one plain product when there are fewer than two chunks or `chunk == 0`).
pub(crate) fn weight_grad<B: Backend>(x: Tensor<B, 2>, dy: Tensor<B, 2>, chunk: usize) -> Tensor<B, 2> {
    let [n, a] = x.dims();
    let b = dy.dims()[1];
    if chunk == 0 || n < 2 * chunk {
        return x.transpose().matmul(dy);
    }
    let chunks = n / chunk;
    let main = chunks * chunk;
    let xs = x.clone().slice([0..main]).reshape([chunks, chunk, a]).swap_dims(1, 2);
    let ds = dy.clone().slice([0..main]).reshape([chunks, chunk, b]);
    let dw = xs.matmul(ds).sum_dim(0).reshape([a, b]);
    if main == n {
        return dw;
    }
    dw + x.slice([main..n]).transpose().matmul(dy.slice([main..n]))
}
