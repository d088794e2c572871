//! CPU reference of ES-SpMM's in-kernel edge sampling (Bucket and FastRand), with a per-call
//! seed so that training can draw a different sample every epoch.

use crate::csr::CsrRef;
use crate::spmm::reference::{spmm, EdgeWeights};
use crate::spmm::Reduce;

/// Which edges of a row longer than the sample width are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sampling {
    /// A window of `width` consecutive edges (the first `width` when the seed is 0).
    Bucket,
    /// `edge = (t * P + offset) mod nnz` for `t < width`, with `P` the smallest integer
    /// `>= 577` coprime with `nnz` (577, the paper's `P'`, unless it divides `nnz`), so the
    /// `width` picks are distinct.
    FastRand,
}

/// A sampled aggregation: at most `width` edges per row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SampleSpec {
    /// Sample width `S` (edges kept per row), `>= 1`.
    pub width: usize,
    /// Sampling rule.
    pub mode: Sampling,
    /// Per-call seed; 0 reproduces the paper's fixed sample (offset 0 in every row).
    pub seed: u32,
}

/// The paper's FastRand multiplier.
pub const FASTRAND_P: u32 = 577;

/// murmur3's 32-bit finaliser of `seed ^ (row * golden)`: the per-row offset hash (all
/// arithmetic wraps in u32 so the GPU kernels compute the same value).
#[inline]
pub fn row_hash(seed: u32, row: u32) -> u32 {
    let mut h = seed ^ row.wrapping_mul(0x9E37_79B9);
    h ^= h >> 16;
    h = h.wrapping_mul(0x85EB_CA6B);
    h ^= h >> 13;
    h = h.wrapping_mul(0xC2B2_AE35);
    h ^= h >> 16;
    h
}

/// Greatest common divisor.
#[inline]
pub fn gcd(mut a: u32, mut b: u32) -> u32 {
    while b != 0 {
        let t = a % b;
        a = b;
        b = t;
    }
    a
}

/// FastRand's stride for a row of `nnz` edges: the smallest `p >= 577` with `gcd(p, nnz) = 1`.
#[inline]
pub fn fastrand_stride(nnz: u32) -> u32 {
    let mut p = FASTRAND_P;
    while gcd(p, nnz) != 1 {
        p += 1;
    }
    p
}

/// Offset of row `row` (of `nnz > 0` edges) for `seed`.
#[inline]
pub fn row_offset(seed: u32, row: u32, nnz: u32) -> u32 {
    if seed == 0 {
        0
    } else {
        row_hash(seed, row) % nnz
    }
}

/// The `t`-th sampled edge (relative to the row start) of a row of `nnz > width` edges.
#[inline]
pub fn sampled_position(mode: Sampling, t: u32, offset: u32, nnz: u32) -> u32 {
    match mode {
        Sampling::Bucket => (offset + t) % nnz,
        Sampling::FastRand => {
            let p = fastrand_stride(nnz) % nnz;
            // t < width <= nnz and p < nnz: compute in u64 on the host.
            ((t as u64 * p as u64 + offset as u64) % nnz as u64) as u32
        }
    }
}

/// Per-edge scale of a sampled aggregation: 0 for an edge that is not sampled, else 1 for
/// [`Reduce::Sum`] and `1 / kept` for [`Reduce::Mean`] (the sampled count, not the degree).
pub fn edge_scale(csr: &CsrRef<'_>, spec: &SampleSpec, reduce: Reduce) -> Vec<f64> {
    assert!(spec.width >= 1, "sample width must be >= 1");
    assert!(reduce != Reduce::Max, "sampled aggregation supports sum and mean");
    let mut scale = vec![0.0f64; csr.nnz()];
    for i in 0..csr.n_rows {
        let r = csr.row(i);
        let d = r.len();
        if d == 0 {
            continue;
        }
        let kept = d.min(spec.width);
        let s = if reduce == Reduce::Mean { 1.0 / kept as f64 } else { 1.0 };
        if d <= spec.width {
            scale[r].iter_mut().for_each(|v| *v = s);
        } else {
            let off = row_offset(spec.seed, i as u32, d as u32);
            for t in 0..spec.width as u32 {
                let p = sampled_position(spec.mode, t, off, d as u32) as usize;
                debug_assert_eq!(scale[r.start + p], 0.0, "samples are distinct");
                scale[r.start + p] = s;
            }
        }
    }
    scale
}

/// Sampled SpMM: [`spmm`] over the sampled edges with the sampled-count normalisation.
/// `w` is `[nnz, heads]` as in [`spmm`].
pub fn sampled_spmm(
    csr: &CsrRef<'_>,
    w: Option<EdgeWeights<'_>>,
    x: &[f64],
    f: usize,
    spec: &SampleSpec,
    reduce: Reduce,
) -> Vec<f64> {
    let scale = edge_scale(csr, spec, reduce);
    let heads = w.map(|w| w.heads).unwrap_or(1);
    let combined: Vec<f64> =
        (0..csr.nnz() * heads).map(|k| scale[k / heads] * w.map(|w| w.values[k]).unwrap_or(1.0)).collect();
    spmm(csr, Some(EdgeWeights { values: &combined, heads }), x, f, Reduce::Sum).0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stride_is_coprime() {
        assert_eq!(fastrand_stride(1000), 577);
        assert_eq!(fastrand_stride(577 * 2), 579);
        for d in 1..3000u32 {
            assert_eq!(gcd(fastrand_stride(d), d), 1);
        }
    }

    #[test]
    fn short_rows_are_exact_and_long_rows_keep_width_edges() {
        let rp = vec![0, 3, 1203];
        let ci: Vec<u32> = (0..1203).map(|e| (e % 7) as u32).collect();
        let csr = CsrRef { n_rows: 2, n_cols: 7, row_ptr: &rp, col_idx: &ci };
        for mode in [Sampling::Bucket, Sampling::FastRand] {
            for seed in [0, 1, 99] {
                let spec = SampleSpec { width: 16, mode, seed };
                let s = edge_scale(&csr, &spec, Reduce::Mean);
                assert!(s[..3].iter().all(|&v| (v - 1.0 / 3.0).abs() < 1e-15));
                let kept: Vec<usize> = (3..1203).filter(|&e| s[e] > 0.0).collect();
                assert_eq!(kept.len(), 16);
                assert!(kept.iter().all(|&e| (s[e] - 1.0 / 16.0).abs() < 1e-15));
                if seed == 0 && mode == Sampling::Bucket {
                    assert_eq!(kept, (3..19).collect::<Vec<_>>());
                }
            }
        }
        // different seeds draw different samples
        let a = edge_scale(&csr, &SampleSpec { width: 16, mode: Sampling::FastRand, seed: 1 }, Reduce::Sum);
        let b = edge_scale(&csr, &SampleSpec { width: 16, mode: Sampling::FastRand, seed: 2 }, Reduce::Sum);
        assert_ne!(a, b);
    }
}
