//! ReLU and dropout in one pass, with a counter-based mask.
//!
//! `y = relu?(x) * keep(row, col) / (1 - p)`, where `keep` is a hash of the seed, the row's
//! global id and the column: no random tensor is drawn, stored or read, and the same
//! (seed, node, column) drops the same entry whichever device or part of a partitioned graph
//! holds the row. The forward pass writes one bit per entry (`1` where the gradient passes:
//! kept, and positive under ReLU), 32 entries per `u32` word, `ceil(d / 32)` words per row; the
//! backward pass is `dx = dy * bit / (1 - p)`. Against Burn's ops (ReLU, a Bernoulli draw, a
//! comparison, a masked fill and a scaling, each a pass over the tensor, and byte masks kept
//! for the backward pass) this reads the input once, writes the output once and keeps 1/32 of
//! an f32 tensor.
//!
//! The seed is two floats in `[0, 1)` on the device (drawn by the backend's random generator, so
//! the masks follow its seed without a host round trip); each gives 24 bits.

use crate::device::cube_count;
use cubecl::prelude::*;

/// Entries per mask word.
pub const WORD: usize = 32;

/// Mask words of a `[n, d]` tensor (bit `p % 32` of word `p / 32` for row-major entry `p`).
pub fn mask_words(n: usize, d: usize) -> usize {
    (n * d).div_ceil(WORD)
}

/// The keep threshold of drop probability `prob`: an entry is kept when the top 24 bits of its
/// hash are below it.
pub fn keep_threshold(prob: f64) -> u32 {
    ((1.0 - prob.clamp(0.0, 1.0)) * 16_777_216.0).round() as u32
}

/// The scale of the kept entries, `1 / (1 - prob)` (1 without dropout).
pub fn keep_scale(prob: f64) -> f32 {
    if prob <= 0.0 {
        1.0
    } else {
        (1.0 / (1.0 - prob)) as f32
    }
}

/// One of the two 24-bit seed words from a seed float in `[0, 1)`.
pub fn seed_word(s: f32) -> u32 {
    (s * 16_777_216.0) as u32
}

/// A 32-bit finaliser (all arithmetic wraps in u32, as on the GPU).
#[inline]
pub fn mix32(x: u32) -> u32 {
    let mut h = x;
    h ^= h >> 16;
    h = h.wrapping_mul(0x7FEB_352D);
    h ^= h >> 15;
    h = h.wrapping_mul(0x846C_A68B);
    h ^= h >> 16;
    h
}

/// Whether entry `(row, col)` is kept (`row`: the global id of the row).
#[inline]
pub fn keeps(seed: [u32; 2], row: u32, col: u32, threshold: u32) -> bool {
    let h = mix32(mix32(row ^ seed[0]) ^ col.wrapping_mul(0x9E37_79B9) ^ seed[1]);
    (h >> 8) < threshold
}

/// [`mix32`] in a kernel.
#[cube]
pub(crate) fn mix32_dev(x: u32) -> u32 {
    let mut h = x;
    h ^= h >> 16;
    h *= 0x7FEB_352Du32;
    h ^= h >> 15;
    h *= 0x846C_A68Bu32;
    h ^= h >> 16;
    h
}

