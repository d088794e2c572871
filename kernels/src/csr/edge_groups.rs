//! Edge groups: the load-balance unit of the sparse kernels ([`EdgeGroups`]).

use super::csr_ref::CsrRef;

/// The edge-group partition used for load balance: every row is split into consecutive groups
/// of at most `width` edges (empty rows have no group). A row with more than one group is a
/// *split row*: its groups write partial results to staging slots that a second pass combines
/// in group order, so results stay deterministic without float atomics. The second pass also
/// visits the empty rows (with no slot) to write their value (0 for every reduction), so no
/// output needs a separate zero fill.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EdgeGroups {
    /// Maximum edges per group.
    pub width: usize,
    /// Edge offsets of the groups, `G + 1` entries (group `g` is `ptr[g]..ptr[g + 1]`).
    pub ptr: Vec<usize>,
    /// Row of each group.
    pub row: Vec<u32>,
    /// Staging slot of each group, or `-1` when its row has a single group.
    pub slot: Vec<i32>,
    /// The rows of the second pass (split rows and empty rows), ascending.
    pub finish_rows: Vec<u32>,
    /// Slot offsets of the finish rows, `finish_rows.len() + 1` entries; the slots of finish
    /// row `s` are `finish_ptr[s]..finish_ptr[s + 1]`, in group order (none for an empty row).
    pub finish_ptr: Vec<usize>,
}

impl EdgeGroups {
    /// Partitions `csr` into groups of at most `width` edges (`width >= 1`).
    pub fn new(csr: &CsrRef<'_>, width: usize) -> Self {
        let width = width.max(1);
        let mut ptr = Vec::with_capacity(csr.nnz() / width + csr.n_rows + 1);
        let mut row = Vec::with_capacity(ptr.capacity());
        let mut slot = Vec::with_capacity(ptr.capacity());
        let mut finish_rows = Vec::new();
        let mut finish_ptr = vec![0usize];
        let mut n_slots = 0usize;
        for i in 0..csr.n_rows {
            let r = csr.row(i);
            let deg = r.len();
            if deg == 0 {
                finish_rows.push(i as u32);
                finish_ptr.push(n_slots);
                continue;
            }
            let n_groups = deg.div_ceil(width);
            for g in 0..n_groups {
                ptr.push(r.start + g * width);
                row.push(i as u32);
                if n_groups > 1 {
                    slot.push(n_slots as i32);
                    n_slots += 1;
                } else {
                    slot.push(-1);
                }
            }
            if n_groups > 1 {
                finish_rows.push(i as u32);
                finish_ptr.push(n_slots);
            }
        }
        ptr.push(csr.nnz());
        Self { width, ptr, row, slot, finish_rows, finish_ptr }
    }

    /// Number of groups.
    pub fn len(&self) -> usize {
        self.row.len()
    }

    /// Whether there is no group (the matrix has no edge).
    pub fn is_empty(&self) -> bool {
        self.row.is_empty()
    }

    /// Number of staging slots (groups that belong to split rows).
    pub fn n_slots(&self) -> usize {
        *self.finish_ptr.last().unwrap_or(&0)
    }
}
