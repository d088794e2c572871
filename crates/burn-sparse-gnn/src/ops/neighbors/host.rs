//! NdArray implementation of [`super::NeighborOps`], and the host form every backend may use.

use super::NeighborOps;
use super::{BlockPrim, BlockShape, BlockStructure};
use crate::ops::host_io::{host_csr_u32, read_u32, write_ids};
use crate::ops::primitive::CsrPrimitive;
use burn::tensor::backend::Backend;
use burn::tensor::ops::IntTensor;
use burn_ndarray::FloatNdArrayElement;
use burn_ndarray::IntNdArrayElement;
use burn_ndarray::NdArray;
use burn_ndarray::NdArrayTensor;
use burn_ndarray::QuantElement;
use burn_ndarray::SharedArray;
use sparse_gnn_kernels::neighbors::reference;

impl<E: FloatNdArrayElement, I: IntNdArrayElement, Q: QuantElement> NeighborOps for NdArray<E, I, Q>
where
    NdArrayTensor: From<SharedArray<E>>,
    NdArrayTensor: From<SharedArray<I>>,
{
}

fn signed<B: Backend>(v: Vec<u32>, device: &B::Device) -> IntTensor<B> {
    write_ids::<B>(v.into_iter().map(|x| x as i32).collect(), device)
}

/// The host form of [`NeighborOps::sample_neighbors`].
pub(crate) fn sample_neighbors<B: Backend>(
    csr: &CsrPrimitive<B>,
    seeds: IntTensor<B>,
    fanout: usize,
    key: [u32; 2],
) -> (IntTensor<B>, IntTensor<B>) {
    let device = B::int_device(&seeds);
    let (rp, ci) = host_csr_u32::<B>(csr);
    let seeds = read_u32::<B>(seeds);
    let (counts, picks) = reference::sample_neighbors(&rp, &ci, &seeds, fanout, key);
    (signed::<B>(counts, &device), signed::<B>(picks, &device))
}

/// The host form of [`NeighborOps::sample_block`].
pub(crate) fn sample_block<B: Backend>(
    csr: &CsrPrimitive<B>,
    dst: IntTensor<B>,
    fanout: usize,
    key: [u32; 2],
) -> BlockPrim<IntTensor<B>> {
    let device = B::int_device(&dst);
    let (rp, ci) = host_csr_u32::<B>(csr);
    let dst = read_u32::<B>(dst);
    let b = reference::sample_block(&rp, &ci, &dst, fanout, key);
    BlockPrim {
        n_src: b.src.len(),
        row_ptr: signed::<B>(b.row_ptr, &device),
        col_idx: signed::<B>(b.col_idx, &device),
        src: signed::<B>(b.src, &device),
    }
}

/// The host form of [`NeighborOps::block_structure`]: [`EdgeGroups`] and [`transpose`] of the
/// block read back, uploaded.
pub(crate) fn block_structure<B: Backend>(
    row_ptr: IntTensor<B>,
    col_idx: IntTensor<B>,
    shape: BlockShape,
) -> BlockStructure<IntTensor<B>> {
    use crate::ops::primitive::{CsrPrim, GraphPrim};
    use sparse_gnn_kernels::csr::{transpose, CsrRef};
    let device = B::int_device(&row_ptr);
    let mut ptr = read_u32::<B>(row_ptr);
    ptr.truncate(shape.n_dst + 1);
    let mut cols = read_u32::<B>(col_idx);
    cols.truncate(shape.nnz);
    if shape.self_loops {
        let mut p = Vec::with_capacity(ptr.len());
        let mut c = Vec::with_capacity(cols.len() + shape.n_dst);
        p.push(0u32);
        for i in 0..shape.n_dst {
            c.extend_from_slice(&cols[ptr[i] as usize..ptr[i + 1] as usize]);
            c.push(i as u32);
            p.push(c.len() as u32);
        }
        (ptr, cols) = (p, c);
    }
    let rp: Vec<usize> = ptr.iter().map(|&v| v as usize).collect();
    // empty arrays padded to one entry, as a graph's uploads are
    let pad = |mut v: Vec<i32>| {
        if v.is_empty() {
            v.push(0);
        }
        write_ids::<B>(v, &device)
    };
    let ids = |v: Vec<u32>| pad(v.into_iter().map(|x| x as i32).collect());
    let groups = |csr: &CsrRef<'_>, width: usize| crate::graph::upload::upload_groups::<B>(csr, width, &device);
    let prim = |r: &CsrRef<'_>, max_degree: usize| CsrPrim {
        n_rows: r.n_rows,
        n_cols: r.n_cols,
        nnz: r.nnz(),
        max_degree,
        row_ptr: ids(r.row_ptr.iter().map(|&v| v as u32).collect()),
        col_idx: ids(r.col_idx.to_vec()),
        groups: groups(r, shape.group_width),
        cbsr_groups: groups(r, shape.cbsr_group_width),
        hot: None,
        kernels: shape.kernels,
    };
    let csr = CsrRef { n_rows: shape.n_dst, n_cols: shape.n_src, row_ptr: &rp, col_idx: &cols };
    let max_row = (0..csr.n_rows).map(|i| csr.degree(i)).max().unwrap_or(0);
    let t = transpose(&csr);
    let csc = CsrRef { n_rows: shape.n_src, n_cols: shape.n_dst, row_ptr: &t.row_ptr, col_idx: &t.col_idx };
    let edge_rows: Vec<u32> = (0..csr.n_rows).flat_map(|i| std::iter::repeat_n(i as u32, csr.degree(i))).collect();
    BlockStructure {
        graph: GraphPrim {
            csr: prim(&csr, max_row),
            csc: prim(&csc, shape.n_dst),
            t_perm: ids(t.perm),
            policy: shape.policy,
        },
        edge_rows: ids(edge_rows),
    }
}