/// Vectors per cube of the forward kernel: `TILE_THREADS` threads, each taking every
/// `TILE_THREADS`-th vector of the tile (coalesced), so a tile of `N`-wide vectors is `N * TILE
/// / 32` whole mask words.
const TILE_THREADS: usize = 256;
const TILE: usize = 4 * TILE_THREADS;
/// Shared-memory slots of a tile's flags (the bits of one vector each, at their place in their
/// word): vector `q` sits in slot `q + q / 32` (one padding slot after every 32), so the threads
/// that pack the words (thread `w` reads the `32 / N` slots of word `w`) hit different banks
/// for every vector width `N` of 1, 2, 4 or 8.
const FLAG_SLOTS: usize = TILE + TILE / 32;

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn relu_dropout_tiles<F: Float, N: Size>(
    x: &Array<Vector<F, N>>,
    rows: &Array<i32>,
    seed: &Array<f32>,
    y: &mut Array<Vector<F, N>>,
    mask: &mut Array<u32>,
    len: usize,
    d: usize,
    threshold: u32,
    scale: f32,
    #[comptime] relu: bool,
    #[comptime] drop: bool,
    #[comptime] has_rows: bool,
    #[comptime] per_word: usize,
    #[define(F)] _dtype: StorageType,
) {
    // `len` and `d` count elements; `d` is a multiple of `N`, so a vector lies in one row and
    // its row, row hash and first column are taken once for its `N` entries
    let mut flags = SharedMemory::<u32>::new(FLAG_SLOTS);
    let base = CUBE_POS * TILE;
    let t = UNIT_POS as usize;
    let n_vecs = len / N::value();
    let mut s0 = 0u32;
    let mut s1 = 0u32;
    if comptime!(drop) {
        s0 = u32::cast_from(seed[0] * 16_777_216.0f32);
        s1 = u32::cast_from(seed[1] * 16_777_216.0f32);
    }
    #[unroll]
    for i in 0..4usize {
        let q = i * TILE_THREADS + t;
        let pv = base + q;
        let mut bits = 0u32;
        if pv < n_vecs {
            let p = pv * N::value();
            let a = Vector::<f32, N>::cast_from(x[pv]);
            let mut row_hash = 0u32;
            let mut col = 0u32;
            if comptime!(drop) {
                let row = p / d;
                col = (p - row * d) as u32;
                let mut g = row as u32;
                if comptime!(has_rows) {
                    g = u32::cast_from(rows[row]);
                }
                row_hash = mix32_dev(g ^ s0);
            }
            let mut out = Vector::<f32, N>::new(0.0);
            #[unroll]
            for k in 0..N::value() {
                let v = a[k];
                let mut keep = true;
                if comptime!(relu) {
                    keep = v > 0.0f32;
                }
                if comptime!(drop) {
                    let h = mix32_dev(row_hash ^ ((col + k as u32) * 0x9E37_79B9u32) ^ s1);
                    keep = keep && (h >> 8) < threshold;
                }
                if keep {
                    out[k] = v * scale;
                    bits |= 1u32 << (k as u32);
                }
            }
            y[pv] = Vector::cast_from(out);
            // this vector's bits at their place in their word
            bits <<= (p % 32) as u32;
        }
        flags[q + q / 32] = bits;
    }
    sync_cube();
    // `per_word` = 32 / N vectors per mask word, `TILE / per_word` words per tile
    if t < comptime!(TILE / per_word) {
        let w = base / per_word + t;
        if w * 32 < len {
            let mut word = 0u32;
            #[unroll]
            for j in 0..per_word {
                let q = t * per_word + j;
                word |= flags[q + q / 32];
            }
            mask[w] = word;
        }
    }
}

#[cube(launch_unchecked)]
fn masked_scale<F: Float, N: Size>(
    dy: &Array<Vector<F, N>>,
    mask: &Array<u32>,
    dx: &mut Array<Vector<F, N>>,
    len: usize,
    scale: f32,
    #[define(F)] _dtype: StorageType,
) {
    let v = ABSOLUTE_POS;
    if v * N::value() >= len {
        terminate!();
    }
    let g = Vector::<f32, N>::cast_from(dy[v]);
    let mut out = Vector::<f32, N>::new(0.0);
    #[unroll]
    for k in 0..N::value() {
        let p = v * N::value() + k;
        if ((mask[p / 32] >> ((p % 32) as u32)) & 1u32) == 1u32 {
            out[k] = g[k] * scale;
        }
    }
    dx[v] = Vector::cast_from(out);
}

/// What [`launch_relu_dropout`] applies.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReluDropout {
    /// Clip negative entries (ReLU).
    pub relu: bool,
    /// Drop probability (0: no dropout).
    pub prob: f64,
}

