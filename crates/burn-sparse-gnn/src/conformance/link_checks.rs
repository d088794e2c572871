//! Link prediction's negative sampling on a backend against the CPU reference of the kernels
//! crate: the node permutations and the known-edge mask.

use crate::backend::SparseGnnBackend;
use crate::graph::csr::{BuildOptions, Csr};
use crate::graph::{Graph, GraphOptions};
use crate::random::{random_csr, RandomGraphSpec};
use burn::tensor::{Int, Tensor};
use sparse_gnn_kernels::link as kernel;

fn ints<B: SparseGnnBackend>(t: Tensor<B, 1, Int>, len: usize) -> Vec<u32> {
    let mut v: Vec<u32> =
        t.into_data().convert::<i64>().into_vec::<i64>().unwrap_or_default().into_iter().map(|x| x as u32).collect();
    v.truncate(len);
    v
}

/// A random square graph rebuilt through [`Csr::from_edges`] (rows sorted; duplicates merged
/// when `dedup`).
fn graph(spec: &RandomGraphSpec, dedup: bool) -> Csr {
    let g = random_csr(spec);
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    for r in 0..g.n_rows() {
        for &c in &g.col_idx()[g.row_ptr()[r]..g.row_ptr()[r + 1]] {
            src.push(c as i64);
            dst.push(r as i64);
        }
    }
    let opts = BuildOptions { symmetrize: false, add_self_loops: false, dedup };
    Csr::from_edges(spec.n_rows, &src, &dst, None, opts).expect("a valid random graph")
}

/// A square pattern of `n` nodes with a hub row of 600 pairs, empty rows, self pairs and
/// duplicates.
fn pattern_spec(n: usize, seed: u64) -> RandomGraphSpec {
    RandomGraphSpec {
        n_rows: n,
        n_cols: n,
        avg_degree: 6,
        hub_degree: 600,
        empty_fraction: 0.1,
        self_loops: true,
        duplicates: true,
        seed,
    }
}

/// The permutations (`n` of 1, 2, 3, 1,031 and 65,537, three seeds) and the pair mask (a 1,031-
/// node pattern with a hub row of 600 edges, empty rows, self-loops and duplicates, against a
/// known graph of its own and against the pattern itself) computed by `B` against the CPU
/// reference. Returns `(case, entries that differ)`; every count must be 0.
pub fn link_checks<B: SparseGnnBackend>(device: &B::Device) -> Vec<(String, Option<f64>)> {
    let mut out = Vec::new();
    for n in [1usize, 2, 3, 1_031, 65_537] {
        for seed in [0u64, 7, 1 << 40] {
            let keys = kernel::round_keys(seed);
            for inverse in [false, true] {
                let got = ints::<B>(Tensor::from_primitive(B::permutation(n, keys, inverse, device)), n);
                let want = if inverse { kernel::inverse_permutation(n, &keys) } else { kernel::permutation(n, &keys) };
                let differ = got.iter().zip(&want).filter(|(a, b)| a != b).count() + want.len().abs_diff(got.len());
                let what = if inverse { "inverse node permutation" } else { "node permutation" };
                out.push((format!("{what}, n {n}, seed {seed}"), Some(differ as f64)));
            }
        }
    }
    let n = 1_031;
    let spec = pattern_spec(n, 11);
    let pattern = graph(&spec, false);
    let known = graph(&RandomGraphSpec { seed: 12, avg_degree: 40, ..spec }, true);
    let host =
        |c: &Csr| -> (Vec<u32>, Vec<u32>) { (c.row_ptr().iter().map(|&v| v as u32).collect(), c.col_idx().to_vec()) };
    let (prp, pci) = host(&pattern);
    for (name, k) in [("a known graph of its own", &known), ("the pattern itself", &pattern)] {
        let (krp, kci) = host(k);
        let gp = Graph::<B>::new(&pattern, device, GraphOptions::default());
        let gk = Graph::<B>::new(k, device, GraphOptions::default());
        for seed in [3u64, 4] {
            let neg = match crate::ops::link::negative_pairs(&gp, &gk, seed) {
                Ok(neg) => neg,
                Err(e) => {
                    out.push((format!("pair mask against {name}, seed {seed}: {e}"), Some(f64::INFINITY)));
                    continue;
                }
            };
            let pa = ints::<B>(neg.rows, n);
            let pb = ints::<B>(neg.cols, n);
            let got: Vec<i32> = ints::<B>(neg.mask, pattern.nnz()).into_iter().map(|v| v as i32).collect();
            let want = kernel::pair_mask((&prp, &pci), (&krp, &kci), &pa, &pb);
            let differ = got.iter().zip(&want).filter(|(a, b)| a != b).count() + want.len().abs_diff(got.len());
            let kept = want.iter().filter(|&&m| m == 1).count();
            out.push((
                format!("pair mask against {name}, seed {seed} ({kept} of {} pairs kept)", want.len()),
                Some(differ as f64),
            ));
        }
    }
    out
}

