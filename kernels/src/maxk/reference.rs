//! CPU reference of MaxK selection: the `k` largest entries of each row, as CBSR.
//!
//! Order: the IEEE total order (`f64::total_cmp`, the order of [`ordered_key_f32`] on the
//! GPU). Ties at the threshold keep the lower column first, so exactly `k` entries are kept and
//! the choice is deterministic. The kept columns of a row are returned in ascending order.

use rayon::prelude::*;

/// Maps the bits of an f32 to a u32 whose unsigned order is the IEEE total order of the
/// floats (negative values flip all bits, non-negative ones flip the sign bit).
#[inline]
pub fn ordered_key_f32(bits: u32) -> u32 {
    if bits & 0x8000_0000 != 0 {
        !bits
    } else {
        bits | 0x8000_0000
    }
}

/// Top-`k` of each row of `x` (`[n, d]`): returns CBSR `values` `[n, k]` and `indices`
/// `[n, k]` (ascending column ids).
pub fn maxk(x: &[f64], n: usize, d: usize, k: usize) -> (Vec<f64>, Vec<u32>) {
    assert_eq!(x.len(), n * d);
    assert!(k >= 1 && k <= d, "k must be in 1..=d");
    let mut values = vec![0.0f64; n * k];
    let mut indices = vec![0u32; n * k];
    values.par_chunks_mut(k).zip(indices.par_chunks_mut(k)).enumerate().for_each(|(i, (v, ix))| {
        let row = &x[i * d..(i + 1) * d];
        let mut order: Vec<u32> = (0..d as u32).collect();
        // descending value, then ascending column
        order.sort_by(|&a, &b| row[b as usize].total_cmp(&row[a as usize]).then(a.cmp(&b)));
        let mut kept = order[..k].to_vec();
        kept.sort_unstable();
        for (t, &c) in kept.iter().enumerate() {
            ix[t] = c;
            v[t] = row[c as usize];
        }
    });
    (values, indices)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_exactly_k_with_ties_to_the_lower_column() {
        let x = vec![1.0, 3.0, 3.0, 3.0, -1.0, 2.0];
        let (v, i) = maxk(&x, 1, 6, 2);
        assert_eq!(i, vec![1, 2]);
        assert_eq!(v, vec![3.0, 3.0]);
        let (v, i) = maxk(&x, 1, 6, 6);
        assert_eq!(i, vec![0, 1, 2, 3, 4, 5]);
        assert_eq!(v, x);
        let (_, i) = maxk(&x, 1, 6, 1);
        assert_eq!(i, vec![1]);
    }

    #[test]
    fn ordered_key_matches_total_order() {
        let vals = [f32::NEG_INFINITY, -2.5, -0.0, 0.0, 1e-30, 7.0, f32::INFINITY];
        for w in vals.windows(2) {
            assert!(ordered_key_f32(w[0].to_bits()) < ordered_key_f32(w[1].to_bits()));
        }
    }
}