/// Writes `y` (`[n, d]`, contiguous like `x`) and the mask words (`[mask_words(n, d)]`) of
/// `spec` applied to `x`. `rows` (`[n]` i32): the global id of each row (the row index when
/// `None`); `seed`: two f32 in `[0, 1)` (read only when `spec.prob > 0`).
#[allow(clippy::too_many_arguments)]
pub fn launch_relu_dropout<R: Runtime>(
    client: &ComputeClient<R>,
    x: TensorBinding<R>,
    rows: Option<TensorBinding<R>>,
    seed: Option<TensorBinding<R>>,
    y: TensorBinding<R>,
    mask: TensorBinding<R>,
    n: usize,
    d: usize,
    spec: ReluDropout,
    dtype: StorageType,
) {
    let len = n * d;
    if len == 0 {
        return;
    }
    let drop = spec.prob > 0.0 && seed.is_some();
    let has_rows = rows.is_some();
    // whole vectors of one row each, at most 8 entries (a mask word packs 32 / N vectors)
    let vec = crate::device::vector_width(client, dtype.size(), d, &[&x, &y]).min(8);
    let rows = rows.unwrap_or_else(|| crate::device::alloc_array::<R>(client, 1, 4));
    let seed = seed.unwrap_or_else(|| crate::device::alloc_array::<R>(client, 2, 4));
    unsafe {
        relu_dropout_tiles::launch_unchecked::<R>(
            client,
            cube_count(client, (len / vec).div_ceil(TILE)),
            CubeDim::new_1d(TILE_THREADS as u32),
            vec,
            x.into_array_arg(),
            rows.into_array_arg(),
            seed.into_array_arg(),
            y.into_array_arg(),
            mask.into_array_arg(),
            len,
            d,
            keep_threshold(spec.prob),
            keep_scale(spec.prob),
            spec.relu,
            drop,
            has_rows,
            WORD / vec,
            dtype,
        );
    }
}

/// Writes `dx = dy * bit * scale` (`[n, d]`, contiguous) from the mask words of
/// [`launch_relu_dropout`].
#[allow(clippy::too_many_arguments)]
pub fn launch_masked_scale<R: Runtime>(
    client: &ComputeClient<R>,
    dy: TensorBinding<R>,
    mask: TensorBinding<R>,
    dx: TensorBinding<R>,
    n: usize,
    d: usize,
    scale: f32,
    dtype: StorageType,
) {
    let len = n * d;
    if len == 0 {
        return;
    }
    let vec = crate::device::vector_width(client, dtype.size(), len, &[&dy, &dx]).min(4);
    let threads = 256u32;
    unsafe {
        masked_scale::launch_unchecked::<R>(
            client,
            cube_count(client, (len / vec).div_ceil(threads as usize)),
            CubeDim::new_1d(threads),
            vec,
            dy.into_array_arg(),
            mask.into_array_arg(),
            dx.into_array_arg(),
            len,
            scale,
            dtype,
        );
    }
}

/// The CPU reference (and the host implementation of the backends without the kernels): `y`
/// and the mask words of `spec` on row-major `x` (`[n, d]`), rows' global ids `rows` (the row
/// index when `None`), seed floats `seed` (used when `spec.prob > 0`).
pub fn reference(
    x: &[f32],
    n: usize,
    d: usize,
    rows: Option<&[i64]>,
    seed: [f32; 2],
    spec: ReluDropout,
) -> (Vec<f32>, Vec<u32>) {
    use rayon::prelude::*;
    let drop = spec.prob > 0.0;
    let s = [seed_word(seed[0]), seed_word(seed[1])];
    let (threshold, scale) = (keep_threshold(spec.prob), keep_scale(spec.prob));
    let mut y = vec![0.0f32; n * d];
    // one flag byte per entry, filled row by row in parallel (the row's hash taken once), then
    // packed 32 to a word in parallel: the same bits as `keeps` entry by entry
    let mut kept = vec![0u8; n * d];
    if d > 0 {
        y.par_chunks_mut(d).zip(kept.par_chunks_mut(d)).enumerate().for_each(|(r, (yr, kr))| {
            let g = rows.map_or(r as u32, |ids| ids[r] as u32);
            let row_hash = mix32(g ^ s[0]);
            for (c, (yv, kv)) in yr.iter_mut().zip(kr.iter_mut()).enumerate() {
                let v = x[r * d + c];
                let pass = (!spec.relu || v > 0.0)
                    && (!drop || (mix32(row_hash ^ (c as u32).wrapping_mul(0x9E37_79B9) ^ s[1]) >> 8) < threshold);
                if pass {
                    *yv = v * scale;
                    *kv = 1;
                }
            }
        });
    }
    let mask = kept
        .par_chunks(WORD)
        .map(|bits| bits.iter().enumerate().fold(0u32, |w, (i, &b)| w | (u32::from(b) << i)))
        .collect();
    (y, mask)
}

