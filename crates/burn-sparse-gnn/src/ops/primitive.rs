//! The primitives the sparse ops pass around (CSR and graph structures, CBSR matrices, SpMM
//! outputs), the kernel parameter types, and conversions between primitives and tensors.
//! A leaf: it imports none of the op families.

use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::ops::IntTensor;
use burn::tensor::Tensor;
use burn::tensor::TensorPrimitive;
use sparse_gnn_kernels::config::KernelConfig;

pub use sparse_gnn_kernels::dropout::ReluDropout;
pub use sparse_gnn_kernels::pool::{PoolLayout, PoolSpec};
pub use sparse_gnn_kernels::sample::{SampleSpec, Sampling};
pub use sparse_gnn_kernels::spmm::Reduce;

/// Edge-group partition on the device (see [`EdgeGroups`]); arrays of length 0 are stored with
/// one padding entry so that every backend can allocate them, the counts are exact.
#[derive(Clone, Debug)]
pub struct GroupsPrim<I> {
    /// Maximum edges per group.
    pub width: usize,
    /// Number of groups.
    pub len: usize,
    /// Number of staging slots (groups of split rows).
    pub n_slots: usize,
    /// Number of rows of the second pass (split rows and empty rows).
    pub n_finish: usize,
    /// `[len + 1]` edge offsets.
    pub ptr: I,
    /// `[len]` row of each group.
    pub row: I,
    /// `[len]` staging slot or -1.
    pub slot: I,
    /// `[n_finish]` rows of the second pass.
    pub finish_rows: I,
    /// `[n_finish + 1]` slot offsets of the finish rows.
    pub finish_ptr: I,
}

/// The hot-column split of a CSR structure on the device (see [`HotSplit`]).
#[derive(Clone, Debug)]
pub struct HotPrim<I> {
    /// Hot columns.
    pub len: usize,
    /// Hot edges.
    pub nnz: usize,
    /// `[n_rows + 1]` hot edge offsets.
    pub hot_ptr: I,
    /// `[nnz]` rank of the column of each hot edge.
    pub hot_rank: I,
    /// `[len]` hot columns.
    pub cols: I,
    /// Cold edges.
    pub cold_nnz: usize,
    /// `[cold_nnz]` columns of the cold edges (padded to 1 when empty).
    pub cold_col: I,
    /// Edge groups of the cold edges.
    pub cold_groups: GroupsPrim<I>,
    /// Whether the split was forced ([`GraphOptions::hot_cols`] `Forced`) rather than chosen by
    /// the heuristic.
    pub forced: bool,
}

impl<I> HotPrim<I> {
    fn map<J>(self, f: &mut impl FnMut(I) -> J) -> HotPrim<J> {
        HotPrim {
            len: self.len,
            nnz: self.nnz,
            hot_ptr: f(self.hot_ptr),
            hot_rank: f(self.hot_rank),
            cols: f(self.cols),
            cold_nnz: self.cold_nnz,
            cold_col: f(self.cold_col),
            cold_groups: self.cold_groups.map(f),
            forced: self.forced,
        }
    }
}

/// One CSR structure on the device (the adjacency or its transpose): i32 tensors whose values
/// are unsigned 32-bit (edge offsets past 2^31 - 1 wrap to negative i32s; read them as u32).
#[derive(Clone, Debug)]
pub struct CsrPrim<I> {
    /// Rows.
    pub n_rows: usize,
    /// Columns.
    pub n_cols: usize,
    /// Edges.
    pub nnz: usize,
    /// Longest row.
    pub max_degree: usize,
    /// `[n_rows + 1]`.
    pub row_ptr: I,
    /// `[nnz]` (padded to 1 when empty).
    pub col_idx: I,
    /// Edge groups of this structure (SpMM family).
    pub groups: GroupsPrim<I>,
    /// Edge groups of the CBSR kernels (SpGEMM / SSpMM prefer smaller groups).
    pub cbsr_groups: GroupsPrim<I>,
    /// Hot-column split of the SpMM sum / mean, if built.
    pub hot: Option<HotPrim<I>>,
    /// Launch configuration of the kernels that read this structure.
    pub kernels: KernelConfig,
}

