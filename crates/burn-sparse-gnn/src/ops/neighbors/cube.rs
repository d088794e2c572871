//! `CubeBackend` implementation of [`super::NeighborOps`]: the CubeCL kernel of `sparse-gnn-kernels`.

use super::NeighborOps;
use super::{BlockNorms, BlockPrim, BlockShape, BlockStructure};
use crate::ops::cube_launch::*;
use crate::ops::primitive::CsrPrimitive;
use crate::ops::primitive::{CsrPrim, GraphPrim, GroupsPrim};
use burn::tensor::DType;
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
        // both sizes in one read
        let sizes = read_first_i32(&[&nnz_total, &new_total]);
        let (nnz, n_new) = (sizes[0].max(0) as usize, sizes[1].max(0) as usize);
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

    fn block_structure(row_ptr: Ft<R>, col_idx: Ft<R>, shape: BlockShape) -> BlockStructure<Ft<R>> {
        block_structure_device::<R, F, I, BT>(row_ptr, col_idx, shape)
    }

    fn block_norms(
        row_ptr: Ft<R>,
        src: Ft<R>,
        in_degree: Ft<R>,
        out_degree: Ft<R>,
        n_dst: usize,
        weighted: bool,
    ) -> BlockNorms<Ft<R>> {
        use sparse_gnn_kernels::neighbors::norms::{launch_block_norms, BlockNormArrays};
        let (row_ptr, src) = (i32_array(row_ptr), i32_array(src));
        let (in_full, out_full) = (f32_array(in_degree), f32_array(out_degree));
        let n_src = src.meta.shape.num_elements();
        let arr = |n: usize| empty(&in_full, [n.max(1)], DType::F32);
        let rows = [arr(n_dst), arr(n_dst), arr(n_dst)];
        let cols = [arr(n_src), arr(n_src), arr(n_src)];
        let w = [arr(if weighted { n_dst } else { 1 }), arr(if weighted { n_dst } else { 1 })];
        launch_block_norms::<R>(
            &in_full.client,
            bind(&row_ptr),
            bind(&src),
            bind(&in_full),
            bind(&out_full),
            BlockNormArrays {
                rows: [bind(&rows[0]), bind(&rows[1]), bind(&rows[2])],
                cols: [bind(&cols[0]), bind(&cols[1]), bind(&cols[2])],
                weights: [bind(&w[0]), bind(&w[1])],
            },
            n_dst,
            n_src,
            weighted,
        );
        // in the backend's float type, cut to length where a length of 0 was padded
        let out = |t: Ft<R>, len: usize| {
            let t = if len == t.meta.shape.num_elements() { t } else { burn_cubecl::kernel::slice(t, &[0..len]) };
            if F::dtype() == DType::F32 {
                t
            } else {
                burn_cubecl::kernel::cast(t, F::dtype())
            }
        };
        let [in_degree, in_inv, in_inv_sqrt] = rows;
        let [out_degree, out_inv, out_inv_sqrt] = cols;
        let [full, share] = w;
        BlockNorms {
            in_degree: out(in_degree, n_dst),
            in_inv: out(in_inv, n_dst),
            in_inv_sqrt: out(in_inv_sqrt, n_dst),
            out_degree: out(out_degree, n_src),
            out_inv: out(out_inv, n_src),
            out_inv_sqrt: out(out_inv_sqrt, n_src),
            weighted: weighted.then(|| (out(full, n_dst), out(share, n_dst))),
        }
    }
}

