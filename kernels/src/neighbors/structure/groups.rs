//! The edge groups of a block's CSR or transpose ([`crate::csr::EdgeGroups`]): per row its
//! group count, split-row slots and finish flag, three exclusive scans, then one thread per row
//! writes its groups.

use super::{threads, THREADS};
use crate::neighbors::block::launch_exclusive_scan;
use cubecl::prelude::*;

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
