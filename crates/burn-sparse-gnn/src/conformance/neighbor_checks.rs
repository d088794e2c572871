//! Neighbour sampling on a backend: its samples and sampled blocks against the CPU reference of
//! the kernels crate (entry for entry), and the uniformity of the positions it draws
//! (chi-square).

use crate::backend::SparseGnnBackend;
use crate::graph::csr::{BuildOptions, Csr};
use crate::graph::{Graph, GraphOptions};
use crate::ops::neighbors::{sample_block, sample_neighbors, step_key};
use crate::random::{random_csr, RandomGraphSpec};
use burn::tensor::{Int, Tensor, TensorData};
use sparse_gnn_kernels::neighbors::reference;

/// 99.9th percentile of the chi-square distribution with 39 degrees of freedom: the bound of
/// [`neighbor_uniformity`].
pub const NEIGHBOR_CHI_SQUARE_BOUND: f64 = 72.05;

fn ints<B: SparseGnnBackend, const D: usize>(t: Tensor<B, D, Int>) -> Vec<i64> {
    t.into_data().convert::<i64>().into_vec::<i64>().unwrap_or_default()
}

fn seeds<B: SparseGnnBackend>(v: &[u32], device: &B::Device) -> Tensor<B, 1, Int> {
    let v: Vec<i32> = v.iter().map(|&x| x as i32).collect();
    let n = v.len();
    Tensor::from_data(TensorData::new(v, [n]), device)
}

/// The 1,031-node random graph of the checks (a hub row of 600 edges at node 515, empty rows,
/// self-loops; duplicate edges if asked) on `B` and on the host: `(nodes, hub, graph, row
/// pointer, columns)`.
#[allow(clippy::type_complexity)]
fn hub_graph<B: SparseGnnBackend>(
    device: &B::Device,
    duplicates: bool,
    seed: u64,
) -> (usize, u32, Graph<B>, Vec<u32>, Vec<u32>) {
    let spec = RandomGraphSpec {
        n_rows: 1_031,
        n_cols: 1_031,
        avg_degree: 6,
        hub_degree: 600,
        empty_fraction: 0.1,
        self_loops: true,
        duplicates,
        seed,
    };
    let csr = random_csr(&spec);
    let g = Graph::<B>::new(&csr, device, GraphOptions::default());
    let rp: Vec<u32> = csr.row_ptr().iter().map(|&v| v as u32).collect();
    (spec.n_rows, (spec.n_rows / 2) as u32, g, rp, csr.col_idx().to_vec())
}

/// The samples of `B` against the reference on a 1,031-node random graph (a hub row of 600
/// edges, empty rows, self-loops, duplicate edges): every node as a seed plus repeated seeds,
/// fan-outs 1, 5, 15, 600 and 601, two keys. Returns `(case, entries that differ)`; every count
/// must be 0.
pub fn neighbor_checks<B: SparseGnnBackend>(device: &B::Device) -> Vec<(String, Option<f64>)> {
    let (n, hub, g, rp, ci) = hub_graph::<B>(device, true, 21);
    let all: Vec<u32> = (0..n as u32).chain([hub, hub, 0, hub]).collect();
    let mut out = Vec::new();
    for fanout in [1usize, 5, 15, 600, 601] {
        for (seed, layer) in [(3u64, 0u32), (4, 2)] {
            let key = step_key(seed, layer, 9);
            let case = format!("neighbour sample, fan-out {fanout}, seed {seed}, {} seeds", all.len());
            let s = match sample_neighbors(&g, seeds::<B>(&all, device), fanout, key) {
                Ok(s) => s,
                Err(e) => {
                    out.push((format!("{case}: {e}"), Some(f64::INFINITY)));
                    continue;
                }
            };
            let (want_counts, want_picks) = reference::sample_neighbors(&rp, &ci, &all, fanout, key);
            let as_i64 = |v: Vec<u32>| v.into_iter().map(|x| x as i32 as i64).collect::<Vec<_>>();
            let (got_c, got_p) = (ints(s.counts), ints(s.picks));
            let (want_c, want_p) = (as_i64(want_counts), as_i64(want_picks));
            let differ =
                |a: &[i64], b: &[i64]| a.iter().zip(b).filter(|(x, y)| x != y).count() + a.len().abs_diff(b.len());
            out.push((case, Some((differ(&got_c, &want_c) + differ(&got_p, &want_p)) as f64)));
        }
    }
    out
}