/// The gradient of the pairs' row gather ([`crate::link::pair_rows`]): the segment sums of
/// [`crate::ops::link::LinkOps::pair_rows_sum`] along a pattern's rows (destinations) and along
/// its transpose through the edge permutation (sources), on the pattern of [`link_checks`] (a
/// hub row of 600 pairs, empty rows, self pairs, duplicates), against the CPU reference. The
/// values are multiples of 1/64 in [-4, 4], so every sum is exact in f32 and rounds to the same
/// half value: every difference must be 0. Widths 1, 33 and 64; each of `dtypes` the device
/// supports (`None` for one it does not).
pub fn pair_rows_checks<B: SparseGnnBackend>(
    device: &B::Device,
    dtypes: &[burn::tensor::FloatDType],
) -> Vec<(String, Option<f64>)> {
    use burn::tensor::{DType, TensorData};
    let n = 1_031;
    let pattern = graph(&pattern_spec(n, 13), false);
    let g = Graph::<B>::new(&pattern, device, GraphOptions::default());
    let t = sparse_gnn_kernels::csr::transpose(&pattern.as_ref());
    let csr_ptr: Vec<u32> = pattern.row_ptr().iter().map(|&v| v as u32).collect();
    let csc_ptr: Vec<u32> = t.row_ptr.iter().map(|&v| v as u32).collect();
    let pairs = pattern.nnz();
    let mut out = Vec::new();
    for &dtype in dtypes {
        for f in [1usize, 33, 64] {
            let mut state = 0x9E37_79B9_7F4A_7C15u64 ^ f as u64;
            let dy: Vec<f64> = (0..pairs * f)
                .map(|_| {
                    state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                    ((state >> 33) % 513) as f64 / 64.0 - 4.0
                })
                .collect();
            for (end, ptr, perm) in [("destinations", &csr_ptr, None), ("sources", &csc_ptr, Some(&t.perm))] {
                let what = format!("pair rows' gradient over the {end}, {dtype:?}, width {f}, {pairs} pairs");
                if !B::supports_dtype(device, DType::from(dtype)) {
                    out.push((what, None));
                    continue;
                }
                let tensor = |v: Vec<f64>, rows: usize| {
                    B::float_from_data(TensorData::new(v, [rows, f]).convert_dtype(DType::from(dtype)), device)
                };
                let prim = g.prim();
                let (row_ptr, perm_t) = match perm {
                    None => (prim.csr.row_ptr.clone(), None),
                    Some(_) => (prim.csc.row_ptr.clone(), Some(prim.t_perm.clone())),
                };
                let got = B::pair_rows_sum(row_ptr, perm_t, tensor(dy.clone(), pairs), n);
                let want = sparse_gnn_kernels::pair_rows::pair_rows_sum(ptr, perm.map(|p| p.as_slice()), &dy, f);
                out.push((what, Some(super::measure::exact_difference::<B>(got, tensor(want, n)))));
            }
        }
    }
    out
}
