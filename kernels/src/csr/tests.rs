use super::transposition::PARALLEL_EDGES;

use super::*;

fn small() -> (Vec<usize>, Vec<u32>) {
    // row 0: 1, 2 ; row 1: empty ; row 2: 0, 1, 2, 2
    (vec![0, 2, 2, 6], vec![1, 2, 0, 1, 2, 2])
}

#[test]
fn transpose_is_stable_and_inverts() {
    let (rp, ci) = small();
    let csr = CsrRef { n_rows: 3, n_cols: 3, row_ptr: &rp, col_idx: &ci };
    let t = transpose(&csr);
    assert_eq!(t.row_ptr, vec![0, 1, 3, 6]);
    assert_eq!(t.col_idx, vec![2, 0, 2, 0, 2, 2]);
    assert_eq!(t.perm, vec![2, 0, 3, 1, 4, 5]);
    let tc = t.as_csr(&csr);
    let tt = transpose(&tc);
    assert_eq!(tt.row_ptr, rp);
    assert_eq!(tt.col_idx, ci);
}

/// The blocked transpose equals the one-block transpose for any block count, on graphs
/// with a hub row, a hub column, empty rows and columns, and more blocks than rows.
#[test]
fn blocked_transpose_matches_one_block() {
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    let mut rnd = move |m: u64| {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s % m
    };
    for (n_rows, n_cols) in [(1usize, 1usize), (3, 5), (57, 31), (400, 1_000)] {
        let mut row_ptr = vec![0usize];
        let mut col_idx = Vec::new();
        for i in 0..n_rows {
            let deg = match i % 7 {
                0 => 0,
                3 => 3 * n_cols,
                _ => rnd(9) as usize,
            };
            let mut row: Vec<u32> = (0..deg).map(|_| if rnd(3) == 0 { 0 } else { rnd(n_cols as u64) as u32 }).collect();
            row.sort_unstable();
            col_idx.extend(row);
            row_ptr.push(col_idx.len());
        }
        let csr = CsrRef { n_rows, n_cols, row_ptr: &row_ptr, col_idx: &col_idx };
        let want = transpose_in_blocks(&csr, 1);
        assert_eq!(want.row_ptr[n_cols], col_idx.len());
        for blocks in [2, 3, 8, n_rows + 5] {
            assert_eq!(transpose_in_blocks(&csr, blocks), want, "{n_rows}x{n_cols}, {blocks} blocks");
        }
        assert_eq!(transpose(&csr), want);
    }
}

/// The split's edge lists, filled by blocks of rows, are each row's hot and cold edges in
/// CSR order; the column counts of a structure large enough for several threads match one
/// pass.
#[test]
fn hot_split_and_column_counts_match_one_pass() {
    let (n_rows, n_cols) = (3_001usize, 517usize);
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let mut row_ptr = vec![0usize];
    let mut col_idx = Vec::new();
    for i in 0..n_rows {
        let deg = if i % 11 == 0 {
            0
        } else if i == 1_500 {
            1_500_000
        } else {
            1_000 + i % 97
        };
        for _ in 0..deg {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            col_idx.push(if s % 4 == 0 { (s >> 8) as u32 % 8 } else { (s >> 8) as u32 % n_cols as u32 });
        }
        row_ptr.push(col_idx.len());
    }
    let csr = CsrRef { n_rows, n_cols, row_ptr: &row_ptr, col_idx: &col_idx };
    assert!(csr.nnz() >= PARALLEL_EDGES);
    let mut want = vec![0usize; n_cols];
    col_idx.iter().for_each(|&c| want[c as usize] += 1);
    assert_eq!(column_counts(&csr), want);
    let split = HotSplit::new(&csr, 6, 0.0, 0).expect("a split");
    assert_eq!(split.cols.len(), 6);
    for i in 0..n_rows {
        let row = &col_idx[csr.row(i)];
        let hot: Vec<u32> = row.iter().filter(|c| split.cols.contains(c)).copied().collect();
        let cold: Vec<u32> = row.iter().filter(|c| !split.cols.contains(c)).copied().collect();
        let got_hot: Vec<u32> =
            split.hot_rank[split.hot_ptr[i]..split.hot_ptr[i + 1]].iter().map(|&r| split.cols[r as usize]).collect();
        assert_eq!(got_hot, hot, "row {i}");
        assert_eq!(&split.cold_col[split.cold_ptr[i]..split.cold_ptr[i + 1]], &cold[..], "row {i}");
    }
}

#[test]
fn groups_split_long_rows() {
    let (rp, ci) = small();
    let csr = CsrRef { n_rows: 3, n_cols: 3, row_ptr: &rp, col_idx: &ci };
    let g = EdgeGroups::new(&csr, 3);
    assert_eq!(g.ptr, vec![0, 2, 5, 6]);
    assert_eq!(g.row, vec![0, 2, 2]);
    assert_eq!(g.slot, vec![-1, 0, 1]);
    assert_eq!(g.finish_rows, vec![1, 2]);
    assert_eq!(g.finish_ptr, vec![0, 0, 2]);
    assert_eq!(g.n_slots(), 2);
    let g1 = EdgeGroups::new(&csr, 100);
    assert_eq!(g1.finish_rows, vec![1]);
    assert_eq!(g1.len(), 2);
}

#[test]
fn hot_split_partitions_every_row() {
    // column 5 has 4 edges, 33 has 3, 2 has 2, others 1; row 3 is empty
    let row_ptr = vec![0, 4, 8, 11, 11];
    let col_idx = vec![5, 33, 2, 0, 5, 33, 2, 7, 5, 33, 5];
    let csr = CsrRef { n_rows: 4, n_cols: 40, row_ptr: &row_ptr, col_idx: &col_idx };
    let s = HotSplit::new(&csr, 2, 0.0, 0).expect("a split");
    assert_eq!(s.cols, vec![5, 33]);
    assert_eq!(s.hot_ptr, vec![0, 2, 4, 7, 7]);
    assert_eq!(s.hot_rank, vec![0, 1, 0, 1, 0, 1, 0]);
    assert_eq!(s.cold_ptr, vec![0, 2, 4, 4, 4]);
    assert_eq!(s.cold_col, vec![2, 0, 2, 7]);
    assert_eq!(s.hot_edges() + s.cold(&csr).nnz(), csr.nnz());
    // below the minimum share or size, or no room: no split
    assert!(HotSplit::new(&csr, 2, 0.9, 0).is_none());
    assert!(HotSplit::new(&csr, 2, 0.0, 12).is_none());
    assert!(HotSplit::new(&csr, 0, 0.0, 0).is_none());
    // more room than columns with edges: every read column is hot, no cold edge is left
    let all = HotSplit::new(&csr, 100, 0.0, 0).expect("a split");
    assert_eq!(all.cols, vec![0, 2, 5, 7, 33]);
    assert!(all.cold_col.is_empty());
}