/// The chi-square statistic of the positions `B` draws: 2,000 nodes whose rows hold the same 40
/// neighbours, a fan-out of 5, one draw each; under uniform sampling each neighbour is drawn 250
/// times in expectation. Below [`NEIGHBOR_CHI_SQUARE_BOUND`] (39 degrees of freedom, p = 0.001)
/// unless the sampler is biased.
pub fn neighbor_uniformity<B: SparseGnnBackend>(device: &B::Device) -> f64 {
    let (n, d, fanout) = (2_000usize, 40usize, 5usize);
    let src: Vec<i64> = (0..n).flat_map(|_| 0..d as i64).collect();
    let dst: Vec<i64> = (0..n as i64).flat_map(|i| std::iter::repeat_n(i, d)).collect();
    let opts = BuildOptions { symmetrize: false, add_self_loops: false, dedup: true };
    let csr = match Csr::from_edges(n, &src, &dst, None, opts) {
        Ok(c) => c,
        Err(_) => return f64::INFINITY,
    };
    let g = Graph::<B>::new(&csr, device, GraphOptions::default());
    let all: Vec<u32> = (0..n as u32).collect();
    let Ok(s) = sample_neighbors(&g, seeds::<B>(&all, device), fanout, step_key(11, 0, 0)) else {
        return f64::INFINITY;
    };
    let mut hits = vec![0f64; d];
    for p in ints(s.picks) {
        if (0..d as i64).contains(&p) {
            hits[p as usize] += 1.0;
        } else {
            return f64::INFINITY;
        }
    }
    let expected = (n * fanout) as f64 / d as f64;
    hits.iter().map(|h| (h - expected).powi(2) / expected).sum()
}

/// Sampled blocks of `B` against the reference, entry for entry: the 1,031-node graph of
/// [`neighbor_checks`], destinations a spread of 300 nodes (the hub, empty rows), all nodes, and
/// one node; fan-outs 1, 10 and 600; then a second hop from the first block's sources. Returns
/// `(case, entries that differ)`; every count must be 0.
/// Every node as a destination scans past one scan block (1,024 entries).
pub fn block_checks<B: SparseGnnBackend>(device: &B::Device) -> Vec<(String, Option<f64>)> {
    let (n, hub, g, rp, ci) = hub_graph::<B>(device, false, 22);
    let spread: Vec<u32> = (0..300u32).map(|i| (i * 7 + 3) % n as u32).chain([hub]).collect();
    let all: Vec<u32> = (0..n as u32).rev().collect();
    let mut out = Vec::new();
    for (name, dst) in [("300 spread nodes and the hub", spread), ("every node", all), ("one node", vec![hub])] {
        for fanout in [1usize, 10, 600] {
            let key = step_key(5, 1, fanout as u64);
            let case = format!("sampled block, {name}, fan-out {fanout}");
            let want = reference::sample_block(&rp, &ci, &dst, fanout, key);
            let got = match sample_block(&g, seeds::<B>(&dst, device), fanout, key) {
                Ok(b) => b,
                Err(e) => {
                    out.push((format!("{case}: {e}"), Some(f64::INFINITY)));
                    continue;
                }
            };
            let differ = |a: Vec<i64>, b: &[u32]| {
                a.iter().zip(b).filter(|(x, y)| **x != **y as i64).count() + a.len().abs_diff(b.len())
            };
            let mut d = differ(ints(got.row_ptr), &want.row_ptr)
                + differ(ints(got.col_idx), &want.col_idx)
                + differ(ints(got.src.clone()), &want.src)
                + got.n_src.abs_diff(want.src.len());
            // the next hop from the block's sources
            let next: Vec<u32> = want.src.clone();
            let want2 = reference::sample_block(&rp, &ci, &next, fanout, step_key(5, 2, 0));
            match sample_block(&g, got.src, fanout, step_key(5, 2, 0)) {
                Ok(b2) => {
                    d += differ(ints(b2.row_ptr), &want2.row_ptr)
                        + differ(ints(b2.col_idx), &want2.col_idx)
                        + differ(ints(b2.src), &want2.src);
                }
                Err(_) => d += 1,
            }
            out.push((format!("{case}, {} then {} sources", want.src.len(), want2.src.len()), Some(d as f64)));
        }
    }
    out
}

