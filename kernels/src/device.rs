//! Host-side plumbing shared by every kernel launch: device bindings of a CSR structure, the
//! choice of vector width and cube shapes, and small allocation helpers.

use cubecl::prelude::*;
use cubecl::server::CubeCountSelection;
use cubecl::zspace::{Shape, Strides};

/// A CSR structure (adjacency or transpose) and its edge groups on the device, all i32.
#[derive(Clone)]
pub struct CsrDev<R: Runtime> {
    /// Rows.
    pub n_rows: usize,
    /// Columns.
    pub n_cols: usize,
    /// Edges.
    pub nnz: usize,
    /// Longest row.
    pub max_degree: usize,
    /// `[n_rows + 1]`.
    pub row_ptr: TensorBinding<R>,
    /// `[nnz]`.
    pub col_idx: TensorBinding<R>,
    /// Number of groups.
    pub n_groups: usize,
    /// Number of staging slots.
    pub n_slots: usize,
    /// Number of rows of the second pass.
    pub n_finish: usize,
    /// Maximum edges per group.
    pub group_width: usize,
    /// `[n_groups + 1]` edge offsets.
    pub group_ptr: TensorBinding<R>,
    /// `[n_groups]` row of each group.
    pub group_row: TensorBinding<R>,
    /// `[n_groups]` staging slot or -1.
    pub group_slot: TensorBinding<R>,
    /// `[n_finish]` rows of the second pass.
    pub finish_rows: TensorBinding<R>,
    /// `[n_finish + 1]` slot offsets.
    pub finish_ptr: TensorBinding<R>,
    /// The hot-column split of the SpMM sum / mean (its kernels: `spmm::hot`), if any.
    pub hot: Option<HotDev<R>>,
    /// Launch configuration of the kernels that read this structure.
    pub config: crate::config::KernelConfig,
}

/// Device bindings of a [`crate::csr::HotSplit`]: the hot edges, and the cold edges as a
/// structure of their own for the main kernel.
#[derive(Clone)]
pub struct HotDev<R: Runtime> {
    /// Hot columns `H`.
    pub len: usize,
    /// Hot edges.
    pub nnz: usize,
    /// `[n_rows + 1]` hot edge offsets.
    pub hot_ptr: TensorBinding<R>,
    /// `[nnz]` rank of the column of each hot edge.
    pub hot_rank: TensorBinding<R>,
    /// `[H]` hot columns.
    pub cols: TensorBinding<R>,
    /// The cold edges (`row_ptr` is the full structure's, for the degrees of the mean; the
    /// column indices and edge groups are those of the cold edges).
    pub cold: Box<CsrDev<R>>,
    /// Whether the split was forced (it then runs at any width; see
    /// [`crate::config::HotConfig::min_width`]).
    pub forced: bool,
}

/// A 2-D tensor on the device (row stride may be pitched).
pub fn matrix<R: Runtime>(
    handle: cubecl::server::Handle,
    rows: usize,
    cols: usize,
    row_stride: usize,
) -> TensorBinding<R> {
    TensorBinding {
        handle: handle.binding(),
        strides: Strides::new(&[row_stride, 1]),
        shape: Shape::new([rows, cols]),
        runtime: core::marker::PhantomData,
    }
}

/// Smallest buffer handed to a kernel: one 16-byte vector, so that placeholder and empty
/// buffers stay valid arguments whatever the vector width.
const MIN_BYTES: usize = 16;

/// A contiguous 1-D buffer of `len` elements of `elem_size` bytes (at least one element and
/// 16 bytes are allocated so that empty buffers stay valid kernel arguments).
pub fn alloc_array<R: Runtime>(client: &ComputeClient<R>, len: usize, elem_size: usize) -> TensorBinding<R> {
    let handle = client.empty((len.max(1) * elem_size).max(MIN_BYTES));
    TensorBinding {
        handle: handle.binding(),
        strides: Strides::new(&[1]),
        shape: Shape::new([len.max(1)]),
        runtime: core::marker::PhantomData,
    }
}

/// A contiguous `[rows, cols]` buffer (at least one element).
pub fn alloc_matrix<R: Runtime>(
    client: &ComputeClient<R>,
    rows: usize,
    cols: usize,
    elem_size: usize,
) -> TensorBinding<R> {
    let handle = client.empty(((rows * cols).max(1) * elem_size).max(MIN_BYTES));
    TensorBinding {
        handle: handle.binding(),
        strides: Strides::new(&[cols.max(1), 1]),
        shape: Shape::new([rows.max(1), cols.max(1)]),
        runtime: core::marker::PhantomData,
    }
}

/// Largest vector width (from the device's optimal I/O widths) that divides `unit` (e.g. the
/// width of one head) and every row stride of `mats`, and whose last stride is 1.
pub fn vector_width<R: Runtime>(
    client: &ComputeClient<R>,
    elem_size: usize,
    unit: usize,
    mats: &[&TensorBinding<R>],
) -> usize {
    client
        .io_optimized_vector_sizes(elem_size)
        .filter(|&v| {
            v >= 1
                && unit % v == 0
                && mats.iter().all(|m| {
                    let s = &m.strides;
                    s[s.len() - 1] == 1 && (s.len() < 2 || s[0] % v == 0)
                })
        })
        .max()
        .unwrap_or(1)
}

/// Smallest power of two `>= n`, clamped to `1..=max`.
pub fn lanes_for(n: usize, max: usize) -> u32 {
    n.max(1).next_power_of_two().min(max.max(1)) as u32
}

/// A cube count covering `num_cubes` cubes within the device's per-dimension limits. Kernels
/// read `CUBE_POS` (linear) and guard the extra cubes.
pub fn cube_count<R: Runtime>(client: &ComputeClient<R>, num_cubes: usize) -> CubeCount {
    if num_cubes == 0 {
        return CubeCount::Static(0, 0, 0);
    }
    CubeCountSelection::new(client, num_cubes as u32).cube_count()
}

/// The launch grid of one thread per entry for `len` entries (cubes of 256 threads; `None` for
/// none).
pub fn per_entry<R: Runtime>(client: &ComputeClient<R>, len: usize) -> Option<(CubeCount, CubeDim)> {
    let threads = 256u32;
    (len > 0).then(|| (cube_count(client, len.div_ceil(threads as usize)), CubeDim::new_1d(threads)))
}

/// Whether the kernels may use plane (warp) operations: the device has them and `planes` does
/// not ask for the shared-memory fallbacks.
pub fn has_plane_ops<R: Runtime>(client: &ComputeClient<R>, planes: crate::config::PlaneUse) -> bool {
    planes == crate::config::PlaneUse::Auto && client.properties().features.plane.contains(cubecl::features::Plane::Ops)
}

/// Plane (warp) size of the device.
pub fn plane_size<R: Runtime>(client: &ComputeClient<R>) -> u32 {
    client.properties().hardware.plane_size_max
}
