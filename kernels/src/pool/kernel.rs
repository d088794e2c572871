//! k-max-pooling on the GPU: one thread per (row, window); the `c`-th channel is the best entry
//! of the window that ranks strictly after channel `c - 1` in (value desc, column asc) order,
//! so channels need no mask buffer and ties are broken exactly like the reference.

use crate::device::cube_count;
use crate::maxk::kernel::ordered_key;
use crate::pool::{PoolLayout, PoolSpec};
use cubecl::prelude::*;

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn maxpool_windows<F: Float>(
    x: &Tensor<F>,
    values: &mut Array<F>,
    indices: &mut Array<u32>,
    n: usize,
    #[comptime] dim: usize,
    #[comptime] windows: usize,
    #[comptime] channels: usize,
    #[comptime] two_d: bool,
    #[comptime] side: usize,
    #[comptime] grid: usize,
    #[define(F)] _dtype: StorageType,
) {
    let id = ABSOLUTE_POS;
    if id >= n * windows {
        terminate!();
    }
    let row = id / windows;
    let w = id % windows;
    let x_rs = x.stride(0);
    let k = comptime!(windows * channels);
    // window extent: 1D = [lo, hi); 2D = rows [r0, r1) x cols [c0, c1) of the side x side matrix
    let mut lo = w * dim / windows;
    let mut hi = (w + 1) * dim / windows;
    let mut r0 = 0usize;
    let mut r1 = 1usize;
    if comptime!(two_d) {
        let a = w / grid;
        let b = w % grid;
        r0 = a * side / grid;
        r1 = (a + 1) * side / grid;
        lo = b * side / grid;
        hi = (b + 1) * side / grid;
    }
    let mut prev_key = 0u32;
    let mut prev_col = 0usize;
    for ch in 0..channels {
        let mut best_key = 0u32;
        let mut best_col = 0usize;
        let mut found = false;
        for r in r0..r1 {
            for cc in lo..hi {
                let mut col = cc;
                if comptime!(two_d) {
                    col = r * side + cc;
                }
                let key = ordered_key(f32::cast_from(x[row * x_rs + col]));
                // ranks after the previous pick?
                let after = ch == 0 || key < prev_key || (key == prev_key && col > prev_col);
                // better than the best so far?
                let better = !found || key > best_key || (key == best_key && col < best_col);
                if after && better {
                    best_key = key;
                    best_col = col;
                    found = true;
                }
            }
        }
        values[row * k + w * channels + ch] = x[row * x_rs + best_col];
        indices[row * k + w * channels + ch] = best_col as u32;
        prev_key = best_key;
        prev_col = best_col;
    }
}

/// Launches k-max-pooling of `x` (`[n, dim]`) into `values` / unpacked `indices` (`[n * k]`).
pub fn launch_maxpool<R: Runtime>(
    client: &ComputeClient<R>,
    x: TensorBinding<R>,
    values: TensorBinding<R>,
    indices: TensorBinding<R>,
    spec: PoolSpec,
    dtype: StorageType,
) {
    let (n, dim) = (x.shape[0], x.shape[1]);
    if n == 0 {
        return;
    }
    let two_d = spec.layout == PoolLayout::TwoD;
    let side = if two_d { crate::pool::reference::exact_sqrt(dim).unwrap_or(1) } else { 1 };
    let grid = if two_d { crate::pool::reference::exact_sqrt(spec.windows).unwrap_or(1) } else { 1 };
    let threads = 256u32;
    let total = n * spec.windows;
    unsafe {
        maxpool_windows::launch_unchecked::<R>(
            client,
            cube_count(client, total.div_ceil(threads as usize)),
            CubeDim::new_1d(threads),
            x.into_tensor_arg(),
            values.into_array_arg(),
            indices.into_array_arg(),
            n,
            dim,
            spec.windows,
            spec.channels,
            two_d,
            side,
            grid,
            dtype,
        );
    }
}