/// Every array of a block's device structure ([`NeighborOps::block_structure`]: the CSR and its
/// transpose with their edge groups, the edge permutation, each edge's row) against the host
/// construction, entry for entry: sampled blocks of the hub graph (the hub's transposed row
/// spans many edge groups), with and without appended self-loops, at group widths 4 (split rows
/// on both sides), 64 and 256. The value is the number of entries that differ.
pub fn block_structure_checks<B: SparseGnnBackend>(device: &B::Device) -> Vec<(String, Option<f64>)> {
    use crate::ops::neighbors::{host, BlockShape};
    use crate::ops::primitive::{CsrPrim, GroupsPrim};
    let (n, hub, g, _, _) = hub_graph::<B>(device, false, 23);
    let spread: Vec<u32> = (0..300u32).map(|i| (i * 7 + 3) % n as u32).chain([hub]).collect();
    let all: Vec<u32> = (0..n as u32).collect();
    let mut out = Vec::new();
    let int = |t: burn::tensor::ops::IntTensor<B>, len: usize| {
        let mut v = ints(Tensor::<B, 1, Int>::from_primitive(t));
        v.truncate(len);
        v
    };
    for (name, dst, fanout) in
        [("300 spread nodes and the hub", spread, 10usize), ("every node", all, 600), ("the hub", vec![hub], 3)]
    {
        let block = match sample_block(&g, seeds::<B>(&dst, device), fanout, step_key(9, 0, 1)) {
            Ok(b) => b,
            Err(e) => {
                out.push((format!("block structure, {name}: {e}"), Some(f64::INFINITY)));
                continue;
            }
        };
        for self_loops in [false, true] {
            for (width, cbsr) in [(4usize, 4usize), (64, 256), (256, 64)] {
                let shape = BlockShape {
                    n_dst: block.n_dst,
                    n_src: block.n_src,
                    nnz: block.col_idx.dims()[0],
                    max_row: fanout,
                    self_loops,
                    group_width: width,
                    cbsr_group_width: cbsr,
                    policy: Default::default(),
                    kernels: Default::default(),
                };
                let (rp, ci) = (block.row_ptr.clone().into_primitive(), block.col_idx.clone().into_primitive());
                let got = B::block_structure(rp.clone(), ci.clone(), shape);
                let want = host::block_structure::<B>(rp, ci, shape);
                let nnz = want.graph.csr.nnz;
                let mut d = usize::from(got.graph.csr.nnz != nnz);
                let mut cmp = |a: burn::tensor::ops::IntTensor<B>, b: burn::tensor::ops::IntTensor<B>, len: usize| {
                    let (x, y) = (int(a, len), int(b, len));
                    d += x.iter().zip(&y).filter(|(p, q)| p != q).count() + x.len().abs_diff(y.len());
                };
                let groups = |a: GroupsPrim<_>, b: GroupsPrim<_>, cmp: &mut dyn FnMut(_, _, usize)| {
                    let sizes = [a.len != b.len, a.n_slots != b.n_slots, a.n_finish != b.n_finish, a.width != b.width];
                    let bad = sizes.iter().filter(|&&x| x).count();
                    cmp(a.ptr, b.ptr, b.len + 1);
                    cmp(a.row, b.row, b.len);
                    cmp(a.slot, b.slot, b.len);
                    cmp(a.finish_rows, b.finish_rows, b.n_finish);
                    cmp(a.finish_ptr, b.finish_ptr, b.n_finish + 1);
                    bad
                };
                let sides = |a: CsrPrim<_>, b: CsrPrim<_>, cmp: &mut dyn FnMut(_, _, usize)| {
                    let mut bad = usize::from(a.n_rows != b.n_rows || a.n_cols != b.n_cols || a.nnz != b.nnz);
                    cmp(a.row_ptr, b.row_ptr, b.n_rows + 1);
                    cmp(a.col_idx, b.col_idx, b.nnz);
                    bad += groups(a.groups, b.groups, cmp);
                    bad + groups(a.cbsr_groups, b.cbsr_groups, cmp)
                };
                let bad =
                    sides(got.graph.csr, want.graph.csr, &mut cmp) + sides(got.graph.csc, want.graph.csc, &mut cmp);
                cmp(got.graph.t_perm, want.graph.t_perm, nnz);
                cmp(got.edge_rows, want.edge_rows, nnz);
                let case = format!(
                    "block structure, {name}, fan-out {fanout}{}, groups {width} / {cbsr}: {nnz} edges",
                    if self_loops { ", self-loops" } else { "" }
                );
                out.push((case, Some((d + bad) as f64)));
            }
        }
    }
    out
}

