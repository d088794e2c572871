//! SDDMM on edge groups: one group per plane (CUDA: 32 lanes, several planes per cube) or per
//! cube (devices without plane ops: shared-memory reductions). The lanes of a group are split
//! into `32 / lv` edge lanes times `lv` feature lanes (sub-groups for small widths), so a step
//! handles several edges at once; each head's dot product is reduced across its `lv` lanes.
//! The masked variant (`argmax` given) is the edge-weight gradient of a max-reduce SpMM:
//! only features whose argmax is the edge contribute.

use crate::device::{cube_count, has_plane_ops, lanes_for, plane_size, vector_width, CsrDev};
use crate::reduce::segment_sum;
use cubecl::prelude::*;

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn sddmm_groups<F: Float, N: Size>(
    group_ptr: &Array<i32>,
    group_row: &Array<i32>,
    col_idx: &Array<i32>,
    a: &Tensor<Vector<F, N>>,
    b: &Tensor<Vector<F, N>>,
    argmax: &Tensor<Vector<i32, N>>,
    out: &mut Array<F>,
    n_groups: usize,
    heads: usize,
    #[comptime] lv: u32,
    #[comptime] plane: bool,
    #[comptime] masked: bool,
    #[comptime] cube_units: u32,
    #[define(F)] _dtype: StorageType,
) {
    let mut smem = SharedMemory::<f32>::new(comptime!(if plane { 1usize } else { cube_units as usize }));
    let g = CUBE_POS * CUBE_DIM_Y as usize + UNIT_POS_Y as usize;
    let mut start = 0usize;
    let mut end = 0usize;
    let mut row = 0usize;
    if g < n_groups {
        start = usize::cast_from(group_ptr[g]);
        end = usize::cast_from(group_ptr[g + 1]);
        row = usize::cast_from(group_row[g]);
    }
    let le = (CUBE_DIM_X / lv) as usize;
    let sub = (UNIT_POS_X / lv) as usize;
    let lane = (UNIT_POS_X % lv) as usize;
    let n_vec = a.shape(1) / N::value();
    let vph = n_vec / heads;
    let a_rs = a.stride(0) / N::value();
    let b_rs = b.stride(0) / N::value();
    let m_rs = argmax.stride(0) / N::value();
    let mut base = start;
    while base < end {
        let e = base + sub;
        let active = e < end;
        let mut j = 0usize;
        if active {
            j = usize::cast_from(col_idx[e]);
        }
        for h in 0..heads {
            let mut p = f32::new(0.0);
            if active {
                let mut v = lane;
                while v < vph {
                    let c = h * vph + v;
                    let av = Vector::<f32, N>::cast_from(a[row * a_rs + c]);
                    let bv = Vector::<f32, N>::cast_from(b[j * b_rs + c]);
                    if comptime!(masked) {
                        let hit = argmax[row * m_rs + c].equal(Vector::new(e as i32));
                        let prod = select_many(hit, av * bv, Vector::new(0.0));
                        p += prod.dot(Vector::new(1.0));
                    } else {
                        p += av.dot(bv);
                    }
                    v += lv as usize;
                }
            }
            let total = segment_sum(p, &mut smem, lv, plane);
            if active && lane == 0 {
                out[e * heads + h] = F::cast_from(total);
            }
        }
        base += le;
    }
}

/// Launches `out[e, h] = <a[row e, head h], b[col e, head h]>` (`out` contiguous
/// `[nnz * heads]`), or, with `argmax`, the masked variant.
#[allow(clippy::too_many_arguments)]
pub fn launch_sddmm<R: Runtime>(
    client: &ComputeClient<R>,
    csr: &CsrDev<R>,
    a: TensorBinding<R>,
    b: TensorBinding<R>,
    argmax: Option<TensorBinding<R>>,
    out: TensorBinding<R>,
    heads: usize,
    dtype: StorageType,
) {
    let f = a.shape[1];
    if csr.n_groups == 0 {
        return;
    }
    let heads = heads.max(1);
    let mut mats = vec![&a, &b];
    if let Some(m) = argmax.as_ref() {
        mats.push(m);
    }
    let vec = vector_width(client, dtype.size(), (f / heads).max(1), &mats);
    let vph = (f / heads / vec).max(1);
    let plane = has_plane_ops(client, csr.config.planes) && plane_size(client) == 32;
    let lanes_x = 32u32;
    let lv = lanes_for(vph, lanes_x as usize);
    let slots = if plane { 4u32 } else { 1u32 };
    let cube_dim = CubeDim::new_2d(lanes_x, slots);
    let count = cube_count(client, csr.n_groups.div_ceil(slots as usize));
    let masked = argmax.is_some();
    let m = argmax.unwrap_or_else(|| crate::device::alloc_matrix::<R>(client, 1, vec, 4));
    unsafe {
        sddmm_groups::launch_unchecked::<R>(
            client,
            count,
            cube_dim,
            vec,
            csr.group_ptr.clone().into_array_arg(),
            csr.group_row.clone().into_array_arg(),
            csr.col_idx.clone().into_array_arg(),
            a.into_tensor_arg(),
            b.into_tensor_arg(),
            m.into_tensor_arg(),
            out.into_array_arg(),
            csr.n_groups,
            heads,
            lv,
            plane,
            masked,
            lanes_x * slots,
            dtype,
        );
    }
}
