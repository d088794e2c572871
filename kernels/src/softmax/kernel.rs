//! Edge softmax over CSR rows and its backward: one cube per row, lanes striding over the
//! row's edges, reductions by plane shuffles (one plane per cube) or shared memory.

use crate::device::{cube_count, has_plane_ops, plane_size};
use crate::reduce::{segment_max, segment_sum};
use cubecl::prelude::*;

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn edge_softmax_rows<F: Float>(
    row_ptr: &Array<i32>,
    y_or_scores: &Array<F>,
    dy: &Array<F>,
    out: &mut Array<F>,
    n_rows: usize,
    heads: usize,
    #[comptime] grad: bool,
    #[comptime] plane: bool,
    #[comptime] lanes: u32,
    #[define(F)] _dtype: StorageType,
) {
    let row = CUBE_POS;
    if row >= n_rows {
        terminate!(); // uniform: the whole cube shares the row
    }
    let mut smem = SharedMemory::<f32>::new(comptime!(if plane { 1usize } else { lanes as usize }));
    let start = usize::cast_from(row_ptr[row]);
    let end = usize::cast_from(row_ptr[row + 1]);
    let lane = UNIT_POS_X as usize;
    for h in 0..heads {
        if comptime!(grad) {
            let mut dot = f32::new(0.0);
            let mut e = start + lane;
            while e < end {
                let k = e * heads + h;
                dot += f32::cast_from(y_or_scores[k]) * f32::cast_from(dy[k]);
                e += lanes as usize;
            }
            let dot = segment_sum(dot, &mut smem, lanes, plane);
            let mut e = start + lane;
            while e < end {
                let k = e * heads + h;
                let y = f32::cast_from(y_or_scores[k]);
                out[k] = F::cast_from(y * (f32::cast_from(dy[k]) - dot));
                e += lanes as usize;
            }
        } else {
            let mut m = f32::min_value();
            let mut e = start + lane;
            while e < end {
                m = f32::max(m, f32::cast_from(y_or_scores[e * heads + h]));
                e += lanes as usize;
            }
            let m = segment_max(m, &mut smem, lanes, plane);
            let mut z = f32::new(0.0);
            let mut e = start + lane;
            while e < end {
                z += f32::exp(f32::cast_from(y_or_scores[e * heads + h]) - m);
                e += lanes as usize;
            }
            let z = segment_sum(z, &mut smem, lanes, plane);
            let inv = f32::new(1.0) / z;
            let mut e = start + lane;
            while e < end {
                let k = e * heads + h;
                out[k] = F::cast_from(f32::exp(f32::cast_from(y_or_scores[k]) - m) * inv);
                e += lanes as usize;
            }
        }
    }
}

/// Softmax of `scores` (`[nnz * heads]`) over each row's edges into `out`; with `dy`, the
/// backward from the softmax output `y` (passed as `scores`).
#[allow(clippy::too_many_arguments)]
pub fn launch_edge_softmax<R: Runtime>(
    client: &ComputeClient<R>,
    n_rows: usize,
    row_ptr: TensorBinding<R>,
    scores: TensorBinding<R>,
    dy: Option<TensorBinding<R>>,
    out: TensorBinding<R>,
    heads: usize,
    dtype: StorageType,
    planes: crate::config::PlaneUse,
) {
    if n_rows == 0 {
        return;
    }
    let plane = has_plane_ops(client, planes) && plane_size(client) == 32;
    let lanes = 32u32;
    let grad = dy.is_some();
    let dy = dy.unwrap_or_else(|| scores.clone());
    unsafe {
        edge_softmax_rows::launch_unchecked::<R>(
            client,
            cube_count(client, n_rows),
            CubeDim::new_1d(lanes),
            row_ptr.into_array_arg(),
            scores.into_array_arg(),
            dy.into_array_arg(),
            out.into_array_arg(),
            n_rows,
            heads.max(1),
            grad,
            plane,
            lanes,
            dtype,
        );
    }
}
