//! Node partitioning: assignments, local parts (rows, halo, send lists) against the global
//! graph, cut quality on planted communities, the cache file and the errors.

use burn_sparse_gnn::partition::{
    partition, GraphFingerprint, Partition, PartitionError, PartitionMethod, PartitionOptions, PartitionedGraph,
};
use burn_sparse_gnn::random::{random_csr, RandomGraphSpec};
use burn_sparse_gnn::{BuildOptions, Csr};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::BTreeSet;
use std::path::PathBuf;

const METHODS: [PartitionMethod; 4] =
    [PartitionMethod::Multilevel, PartitionMethod::Metis, PartitionMethod::Greedy, PartitionMethod::Contiguous];
const PARTS: [usize; 5] = [1, 2, 3, 4, 8];

/// Random graphs with hubs, empty rows, self-loops and duplicates; one weighted, one without
/// a hub, one smaller than some part counts allow to be balanced.
fn graphs() -> Vec<(&'static str, Csr)> {
    let base = random_csr(&RandomGraphSpec::default());
    let weighted = {
        let g = random_csr(&RandomGraphSpec { seed: 2, ..Default::default() });
        let mut rng = StdRng::seed_from_u64(7);
        let w: Vec<f32> = (0..g.nnz()).map(|_| rng.random::<f32>() * 2.0 - 1.0).collect();
        g.with_weights(Some(w)).expect("weights")
    };
    let no_hub =
        random_csr(&RandomGraphSpec { n_rows: 1000, n_cols: 1000, hub_degree: 0, seed: 3, ..Default::default() });
    let tiny = random_csr(&RandomGraphSpec {
        n_rows: 9,
        n_cols: 9,
        avg_degree: 2,
        hub_degree: 20,
        seed: 4,
        ..Default::default()
    });
    vec![("hub", base), ("weighted", weighted), ("no-hub", no_hub), ("tiny", tiny)]
}

fn row(adj: &Csr, v: usize) -> std::ops::Range<usize> {
    adj.row_ptr()[v]..adj.row_ptr()[v + 1]
}

