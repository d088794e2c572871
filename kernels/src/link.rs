//! Negative pairs of link prediction, drawn on the device.
//!
//! A training epoch's negatives are the positive pattern relabelled: positive pair `(r, c)`
//! becomes `(pa[r], pb[c])`, where `pa` and `pb` are two pseudo-random permutations of the
//! nodes. Each negative pair is then uniform over all ordered pairs (as PyG's
//! `negative_sampling` draws them), the scores are one SDDMM over the positive pattern with the
//! rows of the embeddings permuted, and the backward pass stays a deterministic SpMM plus a
//! permutation (no scatter-add). Pairs that hit a known edge or a node with itself are masked
//! out of the loss ([`launch_pair_mask`]).
//!
//! The permutations are keyed Feistel networks over the next even power of two at or above the
//! node count, cycle-walked into `0..n` ([`permute`]): any index is mapped in a few hash rounds,
//! with no sort and no random tensor, and the same key gives the same permutation on every
//! device.

use crate::device::cube_count;
use cubecl::prelude::*;

/// Threads per cube of the kernels here.
const THREADS: u32 = 256;

/// The Feistel rounds of [`permute`].
pub const ROUNDS: usize = 4;

/// A 32-bit finaliser (all arithmetic wraps in u32, as on the GPU).
#[inline]
fn mix32(x: u32) -> u32 {
    crate::dropout::mix32(x)
}

/// The round keys of a permutation from a 64-bit seed (splitmix64).
pub fn round_keys(seed: u64) -> [u32; ROUNDS] {
    let mut s = seed;
    let mut next = || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) as u32
    };
    [next(), next(), next(), next()]
}

/// Bits of each Feistel half for `n` indices: the domain `4^half` is the smallest even power of
/// two at or above `n` (so fewer than four walks per index on average).
pub fn half_bits(n: usize) -> u32 {
    let bits = usize::BITS - n.saturating_sub(1).leading_zeros();
    bits.div_ceil(2).max(1)
}

fn feistel(x: u32, half: u32, keys: &[u32; ROUNDS]) -> u32 {
    let mask = (1u32 << half) - 1;
    let (mut l, mut r) = (x >> half, x & mask);
    for k in keys {
        let f = mix32(r ^ k) & mask;
        (l, r) = (r, l ^ f);
    }
    (l << half) | r
}

fn feistel_inverse(x: u32, half: u32, keys: &[u32; ROUNDS]) -> u32 {
    let mask = (1u32 << half) - 1;
    let (mut l, mut r) = (x >> half, x & mask);
    for k in keys.iter().rev() {
        let f = mix32(l ^ k) & mask;
        (l, r) = (r ^ f, l);
    }
    (l << half) | r
}

/// The preimage of index `i < n` under [`permute`] with the same keys: the Feistel rounds
/// backwards, cycle-walked the other way (host reference).
pub fn permute_inverse(i: u32, n: u32, keys: &[u32; ROUNDS]) -> u32 {
    let half = half_bits(n as usize);
    let mut x = feistel_inverse(i, half, keys);
    while x >= n {
        x = feistel_inverse(x, half, keys);
    }
    x
}

/// The inverse of [`permutation`] with the same keys (host reference of
/// [`launch_permutation`] with `inverse`).
pub fn inverse_permutation(n: usize, keys: &[u32; ROUNDS]) -> Vec<u32> {
    (0..n as u32).map(|i| permute_inverse(i, n as u32, keys)).collect()
}

/// The image of index `i < n` under the permutation of `0..n` keyed by `keys` (host reference).
pub fn permute(i: u32, n: u32, keys: &[u32; ROUNDS]) -> u32 {
    let half = half_bits(n as usize);
    let mut x = feistel(i, half, keys);
    while x >= n {
        x = feistel(x, half, keys);
    }
    x
}

/// The whole permutation of `0..n` (host reference of [`launch_permutation`]).
pub fn permutation(n: usize, keys: &[u32; ROUNDS]) -> Vec<u32> {
    (0..n as u32).map(|i| permute(i, n as u32, keys)).collect()
}

/// Whether `v` is a column of row `u` of a CSR whose rows hold sorted columns.
pub fn has_edge(row_ptr: &[u32], col_idx: &[u32], u: u32, v: u32) -> bool {
    let row = &col_idx[row_ptr[u as usize] as usize..row_ptr[u as usize + 1] as usize];
    row.binary_search(&v).is_ok()
}

