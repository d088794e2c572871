//! A block's transpose: a stable least-significant-digit radix sort of the edges by column,
//! the column starts by binary search, and the row of each transposed edge.

use super::{threads, THREADS};
use crate::device::cube_count;
use crate::neighbors::block::launch_exclusive_scan;
use cubecl::prelude::*;

/// Edges per radix tile (one thread each).
pub const RADIX_TILE: usize = 256;
/// Digit values per radix pass.
pub const RADIX_BINS: usize = 256;
const RADIX_BITS: u32 = 8;

/// `rows[e]` = the row of every edge `e`.
#[cube(launch)]
fn edge_rows(row_ptr: &Array<u32>, rows: &mut Array<u32>, n_rows: u32) {
    let i = ABSOLUTE_POS;
    if i >= n_rows as usize {
        terminate!();
    }
    let mut e = row_ptr[i];
    let end = row_ptr[i + 1];
    while e < end {
        rows[e as usize] = i as u32;
        e += 1u32;
    }
}

/// `out[e] = input[e]`.
#[cube(launch)]
fn copy_u32(input: &Array<u32>, out: &mut Array<u32>, len: u32) {
    let e = ABSOLUTE_POS;
    if e >= len as usize {
        terminate!();
    }
    out[e] = input[e];
}

/// A copy of `len` entries of `input` into `out`.
pub fn launch_copy<R: Runtime>(client: &ComputeClient<R>, input: TensorBinding<R>, out: TensorBinding<R>, len: usize) {
    if len > 0 {
        copy_u32::launch::<R>(
            client,
            threads(client, len),
            CubeDim::new_1d(THREADS),
            input.into_array_arg(),
            out.into_array_arg(),
            len as u32,
        );
    }
}

/// `vals[e] = e`.
#[cube(launch)]
fn iota(vals: &mut Array<u32>, len: u32) {
    let e = ABSOLUTE_POS;
    if e >= len as usize {
        terminate!();
    }
    vals[e] = e as u32;
}

/// Each thread's digit of its edge `i` of the tile (256, past the end: no digit), all of the
/// tile's digits in `digits` on return.
#[cube]
fn tile_digits(keys: &Array<u32>, digits: &mut SharedMemory<u32>, i: usize, len: u32, shift: u32) -> u32 {
    let mut d = 256u32;
    if i < len as usize {
        d = (keys[i] >> shift) & (RADIX_BINS as u32 - 1u32);
    }
    digits[UNIT_POS as usize] = d;
    sync_cube();
    d
}

/// Per tile, the count of each digit: `hist[digit * n_tiles + tile]`.
#[cube(launch)]
fn radix_histogram(keys: &Array<u32>, hist: &mut Array<u32>, len: u32, shift: u32, n_tiles: u32) {
    let tile = CUBE_POS;
    if tile >= n_tiles as usize {
        terminate!();
    }
    let mut digits = SharedMemory::<u32>::new(RADIX_TILE);
    let t = UNIT_POS as usize;
    let i = tile * RADIX_TILE + t;
    tile_digits(keys, &mut digits, i, len, shift);
    let mut c = 0u32;
    let mut j = 0usize;
    while j < RADIX_TILE {
        if digits[j] == t as u32 {
            c += 1u32;
        }
        j += 1;
    }
    let at = t * n_tiles as usize + tile;
    hist[at] = c;
}

/// Every edge to its place after one digit pass: the scanned offset of its (digit, tile) plus
/// its rank among the tile's earlier edges of that digit.
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
fn radix_scatter(
    keys: &Array<u32>,
    vals: &Array<u32>,
    offsets: &Array<u32>,
    keys_out: &mut Array<u32>,
    vals_out: &mut Array<u32>,
    len: u32,
    shift: u32,
    n_tiles: u32,
) {
    let tile = CUBE_POS;
    if tile >= n_tiles as usize {
        terminate!();
    }
    let mut digits = SharedMemory::<u32>::new(RADIX_TILE);
    let t = UNIT_POS as usize;
    let i = tile * RADIX_TILE + t;
    let d = tile_digits(keys, &mut digits, i, len, shift);
    if i < len as usize {
        let mut rank = 0u32;
        let mut j = 0usize;
        while j < t {
            if digits[j] == d {
                rank += 1u32;
            }
            j += 1;
        }
        let at = (offsets[d as usize * n_tiles as usize + tile] + rank) as usize;
        keys_out[at] = keys[i];
        vals_out[at] = vals[i];
    }
}

/// `col_ptr[c]`: the first position of column `c` among the sorted keys (`c` in `0..=n_cols`).
#[cube(launch)]
fn column_starts(sorted: &Array<u32>, col_ptr: &mut Array<u32>, nnz: u32, n_cols: u32) {
    let c = ABSOLUTE_POS;
    if c > n_cols as usize {
        terminate!();
    }
    let mut lo = 0u32;
    let mut hi = nnz;
    while lo < hi {
        let mid = (lo + hi) / 2u32;
        if sorted[mid as usize] < c as u32 {
            lo = mid + 1u32;
        } else {
            hi = mid;
        }
    }
    col_ptr[c] = lo;
}

