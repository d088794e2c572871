//! CPU reference of the k-max-pooling approximator: window maxima (1D or 2D windows, with
//! `channels` maxima per window) into the CBSR layout.

use rayon::prelude::*;

/// Shape of the pooling windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PoolLayout {
    /// The feature vector is cut into `windows` consecutive runs,
    /// window `w` = `[w * d / windows, (w + 1) * d / windows)`.
    OneD,
    /// The feature vector is a row-major `s x s` matrix (`d = s^2`) cut into a `q x q` grid of
    /// windows (`windows = q^2`, `q <= s`); window `a * q + b` covers matrix rows
    /// `[a s / q, (a + 1) s / q)` and columns `[b s / q, (b + 1) s / q)`.
    TwoD,
}

/// A k-max-pooling configuration: `windows * channels` entries are kept per row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct PoolSpec {
    /// Number of windows.
    pub windows: usize,
    /// Window shape.
    pub layout: PoolLayout,
    /// Maxima kept per window (the paper's channel depth; each pass masks the previous picks).
    pub channels: usize,
}

/// Integer square root when `v` is a perfect square.
pub fn exact_sqrt(v: usize) -> Option<usize> {
    let s = (v as f64).sqrt().round() as usize;
    (s * s == v).then_some(s)
}

impl PoolSpec {
    /// Number of CBSR entries per row.
    pub fn k(&self) -> usize {
        self.windows * self.channels
    }

    /// Checks the configuration against a feature width; the error says what is wrong.
    pub fn check(&self, d: usize) -> Result<(), String> {
        if self.windows == 0 || self.channels == 0 {
            return Err("windows and channels must be >= 1".into());
        }
        match self.layout {
            PoolLayout::OneD => {
                if self.windows > d {
                    return Err(format!("{} windows do not fit {d} features", self.windows));
                }
                let smallest = d / self.windows;
                if smallest < self.channels {
                    return Err(format!("windows of {smallest} features cannot hold {} channels", self.channels));
                }
            }
            PoolLayout::TwoD => {
                let s = exact_sqrt(d).ok_or_else(|| format!("2D windows need a square width, got {d}"))?;
                let q = exact_sqrt(self.windows)
                    .ok_or_else(|| format!("2D windows need a square window count, got {}", self.windows))?;
                if q > s {
                    return Err(format!("{q}x{q} windows do not fit a {s}x{s} feature matrix"));
                }
                let side = s / q;
                if side * side < self.channels {
                    return Err(format!("windows of {side}x{side} features cannot hold {} channels", self.channels));
                }
            }
        }
        Ok(())
    }

    /// Feature ids of window `w` for a width `d`, ascending.
    pub fn window(&self, w: usize, d: usize) -> Vec<usize> {
        match self.layout {
            PoolLayout::OneD => (w * d / self.windows..(w + 1) * d / self.windows).collect(),
            PoolLayout::TwoD => {
                let s = exact_sqrt(d).expect("checked");
                let q = exact_sqrt(self.windows).expect("checked");
                let (a, b) = (w / q, w % q);
                let mut ids = Vec::new();
                for r in a * s / q..(a + 1) * s / q {
                    for c in b * s / q..(b + 1) * s / q {
                        ids.push(r * s + c);
                    }
                }
                ids
            }
        }
    }
}

/// Pools each row of `x` (`[n, d]`): entry `w * channels + c` of a row is the `c`-th largest
/// value of window `w` (total order, lower feature id first on ties) and its feature id.
pub fn maxpool(x: &[f64], n: usize, d: usize, spec: &PoolSpec) -> (Vec<f64>, Vec<u32>) {
    assert_eq!(x.len(), n * d);
    spec.check(d).expect("invalid pooling spec");
    let k = spec.k();
    let windows: Vec<Vec<usize>> = (0..spec.windows).map(|w| spec.window(w, d)).collect();
    let mut values = vec![0.0f64; n * k];
    let mut indices = vec![0u32; n * k];
    values.par_chunks_mut(k).zip(indices.par_chunks_mut(k)).enumerate().for_each(|(i, (v, ix))| {
        let row = &x[i * d..(i + 1) * d];
        for (w, ids) in windows.iter().enumerate() {
            let mut order = ids.clone();
            order.sort_by(|&a, &b| row[b].total_cmp(&row[a]).then(a.cmp(&b)));
            for c in 0..spec.channels {
                ix[w * spec.channels + c] = order[c] as u32;
                v[w * spec.channels + c] = row[order[c]];
            }
        }
    });
    (values, indices)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_d_and_two_d_windows() {
        // 4x4 feature matrix, values = feature id, except a tie in the first window
        let mut x: Vec<f64> = (0..16).map(|v| v as f64).collect();
        x[4] = 5.0; // tie between features 4 and 5 (both 5.0)
        let one = PoolSpec { windows: 4, layout: PoolLayout::OneD, channels: 1 };
        let (v, i) = maxpool(&x, 1, 16, &one);
        assert_eq!(i, vec![3, 7, 11, 15]);
        assert_eq!(v, vec![3.0, 7.0, 11.0, 15.0]);
        let two = PoolSpec { windows: 4, layout: PoolLayout::TwoD, channels: 2 };
        let (v, i) = maxpool(&x, 1, 16, &two);
        // window 0 = features {0,1,4,5}: 5.0 at 4 and 5 -> 4 first, then 5
        assert_eq!(&i[..2], &[4, 5]);
        assert_eq!(&v[..2], &[5.0, 5.0]);
        assert_eq!(&i[2..], &[7, 6, 13, 12, 15, 14]);
    }

    #[test]
    fn checks_reject_bad_shapes() {
        assert!(PoolSpec { windows: 4, layout: PoolLayout::TwoD, channels: 1 }.check(15).is_err());
        assert!(PoolSpec { windows: 3, layout: PoolLayout::TwoD, channels: 1 }.check(16).is_err());
        assert!(PoolSpec { windows: 8, layout: PoolLayout::OneD, channels: 3 }.check(16).is_err());
        assert!(PoolSpec { windows: 5, layout: PoolLayout::OneD, channels: 2 }.check(17).is_ok());
    }
}