/// Every property of a partitioned graph against the global graph.
fn check_partitioned(name: &str, adj: &Csr, p: &Partition, g: &PartitionedGraph) {
    let n = adj.n_rows();
    let np = p.parts;
    let ctx = format!("{name} {:?} P={np}", p.method);
    assert_eq!(g.n_nodes, n, "{ctx}");
    assert_eq!(g.parts.len(), np, "{ctx}");
    assert_eq!(g.assignment, p.assignment, "{ctx}");

    // (1) every node in exactly one part, owned sorted, owned agrees with the assignment
    let mut seen = vec![0u32; n];
    for (q, lp) in g.parts.iter().enumerate() {
        assert_eq!(lp.part, q, "{ctx}");
        assert!(lp.owned.windows(2).all(|w| w[0] < w[1]), "{ctx}: owned of part {q} not ascending");
        for &v in &lp.owned {
            seen[v as usize] += 1;
            assert_eq!(p.assignment[v as usize] as usize, q, "{ctx}");
        }
    }
    assert!(seen.iter().all(|&s| s == 1), "{ctx}: a node is not in exactly one part");

    let mut cut_direct = 0usize;
    for (q, lp) in g.parts.iter().enumerate() {
        let n_own = lp.owned.len();
        assert_eq!(lp.adj.n_rows(), n_own, "{ctx}");
        assert_eq!(lp.adj.n_cols(), n_own + lp.halo.len(), "{ctx}");
        assert_eq!(lp.halo_ranges.len(), np, "{ctx}");
        assert_eq!(lp.send.len(), np, "{ctx}");
        assert!(lp.halo_ranges[q].is_empty(), "{ctx}");
        assert!(lp.send[q].is_empty(), "{ctx}");
        // halo ranges tile the halo in part order; ids ascending within and owned by that part
        let mut at = 0;
        for (o, r) in lp.halo_ranges.iter().enumerate() {
            assert_eq!(r.start, at, "{ctx}");
            at = r.end;
            let ids = &lp.halo[r.clone()];
            assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ctx}: halo of {q} from {o} not ascending");
            assert!(ids.iter().all(|&h| p.assignment[h as usize] as usize == o), "{ctx}");
        }
        assert_eq!(at, lp.halo.len(), "{ctx}");

        // (2) reconstruction: every local row is the global row (sources and weights, in order)
        for (r, &v) in lp.owned.iter().enumerate() {
            let gr = row(adj, v as usize);
            let lr = row(&lp.adj, r);
            let global: Vec<u32> = adj.col_idx()[gr.clone()].to_vec();
            let mapped: Vec<u32> = lp.adj.col_idx()[lr.clone()]
                .iter()
                .map(|&c| lp.global_col(c as usize).expect("column in range"))
                .collect();
            assert_eq!(mapped, global, "{ctx}: part {q} row {r} (node {v})");
            match (adj.weights(), lp.adj.weights()) {
                (None, None) => {}
                (Some(gw), Some(lw)) => {
                    let a: Vec<u32> = gw[gr].iter().map(|x| x.to_bits()).collect();
                    let b: Vec<u32> = lw[lr].iter().map(|x| x.to_bits()).collect();
                    assert_eq!(a, b, "{ctx}: weights of node {v}");
                }
                _ => panic!("{ctx}: weights present in one graph only"),
            }
            cut_direct += global.iter().filter(|&&c| p.assignment[c as usize] != p.assignment[v as usize]).count();
        }

        // (4) the halo is exactly the set of non-owned sources of the part's rows, each once
        let sources: BTreeSet<u32> = lp
            .owned
            .iter()
            .flat_map(|&v| adj.col_idx()[row(adj, v as usize)].iter().copied())
            .filter(|&c| p.assignment[c as usize] as usize != q)
            .collect();
        let halo_set: BTreeSet<u32> = lp.halo.iter().copied().collect();
        assert_eq!(halo_set.len(), lp.halo.len(), "{ctx}: halo has repeats");
        assert_eq!(halo_set, sources, "{ctx}: halo of part {q}");
    }

    // (3) send lists: q's halo from p (global ids) == p.owned[p.send[q]]
    for (pi, lp) in g.parts.iter().enumerate() {
        for (qi, lq) in g.parts.iter().enumerate() {
            if pi == qi {
                continue;
            }
            let wanted = &lq.halo[lq.halo_ranges[pi].clone()];
            let sent: Vec<u32> = lp.send[qi].iter().map(|&r| lp.owned[r as usize]).collect();
            assert_eq!(sent, wanted, "{ctx}: send {pi} -> {qi}");
        }
    }

    // (5) stats
    let s = g.stats();
    assert_eq!(s.cut_edges, cut_direct, "{ctx}");
    assert_eq!(s.cut_edges, p.cut_edges(adj).expect("cut"), "{ctx}");
    assert_eq!(s.edges, adj.nnz(), "{ctx}");
    assert_eq!(s.parts, np, "{ctx}");
    let halo_total: usize = g.parts.iter().map(|lp| lp.halo.len()).sum();
    let send_total: usize = g.parts.iter().map(|lp| lp.send_rows()).sum();
    assert_eq!(s.halo_total, halo_total, "{ctx}");
    assert_eq!(s.halo_total, send_total, "{ctx}");
    assert_eq!(s.halo_bytes(64, 4), halo_total as u64 * 256, "{ctx}");
    assert_eq!(s.max_owned, g.parts.iter().map(|lp| lp.owned.len()).max().unwrap_or(0), "{ctx}");
    assert_eq!(s.per_part.iter().map(|x| x.cut_edges).sum::<usize>(), s.cut_edges, "{ctx}");
    assert_eq!(s.per_part.iter().map(|x| x.owned).sum::<usize>(), n, "{ctx}");
    if np == 1 {
        assert_eq!(s.cut_edges, 0, "{ctx}");
        assert_eq!(s.halo_total, 0, "{ctx}");
    }
    let json = serde_json::to_value(&s).expect("stats serialise");
    assert_eq!(json["cut_edges"].as_u64(), Some(s.cut_edges as u64), "{ctx}");
}

