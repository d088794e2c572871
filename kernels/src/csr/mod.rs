//! Host-side borrowed views of the sparse structures every reference takes, and the host
//! structures built from them: the transpose, the hot-column split and the edge groups.

mod csr_ref;
mod edge_groups;
mod hot_columns;
#[cfg(test)]
mod tests;
mod transposition;

pub use csr_ref::CsrRef;
pub use edge_groups::EdgeGroups;
pub use hot_columns::{HotSplit, HotStats};
pub use transposition::{column_counts, row_blocks, split_by_row_blocks, transpose, transpose_in_blocks, Transpose};