/// The CPU reference of the backward pass: `dy * bit * scale`.
pub fn reference_grad(dy: &[f32], mask: &[u32], n: usize, d: usize, scale: f32) -> Vec<f32> {
    use rayon::prelude::*;
    (0..n * d)
        .into_par_iter()
        .map(|p| if (mask[p / WORD] >> (p % WORD)) & 1 == 1 { dy[p] * scale } else { 0.0 })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_asked_share_and_depends_on_row_column_and_seed() {
        let s = [seed_word(0.25), seed_word(0.75)];
        for prob in [0.1, 0.5, 0.9] {
            let t = keep_threshold(prob);
            let kept =
                (0..200u32).flat_map(|r| (0..256u32).map(move |c| (r, c))).filter(|&(r, c)| keeps(s, r, c, t)).count();
            let share = kept as f64 / (200.0 * 256.0);
            assert!((share - (1.0 - prob)).abs() < 0.01, "prob {prob}: kept {share}");
        }
        let t = keep_threshold(0.5);
        let row = |r: u32, s: [u32; 2]| (0..256u32).map(|c| keeps(s, r, c, t)).collect::<Vec<_>>();
        assert_ne!(row(1, s), row(2, s));
        assert_ne!(row(1, s), row(1, [s[0] + 1, s[1]]));
        assert_ne!(row(1, s), row(1, [s[0], s[1] + 1]));
        assert_eq!(keep_threshold(0.0), 1 << 24);
    }

    #[test]
    fn reference_masks_the_gradient_where_the_output_is_zero() {
        let (n, d) = (3, 37);
        let x: Vec<f32> = (0..n * d).map(|i| ((i * 7919) % 13) as f32 - 6.0).collect();
        let spec = ReluDropout { relu: true, prob: 0.5 };
        let (y, mask) = reference(&x, n, d, Some(&[5, 9, 2]), [0.1, 0.2], spec);
        assert_eq!(mask.len(), (n * d).div_ceil(32));
        let dx = reference_grad(&vec![1.0; n * d], &mask, n, d, keep_scale(0.5));
        for p in 0..n * d {
            assert_eq!(dx[p] != 0.0, y[p] != 0.0, "entry {p}");
            if y[p] != 0.0 {
                assert_eq!(y[p], x[p] * 2.0);
            }
        }
        // the same global row id gives the same row wherever it sits
        let (y2, _) = reference(&x[2 * d..], 1, d, Some(&[2]), [0.1, 0.2], spec);
        let (y3, _) = reference(&x[2 * d..], 1, d, Some(&[2]), [0.1, 0.2], spec);
        assert_eq!(y2, y3);
        assert_eq!(y2, y[2 * d..]);
    }

    #[test]
    fn reference_bits_are_keeps_entry_by_entry_at_odd_sizes() {
        let seed = [0.3f32, 0.7];
        let s = [seed_word(seed[0]), seed_word(seed[1])];
        for (n, d) in [(7usize, 37usize), (33, 5), (1, 1), (5, 64)] {
            let x: Vec<f32> = (0..n * d).map(|i| ((i * 7919) % 11) as f32 - 5.0).collect();
            for spec in [ReluDropout { relu: true, prob: 0.4 }, ReluDropout { relu: false, prob: 0.4 }] {
                let (_, mask) = reference(&x, n, d, None, seed, spec);
                let t = keep_threshold(spec.prob);
                for p in 0..n * d {
                    let (r, c) = ((p / d) as u32, (p % d) as u32);
                    let want = (!spec.relu || x[p] > 0.0) && keeps(s, r, c, t);
                    assert_eq!((mask[p / WORD] >> (p % WORD)) & 1 == 1, want, "{n}x{d} entry {p}");
                }
            }
        }
    }
}
