//! Options of a device graph ([`GraphOptions`]), the hot-column split they select and what a
//! device graph resolved them to ([`GraphShape`]).

use super::csr::Csr;
use crate::ops::primitive::KernelPolicy;
use sparse_gnn_kernels::config::{Choice, KernelConfig};
use sparse_gnn_kernels::csr::{CsrRef, HotSplit, HotStats};
use sparse_gnn_kernels::heuristics;

/// Options of a device graph: its kernels' launch configuration and the structures built for
/// them. `Default` is the measured heuristics of [`sparse_gnn_kernels::heuristics`] and reads
/// no environment; benchmarks and tests force values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GraphOptions {
    /// Maximum edges per edge group (load-balance unit of the SpMM family and the SDDMM).
    /// Auto: [`heuristics::group_width`] (64 on graphs of average degree below 128, else 256).
    pub group_width: Choice<usize>,
    /// Maximum edges per edge group of the CBSR kernels (SpGEMM / SSpMM).
    pub cbsr_group_width: usize,
    /// Kernel choices that trade determinism for speed.
    pub policy: KernelPolicy,
    /// Most-read columns split off for the two-pass SpMM sum / mean (see
    /// [`sparse_gnn_kernels::spmm::hot`]). Auto: [`heuristics::HOT_COLS`] columns where
    /// [`heuristics::hot_split_pays`] (large graphs whose rows gather many edges of those
    /// columns), else none. `Forced(n)`: `n` columns whenever any edge lands on them (0: never).
    /// The split stores the cold edges' columns and groups a second time (about 4 bytes per edge,
    /// for the adjacency and its transpose) and serves only unweighted f32 sums and means of
    /// widths that are multiples of 4 (elsewhere the single pass was measured faster), so a
    /// graph aggregated in half precision should force 0.
    pub hot_cols: Choice<usize>,
    /// Maximum edges per edge group of the cold edges of a split structure (only the SpMM sum
    /// / mean reads them, so they need not share the groups of the other kernels).
    pub cold_group_width: usize,
    /// Launch configuration of every kernel that reads the graph.
    pub kernels: KernelConfig,
    /// Index arrays longer than this many entries (the columns, the transpose's edge
    /// permutation, the split's edge lists) are written to the device this many entries at a
    /// time, so that the host holds no second copy of a whole array while it goes up (see
    /// [`DEFAULT_UPLOAD_PIECE`]). The device graph is the same for every value.
    pub upload_piece: usize,
}

/// Default [`GraphOptions::cold_group_width`].
pub const DEFAULT_COLD_GROUP_WIDTH: usize = 1024;

/// Default [`GraphOptions::upload_piece`]: 2^26 entries, 256 MiB.
pub const DEFAULT_UPLOAD_PIECE: usize = 1 << 26;

/// Default [`GraphOptions::cbsr_group_width`].
pub const DEFAULT_CBSR_GROUP_WIDTH: usize = 256;

impl Default for GraphOptions {
    fn default() -> Self {
        Self {
            group_width: Choice::Auto,
            cbsr_group_width: DEFAULT_CBSR_GROUP_WIDTH,
            policy: KernelPolicy::default(),
            hot_cols: Choice::Auto,
            cold_group_width: DEFAULT_COLD_GROUP_WIDTH,
            kernels: KernelConfig::default(),
            upload_piece: DEFAULT_UPLOAD_PIECE,
        }
    }
}

impl GraphOptions {
    /// These options with edge groups of `width` edges for every kernel family.
    pub fn with_group_width(self, width: usize) -> Self {
        Self { group_width: Choice::Forced(width), cbsr_group_width: width, ..self }
    }
}

/// What a device graph resolved its options to (for benchmark records and logs).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct GraphShape {
    /// Edge-group width of the SpMM family.
    pub group_width: usize,
    /// Edge-group width of the CBSR kernels.
    pub cbsr_group_width: usize,
    /// Hot columns split off the adjacency (0: no split).
    pub hot_cols: usize,
    /// Hot columns split off the transpose (0: no split).
    pub hot_cols_transpose: usize,
    /// Edge-group width of the cold edges of a split structure.
    pub cold_group_width: usize,
}