#[test]
fn every_method_and_part_count_reconstructs_the_graph() {
    for (name, adj) in graphs() {
        for method in METHODS {
            for parts in PARTS {
                if parts > adj.n_rows() {
                    continue;
                }
                let p = partition(&adj, &PartitionOptions { parts, method, seed: 11 }).expect("partition");
                assert_eq!(p.parts, parts);
                assert_eq!(p.assignment.len(), adj.n_rows());
                // no empty part
                let mut count = vec![0usize; parts];
                for &q in &p.assignment {
                    count[q as usize] += 1;
                }
                assert!(count.iter().all(|&c| c > 0), "{name} {method} P={parts}: empty part {count:?}");
                let g = PartitionedGraph::build(&adj, &p).expect("build");
                check_partitioned(name, &adj, &p, &g);
            }
        }
    }
}

#[test]
fn hand_made_assignments_with_empty_parts_build() {
    // an arbitrary assignment (random, parts 1 and 3 left empty) is still cut correctly
    let adj = random_csr(&RandomGraphSpec { seed: 9, ..Default::default() });
    let mut rng = StdRng::seed_from_u64(3);
    let assignment: Vec<u32> = (0..adj.n_rows()).map(|_| [0u32, 2, 4][rng.random_range(0..3)]).collect();
    let p = Partition { parts: 5, assignment, method: PartitionMethod::Greedy, seed: 0 };
    let g = PartitionedGraph::build(&adj, &p).expect("build");
    check_partitioned("hand-made", &adj, &p, &g);
    assert!(g.parts[1].owned.is_empty() && g.parts[3].owned.is_empty());
}

#[test]
fn partitioners_are_deterministic() {
    let adj = random_csr(&RandomGraphSpec { n_rows: 800, n_cols: 800, seed: 5, ..Default::default() });
    for method in METHODS {
        let opts = PartitionOptions { parts: 4, method, seed: 3 };
        let a = partition(&adj, &opts).expect("partition");
        let b = partition(&adj, &opts).expect("partition");
        assert_eq!(a, b, "{method}");
    }
}

#[test]
fn contiguous_ranges_are_balanced_by_weight() {
    let adj = random_csr(&RandomGraphSpec { n_rows: 2000, n_cols: 2000, hub_degree: 0, seed: 6, ..Default::default() });
    let p = partition(&adj, &PartitionOptions::new(4, PartitionMethod::Contiguous)).expect("partition");
    assert!(p.assignment.windows(2).all(|w| w[0] <= w[1]), "ranges are consecutive");
    let weights = part_weights(&adj, &p);
    let mean = weights.iter().sum::<u64>() as f64 / 4.0;
    let max_node = adj.row_degrees().iter().max().copied().unwrap_or(0) as f64 + 1.0;
    for w in &weights {
        assert!((*w as f64 - mean).abs() <= max_node, "weights {weights:?}");
    }
}

fn part_weights(adj: &Csr, p: &Partition) -> Vec<u64> {
    let mut w = vec![0u64; p.parts];
    for (v, d) in adj.row_degrees().iter().enumerate() {
        w[p.assignment[v] as usize] += *d as u64 + 1;
    }
    w
}

/// `blocks` dense communities of `size` nodes (about `inner` random neighbours inside each
/// node's block) plus `cross` random edges between blocks, undirected; the planted assignment.
fn planted(blocks: usize, size: usize, inner: usize, cross: usize, seed: u64) -> (Csr, Vec<u32>, usize) {
    let mut rng = StdRng::seed_from_u64(seed);
    let n = blocks * size;
    // interleave the blocks' ids so that no partitioner finds them by id ranges
    let block_of = |v: usize| (v % blocks) as u32;
    let members: Vec<Vec<usize>> =
        (0..blocks).map(|b| (0..n).filter(|&v| block_of(v) as usize == b).collect()).collect();
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    for v in 0..n {
        let m = &members[block_of(v) as usize];
        for _ in 0..inner / 2 {
            let u = m[rng.random_range(0..m.len())];
            if u != v {
                src.push(v as i64);
                dst.push(u as i64);
            }
        }
    }
    let mut planted_cross = BTreeSet::new();
    while planted_cross.len() < cross {
        let (u, v) = (rng.random_range(0..n), rng.random_range(0..n));
        if block_of(u) != block_of(v) {
            planted_cross.insert((u.min(v), u.max(v)));
        }
    }
    for &(u, v) in &planted_cross {
        src.push(u as i64);
        dst.push(v as i64);
    }
    let adj = Csr::from_edges(n, &src, &dst, None, BuildOptions::undirected()).expect("graph");
    let assignment: Vec<u32> = (0..n).map(block_of).collect();
    let planted_cut =
        Partition { parts: blocks, assignment: assignment.clone(), method: PartitionMethod::Contiguous, seed: 0 }
            .cut_edges(&adj)
            .expect("cut");
    assert_eq!(planted_cut, 2 * cross);
    (adj, assignment, planted_cut)
}

