//! The neighbour sampler on the device: one thread per seed, Floyd's algorithm over the seed's
//! row (see [`super::reference::positions`]), positions sorted, then turned into columns.

use crate::device::cube_count;
use cubecl::prelude::*;

/// Threads per cube.
const THREADS: u32 = 128;

#[cube]
fn mix(x: u32) -> u32 {
    crate::dropout::mix32_dev(x)
}

#[cube(launch)]
#[allow(clippy::too_many_arguments)]
fn sample_kernel(
    row_ptr: &Array<u32>,
    col_idx: &Array<u32>,
    seeds: &Array<u32>,
    counts: &mut Array<u32>,
    picks: &mut Array<u32>,
    n_seeds: u32,
    fanout: u32,
    k0: u32,
    k1: u32,
) {
    let s = ABSOLUTE_POS;
    if s >= n_seeds as usize {
        terminate!();
    }
    let v = seeds[s];
    let start = row_ptr[v as usize];
    let d = row_ptr[v as usize + 1] - start;
    let base = s * fanout as usize;
    let mut k = d;
    if d <= fanout {
        for t in 0..d {
            picks[base + t as usize] = col_idx[(start + t) as usize];
        }
    } else {
        k = fanout;
        // Floyd's algorithm: positions first, in the output slots
        let mut n = 0u32;
        for j in d - fanout..d {
            let t = mix(mix(k0 ^ v) ^ (j * 0x9E37_79B9u32) ^ k1) % (j + 1u32);
            let mut taken = false;
            for q in 0..n {
                if picks[base + q as usize] == t {
                    taken = true;
                }
            }
            let mut p = t;
            if taken {
                p = j;
            }
            picks[base + n as usize] = p;
            n += 1u32;
        }
        // insertion sort of the positions, then their columns
        for q in 1..fanout {
            let x = picks[base + q as usize];
            let mut r = q;
            let mut moving = true;
            while moving {
                // no short-circuit: read slot r - 1 only when r > 0
                if r == 0 {
                    moving = false;
                } else {
                    let y = picks[base + (r - 1u32) as usize];
                    if y > x {
                        picks[base + r as usize] = y;
                        r -= 1u32;
                    } else {
                        moving = false;
                    }
                }
            }
            picks[base + r as usize] = x;
        }
        for q in 0..fanout {
            picks[base + q as usize] = col_idx[(start + picks[base + q as usize]) as usize];
        }
    }
    for q in k..fanout {
        picks[base + q as usize] = u32::MAX;
    }
    counts[s] = k;
}

/// The device form of [`super::reference::sample_neighbors`]: `counts` (`[n_seeds]`) and `picks`
/// (`[n_seeds * fanout]`), 4-byte integers, from a CSR whose columns are 4-byte integers.
#[allow(clippy::too_many_arguments)]
pub fn launch_sample_neighbors<R: Runtime>(
    client: &ComputeClient<R>,
    row_ptr: TensorBinding<R>,
    col_idx: TensorBinding<R>,
    seeds: TensorBinding<R>,
    counts: TensorBinding<R>,
    picks: TensorBinding<R>,
    n_seeds: usize,
    fanout: usize,
    key: [u32; 2],
) {
    if n_seeds == 0 || fanout == 0 {
        return;
    }
    sample_kernel::launch::<R>(
        client,
        cube_count(client, n_seeds.div_ceil(THREADS as usize)),
        CubeDim::new_1d(THREADS),
        row_ptr.into_array_arg(),
        col_idx.into_array_arg(),
        seeds.into_array_arg(),
        counts.into_array_arg(),
        picks.into_array_arg(),
        n_seeds as u32,
        fanout as u32,
        key[0],
        key[1],
    );
}
