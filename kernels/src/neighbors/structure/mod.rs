//! The structure a sampled block needs as a graph, built on the device from its CSR without a
//! host round trip: the edge groups of the sparse kernels ([`crate::csr::EdgeGroups`]), the
//! transpose with its edge permutation ([`crate::csr::transpose`]) and, for GAT, a self-loop on
//! every destination. Each output equals the host construction entry for entry:
//!
//! - **edge groups**: per row its group count, split-row slots and whether the finish pass
//!   visits it, three exclusive scans, then one thread per row writes its groups;
//! - **transpose**: a stable least-significant-digit radix sort of the edges by column (8-bit
//!   digits; per tile of 256 edges a digit histogram, a scan over (digit, tile), and a scatter
//!   where each edge's rank among the tile's earlier edges of its digit is counted in shared
//!   memory: no atomics, so the order within a column is the CSR order and the sums over the
//!   transpose are the same every run), the column starts by binary search, and each
//!   transposed edge's row.

mod groups;
mod transpose;

pub use groups::{launch_group_fill, launch_group_scan, GroupArrays, GroupScan};
pub use transpose::{
    launch_copy, launch_edge_rows, launch_sort_by_column, launch_transpose_arrays, radix_passes, radix_tiles,
    SortScratch, RADIX_BINS, RADIX_TILE,
};

use crate::device::cube_count;
use cubecl::prelude::*;

/// Threads per cube of the element-wise kernels.
const THREADS: u32 = 256;

/// Every row `i` (of a block whose first `n_rows` columns are its rows) gets the edge from
/// column `i` after its own edges.
#[cube(launch)]
fn append_self_loops(
    row_ptr: &Array<u32>,
    col_idx: &Array<u32>,
    new_ptr: &mut Array<u32>,
    new_col: &mut Array<u32>,
    n_rows: u32,
) {
    let i = ABSOLUTE_POS;
    if i >= n_rows as usize {
        terminate!();
    }
    let start = row_ptr[i];
    let end = row_ptr[i + 1];
    let shift = i as u32;
    new_ptr[i] = start + shift;
    let mut e = start;
    while e < end {
        let to = (e + shift) as usize;
        new_col[to] = col_idx[e as usize];
        e += 1u32;
    }
    let own = (end + shift) as usize;
    new_col[own] = i as u32;
    if i + 1 == n_rows as usize {
        let last = n_rows as usize;
        new_ptr[last] = end + shift + 1u32;
    }
}

/// The CSR with a self-loop appended to every row (`new_ptr` `[n_rows + 1]`, `new_col`
/// `[nnz + n_rows]`).
pub fn launch_append_self_loops<R: Runtime>(
    client: &ComputeClient<R>,
    row_ptr: TensorBinding<R>,
    col_idx: TensorBinding<R>,
    new_ptr: TensorBinding<R>,
    new_col: TensorBinding<R>,
    n_rows: usize,
) {
    if n_rows > 0 {
        append_self_loops::launch::<R>(
            client,
            threads(client, n_rows),
            CubeDim::new_1d(THREADS),
            row_ptr.into_array_arg(),
            col_idx.into_array_arg(),
            new_ptr.into_array_arg(),
            new_col.into_array_arg(),
            n_rows as u32,
        );
    }
}

fn threads<R: Runtime>(client: &ComputeClient<R>, n: usize) -> CubeCount {
    cube_count(client, n.div_ceil(THREADS as usize))
}