fn random_cut(adj: &Csr, parts: usize, seed: u64) -> usize {
    let mut rng = StdRng::seed_from_u64(seed);
    let assignment = (0..adj.n_rows()).map(|_| rng.random_range(0..parts as u32)).collect();
    Partition { parts, assignment, method: PartitionMethod::Greedy, seed }.cut_edges(adj).expect("cut")
}

#[test]
fn metis_finds_planted_communities_and_greedy_beats_random() {
    for (blocks, cross) in [(2usize, 40usize), (4, 120)] {
        let (adj, _, planted_cut) = planted(blocks, 500, 16, cross, 21);
        let random = random_cut(&adj, blocks, 1);
        let metis = partition(&adj, &PartitionOptions { parts: blocks, method: PartitionMethod::Metis, seed: 1 })
            .expect("metis");
        let greedy = partition(&adj, &PartitionOptions { parts: blocks, method: PartitionMethod::Greedy, seed: 1 })
            .expect("greedy");
        let contiguous =
            partition(&adj, &PartitionOptions::new(blocks, PartitionMethod::Contiguous)).expect("contiguous");
        let metis_cut = metis.cut_edges(&adj).expect("cut");
        let greedy_cut = greedy.cut_edges(&adj).expect("cut");
        let contiguous_cut = contiguous.cut_edges(&adj).expect("cut");
        println!(
            "{blocks} blocks: planted {planted_cut}, metis {metis_cut}, greedy {greedy_cut}, contiguous {contiguous_cut}, \
             random {random}"
        );
        assert!(metis_cut as f64 <= 1.2 * planted_cut as f64, "metis {metis_cut} vs planted {planted_cut}");
        assert!((greedy_cut as f64) < 0.5 * random as f64, "greedy {greedy_cut} vs random {random}");
        for p in [&metis, &greedy] {
            let w = part_weights(&adj, p);
            let mean = w.iter().sum::<u64>() as f64 / blocks as f64;
            let max = *w.iter().max().expect("parts") as f64;
            assert!(max <= 1.1 * mean, "{}: part weights {w:?}", p.method);
        }
    }
}

fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sgnn-partition-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join(name)
}

