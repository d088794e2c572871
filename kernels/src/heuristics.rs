//! The measured launch heuristics: what `Auto` means in [`crate::config`].
//!
//! Each rule was chosen from timings of the SpMM at three graph scales on an H200 (R-MAT graphs
//! of the sizes of Reddit: 232,965 nodes and 129.4M edges; ogbn-proteins: 132,534 nodes and
//! 79.1M edges; ogbn-products: 2,449,029 nodes and 123.7M edges), recorded by `bench/shapes.sh`
//! in `crates/burn-sparse-gnn/tests/suite/shapes.jsonl`. A test of `burn-sparse-gnn` reads that file and checks
//! that each rule picks the fastest recorded shape (within the run-to-run spread) at every
//! scale, width and dtype recorded there; change a rule only together with new records.

use crate::csr::HotStats;

/// Edges a structure needs before the hot-column split is considered (on smaller graphs the
/// features stay in L2 and the second launch only adds its cost).
pub const HOT_MIN_EDGES: usize = 1 << 22;

/// Smallest share of the edges the hot columns must receive.
pub const HOT_MIN_SHARE: f64 = 0.04;

/// Smallest number of hot edges per row that has any. The second pass visits every such row
/// once per feature tile, so it pays only where rows gather many hot edges: 76 per row on the
/// Reddit-scale graph and 113 on the proteins-scale graph (faster with the split at widths of 64
/// and more), 4.8 on the products-scale graph (slower at every width: 29.1 against 22.6 ms at
/// width 256).
pub const HOT_MIN_PER_ROW: f64 = 32.0;

/// Narrowest feature width at which the split runs: at width 32 it was slower on both graphs
/// where it pays at wider widths.
pub const HOT_MIN_WIDTH: usize = 64;

/// Columns split off by default.
pub const HOT_COLS: usize = 1792;

/// Whether the hot-column split pays for a structure with these statistics.
pub fn hot_split_pays(stats: &HotStats) -> bool {
    stats.edges >= HOT_MIN_EDGES && stats.share() >= HOT_MIN_SHARE && stats.hot_per_row() >= HOT_MIN_PER_ROW
}

/// Average degree below which the SpMM edge groups are narrow.
pub const NARROW_GROUP_DEGREE: f64 = 128.0;

/// Edge-group width of the SpMM family for a structure of `rows` rows and `edges` edges: 64
/// where rows are short on average (products scale, average degree 50: the f16 SpMM at width 64
/// took 3.13 ms with groups of 64 against 3.74 ms with 256; rows of very different lengths in
/// one cube wait for the longest), else 256 (Reddit and proteins scale: within 2 % of the best
/// of 128 / 256 / 512 / 1,024 at every width and dtype).
pub fn group_width(rows: usize, edges: usize) -> usize {
    if rows > 0 && (edges as f64 / rows as f64) < NARROW_GROUP_DEGREE {
        64
    } else {
        256
    }
}

/// Bytes of the gathered input slice the SpMM keeps within L2 per feature tile.
pub const SPMM_L2_BUDGET: usize = 32 << 20;

/// Features per SpMM tile for an input of `n_cols` rows of `width` features of `elem` bytes
/// read in vectors of `vec` elements: the widest power of two whose slice of the input
/// (`n_cols` rows) fits [`SPMM_L2_BUDGET`], at least 128 bytes of a row. Where not even a
/// 128-byte slice fits (products scale), the gathers come from memory rather than L2 and wider
/// tiles read fewer row pointers: 128 bytes for f32 (20.7 ms at width 256 against 27.1
/// untiled), 256 bytes for 16-bit types (12.0 ms against 21.7 with 64-byte tiles). Narrower
/// slices, though nearer to fitting L2, were slower there too (f32 tiles of 8 and 16 features:
/// 77.6 and 35.8 ms, `bench/results/2026-11-24-h200-a56c1b9-spmm-knobs.jsonl`).
pub fn spmm_tile_features(n_cols: usize, width: usize, elem: usize, vec: usize) -> usize {
    let elem = elem.max(1);
    let min_features = (128 / elem).max(1);
    let fit = SPMM_L2_BUDGET / (n_cols.max(1) * elem);
    let tile = if fit >= min_features {
        1usize << (usize::BITS - 1 - fit.leading_zeros())
    } else if elem >= 4 {
        min_features
    } else {
        256 / elem
    };
    tile.max(vec).min(width.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiles_keep_128_byte_rows_and_the_l2_budget() {
        // Reddit scale: 36 f32 features fit the budget -> 32; f16 -> 64
        assert_eq!(spmm_tile_features(232_965, 256, 4, 4), 32);
        assert_eq!(spmm_tile_features(232_965, 256, 2, 8), 64);
        // products scale: nothing fits -> 128-byte f32 rows, 256-byte f16 rows
        assert_eq!(spmm_tile_features(2_449_029, 256, 4, 4), 32);
        assert_eq!(spmm_tile_features(2_449_029, 256, 2, 8), 128);
        // narrow inputs are one tile
        assert_eq!(spmm_tile_features(2_449_029, 64, 2, 8), 64);
        assert_eq!(spmm_tile_features(1000, 7, 4, 1), 7);
    }

    #[test]
    fn groups_are_narrow_on_short_rows() {
        assert_eq!(group_width(2_449_029, 123_718_280), 64);
        assert_eq!(group_width(232_965, 129_362_596), 256);
        assert_eq!(group_width(0, 0), 256);
    }

    #[test]
    fn split_needs_many_hot_edges_per_row() {
        // the statistics of the recorded Reddit- and products-scale graphs
        let reddit = HotStats {
            rows: 232_965,
            edges: 129_362_596,
            hot_cols: 1792,
            hot_edges: 17_396_205,
            rows_with_hot: 229_201,
        };
        assert!(hot_split_pays(&reddit));
        let products = HotStats {
            rows: 2_449_029,
            edges: 123_718_280,
            hot_cols: 1792,
            hot_edges: 6_017_480,
            rows_with_hot: 1_244_797,
        };
        assert!(!hot_split_pays(&products));
        let small = HotStats { edges: 1000, ..reddit };
        assert!(!hot_split_pays(&small));
    }
}
