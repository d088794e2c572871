use super::rmat::{merge_dedup, rmat_bytes};
use super::*;
use burn_sparse_gnn::BuildOptions;

#[test]
fn merged_lists_are_sorted_without_repeats() {
    let mut s = 7u64;
    let mut list = |n: usize, m: u64| {
        let mut v: Vec<u64> = (0..n)
            .map(|_| {
                s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
                (s >> 33) % m
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    for (na, nb, m) in [(0, 5, 10), (5, 0, 10), (1, 1, 2), (1_000, 37, 300), (50_000, 80_000, 90_000), (9, 9, 1)] {
        let (a, b) = (list(na, m), list(nb, m));
        let mut want: Vec<u64> = a.iter().chain(&b).copied().collect();
        want.sort_unstable();
        want.dedup();
        assert_eq!(merge_dedup(a, b), want, "{na} + {nb} below {m}");
    }
}

#[test]
fn rmat_is_symmetric_skewed_and_close_to_the_target() {
    let spec = RmatSpec { nodes: 3000, edges: 60_000, a: 0.45, b: 0.22, c: 0.22, seed: 3 };
    let g = rmat(&spec).unwrap();
    assert!(g.is_symmetric());
    assert_eq!(g.self_loops(), 0);
    assert_eq!(g.nnz(), 60_000);
    let deg = g.row_degrees();
    let max = *deg.iter().max().unwrap();
    // a uniform graph of mean degree 20 has a maximum near 40; R-MAT (a = 0.45) concentrates edges
    assert!(max as f64 > 5.0 * g.nnz() as f64 / 3000.0, "power-law hub: max degree {max}");
    // deterministic
    assert_eq!(rmat(&spec).unwrap(), g);
}

#[test]
fn sbm_is_homophilous_and_split_per_class() {
    let d = sbm(&SbmSpec::default()).unwrap();
    let s = d.stats();
    assert!(s.edge_homophily > 0.7, "{}", s.edge_homophily);
    assert!(s.symmetric);
    assert_eq!(d.split().unwrap().train.len(), 20 * 5);
    assert_eq!(d.split().unwrap().valid.len(), 30 * 5);
}

fn config_error(r: Result<impl std::fmt::Debug>) -> String {
    match r {
        Err(e @ AppError::Config(_)) => e.to_string(),
        other => panic!("expected a configuration error, got {other:?}"),
    }
}

#[test]
fn bad_sbm_options_are_configuration_errors_naming_the_option() {
    let base = SbmSpec::default();
    let e = config_error(sbm(&SbmSpec { homophily: 1.5, ..base.clone() }));
    assert!(e.contains("--homophily 1.5 must be a probability"), "{e}");
    let e = config_error(sbm(&SbmSpec { homophily: f64::NAN, ..base.clone() }));
    assert!(e.contains("--homophily NaN"), "{e}");
    let e = config_error(sbm(&SbmSpec { avg_degree: 1_000_000_000_000, ..base.clone() }));
    assert!(e.contains("--avg-degree 1000000000000 is more than nodes - 1 = 2999"), "{e}");
    let e = config_error(sbm(&SbmSpec { classes: 1, ..base.clone() }));
    assert!(e.contains("--classes 1: needs at least 2"), "{e}");
    let e = config_error(sbm(&SbmSpec { nodes: 100, ..base.clone() }));
    assert!(e.contains("use at least 255 nodes"), "{e}");
    let e = config_error(sbm(&SbmSpec { nodes: 3_000_000_000, ..base.clone() }));
    assert!(e.contains("--nodes 3000000000 is more than 2147483647"), "{e}");
    let e = config_error(sbm(&SbmSpec { features: 0, ..base }));
    assert!(e.contains("--features 0"), "{e}");
}

#[test]
fn an_sbm_beyond_the_host_memory_is_refused_before_generating() {
    if crate::host_memory::host_available_bytes().is_none() {
        return;
    }
    let spec = SbmSpec { nodes: 2_000_000_000, avg_degree: 1_000, ..SbmSpec::default() };
    match sbm(&spec) {
        Err(e @ AppError::TooLarge { .. }) => {
            let e = e.to_string();
            assert!(e.contains("sbm: --nodes 2000000000 --avg-degree 1000"), "{e}");
        }
        other => panic!("expected TooLarge, got {other:?}"),
    }
}

#[test]
fn bad_rmat_options_are_errors_not_overflows() {
    let base = RmatSpec { nodes: 1000, edges: 10_000, a: 0.45, b: 0.22, c: 0.22, seed: 1 };
    for nodes in [3_000_000_000usize, 2_147_483_648, usize::MAX] {
        let e = config_error(rmat(&RmatSpec { nodes, ..base.clone() }));
        assert!(e.contains(&format!("--nodes {nodes} is more than 2147483647")), "{e}");
    }
    let e = config_error(rmat(&RmatSpec { edges: 5_000_000_000, ..base.clone() }));
    assert!(e.contains("--edges 5000000000 is more than 4294967295"), "{e}");
    // an odd count at the limit would round up past it
    let e = config_error(rmat(&RmatSpec { edges: 4_294_967_295, ..base.clone() }));
    assert!(e.contains("rounds up to 4294967296 directed edges"), "{e}");
    assert!(e.contains("the most is 4294967294"), "{e}");
    let e = config_error(rmat(&RmatSpec { a: f64::NAN, ..base.clone() }));
    assert!(e.contains("--a NaN"), "{e}");
    let e = config_error(rmat(&RmatSpec { edges: 1_000_000, ..base.clone() }));
    assert!(e.contains("too dense"), "{e}");
    // the largest node count 32-bit ids allow, with edges beyond the memory of most hosts
    let big = RmatSpec { nodes: 2_147_483_647, edges: 2_000_000_000, ..base.clone() };
    if crate::host_memory::host_available_bytes().is_some_and(|a| a < rmat_bytes(big.nodes, big.edges)) {
        let e = rmat(&big).unwrap_err().to_string();
        assert!(e.contains("rmat: --nodes 2147483647 --edges 2000000000 needs"), "{e}");
    }
    let adj = rmat(&base).unwrap();
    let e = config_error(random_node_data(adj.clone(), "rmat", 8, 0, 1));
    assert!(e.contains("--classes 0: needs at least 1"), "{e}");
    assert!(check_node_data("rmat", 232_965, 602, 0).is_err());
    let e = config_error(random_node_data(adj.clone(), "rmat", 8, 5_000, 1));
    assert!(e.contains("--classes 5000 is more than 1000"), "{e}");
    let d = random_node_data(adj, "rmat", 8, 3, 1).unwrap();
    assert_eq!(d.num_classes(), 3);
    let tiny = Csr::from_edges(2, &[0], &[1], None, BuildOptions::undirected()).unwrap();
    let e = config_error(random_node_data(tiny, "rmat", 8, 2, 1));
    assert!(e.contains("2 nodes are too few"), "{e}");
}