/// [`NeighborOps::block_structure`] on the device (see
/// [`sparse_gnn_kernels::neighbors::structure`]): one read of the totals of the edge groups
/// (both directions; one partition per direction where the two widths agree), no host copy of
/// the block.
fn block_structure_device<R, F, I, BT>(row_ptr: Ft<R>, col_idx: Ft<R>, shape: BlockShape) -> BlockStructure<Ft<R>>
where
    R: CubeRuntime,
    F: FloatElement,
    I: IntElement,
    BT: BoolElement,
{
    use sparse_gnn_kernels::neighbors::structure::*;
    let row_ptr = i32_array(row_ptr);
    let col_idx = i32_array(col_idx);
    let client = row_ptr.client.clone();
    let like = row_ptr.clone();
    let (n_dst, n_src) = (shape.n_dst, shape.n_src);
    let arr = |n: usize| empty(&like, [n.max(1)], DType::I32);
    // the CSR, with its self-loops where asked
    let (row_ptr, col_idx, nnz) = if shape.self_loops {
        let (p, c) = (arr(n_dst + 1), arr(shape.nnz + n_dst));
        launch_append_self_loops::<R>(&client, bind(&row_ptr), bind(&col_idx), bind(&p), bind(&c), n_dst);
        (p, c, shape.nnz + n_dst)
    } else {
        (row_ptr, col_idx, shape.nnz)
    };
    let max_row = shape.max_row + usize::from(shape.self_loops);
    // the transpose: the edges sorted by column, stably
    let edge_rows = arr(nnz);
    launch_edge_rows::<R>(&client, bind(&row_ptr), bind(&edge_rows), n_dst);
    let keys = arr(nnz);
    launch_copy::<R>(&client, bind(&col_idx), bind(&keys), nnz);
    let vals = arr(nnz);
    let tiles = radix_tiles(nnz);
    let hist_len = RADIX_BINS * tiles;
    let scratch_t = [arr(nnz), arr(nnz), arr(hist_len), arr(hist_len), arr(hist_len.div_ceil(SCAN_BLOCK)), arr(1)];
    let scratch = SortScratch {
        keys: bind(&scratch_t[0]),
        vals: bind(&scratch_t[1]),
        hist: bind(&scratch_t[2]),
        offsets: bind(&scratch_t[3]),
        sums: bind(&scratch_t[4]),
        total: bind(&scratch_t[5]),
    };
    let in_scratch = launch_sort_by_column::<R>(&client, bind(&keys), bind(&vals), &scratch, nnz, n_src);
    let (sorted, perm) = match in_scratch {
        true => (scratch_t[0].clone(), scratch_t[1].clone()),
        false => (keys, vals),
    };
    let t_ptr = arr(n_src + 1);
    let t_col = arr(nnz);
    launch_transpose_arrays::<R>(
        &client,
        bind(&sorted),
        bind(&perm),
        bind(&edge_rows),
        bind(&t_ptr),
        bind(&t_col),
        nnz,
        n_src,
    );
    // edge groups of both directions: counts and scans, then one read of their totals; where
    // the CBSR kernels' width is the SpMM family's, both families share one partition
    let shared = shape.group_width.max(1) == shape.cbsr_group_width.max(1);
    let widths: &[usize] =
        if shared { &[shape.group_width.max(1)] } else { &[shape.group_width.max(1), shape.cbsr_group_width.max(1)] };
    let sides = [(&row_ptr, n_dst), (&t_ptr, n_src)];
    let mut scans = Vec::new();
    for &(ptr, rows) in &sides {
        for &w in widths {
            let t: Vec<Ft<R>> = (0..6).map(|_| arr(rows)).collect();
            let sums = arr(rows.div_ceil(SCAN_BLOCK));
            let totals = [arr(1), arr(1), arr(1)];
            let s = GroupScan {
                groups: bind(&t[0]),
                slots: bind(&t[1]),
                finish: bind(&t[2]),
                groups_off: bind(&t[3]),
                slots_off: bind(&t[4]),
                finish_off: bind(&t[5]),
                sums: bind(&sums),
                totals: [bind(&totals[0]), bind(&totals[1]), bind(&totals[2])],
            };
            launch_group_scan::<R>(&client, bind(ptr), &s, rows, w);
            scans.push((ptr.clone(), rows, w, t, sums, totals));
        }
    }
    let totals: Vec<usize> = read_first_i32(&scans.iter().flat_map(|sc| sc.5.iter()).collect::<Vec<_>>())
        .into_iter()
        .map(|v| v.max(0) as usize)
        .collect();
    let mut groups = Vec::new();
    for (k, (ptr, rows, w, t, _, _)) in scans.into_iter().enumerate() {
        let (len, n_slots, n_finish) = (totals[3 * k], totals[3 * k + 1], totals[3 * k + 2]);
        let out = [arr(len + 1), arr(len), arr(len), arr(n_finish), arr(n_finish + 1)];
        let a = GroupArrays {
            ptr: bind(&out[0]),
            row: bind(&out[1]),
            slot: bind(&out[2]),
            finish_rows: bind(&out[3]),
            finish_ptr: bind(&out[4]),
        };
        launch_group_fill::<R>(&client, bind(&ptr), [bind(&t[3]), bind(&t[4]), bind(&t[5])], &a, rows, w, len);
        let [ptr_o, row_o, slot_o, fin_r, fin_p] = out;
        groups.push(GroupsPrim {
            width: w,
            len,
            n_slots,
            n_finish,
            ptr: ptr_o,
            row: row_o,
            slot: slot_o,
            finish_rows: fin_r,
            finish_ptr: fin_p,
        });
    }
    let mut g = groups.into_iter();
    let mut take = || g.next().expect("one edge-group partition per side and width");
    let mut pair = || {
        let spmm = take();
        let cbsr = if shared { spmm.clone() } else { take() };
        (spmm, cbsr)
    };
    let csr_groups = pair();
    let csc_groups = pair();
    let cut = |t: Ft<R>, len: usize| {
        if len == t.meta.shape.num_elements() || len == 0 {
            t
        } else {
            burn_cubecl::kernel::slice(t, &[0..len])
        }
    };
    let csr = CsrPrim {
        n_rows: n_dst,
        n_cols: n_src,
        nnz,
        max_degree: max_row,
        row_ptr,
        col_idx: cut(col_idx, nnz),
        groups: csr_groups.0,
        cbsr_groups: csr_groups.1,
        hot: None,
        kernels: shape.kernels,
    };
    let csc = CsrPrim {
        n_rows: n_src,
        n_cols: n_dst,
        nnz,
        max_degree: n_dst,
        row_ptr: t_ptr,
        col_idx: t_col,
        groups: csc_groups.0,
        cbsr_groups: csc_groups.1,
        hot: None,
        kernels: shape.kernels,
    };
    BlockStructure { graph: GraphPrim { csr, csc, t_perm: perm, policy: shape.policy }, edge_rows }
}
