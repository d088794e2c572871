//! The symmetrised graph every partitioner but Contiguous works on: an undirected adjacency
//! without self-loops or duplicates.

use crate::graph::csr::Csr;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};

/// An undirected graph without self-loops or duplicates: the neighbours of `v` are
/// `adj[xadj[v]..xadj[v + 1]]`, ascending.
pub(super) struct SymGraph {
    pub(super) xadj: Vec<usize>,
    pub(super) adj: Vec<u32>,
}

impl SymGraph {
    pub(super) fn neighbours(&self, v: usize) -> &[u32] {
        &self.adj[self.xadj[v]..self.xadj[v + 1]]
    }
}

/// The union of `adj` and its transpose without self-loops, duplicates merged. An adjacency that
/// is already symmetric with ascending rows (an undirected graph stored both ways) is copied
/// less its self-loops ([`symmetric_copy`]). Otherwise in parallel: counts and scatter through
/// atomics (entry order within a node is arbitrary there), then every node's list is sorted and
/// deduplicated, which makes the result independent of the scheduling.
pub(super) fn symmetrize(adj: &Csr) -> SymGraph {
    symmetric_copy(adj).unwrap_or_else(|| symmetrize_general(adj))
}

/// [`symmetrize`] of any adjacency.
pub(super) fn symmetrize_general(adj: &Csr) -> SymGraph {
    let n = adj.n_rows();
    let (rp, ci) = (adj.row_ptr(), adj.col_idx());
    let out: Vec<usize> =
        (0..n).into_par_iter().map(|r| ci[rp[r]..rp[r + 1]].iter().filter(|&&c| c as usize != r).count()).collect();
    let inc: Vec<AtomicUsize> = (0..n).into_par_iter().map(|_| AtomicUsize::new(0)).collect();
    (0..n).into_par_iter().for_each(|r| {
        for &c in &ci[rp[r]..rp[r + 1]] {
            if c as usize != r {
                inc[c as usize].fetch_add(1, Ordering::Relaxed);
            }
        }
    });
    let mut start = Vec::with_capacity(n + 1);
    start.push(0usize);
    let mut acc = 0usize;
    for v in 0..n {
        acc += out[v] + inc[v].load(Ordering::Relaxed);
        start.push(acc);
    }
    let buf: Vec<AtomicU32> = (0..acc).into_par_iter().map(|_| AtomicU32::new(0)).collect();
    let cursor: Vec<AtomicUsize> = (0..n).into_par_iter().map(|v| AtomicUsize::new(start[v] + out[v])).collect();
    drop(inc);
    (0..n).into_par_iter().for_each(|r| {
        let mut k = start[r];
        for &c in &ci[rp[r]..rp[r + 1]] {
            if c as usize != r {
                buf[k].store(c, Ordering::Relaxed);
                k += 1;
                let pos = cursor[c as usize].fetch_add(1, Ordering::Relaxed);
                buf[pos].store(r as u32, Ordering::Relaxed);
            }
        }
    });
    drop(cursor);
    let lists: Vec<Vec<u32>> = (0..n)
        .into_par_iter()
        .map(|v| {
            let mut l: Vec<u32> = buf[start[v]..start[v + 1]].iter().map(|x| x.load(Ordering::Relaxed)).collect();
            l.sort_unstable();
            l.dedup();
            l
        })
        .collect();
    drop(buf);
    let mut xadj = Vec::with_capacity(n + 1);
    xadj.push(0usize);
    let mut acc = 0usize;
    for l in &lists {
        acc += l.len();
        xadj.push(acc);
    }
    let adj: Vec<u32> = lists.into_par_iter().flatten().collect();
    SymGraph { xadj, adj }
}

/// `adj` less its self-loops where every row is strictly ascending and the entries `(r, c)` are
/// the entries `(c, r)` (an undirected graph stored both ways); `None` otherwise. The second
/// test compares two sums of a 64-bit hash over the entries with the same sums over the
/// reversed entries (equal multisets give equal sums; unequal ones pass only by a hash
/// collision). Both tests read the adjacency in order on all cores, without random reads or
/// shared writes (unlike the general [`symmetrize_general`], whose counters the hubs contend).
pub(super) fn symmetric_copy(adj: &Csr) -> Option<SymGraph> {
    let n = adj.n_rows();
    let (rp, ci) = (adj.row_ptr(), adj.col_idx());
    let row = |r: usize| &ci[rp[r]..rp[r + 1]];
    // two hashes of the entry (a, b)
    let hashes = |a: u32, b: u32| {
        let first = super::multilevel::mix(((a as u64) << 32 | b as u64) ^ 0x243F_6A88_85A3_08D3);
        [first, super::multilevel::mix(first.rotate_left(29) ^ 0x1319_8A2E_0370_7344)]
    };
    let (ascending, sums) = (0..n)
        .into_par_iter()
        .map(|r| {
            let cols = row(r);
            let mut sums = [0u64; 4];
            for &c in cols {
                let (forward, backward) = (hashes(r as u32, c), hashes(c, r as u32));
                sums[0] = sums[0].wrapping_add(forward[0]);
                sums[1] = sums[1].wrapping_add(backward[0]);
                sums[2] = sums[2].wrapping_add(forward[1]);
                sums[3] = sums[3].wrapping_add(backward[1]);
            }
            (cols.windows(2).all(|w| w[0] < w[1]), sums)
        })
        .reduce(|| (true, [0u64; 4]), |(a, x), (b, y)| (a && b, std::array::from_fn(|i| x[i].wrapping_add(y[i]))));
    if !ascending || sums[0] != sums[1] || sums[2] != sums[3] {
        return None;
    }
    let kept: Vec<usize> =
        (0..n).into_par_iter().map(|r| row(r).len() - usize::from(row(r).binary_search(&(r as u32)).is_ok())).collect();
    let mut xadj = Vec::with_capacity(n + 1);
    xadj.push(0usize);
    let mut acc = 0usize;
    for k in kept {
        acc += k;
        xadj.push(acc);
    }
    let adj: Vec<u32> =
        (0..n).into_par_iter().flat_map_iter(|r| row(r).iter().copied().filter(move |&c| c as usize != r)).collect();
    Some(SymGraph { xadj, adj })
}