/// The hot-column split `opts` asks for on `csr`: the heuristic's (which looks at the graph's
/// column statistics) or the forced column count.
pub(super) fn hot_split(csr: &CsrRef<'_>, opts: &GraphOptions) -> Option<(HotSplit, bool)> {
    match opts.hot_cols {
        Choice::Forced(0) => None,
        Choice::Forced(cols) => HotSplit::new(csr, cols, 0.0, 0).map(|s| (s, true)),
        Choice::Auto => {
            if !auto_split_pays(csr) {
                return None;
            }
            HotSplit::new(csr, heuristics::HOT_COLS, 0.0, 0).map(|s| (s, false))
        }
    }
}

/// The heuristic's decision for a structure: large enough, and its most-read columns take
/// enough of the traffic.
fn auto_split_pays(csr: &CsrRef<'_>) -> bool {
    csr.nnz() >= heuristics::HOT_MIN_EDGES && heuristics::hot_split_pays(&HotStats::new(csr, heuristics::HOT_COLS))
}

impl GraphOptions {
    /// Whether [`Graph::new`](super::Graph::new) with these options splits off the hot columns
    /// of `adj` (the heuristic's decision, without building the split): memory estimates count
    /// the split's second copy of the cold edges.
    pub fn splits_hot_columns(&self, adj: &Csr) -> bool {
        match self.hot_cols {
            Choice::Forced(cols) => cols > 0,
            Choice::Auto => auto_split_pays(&adj.as_ref()),
        }
    }

    /// The most staging slots one sparse kernel over `adj` or its transpose allocates with
    /// these options: one per edge group of a row whose edges span several groups, at the SpMM
    /// and the CBSR group widths (the hot-column split's cold edges are counted at the SpMM
    /// width too, an upper bound). While such a kernel runs, each slot holds an f32 row of the
    /// aggregated width: memory estimates count them.
    pub fn staging_slots(&self, adj: &Csr) -> usize {
        let slots = |degrees: &[usize], width: usize| -> usize {
            degrees.iter().filter(|&&d| d > width).map(|&d| d.div_ceil(width)).sum()
        };
        let nnz = adj.nnz();
        [(adj.row_degrees(), adj.n_rows()), (adj.col_degrees(), adj.n_cols())]
            .iter()
            .flat_map(|(degrees, rows)| {
                let spmm = self.group_width.resolve(|| heuristics::group_width(*rows, nnz)).max(1);
                [spmm, self.cbsr_group_width.max(1)].map(|w| slots(degrees, w))
            })
            .max()
            .unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::{random_csr, RandomGraphSpec};
    use sparse_gnn_kernels::csr::{transpose, EdgeGroups};

    /// `staging_slots` counts what the kernels' edge groups hold: the most slots over the
    /// adjacency and its transpose at the SpMM and CBSR group widths.
    #[test]
    fn staging_slots_match_the_edge_groups() {
        for (n_rows, n_cols, avg_degree, hub_degree) in [(301, 301, 6, 10_000), (97, 1_203, 300, 2_500), (50, 50, 3, 0)]
        {
            let spec = RandomGraphSpec {
                n_rows,
                n_cols,
                avg_degree,
                hub_degree,
                self_loops: n_rows == n_cols,
                ..Default::default()
            };
            let adj = random_csr(&spec);
            let r = adj.as_ref();
            let t = transpose(&r);
            let tr = t.as_csr(&r);
            for opts in [GraphOptions::default(), GraphOptions::default().with_group_width(7)] {
                let mut want = 0;
                for csr in [&r, &tr] {
                    let spmm = opts.group_width.resolve(|| heuristics::group_width(csr.n_rows, csr.nnz()));
                    for width in [spmm, opts.cbsr_group_width] {
                        want = want.max(EdgeGroups::new(csr, width).n_slots());
                    }
                }
                assert_eq!(opts.staging_slots(&adj), want, "{n_rows}x{n_cols}, {:?}", opts.group_width);
                // a hub row always spans several groups of these widths
                assert!(hub_degree == 0 || want > 0);
            }
        }
    }
}
