//! Host reference of the neighbour sampler.

use super::draw;

/// The sample of one node of degree `d`: positions `0..d` in order where `d <= fanout`, else
/// Floyd's algorithm (for `j` in `d - fanout..d`: `t = draw mod (j + 1)`, take `t` unless taken,
/// else `j`), which draws each `fanout`-subset with equal probability; positions sorted.
pub fn positions(key: [u32; 2], node: u32, d: usize, fanout: usize) -> Vec<u32> {
    if d <= fanout {
        return (0..d as u32).collect();
    }
    let mut picked: Vec<u32> = Vec::with_capacity(fanout);
    for j in (d - fanout) as u32..d as u32 {
        let t = draw(key, node, j) % (j + 1);
        picked.push(if picked.contains(&t) { j } else { t });
    }
    picked.sort_unstable();
    picked
}

/// For each seed (a row of the CSR `row_ptr` / `col_idx`): `counts[s] = min(fanout, degree)`
/// and `picks[s * fanout..][..counts[s]]` the sampled columns in row order; unused slots hold
/// `u32::MAX`.
pub fn sample_neighbors(
    row_ptr: &[u32],
    col_idx: &[u32],
    seeds: &[u32],
    fanout: usize,
    key: [u32; 2],
) -> (Vec<u32>, Vec<u32>) {
    let mut counts = vec![0u32; seeds.len()];
    let mut picks = vec![u32::MAX; seeds.len() * fanout];
    for (s, &v) in seeds.iter().enumerate() {
        let start = row_ptr[v as usize] as usize;
        let d = row_ptr[v as usize + 1] as usize - start;
        let pos = positions(key, v, d, fanout);
        counts[s] = pos.len() as u32;
        for (q, p) in pos.into_iter().enumerate() {
            picks[s * fanout + q] = col_idx[start + p as usize];
        }
    }
    (counts, picks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_distinct_neighbours_and_uniform() {
        // node 0 has 10 neighbours (10..20), node 1 has 2, node 2 none
        let row_ptr = vec![0u32, 10, 12, 12];
        let col_idx: Vec<u32> = (10..20).chain([3, 4]).collect();
        let (counts, picks) = sample_neighbors(&row_ptr, &col_idx, &[0, 1, 2, 0], 3, [1, 2]);
        assert_eq!(counts, vec![3, 2, 0, 3]);
        assert_eq!(&picks[3..6], &[3, 4, u32::MAX]);
        assert_eq!(&picks[6..9], &[u32::MAX; 3]);
        assert_eq!(&picks[0..3], &picks[9..12], "one key, one node: one sample");
        let mut sorted = picks[0..3].to_vec();
        sorted.dedup();
        assert_eq!(sorted.len(), 3);
        // every neighbour of node 0 equally often over 20,000 keys: chi-square, 9 degrees of freedom
        let trials = 20_000u32;
        let mut hits = [0u32; 10];
        for k in 0..trials {
            for p in positions([k, k.wrapping_mul(7)], 0, 10, 3) {
                hits[p as usize] += 1;
            }
        }
        let expected = trials as f64 * 3.0 / 10.0;
        let chi2: f64 = hits.iter().map(|&h| (h as f64 - expected).powi(2) / expected).sum();
        // 99.9th percentile of chi-square with 9 degrees of freedom: 27.88
        assert!(chi2 < 27.88, "chi-square {chi2}: {hits:?}");
    }
}

/// A sampled block (see [`sample_block`]): `n_dst` rows over `src.len()` columns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// `[n_dst + 1]`.
    pub row_ptr: Vec<u32>,
    /// Local column (an index into `src`) of each edge, each row in the order of its sample.
    pub col_idx: Vec<u32>,
    /// Global ids of the sources: the destinations in their order, then the other sampled nodes
    /// in ascending global id.
    pub src: Vec<u32>,
}

/// The block of the distinct destinations `dst`: each row holds the sample of
/// [`sample_neighbors`], its columns relabelled into `src`.
pub fn sample_block(row_ptr: &[u32], col_idx: &[u32], dst: &[u32], fanout: usize, key: [u32; 2]) -> Block {
    let (counts, picks) = sample_neighbors(row_ptr, col_idx, dst, fanout, key);
    let local: std::collections::HashMap<u32, u32> = dst.iter().enumerate().map(|(k, &v)| (v, k as u32)).collect();
    let mut new: Vec<u32> = picks.iter().copied().filter(|&v| v != u32::MAX && !local.contains_key(&v)).collect();
    new.sort_unstable();
    new.dedup();
    let mut block_ptr = vec![0u32];
    let mut cols = Vec::new();
    for (s, &c) in counts.iter().enumerate() {
        for &v in &picks[s * fanout..s * fanout + c as usize] {
            let l = match local.get(&v) {
                Some(&l) => l,
                None => dst.len() as u32 + new.binary_search(&v).unwrap_or(0) as u32,
            };
            cols.push(l);
        }
        block_ptr.push(cols.len() as u32);
    }
    let src = dst.iter().copied().chain(new).collect();
    Block { row_ptr: block_ptr, col_idx: cols, src }
}