/// Host reference of [`launch_pair_mask`]: for every pair `(r, c)` of the pattern (CSR order),
/// 1 when `(pa[r], pb[c])` is not an edge of `adj` (rows sorted) and not a node with itself,
/// else 0.
pub fn pair_mask(pattern: (&[u32], &[u32]), adj: (&[u32], &[u32]), pa: &[u32], pb: &[u32]) -> Vec<i32> {
    let (rp, ci) = pattern;
    let mut out = Vec::with_capacity(ci.len());
    for r in 0..rp.len().saturating_sub(1) {
        for &c in &ci[rp[r] as usize..rp[r + 1] as usize] {
            let (u, v) = (pa[r], pb[c as usize]);
            out.push((u != v && !has_edge(adj.0, adj.1, u, v)) as i32);
        }
    }
    out
}

/// One Feistel round's function of the right half.
#[cube]
fn round_dev(r: u32, key: u32, mask: u32) -> u32 {
    crate::dropout::mix32_dev(r ^ key) & mask
}

#[cube]
fn feistel_dev(x: u32, half: u32, k0: u32, k1: u32, k2: u32, k3: u32) -> u32 {
    let mask = (1u32 << half) - 1u32;
    // (l, r) -> (r, l ^ f(r)), four times, with the keys in order
    let a = x >> half;
    let b = x & mask;
    let c = a ^ round_dev(b, k0, mask);
    let d = b ^ round_dev(c, k1, mask);
    let e = c ^ round_dev(d, k2, mask);
    let f = d ^ round_dev(e, k3, mask);
    (e << half) | f
}

#[cube]
fn feistel_inverse_dev(x: u32, half: u32, k0: u32, k1: u32, k2: u32, k3: u32) -> u32 {
    let mask = (1u32 << half) - 1u32;
    // the rounds of `feistel_dev` undone, last key first: (l, r) -> (r ^ f(l), l)
    let e = x >> half;
    let f = x & mask;
    let d = f ^ round_dev(e, k3, mask);
    let c = e ^ round_dev(d, k2, mask);
    let b = d ^ round_dev(c, k1, mask);
    let a = c ^ round_dev(b, k0, mask);
    (a << half) | b
}

#[cube(launch)]
#[allow(clippy::too_many_arguments)]
fn permutation_kernel(
    out: &mut Array<u32>,
    n: u32,
    half: u32,
    k0: u32,
    k1: u32,
    k2: u32,
    k3: u32,
    #[comptime] inverse: bool,
) {
    let i = ABSOLUTE_POS;
    if i >= n as usize {
        terminate!();
    }
    if inverse {
        let mut x = feistel_inverse_dev(i as u32, half, k0, k1, k2, k3);
        while x >= n {
            x = feistel_inverse_dev(x, half, k0, k1, k2, k3);
        }
        out[i] = x;
    } else {
        let mut x = feistel_dev(i as u32, half, k0, k1, k2, k3);
        while x >= n {
            x = feistel_dev(x, half, k0, k1, k2, k3);
        }
        out[i] = x;
    }
}

#[cube]
fn row_of(row_ptr: &Array<u32>, n_rows: u32, e: u32) -> u32 {
    // the last row whose first edge is at or before `e`
    let mut lo = 0u32;
    let mut hi = n_rows;
    while lo < hi {
        let mid = (lo + hi + 1u32) / 2u32;
        if row_ptr[mid as usize] <= e {
            lo = mid;
        } else {
            hi = mid - 1u32;
        }
    }
    lo
}

#[cube(launch)]
#[allow(clippy::too_many_arguments)]
fn pair_mask_kernel(
    pat_row_ptr: &Array<u32>,
    pat_col_idx: &Array<u32>,
    adj_row_ptr: &Array<u32>,
    adj_col_idx: &Array<u32>,
    pa: &Array<u32>,
    pb: &Array<u32>,
    out: &mut Array<i32>,
    n_rows: u32,
    nnz: u32,
) {
    let e = ABSOLUTE_POS;
    if e >= nnz as usize {
        terminate!();
    }
    let r = row_of(pat_row_ptr, n_rows, e as u32);
    let u = pa[r as usize];
    let v = pb[pat_col_idx[e] as usize];
    let mut lo = adj_row_ptr[u as usize];
    let mut hi = adj_row_ptr[u as usize + 1];
    let mut found = u == v;
    while lo < hi && !found {
        let mid = (lo + hi) / 2u32;
        let c = adj_col_idx[mid as usize];
        if c == v {
            found = true;
        } else if c < v {
            lo = mid + 1u32;
        } else {
            hi = mid;
        }
    }
    let mut keep = 1i32;
    if found {
        keep = 0i32;
    }
    out[e] = keep;
}

