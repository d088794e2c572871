//! CBSR conversions: scatter to dense, gather from dense, index packing (four u8 column ids to a
//! u32 word) and unpacking; one thread per entry (or packed word).

use super::matrix::{cbsr_col, CbsrDev};
use crate::device::cube_count;
use cubecl::prelude::*;

#[cube(launch_unchecked)]
fn cbsr_scatter<F: Float>(
    values: &Array<F>,
    idx: &Array<u32>,
    out: &mut Tensor<F>,
    n: usize,
    #[comptime] k: usize,
    #[comptime] packed: bool,
    #[define(F)] _dtype: StorageType,
) {
    let p = ABSOLUTE_POS;
    if p >= n * k {
        terminate!();
    }
    let row = p / k;
    let t = p % k;
    out[row * out.stride(0) + cbsr_col(idx, row, t, k, packed)] = values[p];
}

#[cube(launch_unchecked)]
fn cbsr_gather_kernel<F: Float>(
    x: &Tensor<F>,
    idx: &Array<u32>,
    out: &mut Array<F>,
    n: usize,
    #[comptime] k: usize,
    #[comptime] packed: bool,
    #[define(F)] _dtype: StorageType,
) {
    let p = ABSOLUTE_POS;
    if p >= n * k {
        terminate!();
    }
    let row = p / k;
    let t = p % k;
    out[p] = x[row * x.stride(0) + cbsr_col(idx, row, t, k, packed)];
}

#[cube(launch_unchecked)]
fn cbsr_unpack(idx: &Array<u32>, out: &mut Array<u32>, n: usize, #[comptime] k: usize) {
    let p = ABSOLUTE_POS;
    if p >= n * k {
        terminate!();
    }
    out[p] = cbsr_col(idx, p / k, p % k, k, true) as u32;
}

#[cube(launch_unchecked)]
fn cbsr_pack(idx: &Array<u32>, out: &mut Array<u32>, n: usize, #[comptime] k: usize) {
    let words = comptime!(k.div_ceil(4));
    let p = ABSOLUTE_POS;
    if p >= n * words {
        terminate!();
    }
    let row = p / words;
    let wd = p % words;
    let mut word = 0u32;
    #[unroll]
    for b in 0..4usize {
        let t = wd * 4 + b;
        if t < k {
            word |= idx[row * k + t] << (8 * b as u32);
        }
    }
    out[p] = word;
}

fn elementwise_count<R: Runtime>(client: &ComputeClient<R>, total: usize) -> (CubeCount, CubeDim) {
    let threads = 256u32;
    (cube_count(client, total.div_ceil(threads as usize)), CubeDim::new_1d(threads))
}

/// Scatters the CBSR values into `out` (`[n, dim]`, zero-initialised by the caller).
pub fn launch_scatter<R: Runtime>(
    client: &ComputeClient<R>,
    c: &CbsrDev<R>,
    out: TensorBinding<R>,
    dtype: StorageType,
) {
    if c.n * c.k == 0 {
        return;
    }
    let (count, dim) = elementwise_count(client, c.n * c.k);
    unsafe {
        cbsr_scatter::launch_unchecked::<R>(
            client,
            count,
            dim,
            c.values.clone().into_array_arg(),
            c.indices.clone().into_array_arg(),
            out.into_tensor_arg(),
            c.n,
            c.k,
            c.packed,
            dtype,
        );
    }
}

/// Gathers `x` (`[n, dim]`) at the CBSR pattern into `out` (`[n * k]`).
pub fn launch_gather<R: Runtime>(
    client: &ComputeClient<R>,
    x: TensorBinding<R>,
    c: &CbsrDev<R>,
    out: TensorBinding<R>,
    dtype: StorageType,
) {
    if c.n * c.k == 0 {
        return;
    }
    let (count, dim) = elementwise_count(client, c.n * c.k);
    unsafe {
        cbsr_gather_kernel::launch_unchecked::<R>(
            client,
            count,
            dim,
            x.into_tensor_arg(),
            c.indices.clone().into_array_arg(),
            out.into_array_arg(),
            c.n,
            c.k,
            c.packed,
            dtype,
        );
    }
}

/// Unpacks packed indices into `out` (`[n * k]` u32).
pub fn launch_unpack<R: Runtime>(client: &ComputeClient<R>, c: &CbsrDev<R>, out: TensorBinding<R>) {
    if c.n * c.k == 0 {
        return;
    }
    let (count, dim) = elementwise_count(client, c.n * c.k);
    unsafe {
        cbsr_unpack::launch_unchecked::<R>(
            client,
            count,
            dim,
            c.indices.clone().into_array_arg(),
            out.into_array_arg(),
            c.n,
            c.k,
        );
    }
}

/// Packs `[n * k]` u32 indices (each < 256) into `out` (`[n * ceil(k / 4)]`).
pub fn launch_pack<R: Runtime>(
    client: &ComputeClient<R>,
    idx: TensorBinding<R>,
    n: usize,
    k: usize,
    out: TensorBinding<R>,
) {
    let words = k.div_ceil(4);
    if n * words == 0 {
        return;
    }
    let (count, dim) = elementwise_count(client, n * words);
    unsafe {
        cbsr_pack::launch_unchecked::<R>(client, count, dim, idx.into_array_arg(), out.into_array_arg(), n, k);
    }
}
