//! The degree normalisations of a sampled block in one launch: for each destination row its
//! edge count, `1 / count` and `1 / sqrt(count)` (and, for models that sum their neighbours,
//! the whole graph's in-degree and the weight `in-degree / count` of each of its sampled
//! edges), and for each source column its whole-graph out-degree with the same two inverses.
//! A zero degree gives zero inverses. Burn's tensor ops take some 25 launches for the same.

use crate::device::per_entry;
use cubecl::prelude::*;

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn block_norms(
    row_ptr: &Array<u32>,
    src: &Array<u32>,
    in_full: &Array<f32>,
    out_full: &Array<f32>,
    in_deg: &mut Array<f32>,
    in_inv: &mut Array<f32>,
    in_inv_sqrt: &mut Array<f32>,
    out_deg: &mut Array<f32>,
    out_inv: &mut Array<f32>,
    out_inv_sqrt: &mut Array<f32>,
    rows_full: &mut Array<f32>,
    share: &mut Array<f32>,
    n_dst: usize,
    n_src: usize,
    #[comptime] weighted: bool,
) {
    let i = ABSOLUTE_POS;
    if i < n_dst {
        let c = f32::cast_from(row_ptr[i + 1] - row_ptr[i]);
        let mut inv = 0.0f32;
        let mut inv_sqrt = 0.0f32;
        if c > 0.0 {
            inv = 1.0f32 / c;
            inv_sqrt = 1.0f32 / f32::sqrt(c);
        }
        in_deg[i] = c;
        in_inv[i] = inv;
        in_inv_sqrt[i] = inv_sqrt;
        if weighted {
            let full = in_full[src[i] as usize];
            rows_full[i] = full;
            share[i] = full / f32::max(c, 1.0f32);
        }
    } else if i < n_dst + n_src {
        let j = i - n_dst;
        let d = out_full[src[j] as usize];
        let mut inv = 0.0f32;
        let mut inv_sqrt = 0.0f32;
        if d != 0.0 {
            inv = 1.0f32 / f32::max(d, 1.0f32);
            inv_sqrt = 1.0f32 / f32::sqrt(f32::max(d, 1.0f32));
        }
        out_deg[j] = d;
        out_inv[j] = inv;
        out_inv_sqrt[j] = inv_sqrt;
    }
}

/// The outputs of [`launch_block_norms`], f32 each.
pub struct BlockNormArrays<R: Runtime> {
    /// `[n_dst]` each: the rows' edge counts, `1 / count` and `1 / sqrt(count)`.
    pub rows: [TensorBinding<R>; 3],
    /// `[n_src]` each: the columns' whole-graph out-degrees and their two inverses.
    pub cols: [TensorBinding<R>; 3],
    /// `[n_dst]` each (written only when `weighted`): the rows' whole-graph in-degrees and each
    /// row's edge weight `in-degree / max(count, 1)`.
    pub weights: [TensorBinding<R>; 2],
}

/// The degree normalisations of the block with row pointer `row_ptr` (`[n_dst + 1]`, i32) over
/// the sources `src` (`[n_src]` global ids, i32; the destinations first), from the whole
/// graph's in- and out-degrees `in_full` / `out_full` (f32, one per node), in one launch.
#[allow(clippy::too_many_arguments)]
pub fn launch_block_norms<R: Runtime>(
    client: &ComputeClient<R>,
    row_ptr: TensorBinding<R>,
    src: TensorBinding<R>,
    in_full: TensorBinding<R>,
    out_full: TensorBinding<R>,
    out: BlockNormArrays<R>,
    n_dst: usize,
    n_src: usize,
    weighted: bool,
) {
    let Some((count, dim)) = per_entry(client, n_dst + n_src) else {
        return;
    };
    let [in_deg, in_inv, in_inv_sqrt] = out.rows;
    let [out_deg, out_inv, out_inv_sqrt] = out.cols;
    let [rows_full, share] = out.weights;
    unsafe {
        block_norms::launch_unchecked::<R>(
            client,
            count,
            dim,
            row_ptr.into_array_arg(),
            src.into_array_arg(),
            in_full.into_array_arg(),
            out_full.into_array_arg(),
            in_deg.into_array_arg(),
            in_inv.into_array_arg(),
            in_inv_sqrt.into_array_arg(),
            out_deg.into_array_arg(),
            out_inv.into_array_arg(),
            out_inv_sqrt.into_array_arg(),
            rows_full.into_array_arg(),
            share.into_array_arg(),
            n_dst,
            n_src,
            weighted,
        );
    }
}