/// Writes the permutation of `0..n` keyed by `keys` into `out` (`[n]` u32 in 4-byte elements),
/// or its inverse where `inverse`.
pub fn launch_permutation<R: Runtime>(
    client: &ComputeClient<R>,
    out: TensorBinding<R>,
    n: usize,
    keys: &[u32; ROUNDS],
    inverse: bool,
) {
    if n == 0 {
        return;
    }
    let half = half_bits(n);
    permutation_kernel::launch::<R>(
        client,
        cube_count(client, n.div_ceil(THREADS as usize)),
        CubeDim::new_1d(THREADS),
        out.into_array_arg(),
        n as u32,
        half,
        keys[0],
        keys[1],
        keys[2],
        keys[3],
        inverse,
    );
}

/// The device form of [`pair_mask`]: the pattern (`n_rows` rows, `nnz` pairs), the adjacency
/// of the known edges (rows sorted), the two permutations, and `out` (`[nnz]` 4-byte ints).
#[allow(clippy::too_many_arguments)]
pub fn launch_pair_mask<R: Runtime>(
    client: &ComputeClient<R>,
    pattern: (TensorBinding<R>, TensorBinding<R>),
    adj: (TensorBinding<R>, TensorBinding<R>),
    pa: TensorBinding<R>,
    pb: TensorBinding<R>,
    out: TensorBinding<R>,
    n_rows: usize,
    nnz: usize,
) {
    if nnz == 0 {
        return;
    }
    pair_mask_kernel::launch::<R>(
        client,
        cube_count(client, nnz.div_ceil(THREADS as usize)),
        CubeDim::new_1d(THREADS),
        pattern.0.into_array_arg(),
        pattern.1.into_array_arg(),
        adj.0.into_array_arg(),
        adj.1.into_array_arg(),
        pa.into_array_arg(),
        pb.into_array_arg(),
        out.into_array_arg(),
        n_rows as u32,
        nnz as u32,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inverse_permutations_undo_the_permutations() {
        for n in [1usize, 2, 3, 5, 17, 64, 65, 1000, 4097] {
            for seed in [0u64, 7, 12345] {
                let keys = round_keys(seed);
                let (p, q) = (permutation(n, &keys), inverse_permutation(n, &keys));
                for i in 0..n {
                    assert_eq!(q[p[i] as usize] as usize, i, "n {n} seed {seed}: q[p[{i}]]");
                }
            }
        }
    }

    #[test]
    fn permutations_are_bijections_for_awkward_sizes() {
        for n in [1usize, 2, 3, 5, 17, 64, 65, 1000, 4097] {
            for seed in [0u64, 7, 12345] {
                let p = permutation(n, &round_keys(seed));
                let mut seen = vec![false; n];
                for &v in &p {
                    assert!((v as usize) < n, "n {n}: {v} out of range");
                    assert!(!seen[v as usize], "n {n}: {v} twice");
                    seen[v as usize] = true;
                }
            }
        }
    }

    #[test]
    fn different_keys_give_different_permutations() {
        let a = permutation(1000, &round_keys(1));
        let b = permutation(1000, &round_keys(2));
        let same = a.iter().zip(&b).filter(|(x, y)| x == y).count();
        assert!(same < 20, "{same} fixed points shared");
    }

    #[test]
    fn the_mask_rejects_edges_and_self_pairs() {
        // adjacency 0-1, 1-2 both ways; pattern = the adjacency
        let rp = [0u32, 1, 3, 4];
        let ci = [1u32, 0, 2, 1];
        let id = [0u32, 1, 2];
        assert_eq!(pair_mask((&rp, &ci), (&rp, &ci), &id, &id), vec![0, 0, 0, 0]);
        // columns relabelled 0 <-> 2: (0,1) -> (0,1) edge; (1,0) -> (1,2) edge; (1,2) -> (1,0) edge;
        // (2,1) -> (2,1) edge
        let swap = [2u32, 1, 0];
        assert_eq!(pair_mask((&rp, &ci), (&rp, &ci), &id, &swap), vec![0, 0, 0, 0]);
        // rows relabelled 0 <-> 1: (0,1) -> (1,1) self; (1,0) -> (0,0) self; (1,2) -> (0,2) no edge;
        // (2,1) -> (2,1) edge
        let rows = [1u32, 0, 2];
        assert_eq!(pair_mask((&rp, &ci), (&rp, &ci), &rows, &id), vec![0, 0, 1, 0]);
    }
}
