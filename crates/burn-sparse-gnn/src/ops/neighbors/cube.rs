//! `CubeBackend` implementation of [`super::NeighborOps`]: the CubeCL kernel of `sparse-gnn-kernels`.

use super::BlockPrim;
use super::NeighborOps;
use crate::ops::cube_launch::*;
use crate::ops::primitive::CsrPrimitive;
use burn::tensor::DType;
use burn::tensor::TensorData;
use burn_cubecl::ops::numeric::full_client;
use burn_cubecl::BoolElement;
use burn_cubecl::CubeBackend;
use burn_cubecl::CubeRuntime;
use burn_cubecl::FloatElement;
use burn_cubecl::IntElement;
use sparse_gnn_kernels::neighbors::block::{launch_block_columns, launch_block_marks, BlockScratch, SCAN_BLOCK};
use sparse_gnn_kernels::neighbors::kernel::launch_sample_neighbors;

impl<R, F, I, BT> NeighborOps for CubeBackend<R, F, I, BT>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    fn sample_neighbors(csr: &CsrPrimitive<Self>, seeds: Ft<R>, fanout: usize, key: [u32; 2]) -> (Ft<R>, Ft<R>) {
        let seeds = i32_array(seeds);
        let n = seeds.meta.shape.num_elements();
        let counts = empty(&seeds, [n.max(1)], DType::I32);
        let picks = empty(&seeds, [(n * fanout).max(1)], DType::I32);
        launch_sample_neighbors::<R>(
            &seeds.client,
            bind(&csr.row_ptr),
            bind(&csr.col_idx),
            bind(&seeds),
            bind(&counts),
            bind(&picks),
            n,
            fanout,
            key,
        );
        let slice = |t: Ft<R>, len: usize| {
            if len == t.meta.shape.num_elements() {
                t
            } else {
                burn_cubecl::kernel::slice(t, &[0..len])
            }
        };
        (slice(counts, n), slice(picks, n * fanout))
    }

    fn sample_block(csr: &CsrPrimitive<Self>, dst: Ft<R>, fanout: usize, key: [u32; 2]) -> BlockPrim<Ft<R>> {
        let dst = i32_array(dst);
        let n_dst = dst.meta.shape.num_elements();
        let n_nodes = csr.n_rows;
        let client = dst.client.clone();
        // counts with a trailing 0, so that their exclusive scan ends with the edge count
        let counts = zeros(&dst, [n_dst + 1], DType::I32);
        let picks = empty(&dst, [(n_dst * fanout).max(1)], DType::I32);
        launch_sample_neighbors::<R>(
            &client,
            bind(&csr.row_ptr),
            bind(&csr.col_idx),
            bind(&dst),
            bind(&counts),
            bind(&picks),
            n_dst,
            fanout,
            key,
        );
        let mark = full_client::<R, i32>(client.clone(), [n_nodes.max(1)].into(), dst.device.clone(), -1);
        let flag = zeros(&dst, [n_nodes.max(1)], DType::I32);
        let rank = empty(&dst, [n_nodes.max(1)], DType::I32);
        let sums = empty(&dst, [n_nodes.div_ceil(SCAN_BLOCK).max(n_dst.div_ceil(SCAN_BLOCK)).max(1)], DType::I32);
        let new_total = empty(&dst, [1], DType::I32);
        let scratch = BlockScratch {
            mark: bind(&mark),
            flag: bind(&flag),
            rank: bind(&rank),
            sums: bind(&sums),
            total: bind(&new_total),
        };
        launch_block_marks::<R>(&client, bind(&dst), bind(&picks), &scratch, n_dst, fanout, n_nodes);
        let row_ptr = empty(&dst, [n_dst + 1], DType::I32);
        let nnz_total = empty(&dst, [1], DType::I32);
        sparse_gnn_kernels::neighbors::block::launch_exclusive_scan::<R>(
            &client,
            bind(&counts),
            bind(&row_ptr),
            bind(&sums),
            bind(&nnz_total),
            n_dst + 1,
        );
        let read = |t: &Ft<R>| -> usize {
            let data: TensorData =
                burn::tensor::Tensor::<Self, 1, burn::tensor::Int>::from_primitive(t.clone()).into_data();
            data.convert::<i64>().into_vec::<i64>().ok().and_then(|v| v.first().copied()).unwrap_or(0) as usize
        };
        let (nnz, n_new) = (read(&nnz_total), read(&new_total));
        let n_src = n_dst + n_new;
        let col_idx = empty(&dst, [nnz.max(1)], DType::I32);
        let src = empty(&dst, [n_src.max(1)], DType::I32);
        launch_block_columns::<R>(
            &client,
            bind(&dst),
            bind(&picks),
            bind(&counts),
            bind(&row_ptr),
            &scratch,
            bind(&col_idx),
            bind(&src),
            n_dst,
            fanout,
            n_nodes,
        );
        let cut = |t: Ft<R>, len: usize| {
            if len == t.meta.shape.num_elements() {
                t
            } else {
                burn_cubecl::kernel::slice(t, &[0..len])
            }
        };
        BlockPrim { n_src, row_ptr, col_idx: cut(col_idx, nnz), src: cut(src, n_src) }
    }
}