#[test]
fn cache_round_trip_and_refusals() {
    let adj = random_csr(&RandomGraphSpec { seed: 12, ..Default::default() });
    let p =
        partition(&adj, &PartitionOptions { parts: 3, method: PartitionMethod::Greedy, seed: 5 }).expect("partition");
    let g = PartitionedGraph::build(&adj, &p).expect("build");
    let path = temp_path("round-trip.part");
    g.save(&path).expect("save");
    let back = PartitionedGraph::load(&path, &adj).expect("load");
    assert_eq!(back, g);
    assert_eq!(Partition::load(&path, &adj).expect("load"), p);
    p.save(&adj, temp_path("direct.part")).expect("save");
    assert_eq!(std::fs::read(&path).expect("read"), std::fs::read(temp_path("direct.part")).expect("read"));
    // no temporary file is left next to the cache
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().expect("dir"))
        .expect("list")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
        .collect();
    assert!(leftovers.is_empty());

    // another graph of the same size, another edge count, another node count
    let same_size = {
        let mut col = adj.col_idx().to_vec();
        let last = col.len() - 1;
        col[last] = (col[last] + 1) % adj.n_cols() as u32;
        let rp: Vec<i64> = adj.row_ptr().iter().map(|&x| x as i64).collect();
        let ci: Vec<i64> = col.iter().map(|&x| x as i64).collect();
        Csr::new(adj.n_rows(), adj.n_cols(), &rp, &ci, None).expect("graph")
    };
    assert_eq!(GraphFingerprint::of(&same_size).nnz, GraphFingerprint::of(&adj).nnz);
    for other in [
        same_size,
        random_csr(&RandomGraphSpec { seed: 13, ..Default::default() }),
        random_csr(&RandomGraphSpec { n_rows: 302, n_cols: 302, seed: 12, ..Default::default() }),
    ] {
        match Partition::load(&path, &other) {
            Err(PartitionError::CacheMismatch { .. }) => {}
            other => panic!("expected a mismatch, got {other:?}"),
        }
    }
    // weights are not part of the fingerprint: the structure decides
    let weighted = adj.clone().with_weights(Some(vec![0.5; adj.nnz()])).expect("weights");
    assert_eq!(Partition::load(&path, &weighted).expect("load"), p);

    let bytes = std::fs::read(&path).expect("read");
    // truncated at several places
    for len in [0, 4, 20, bytes.len() / 2, bytes.len() - 1] {
        let t = temp_path("truncated.part");
        std::fs::write(&t, &bytes[..len]).expect("write");
        match Partition::load(&t, &adj) {
            Err(PartitionError::CacheCorrupt { .. }) => {}
            other => panic!("truncated to {len}: expected corrupt, got {other:?}"),
        }
    }
    // a flipped byte in the assignment
    let mut flipped = bytes.clone();
    let at = flipped.len() - 12;
    flipped[at] ^= 1;
    let t = temp_path("flipped.part");
    std::fs::write(&t, &flipped).expect("write");
    assert!(matches!(Partition::load(&t, &adj), Err(PartitionError::CacheCorrupt { .. })));
    // garbage, and garbage behind a right magic
    let mut rng = StdRng::seed_from_u64(4);
    let garbage: Vec<u8> = (0..bytes.len()).map(|_| rng.random()).collect();
    let t = temp_path("garbage.part");
    std::fs::write(&t, &garbage).expect("write");
    assert!(matches!(Partition::load(&t, &adj), Err(PartitionError::CacheCorrupt { .. })));
    let mut magic_garbage = garbage.clone();
    magic_garbage[..8].copy_from_slice(b"SGNNPART");
    std::fs::write(&t, &magic_garbage).expect("write");
    assert!(matches!(Partition::load(&t, &adj), Err(PartitionError::CacheCorrupt { .. })));
    // a missing file
    assert!(matches!(Partition::load(temp_path("missing.part"), &adj), Err(PartitionError::Io { .. })));
    let _ = std::fs::remove_dir_all(path.parent().expect("dir"));
}

#[test]
fn errors_instead_of_panics() {
    let adj = random_csr(&RandomGraphSpec { n_rows: 10, n_cols: 10, hub_degree: 0, seed: 1, ..Default::default() });
    for method in METHODS {
        assert!(matches!(partition(&adj, &PartitionOptions::new(0, method)), Err(PartitionError::ZeroParts)));
        assert!(matches!(
            partition(&adj, &PartitionOptions::new(11, method)),
            Err(PartitionError::TooManyParts { parts: 11, nodes: 10 })
        ));
        assert!(partition(&adj, &PartitionOptions::new(10, method)).is_ok());
    }
    let rect = random_csr(&RandomGraphSpec { n_rows: 10, n_cols: 12, hub_degree: 0, seed: 1, ..Default::default() });
    assert!(matches!(
        partition(&rect, &PartitionOptions::new(2, PartitionMethod::Greedy)),
        Err(PartitionError::NotSquare { rows: 10, cols: 12 })
    ));
    let bad_len = Partition { parts: 2, assignment: vec![0; 9], method: PartitionMethod::Greedy, seed: 0 };
    assert!(matches!(
        PartitionedGraph::build(&adj, &bad_len),
        Err(PartitionError::AssignmentLength { got: 9, nodes: 10 })
    ));
    let mut a = vec![0u32; 10];
    a[7] = 2;
    let bad_part = Partition { parts: 2, assignment: a, method: PartitionMethod::Greedy, seed: 0 };
    assert!(matches!(
        PartitionedGraph::build(&adj, &bad_part),
        Err(PartitionError::PartOutOfRange { node: 7, part: 2, parts: 2 })
    ));
    assert!("METIS".parse::<PartitionMethod>().is_ok_and(|m| m == PartitionMethod::Metis));
    assert!("multilevel".parse::<PartitionMethod>().is_ok_and(|m| m == PartitionMethod::Multilevel));
    assert_eq!(PartitionMethod::default(), PartitionMethod::Multilevel);
    assert!("spectral".parse::<PartitionMethod>().is_err());
}

