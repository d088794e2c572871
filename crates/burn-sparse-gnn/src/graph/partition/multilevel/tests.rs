//! The multilevel partitioner against METIS, across thread counts, and its pieces.

use super::coarsen::{cluster, contract};
use super::*;
use crate::graph::csr::{BuildOptions, Csr};
use crate::graph::partition::partitioners::{metis_kway, node_weights};
use crate::graph::partition::symmetric::{symmetric_copy, symmetrize, symmetrize_general, SymGraph};
use crate::random::{random_csr, RandomGraphSpec};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Coarsening limits for graphs of thousands of nodes.
const SMALL: Coarsest = Coarsest { entries: 2_000, nodes_per_part: 50 };

/// Entries of `sym` between parts (twice the cut edges).
fn cut(sym: &SymGraph, part: &[u32]) -> usize {
    (0..part.len()).map(|v| sym.neighbours(v).iter().filter(|&&u| part[u as usize] != part[v]).count()).sum()
}

/// The heaviest part's weight over the mean part weight.
fn imbalance(weight: &[u64], part: &[u32], parts: usize) -> f64 {
    let mut load = vec![0u64; parts];
    for (v, &q) in part.iter().enumerate() {
        assert!((q as usize) < parts, "node {v} in part {q}");
        load[q as usize] += weight[v];
    }
    let total: u64 = load.iter().sum();
    *load.iter().max().expect("parts") as f64 * parts as f64 / total as f64
}

/// `blocks` communities of `size` nodes (ids interleaved), `inner` random edges per node
/// inside its community and one edge to another community per `1 / cross` nodes, plus
/// `isolated` nodes without edges.
fn communities(blocks: usize, size: usize, inner: usize, cross: f64, isolated: usize, seed: u64) -> Csr {
    let mut rng = StdRng::seed_from_u64(seed);
    let n = blocks * size;
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    for v in 0..n {
        for _ in 0..inner {
            let u = rng.random_range(0..size) * blocks + v % blocks;
            src.push(v as i64);
            dst.push(u as i64);
        }
        if rng.random::<f64>() < cross {
            src.push(v as i64);
            dst.push(rng.random_range(0..n) as i64);
        }
    }
    Csr::from_edges(n + isolated, &src, &dst, None, BuildOptions::undirected()).expect("graph")
}

fn graphs() -> Vec<(&'static str, Csr)> {
    let hubs = random_csr(&RandomGraphSpec {
        n_rows: 6_001,
        n_cols: 6_001,
        avg_degree: 5,
        hub_degree: 3_000,
        ..Default::default()
    });
    vec![("communities", communities(6, 1_501, 4, 0.3, 37, 3)), ("random with hubs", hubs)]
}

#[test]
fn coarsens_and_cuts_about_as_little_as_metis() {
    for (name, adj) in graphs() {
        let weight = node_weights(&adj);
        for parts in [2usize, 3, 4] {
            let sym = symmetrize(&adj);
            let metis = metis_kway(&sym.xadj, &sym.adj, None, &weight, parts, 1).expect("metis");
            let (ours, depth) = multilevel_with(symmetrize(&adj), &weight, parts, 1, SMALL).expect("multilevel");
            let (metis_cut, our_cut) = (cut(&sym, &metis), cut(&sym, &ours));
            let balance = imbalance(&weight, &ours, parts);
            println!("{name} P={parts}: {depth} levels, cut {our_cut} (METIS {metis_cut}), imbalance {balance:.4}");
            assert!(depth >= 2, "{name} P={parts}: the graph was not coarsened");
            assert!(balance <= 1.0 + EPSILON + 1e-9, "{name} P={parts}: imbalance {balance}");
            let limit = if name == "communities" { 1.10 } else { 1.15 };
            assert!(
                our_cut as f64 <= limit * metis_cut as f64,
                "{name} P={parts}: cut {our_cut} against METIS' {metis_cut}"
            );
        }
    }
}

#[test]
fn symmetric_graphs_are_copied_as_the_general_symmetrisation_builds_them() {
    let undirected = communities(3, 500, 3, 0.2, 5, 4);
    let copied = symmetric_copy(&undirected).expect("an undirected graph is symmetric");
    let built = symmetrize_general(&undirected);
    assert_eq!((&copied.xadj, &copied.adj), (&built.xadj, &built.adj));
    // self-loops are dropped, directed graphs are not copied
    let (src, dst) = ([0i64, 0, 1, 1, 2], [0i64, 1, 0, 2, 1]);
    let looped = Csr::from_edges(3, &src, &dst, None, BuildOptions::default()).expect("graph");
    let copied = symmetric_copy(&looped).expect("symmetric");
    assert_eq!((copied.xadj, copied.adj), (vec![0, 1, 3, 4], vec![1, 0, 2, 1]));
    let directed = Csr::from_edges(3, &[0i64, 1], &[1i64, 2], None, BuildOptions::default()).expect("graph");
    assert!(symmetric_copy(&directed).is_none());
    assert_eq!(symmetrize(&directed).adj, vec![1, 0, 2, 1]);
}

#[test]
fn clusters_of_hubs_contract_in_pieces_as_in_one() {
    let adj = random_csr(&RandomGraphSpec {
        n_rows: 3_001,
        n_cols: 3_001,
        avg_degree: 4,
        hub_degree: 40_000,
        ..Default::default()
    });
    let sym = symmetrize(&adj);
    let g = Level { xadj: sym.xadj, adj: sym.adj, ewgt: None, vwgt: node_weights(&adj) };
    let pool = ScratchPool::new(g.n());
    let clusters = cluster(&g, g.vwgt.iter().sum::<u64>() / 40, 5, &pool);
    let (whole, map) = contract(&g, &clusters, &pool, usize::MAX);
    let (pieces, map_pieces) = contract(&g, &clusters, &pool, 100);
    assert_eq!(map, map_pieces);
    assert_eq!(
        (&whole.xadj, &whole.adj, &whole.ewgt, &whole.vwgt),
        (&pieces.xadj, &pieces.adj, &pieces.ewgt, &pieces.vwgt)
    );
    // a second level from the weighted one, also in pieces
    let again = cluster(&whole, whole.vwgt.iter().sum::<u64>() / 10, 6, &pool);
    let (a, _) = contract(&whole, &again, &pool, usize::MAX);
    let (b, _) = contract(&whole, &again, &pool, 50);
    assert_eq!((&a.xadj, &a.adj, &a.ewgt, &a.vwgt), (&b.xadj, &b.adj, &b.ewgt, &b.vwgt));
    assert!(a.n() < whole.n() && whole.n() < g.n(), "{} {} {}", a.n(), whole.n(), g.n());
    // the weights are kept: node weights sum to the input's, edge weights to the cut entries
    assert_eq!(a.vwgt.iter().sum::<u64>(), g.vwgt.iter().sum::<u64>());
}

#[test]
fn equal_on_any_number_of_threads() {
    let adj = communities(4, 2_000, 3, 0.5, 11, 9);
    let weight = node_weights(&adj);
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().expect("pool");
        pool.install(|| multilevel_with(symmetrize(&adj), &weight, 3, 42, SMALL).expect("multilevel"))
    };
    let one = run(1);
    assert!(one.1 >= 3, "only {} levels", one.1);
    assert_eq!(one, run(3));
    assert_eq!(one, run(4));
    let other_seed = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("pool")
        .install(|| multilevel_with(symmetrize(&adj), &weight, 3, 43, SMALL).expect("multilevel"));
    assert_ne!(one.0, other_seed.0, "the seed changes nothing");
}
