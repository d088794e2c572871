//! The gradient of a gather of node rows per pair of a pattern (the Hadamard decoder of link
//! prediction reads `z[dst] * z[src]` for every pair).
//!
//! The forward gather is a plain row select. Its gradient sums, for each node, the gradient
//! rows of the pairs that read it. Burn's `select` backward scatters with one thread per
//! column walking every pair in turn (millions of dependent steps per thread at link
//! prediction's pair counts); here the pairs of a node are a segment of the pattern's own
//! structure: the pairs of destination `r` are the CSR entries `row_ptr[r]..row_ptr[r + 1]`,
//! the pairs of source `c` the transposed entries of column `c`, each naming its CSR pair
//! through the edge permutation. One group of lanes sums one node's segment in CSR order: no
//! atomics, deterministic, the same sums as the host reference's order.

use crate::device::{cube_count, lanes_for, vector_width};
use cubecl::prelude::*;

/// Host reference: `out[r] = sum of dy[p(e)] for e in row_ptr[r]..row_ptr[r + 1]` in that
/// order, with `p(e) = perm[e]` where `perm` is given and `e` otherwise; `dy` is `[pairs, f]`
/// row-major, `out` `[row_ptr.len() - 1, f]`.
pub fn pair_rows_sum(row_ptr: &[u32], perm: Option<&[u32]>, dy: &[f64], f: usize) -> Vec<f64> {
    let n = row_ptr.len().saturating_sub(1);
    let mut out = vec![0.0; n * f];
    for r in 0..n {
        let o = &mut out[r * f..(r + 1) * f];
        for e in row_ptr[r] as usize..row_ptr[r + 1] as usize {
            let p = perm.map_or(e, |p| p[e] as usize);
            o.iter_mut().zip(&dy[p * f..(p + 1) * f]).for_each(|(a, b)| *a += b);
        }
    }
    out
}

#[cube(launch_unchecked)]
fn pair_rows_sum_kernel<F: Float, N: Size>(
    row_ptr: &Array<i32>,
    perm: &Array<i32>,
    dy: &Tensor<Vector<F, N>>,
    out: &mut Tensor<Vector<F, N>>,
    n_rows: usize,
    #[comptime] permuted: bool,
    #[define(F)] _dtype: StorageType,
) {
    let r = CUBE_POS * CUBE_DIM_Y as usize + UNIT_POS_Y as usize;
    if r >= n_rows {
        terminate!();
    }
    // offsets are u32 in the bits of an i32
    let start = usize::cast_from(u32::cast_from(row_ptr[r]));
    let end = usize::cast_from(u32::cast_from(row_ptr[r + 1]));
    let n_vec = out.shape(1) / N::value();
    let d_rs = dy.stride(0) / N::value();
    let o_rs = out.stride(0) / N::value();
    let mut v = UNIT_POS_X as usize;
    while v < n_vec {
        let mut acc = Vector::<f32, N>::new(0.0);
        let mut e = start;
        while e < end {
            let mut p = e;
            if permuted {
                p = usize::cast_from(u32::cast_from(perm[e]));
            }
            acc = acc + Vector::<f32, N>::cast_from(dy[p * d_rs + v]);
            e += 1;
        }
        out[r * o_rs + v] = Vector::cast_from(acc);
        v += CUBE_DIM_X as usize;
    }
}

/// Writes [`pair_rows_sum`] of `dy` (`[pairs, f]`, dtype `dtype`) into `out` (`[n, f]`, same
/// dtype): `row_ptr` is `[n + 1]` (u32 offsets in i32 bits), `perm` (`[pairs]`, i32) the edge
/// permutation of a transpose or `None`. Sums in f32, rounded once to `dtype`.
pub fn launch_pair_rows_sum<R: Runtime>(
    client: &ComputeClient<R>,
    row_ptr: TensorBinding<R>,
    perm: Option<TensorBinding<R>>,
    dy: TensorBinding<R>,
    out: TensorBinding<R>,
    dtype: StorageType,
) {
    let (n, f) = (out.shape[0], out.shape[1]);
    if n == 0 || f == 0 {
        return;
    }
    let vec = vector_width(client, dtype.size(), f, &[&dy, &out]);
    let lanes = lanes_for(f / vec, 32);
    let rows = (256 / lanes).max(1);
    let permuted = perm.is_some();
    let perm = perm.unwrap_or_else(|| row_ptr.clone());
    unsafe {
        pair_rows_sum_kernel::launch_unchecked::<R>(
            client,
            cube_count(client, n.div_ceil(rows as usize)),
            CubeDim::new_2d(lanes, rows),
            vec,
            row_ptr.into_array_arg(),
            perm.into_array_arg(),
            dy.into_tensor_arg(),
            out.into_tensor_arg(),
            n,
            permuted,
            dtype,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_follow_the_segments_and_the_permutation() {
        // pairs 0, 1 -> node 0; none -> node 1; pair 2 -> node 2
        let dy = [1.0, 10.0, 2.0, 20.0, 4.0, 40.0];
        assert_eq!(pair_rows_sum(&[0, 2, 2, 3], None, &dy, 2), vec![3.0, 30.0, 0.0, 0.0, 4.0, 40.0]);
        // the transposed order names the pairs 2, 0 | 1
        assert_eq!(pair_rows_sum(&[0, 2, 3], Some(&[2, 0, 1]), &dy, 2), vec![5.0, 50.0, 2.0, 20.0]);
        assert!(pair_rows_sum(&[0], None, &[], 3).is_empty());
    }
}