#[test]
fn doc_example() {
    // the example of `partition`'s documentation
    let src = [0, 1, 2, 3, 4, 5, 2];
    let dst = [1, 2, 0, 4, 5, 3, 3];
    let adj = Csr::from_edges(6, &src, &dst, None, BuildOptions::undirected()).expect("graph");
    for method in [PartitionMethod::Multilevel, PartitionMethod::Metis, PartitionMethod::Greedy] {
        let p = partition(&adj, &PartitionOptions::new(2, method)).expect("partition");
        assert_eq!(p.assignment[0], p.assignment[1], "{method}");
        assert_ne!(p.assignment[0], p.assignment[4], "{method}");
        let g = PartitionedGraph::build(&adj, &p).expect("build");
        assert_eq!(g.stats().cut_edges, 2, "{method}");
        assert_eq!(g.parts[0].halo.len(), 1, "{method}");
    }
}

/// An R-MAT graph (a = 0.57, b = c = 0.19) of `2^scale` nodes and `edges` undirected edges,
/// node ids shuffled.
fn rmat(scale: u32, edges: usize, seed: u64) -> Csr {
    let mut rng = StdRng::seed_from_u64(seed);
    let n = 1usize << scale;
    let mut perm: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        perm.swap(i, rng.random_range(0..=i));
    }
    let (mut src, mut dst) = (Vec::with_capacity(edges), Vec::with_capacity(edges));
    for _ in 0..edges {
        let (mut u, mut v) = (0usize, 0usize);
        for _ in 0..scale {
            let r: f64 = rng.random();
            let (bu, bv) = if r < 0.57 {
                (0, 0)
            } else if r < 0.76 {
                (0, 1)
            } else if r < 0.95 {
                (1, 0)
            } else {
                (1, 1)
            };
            u = 2 * u + bu;
            v = 2 * v + bv;
        }
        src.push(perm[u] as i64);
        dst.push(perm[v] as i64);
    }
    Csr::from_edges(n, &src, &dst, None, BuildOptions::undirected()).expect("graph")
}

#[test]
fn cut_quality_on_rmat_and_noisy_communities() {
    let rm = rmat(12, 40_000, 5);
    let (noisy, _, noisy_planted) = planted(4, 1000, 12, 6000, 8);
    for (name, adj, parts) in [("rmat", &rm, 4usize), ("rmat", &rm, 8), ("noisy-sbm", &noisy, 4)] {
        let random = random_cut(adj, parts, 1);
        let cut = |method| {
            let p = partition(adj, &PartitionOptions { parts, method, seed: 1 }).expect("partition");
            p.cut_edges(adj).expect("cut")
        };
        let (metis, greedy, contiguous) =
            (cut(PartitionMethod::Metis), cut(PartitionMethod::Greedy), cut(PartitionMethod::Contiguous));
        println!("{name} P={parts}: metis {metis}, greedy {greedy}, contiguous {contiguous}, random {random}");
        assert!((metis as f64) < 0.9 * random as f64, "{name} P={parts}: metis {metis} vs random {random}");
        assert!((greedy as f64) < 0.9 * random as f64, "{name} P={parts}: greedy {greedy} vs random {random}");
        if name == "noisy-sbm" {
            assert!(metis as f64 <= 1.2 * noisy_planted as f64, "metis {metis} vs planted {noisy_planted}");
            assert!(greedy as f64 <= 1.2 * noisy_planted as f64, "greedy {greedy} vs planted {noisy_planted}");
        }
    }
}

#[test]
fn metis_is_reproducible_across_threads() {
    let adj = rmat(11, 15_000, 9);
    let opts = PartitionOptions { parts: 4, method: PartitionMethod::Metis, seed: 77 };
    let results: Vec<Partition> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4).map(|_| s.spawn(|| partition(&adj, &opts).expect("metis"))).collect();
        handles.into_iter().map(|h| h.join().expect("thread")).collect()
    });
    assert!(results.windows(2).all(|w| w[0] == w[1]));
}