/// `out[k] = rows[perm[k]]`: the row of each transposed edge.
#[cube(launch)]
fn gather_rows(perm: &Array<u32>, rows: &Array<u32>, out: &mut Array<u32>, nnz: u32) {
    let k = ABSOLUTE_POS;
    if k >= nnz as usize {
        terminate!();
    }
    let e = perm[k] as usize;
    out[k] = rows[e];
}

/// `rows[e]`: the row of each edge of the CSR `row_ptr`.
pub fn launch_edge_rows<R: Runtime>(
    client: &ComputeClient<R>,
    row_ptr: TensorBinding<R>,
    rows: TensorBinding<R>,
    n_rows: usize,
) {
    if n_rows > 0 {
        edge_rows::launch::<R>(
            client,
            threads(client, n_rows),
            CubeDim::new_1d(THREADS),
            row_ptr.into_array_arg(),
            rows.into_array_arg(),
            n_rows as u32,
        );
    }
}

/// The scratch of [`launch_sort_by_column`].
pub struct SortScratch<R: Runtime> {
    /// `[nnz]` each: the second key and value buffers.
    pub keys: TensorBinding<R>,
    pub vals: TensorBinding<R>,
    /// `[RADIX_BINS * tiles]` each: the histogram and its scan.
    pub hist: TensorBinding<R>,
    pub offsets: TensorBinding<R>,
    /// `[max(1, (RADIX_BINS * tiles).div_ceil(SCAN_BLOCK))]` and `[1]`.
    pub sums: TensorBinding<R>,
    pub total: TensorBinding<R>,
}

/// Radix tiles of `nnz` edges.
pub fn radix_tiles(nnz: usize) -> usize {
    nnz.div_ceil(RADIX_TILE).max(1)
}

/// Digit passes for keys below `n_cols`.
pub fn radix_passes(n_cols: usize) -> usize {
    let bits = usize::BITS - n_cols.saturating_sub(1).leading_zeros();
    (bits as usize).div_ceil(RADIX_BITS as usize).max(1)
}

/// Sorts the edges of a CSR by column, stably: `keys` (a copy of the columns, `[nnz]`) and
/// `vals` (`[nnz]`, set to the edge ids here) end sorted, in place after an even number of
/// passes and in `scratch.keys` / `scratch.vals` after an odd one; returns whether the result
/// is in the scratch buffers.
pub fn launch_sort_by_column<R: Runtime>(
    client: &ComputeClient<R>,
    keys: TensorBinding<R>,
    vals: TensorBinding<R>,
    scratch: &SortScratch<R>,
    nnz: usize,
    n_cols: usize,
) -> bool {
    if nnz == 0 {
        return false;
    }
    iota::launch::<R>(
        client,
        threads(client, nnz),
        CubeDim::new_1d(THREADS),
        vals.clone().into_array_arg(),
        nnz as u32,
    );
    let tiles = radix_tiles(nnz);
    let mut from = (keys, vals);
    let mut to = (scratch.keys.clone(), scratch.vals.clone());
    let passes = radix_passes(n_cols);
    for p in 0..passes {
        let shift = (p as u32) * RADIX_BITS;
        radix_histogram::launch::<R>(
            client,
            cube_count(client, tiles),
            CubeDim::new_1d(RADIX_TILE as u32),
            from.0.clone().into_array_arg(),
            scratch.hist.clone().into_array_arg(),
            nnz as u32,
            shift,
            tiles as u32,
        );
        launch_exclusive_scan::<R>(
            client,
            scratch.hist.clone(),
            scratch.offsets.clone(),
            scratch.sums.clone(),
            scratch.total.clone(),
            RADIX_BINS * tiles,
        );
        radix_scatter::launch::<R>(
            client,
            cube_count(client, tiles),
            CubeDim::new_1d(RADIX_TILE as u32),
            from.0.clone().into_array_arg(),
            from.1.clone().into_array_arg(),
            scratch.offsets.clone().into_array_arg(),
            to.0.clone().into_array_arg(),
            to.1.clone().into_array_arg(),
            nnz as u32,
            shift,
            tiles as u32,
        );
        std::mem::swap(&mut from, &mut to);
    }
    passes % 2 == 1
}

/// The transpose's row pointer from the sorted columns (`col_ptr`, `[n_cols + 1]`) and its
/// columns, the rows of the sorted edges (`perm`: their CSR edge ids; `rows`: the CSR's edge
/// rows).
#[allow(clippy::too_many_arguments)]
pub fn launch_transpose_arrays<R: Runtime>(
    client: &ComputeClient<R>,
    sorted_keys: TensorBinding<R>,
    perm: TensorBinding<R>,
    rows: TensorBinding<R>,
    col_ptr: TensorBinding<R>,
    t_cols: TensorBinding<R>,
    nnz: usize,
    n_cols: usize,
) {
    column_starts::launch::<R>(
        client,
        threads(client, n_cols + 1),
        CubeDim::new_1d(THREADS),
        sorted_keys.into_array_arg(),
        col_ptr.into_array_arg(),
        nnz as u32,
        n_cols as u32,
    );
    if nnz > 0 {
        gather_rows::launch::<R>(
            client,
            threads(client, nnz),
            CubeDim::new_1d(THREADS),
            perm.into_array_arg(),
            rows.into_array_arg(),
            t_cols.into_array_arg(),
            nnz as u32,
        );
    }
}
