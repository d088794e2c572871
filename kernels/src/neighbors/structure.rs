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

use super::block::launch_exclusive_scan;
use crate::device::cube_count;
use cubecl::prelude::*;

/// Threads per cube of the element-wise kernels.
const THREADS: u32 = 256;
/// Edges per radix tile (one thread each).
pub const RADIX_TILE: usize = 256;
/// Digit values per radix pass.
pub const RADIX_BINS: usize = 256;
const RADIX_BITS: u32 = 8;

/// Group count, split-row slot count and finish flag of every row.
#[cube(launch)]
fn group_counts(
    row_ptr: &Array<u32>,
    n_groups: &mut Array<u32>,
    n_slots: &mut Array<u32>,
    finish: &mut Array<u32>,
    n_rows: u32,
    width: u32,
) {
    let i = ABSOLUTE_POS;
    if i >= n_rows as usize {
        terminate!();
    }
    let deg = row_ptr[i + 1] - row_ptr[i];
    let g = (deg + width - 1) / width;
    n_groups[i] = g;
    let mut s = 0u32;
    let mut f = 0u32;
    if g > 1u32 {
        s = g;
        f = 1u32;
    }
    if deg == 0u32 {
        f = 1u32;
    }
    n_slots[i] = s;
    finish[i] = f;
}

/// One thread per row writes its groups (start edge, row, slot) and, for a finish row, its
/// entry of the finish pass; row 0 also writes the closing offsets.
#[cube(launch)]
#[allow(clippy::too_many_arguments)]
fn group_fill(
    row_ptr: &Array<u32>,
    group_off: &Array<u32>,
    slot_off: &Array<u32>,
    finish_off: &Array<u32>,
    ptr: &mut Array<u32>,
    row: &mut Array<u32>,
    slot: &mut Array<u32>,
    finish_rows: &mut Array<u32>,
    finish_ptr: &mut Array<u32>,
    n_rows: u32,
    width: u32,
    total_groups: u32,
) {
    let i = ABSOLUTE_POS;
    if i >= n_rows as usize {
        terminate!();
    }
    let start = row_ptr[i];
    let deg = row_ptr[i + 1] - start;
    let g = (deg + width - 1) / width;
    let go = group_off[i];
    let so = slot_off[i];
    let mut k = 0u32;
    while k < g {
        let at = (go + k) as usize;
        ptr[at] = start + k * width;
        row[at] = i as u32;
        let mut s = 4_294_967_295u32;
        if g > 1u32 {
            s = so + k;
        }
        slot[at] = s;
        k += 1u32;
    }
    if deg == 0u32 || g > 1u32 {
        let f = finish_off[i] as usize;
        finish_rows[f] = i as u32;
        let mut end = so;
        if g > 1u32 {
            end = so + g;
        }
        let next = f + 1;
        finish_ptr[next] = end;
    }
    if i == 0 {
        finish_ptr[0] = 0u32;
        let last = total_groups as usize;
        ptr[last] = row_ptr[n_rows as usize];
    }
}

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

fn threads<R: Runtime>(client: &ComputeClient<R>, n: usize) -> CubeCount {
    cube_count(client, n.div_ceil(THREADS as usize))
}

/// The buffers of [`launch_group_scan`]: per row its group count, split-row slot count and
/// finish flag, their exclusive scans, and the three totals.
pub struct GroupScan<R: Runtime> {
    /// `[n_rows]` each: the counts.
    pub groups: TensorBinding<R>,
    pub slots: TensorBinding<R>,
    pub finish: TensorBinding<R>,
    /// `[n_rows]` each: their exclusive scans.
    pub groups_off: TensorBinding<R>,
    pub slots_off: TensorBinding<R>,
    pub finish_off: TensorBinding<R>,
    /// Scan scratch, `[max(1, n_rows.div_ceil(SCAN_BLOCK))]`.
    pub sums: TensorBinding<R>,
    /// `[1]` each: the totals (groups, slots, finish rows).
    pub totals: [TensorBinding<R>; 3],
}

/// Counts and scans the edge groups of the CSR `row_ptr` (`n_rows` rows).
pub fn launch_group_scan<R: Runtime>(
    client: &ComputeClient<R>,
    row_ptr: TensorBinding<R>,
    s: &GroupScan<R>,
    n_rows: usize,
    width: usize,
) {
    if n_rows > 0 {
        group_counts::launch::<R>(
            client,
            threads(client, n_rows),
            CubeDim::new_1d(THREADS),
            row_ptr.into_array_arg(),
            s.groups.clone().into_array_arg(),
            s.slots.clone().into_array_arg(),
            s.finish.clone().into_array_arg(),
            n_rows as u32,
            width.max(1) as u32,
        );
    }
    let scans = [(&s.groups, &s.groups_off), (&s.slots, &s.slots_off), (&s.finish, &s.finish_off)];
    for (k, (input, out)) in scans.into_iter().enumerate() {
        launch_exclusive_scan::<R>(client, input.clone(), out.clone(), s.sums.clone(), s.totals[k].clone(), n_rows);
    }
}

/// The arrays of an edge-group partition (sizes from [`launch_group_scan`]'s totals `G`, `F`):
/// `ptr` `[G + 1]`, `row` and `slot` `[G]`, `finish_rows` `[F]`, `finish_ptr` `[F + 1]`.
pub struct GroupArrays<R: Runtime> {
    pub ptr: TensorBinding<R>,
    pub row: TensorBinding<R>,
    pub slot: TensorBinding<R>,
    pub finish_rows: TensorBinding<R>,
    pub finish_ptr: TensorBinding<R>,
}

/// Writes the groups of width `width` of the CSR `row_ptr` (at least one row) from the scans
/// of [`launch_group_scan`]: `offsets` its `groups_off`, `slots_off` and `finish_off`;
/// `total_groups` its first total.
pub fn launch_group_fill<R: Runtime>(
    client: &ComputeClient<R>,
    row_ptr: TensorBinding<R>,
    offsets: [TensorBinding<R>; 3],
    out: &GroupArrays<R>,
    n_rows: usize,
    width: usize,
    total_groups: usize,
) {
    if n_rows == 0 {
        return;
    }
    let [groups_off, slots_off, finish_off] = offsets;
    group_fill::launch::<R>(
        client,
        threads(client, n_rows),
        CubeDim::new_1d(THREADS),
        row_ptr.into_array_arg(),
        groups_off.into_array_arg(),
        slots_off.into_array_arg(),
        finish_off.into_array_arg(),
        out.ptr.clone().into_array_arg(),
        out.row.clone().into_array_arg(),
        out.slot.clone().into_array_arg(),
        out.finish_rows.clone().into_array_arg(),
        out.finish_ptr.clone().into_array_arg(),
        n_rows as u32,
        width.max(1) as u32,
        total_groups as u32,
    );
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