/// A sampled block's degree normalisations ([`NeighborOps::block_norms`]: each row's edge count,
/// each column's whole-graph out-degree, their inverses and inverse square roots, and the
/// weighted rows' in-degrees and edge weights) against the same computed on the host from the
/// block read back: blocks of the hub graph (empty rows: zero counts; nodes of out-degree 0:
/// zero inverses), with and without weights. The value is the number of entries that differ by
/// more than 1e-4 relative (NdArray's reciprocal, which the composed default uses, is within
/// about 1e-5 of the exact one).
///
/// [`NeighborOps::block_norms`]: crate::ops::neighbors::NeighborOps::block_norms
pub fn block_norm_checks<B: SparseGnnBackend>(device: &B::Device) -> Vec<(String, Option<f64>)> {
    use burn::tensor::TensorPrimitive;
    let (n, hub, g, _, _) = hub_graph::<B>(device, false, 24);
    let spread: Vec<u32> = (0..300u32).map(|i| (i * 7 + 3) % n as u32).chain([hub]).collect();
    let all: Vec<u32> = (0..n as u32).collect();
    let in_full: Vec<f32> = (0..n).map(|v| (v % 9 + 1) as f32).collect();
    let out_full: Vec<f32> = (0..n).map(|v| (v * 7 % 5) as f32).collect();
    let floats = |v: &[f32]| Tensor::<B, 1>::from_data(TensorData::new(v.to_vec(), [v.len()]), device);
    let read = |t: burn::tensor::ops::FloatTensor<B>| {
        Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(t))
            .into_data()
            .convert::<f32>()
            .into_vec::<f32>()
            .unwrap_or_default()
    };
    let inv = |d: f32| if d == 0.0 { 0.0 } else { 1.0 / d.max(1.0) };
    let inv_sqrt = |d: f32| if d == 0.0 { 0.0 } else { 1.0 / d.max(1.0).sqrt() };
    let mut out = Vec::new();
    for (name, dst, fanout) in [("300 spread nodes and the hub", spread, 10usize), ("every node", all, 600)] {
        let block = match sample_block(&g, seeds::<B>(&dst, device), fanout, step_key(4, 0, 1)) {
            Ok(b) => b,
            Err(e) => {
                out.push((format!("block norms, {name}: {e}"), Some(f64::INFINITY)));
                continue;
            }
        };
        let rp = ints(block.row_ptr.clone());
        let src = ints(block.src.clone());
        let counts: Vec<f32> = rp.windows(2).map(|w| (w[1] - w[0]) as f32).collect();
        let cols: Vec<f32> = src.iter().map(|&s| out_full[s as usize]).collect();
        for weighted in [false, true] {
            let got = B::block_norms(
                block.row_ptr.clone().into_primitive(),
                block.src.clone().into_primitive(),
                floats(&in_full).into_primitive().tensor(),
                floats(&out_full).into_primitive().tensor(),
                block.n_dst,
                weighted,
            );
            let mut d = 0usize;
            let mut cmp = |got: Vec<f32>, want: Vec<f32>| {
                d += got.len().abs_diff(want.len())
                    + got.iter().zip(&want).filter(|(a, b)| (*a - *b).abs() > 1e-4 * b.abs().max(1.0)).count();
            };
            cmp(read(got.in_degree), counts.clone());
            cmp(read(got.in_inv), counts.iter().map(|&c| inv(c)).collect());
            cmp(read(got.in_inv_sqrt), counts.iter().map(|&c| inv_sqrt(c)).collect());
            cmp(read(got.out_degree), cols.clone());
            cmp(read(got.out_inv), cols.iter().map(|&c| inv(c)).collect());
            cmp(read(got.out_inv_sqrt), cols.iter().map(|&c| inv_sqrt(c)).collect());
            match (got.weighted, weighted) {
                (Some((full, share)), true) => {
                    let want: Vec<f32> = (0..block.n_dst).map(|r| in_full[src[r] as usize]).collect();
                    cmp(read(share), want.iter().zip(&counts).map(|(f, c)| f / c.max(1.0)).collect());
                    cmp(read(full), want);
                }
                (None, false) => {}
                _ => d += 1,
            }
            let case = format!(
                "block norms, {name}, fan-out {fanout}{}: {} rows, {} columns",
                if weighted { ", weighted" } else { "" },
                block.n_dst,
                block.n_src
            );
            out.push((case, Some(d as f64)));
        }
    }
    out
}