/// The primitive form of a device graph: adjacency (`csr`), transpose (`csc`, whose `k`-th
/// edge is edge `t_perm[k]` of `csr`). Holds only integer primitives, which are the same type
/// for a backend and its `Autodiff` wrapper.
#[derive(Clone, Debug)]
pub struct GraphPrim<I> {
    /// Adjacency: row = destination.
    pub csr: CsrPrim<I>,
    /// Transpose: row = source.
    pub csc: CsrPrim<I>,
    /// `[nnz]` CSR edge id of every transposed edge.
    pub t_perm: I,
    /// Kernel choices.
    pub policy: KernelPolicy,
}

/// [`GraphPrim`] over a backend's integer primitive.
pub type GraphPrimitive<B> = GraphPrim<IntTensor<B>>;

impl<I> GroupsPrim<I> {
    pub(crate) fn map<J>(self, f: &mut impl FnMut(I) -> J) -> GroupsPrim<J> {
        GroupsPrim {
            width: self.width,
            len: self.len,
            n_slots: self.n_slots,
            n_finish: self.n_finish,
            ptr: f(self.ptr),
            row: f(self.row),
            slot: f(self.slot),
            finish_rows: f(self.finish_rows),
            finish_ptr: f(self.finish_ptr),
        }
    }
}

impl<I> CsrPrim<I> {
    /// Applies `f` to every integer array (e.g. to move between backends).
    pub fn map<J>(self, f: &mut impl FnMut(I) -> J) -> CsrPrim<J> {
        CsrPrim {
            n_rows: self.n_rows,
            n_cols: self.n_cols,
            nnz: self.nnz,
            max_degree: self.max_degree,
            row_ptr: f(self.row_ptr),
            col_idx: f(self.col_idx),
            groups: self.groups.map(f),
            cbsr_groups: self.cbsr_groups.map(f),
            hot: self.hot.map(|h| h.map(f)),
            kernels: self.kernels,
        }
    }
}

impl<I> GraphPrim<I> {
    /// Applies `f` to every integer array.
    pub fn map<J>(self, mut f: impl FnMut(I) -> J) -> GraphPrim<J> {
        GraphPrim { csr: self.csr.map(&mut f), csc: self.csc.map(&mut f), t_perm: f(self.t_perm), policy: self.policy }
    }
}

/// How the SSpMM backward of the CBSR SpGEMM accumulates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SspmmStrategy {
    /// Gather over the transpose: deterministic, no atomics.
    #[default]
    Gather,
    /// MaxK-GNN's outer product with atomic accumulation into the CBSR values: not
    /// deterministic (float addition order varies). Falls back to `Gather` on backends
    /// without float atomics.
    OuterAtomic,
}

/// Kernel choices that trade determinism for speed; the defaults are deterministic.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct KernelPolicy {
    /// SSpMM accumulation.
    pub sspmm: SspmmStrategy,
    /// Combine the split rows of the CBSR SpGEMM with float atomics instead of a staging
    /// buffer and a second pass (not deterministic).
    pub spgemm_atomic: bool,
}

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

/// A 2-D float primitive as a tensor.
pub(crate) fn t2<B: burn::tensor::backend::Backend>(t: FloatTensor<B>) -> Tensor<B, 2> {
    Tensor::from_primitive(TensorPrimitive::Float(t))
}

/// A 2-D float tensor as a primitive.
pub(crate) fn prim<B: burn::tensor::backend::Backend>(t: Tensor<B, 2>) -> FloatTensor<B> {
    t.into_primitive().tensor()
}

/// Rows `start..start + len` of a 2-D tensor (a view where the backend allows it).
pub(crate) fn row_range<B: Backend>(t: FloatTensor<B>, start: usize, len: usize) -> FloatTensor<B> {
    prim(t2::<B>(t).slice([start..start + len]))
}
