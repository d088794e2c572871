//! Property tests: every op of the CPU backend against the reference on random graphs with the
//! hard cases (empty rows, hub rows of >= 10,000 edges, self-loops, duplicates, odd sizes), and
//! the reference itself against independent formulations and invariants.

use burn::backend::Autodiff;
use burn_sparse_gnn::conformance::{evaluate, inputs, normwise_error, reference_forward, Op};
use burn_sparse_gnn::random::{random_csr, random_tied_values, random_values, RandomGraphSpec};
use burn_sparse_gnn::{Cpu, GraphOptions, PoolLayout, PoolSpec, Reduce, SampleSpec, Sampling};
use proptest::prelude::*;
use sparse_gnn_kernels::maxk::reference::maxk;
use sparse_gnn_kernels::pool::reference::maxpool;
use sparse_gnn_kernels::spmm::reference::{spmm, EdgeWeights};

fn graph_spec() -> impl Strategy<Value = RandomGraphSpec> {
    (
        1usize..150,
        1usize..150,
        0usize..9,
        prop_oneof![Just(0usize), 10_000usize..10_300],
        0.0f64..0.5,
        any::<bool>(),
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(|(n_rows, n_cols, avg_degree, hub_degree, empty_fraction, self_loops, duplicates, seed)| {
            RandomGraphSpec { n_rows, n_cols, avg_degree, hub_degree, empty_fraction, self_loops, duplicates, seed }
        })
}

/// Odd widths (not multiples of 4, 8 or 32) and a few aligned ones.
fn width() -> impl Strategy<Value = usize> {
    prop_oneof![1usize..12, Just(31usize), Just(33), Just(64), Just(67)]
}

fn reduce() -> impl Strategy<Value = Reduce> {
    prop_oneof![Just(Reduce::Sum), Just(Reduce::Mean), Just(Reduce::Max)]
}

/// Independent SpMM: walk the edges in reverse order as COO triples and accumulate per row.
fn spmm_coo(adj: &burn_sparse_gnn::Csr, w: Option<&[f64]>, x: &[f64], f: usize, reduce: Reduce) -> Vec<f64> {
    let mut out = vec![0.0; adj.n_rows() * f];
    let mut best: Vec<Option<(f64, usize)>> = vec![None; adj.n_rows() * f];
    let rp = adj.row_ptr();
    for i in (0..adj.n_rows()).rev() {
        for e in (rp[i]..rp[i + 1]).rev() {
            let j = adj.col_idx()[e] as usize;
            let we = w.map(|w| w[e]).unwrap_or(1.0);
            for c in 0..f {
                let v = we * x[j * f + c];
                out[i * f + c] += v;
                // first edge wins ties: walking backwards, replace on >=
                let b = &mut best[i * f + c];
                if b.map(|(bv, _)| v >= bv).unwrap_or(true) {
                    *b = Some((v, e));
                }
            }
        }
        let deg = rp[i + 1] - rp[i];
        for c in 0..f {
            match reduce {
                Reduce::Sum => {}
                Reduce::Mean => {
                    if deg > 0 {
                        out[i * f + c] /= deg as f64
                    }
                }
                Reduce::Max => out[i * f + c] = best[i * f + c].map(|b| b.0).unwrap_or(0.0),
            }
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn reference_spmm_equals_coo_formulation(spec in graph_spec(), f in width(), reduce in reduce(), weighted in any::<bool>()) {
        let adj = random_csr(&spec);
        let x = random_values(adj.n_cols() * f, spec.seed);
        let w = weighted.then(|| random_values(adj.nnz(), spec.seed + 1));
        let (got, arg) = spmm(&adj.as_ref(), w.as_ref().map(|w| EdgeWeights { values: w, heads: 1 }), &x, f, reduce);
        let want = spmm_coo(&adj, w.as_deref(), &x, f, reduce);
        prop_assert!(normwise_error(&got, &want) < 1e-12);
        if reduce == Reduce::Max {
            // every argmax is an edge of its row whose message equals the output
            let arg = arg.unwrap();
            for i in 0..adj.n_rows() {
                for c in 0..f {
                    let a = arg[i * f + c];
                    let r = adj.row_ptr()[i]..adj.row_ptr()[i + 1];
                    if r.is_empty() { prop_assert_eq!(a, -1); continue; }
                    prop_assert!(r.contains(&(a as usize)));
                    let j = adj.col_idx()[a as usize] as usize;
                    let v = w.as_ref().map(|w| w[a as usize]).unwrap_or(1.0) * x[j * f + c];
                    prop_assert_eq!(v, got[i * f + c]);
                }
            }
        }
    }

    #[test]
    fn maxk_keeps_exactly_k_largest_with_deterministic_ties(n in 1usize..40, d in 1usize..80, kf in 0.0f64..1.0, seed in any::<u64>(), tied in any::<bool>()) {
        let k = 1 + ((d - 1) as f64 * kf) as usize; // 1..=d, including k = 1 and k = d
        let x = if tied { random_tied_values(n * d, seed) } else { random_values(n * d, seed) };
        let (v, idx) = maxk(&x, n, d, k);
        for i in 0..n {
            let row = &x[i * d..(i + 1) * d];
            let kept = &idx[i * k..(i + 1) * k];
            prop_assert!(kept.windows(2).all(|p| p[0] < p[1]), "ascending, distinct");
            let min_kept = kept.iter().map(|&c| row[c as usize]).fold(f64::INFINITY, f64::min);
            for (c, &val) in row.iter().enumerate() {
                let is_kept = kept.contains(&(c as u32));
                if !is_kept {
                    prop_assert!(val <= min_kept);
                    if val == min_kept {
                        // a dropped tie lies after every kept entry of that value
                        prop_assert!(kept.iter().filter(|&&kc| row[kc as usize] == val).all(|&kc| (kc as usize) < c));
                    }
                }
            }
            for t in 0..k {
                prop_assert_eq!(v[i * k + t], row[kept[t] as usize]);
            }
        }
    }

    #[test]
    fn maxpool_entries_are_window_maxima(n in 1usize..20, side in 2usize..9, q in 1usize..5, channels in 1usize..3, seed in any::<u64>(), two_d in any::<bool>()) {
        let q = q.min(side);
        let d = side * side;
        let spec = if two_d {
            PoolSpec { windows: q * q, layout: PoolLayout::TwoD, channels }
        } else {
            PoolSpec { windows: (q * q).min(d), layout: PoolLayout::OneD, channels }
        };
        prop_assume!(spec.check(d).is_ok());
        let x = random_tied_values(n * d, seed);
        let (v, idx) = maxpool(&x, n, d, &spec);
        let k = spec.k();
        for i in 0..n {
            let row = &x[i * d..(i + 1) * d];
            for w in 0..spec.windows {
                let ids = spec.window(w, d);
                let picked: Vec<usize> = (0..channels).map(|c| idx[i * k + w * channels + c] as usize).collect();
                prop_assert!(picked.iter().all(|p| ids.contains(p)));
                for c in 0..channels {
                    prop_assert_eq!(v[i * k + w * channels + c], row[picked[c]]);
                }
                // the picks are the `channels` largest of the window
                let min_pick = picked.iter().map(|&p| row[p]).fold(f64::INFINITY, f64::min);
                prop_assert!(ids.iter().filter(|id| !picked.contains(id)).all(|&id| row[id] <= min_pick));
            }
        }
    }
}

fn op_strategy() -> impl Strategy<Value = (Op, usize, bool)> {
    prop_oneof![
        (reduce(), 0usize..2, width()).prop_map(|(reduce, heads, f)| (Op::Spmm { reduce, heads }, f, false)),
        width().prop_map(|f| (Op::Sddmm { heads: 1 }, f, false)),
        (1usize..4).prop_map(|h| (Op::EdgeSoftmax { heads: h }, h, false)),
        (1usize..70, any::<bool>(), 0u32..5, prop_oneof![Just(Reduce::Sum), Just(Reduce::Mean)], width()).prop_map(
            |(s, fr, seed, reduce, f)| {
                let spec = SampleSpec { width: s, mode: if fr { Sampling::FastRand } else { Sampling::Bucket }, seed };
                (Op::Sampled { spec, reduce, weighted: false }, f, false)
            }
        ),
        (1usize..90, 0.0f64..1.0, any::<bool>()).prop_map(|(d, kf, tied)| (
            Op::Maxk { k: 1 + ((d - 1) as f64 * kf) as usize },
            d,
            tied
        )),
        (1usize..90, 0.0f64..1.0).prop_map(|(d, kf)| (
            Op::CbsrSpgemm { k: 1 + ((d - 1) as f64 * kf) as usize, weighted: false },
            d,
            false
        )),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn cpu_backend_matches_reference(spec in graph_spec(), (op, f, tied) in op_strategy(), group_width in prop_oneof![Just(3usize), Just(256)]) {
        let adj = random_csr(&spec);
        let inp = inputs(&adj, &op, f, tied, spec.seed);
        let got = evaluate::<Autodiff<Cpu>>(&Default::default(), &adj, GraphOptions::default().with_group_width(group_width), &op, &inp, spec.seed, None);
        let (want, want_idx) = reference_forward(&adj, &op, &inp);
        prop_assert!(normwise_error(&got.out, &want) < 1e-5, "{op:?}: error {}", normwise_error(&got.out, &want));
        if let Some(wi) = want_idx {
            prop_assert_eq!(got.indices, Some(wi));
        }
    }
}
