//! Coarsening: size-constrained label propagation into clusters, then the graph of the clusters.

use super::{
    best_label, mix, shuffled, tie, Level, Scratch, ScratchPool, CHUNK, CLUSTER_CONVERGED, CLUSTER_ROUNDS, HEAVY_PIECE,
};
use crate::graph::partition::partitioners::NONE;
use rayon::prelude::*;

/// Size-constrained label propagation: every node starts alone and repeatedly joins the
/// cluster it is most strongly connected to whose weight stays within `max_cluster`. Nodes
/// left alone are then grouped by the cluster they are most strongly connected to (two-hop
/// clustering, which coarsens the leaves around hubs), isolated nodes with each other. Returns
/// every node's cluster id (a node id of the level).
pub(super) fn cluster(g: &Level, max_cluster: u64, seed: u64, pool: &ScratchPool) -> Vec<u32> {
    let n = g.n();
    let mut cluster: Vec<u32> = (0..n as u32).collect();
    let mut cw = g.vwgt.clone();
    let order = shuffled(n, seed);
    for round in 0..CLUSTER_ROUNDS {
        let round_seed = mix(seed ^ round as u64);
        let mut moved = 0usize;
        for chunk in order.chunks(CHUNK) {
            let (cl, cwr) = (&cluster, &cw);
            let wanted: Vec<u32> = chunk
                .par_iter()
                .map(|&v| pool.with(|s| best_cluster(g, v as usize, cl, cwr, max_cluster, round_seed, s)))
                .collect();
            for (&v, &c) in chunk.iter().zip(&wanted) {
                let (v, old) = (v as usize, cluster[v as usize]);
                if c == NONE || c == old {
                    continue;
                }
                let w = g.vwgt[v];
                // the cluster emptied or filled up since the choice
                if cw[c as usize] == 0 || cw[c as usize] + w > max_cluster {
                    continue;
                }
                cw[old as usize] -= w;
                cw[c as usize] += w;
                cluster[v] = c;
                moved += 1;
            }
        }
        if moved * CLUSTER_CONVERGED < n {
            break;
        }
    }
    group_singletons(g, &mut cluster, max_cluster, seed, pool);
    cluster
}

/// The cluster `v` joins: the one it has the most edge weight to among those it fits in,
/// if that is more than to its own; ties broken by the seed. `NONE` to stay.
fn best_cluster(g: &Level, v: usize, cluster: &[u32], cw: &[u64], max_cluster: u64, seed: u64, s: &mut Scratch) -> u32 {
    let own = cluster[v] as usize;
    s.rate(g.xadj[v + 1] - g.xadj[v], g.edges(v).map(|(u, w)| (cluster[u] as usize, w)));
    let w = g.vwgt[v];
    best_label(v, own, seed, s, |c| cw[c] + w <= max_cluster)
}

/// Nodes still alone in their cluster, grouped by the cluster they have most edge weight to
/// (ignoring its weight), into clusters of at most `max_cluster`.
fn group_singletons(g: &Level, cluster: &mut [u32], max_cluster: u64, seed: u64, pool: &ScratchPool) {
    let n = g.n();
    let mut size = vec![0u32; n];
    for &c in cluster.iter() {
        size[c as usize] += 1;
    }
    let cl: &[u32] = cluster;
    let mut alone: Vec<(u32, u32)> = (0..n)
        .into_par_iter()
        .filter(|&v| size[cl[v] as usize] == 1)
        .map(|v| {
            let favourite = pool.with(|s| {
                s.rate(g.xadj[v + 1] - g.xadj[v], g.edges(v).map(|(u, w)| (cl[u] as usize, w)));
                let mut best = (0u64, 0u64, NONE);
                for &(c, r) in &s.rated {
                    let key = (r, tie(seed, v, c as usize));
                    if c as usize != v && (key.0, key.1) > (best.0, best.1) {
                        best = (key.0, key.1, c);
                    }
                }
                best.2
            });
            (favourite, v as u32)
        })
        .collect();
    alone.par_sort_unstable();
    let mut i = 0;
    while i < alone.len() {
        let favourite = alone[i].0;
        let mut j = i;
        while j < alone.len() && alone[j].0 == favourite {
            // a group: its first node is the cluster id
            let leader = alone[j].1;
            let mut weight = 0u64;
            while j < alone.len() && alone[j].0 == favourite && weight + g.vwgt[alone[j].1 as usize] <= max_cluster {
                weight += g.vwgt[alone[j].1 as usize];
                cluster[alone[j].1 as usize] = leader;
                j += 1;
            }
            if weight == 0 {
                // a node heavier than the limit stays alone
                j += 1;
            }
        }
        i = j;
    }
}

/// The graph of the clusters: one node per cluster (numbered in the order of their first
/// node), its weight the sum of its nodes', the edge weight between two clusters the sum of
/// the edges between their nodes (edges inside a cluster dropped). Returns it and every node's
/// cluster number. Clusters of more than `heavy` adjacency entries are summed on all cores.
pub(super) fn contract(g: &Level, cluster: &[u32], pool: &ScratchPool, heavy: usize) -> (Level, Vec<u32>) {
    let n = g.n();
    let mut number = vec![NONE; n];
    let mut nc = 0u32;
    for &c in cluster {
        if number[c as usize] == NONE {
            number[c as usize] = nc;
            nc += 1;
        }
    }
    let nc = nc as usize;
    let map: Vec<u32> = cluster.par_iter().map(|&c| number[c as usize]).collect();
    drop(number);
    // the nodes of every cluster, in id order
    let mut start = vec![0usize; nc + 1];
    for &c in &map {
        start[c as usize + 1] += 1;
    }
    for c in 0..nc {
        start[c + 1] += start[c];
    }
    let mut cursor = start.clone();
    let mut members = vec![0u32; n];
    for (v, &c) in map.iter().enumerate() {
        members[cursor[c as usize]] = v as u32;
        cursor[c as usize] += 1;
    }
    drop(cursor);
    let range = |v: u32| g.xadj[v as usize]..g.xadj[v as usize + 1];
    // the summed weights of the edges at `indices` of `g.adj` (`count` of them) to clusters
    // other than `c`, into `s.rated`
    let rate = |c: usize, count: usize, indices: &mut dyn Iterator<Item = usize>, s: &mut Scratch| {
        let weights = g.ewgt.as_deref();
        let edges = indices
            .map(|i| (map[g.adj[i] as usize] as usize, weights.map_or(1, |w| w[i] as u64)))
            .filter(|&(cu, _)| cu != c);
        s.rate(count, edges);
    };
    let lists: Vec<(u64, Vec<(u32, u32)>)> = (0..nc)
        .into_par_iter()
        .map(|c| {
            let nodes = &members[start[c]..start[c + 1]];
            let vw: u64 = nodes.iter().map(|&v| g.vwgt[v as usize]).sum();
            let count: usize = nodes.iter().map(|&v| range(v).len()).sum();
            let list = if count <= heavy {
                pool.with(|s| {
                    rate(c, count, &mut nodes.iter().flat_map(|&v| range(v)), s);
                    narrow(&s.rated)
                })
            } else {
                // a cluster of hubs: its entries in pieces on all cores, the pieces' sums merged
                let pieces: Vec<std::ops::Range<usize>> = nodes
                    .iter()
                    .flat_map(|&v| {
                        let r = range(v);
                        r.clone().step_by(HEAVY_PIECE).map(move |a| a..(a + HEAVY_PIECE).min(r.end))
                    })
                    .collect();
                let summed = pieces
                    .into_par_iter()
                    .map(|piece| {
                        pool.with(|s| {
                            rate(c, piece.len(), &mut piece.clone(), s);
                            s.rated.clone()
                        })
                    })
                    .reduce(Vec::new, merge_sums);
                narrow(&summed)
            };
            (vw, list)
        })
        .collect();
    let mut xadj = Vec::with_capacity(nc + 1);
    xadj.push(0usize);
    let mut acc = 0usize;
    for (_, l) in &lists {
        acc += l.len();
        xadj.push(acc);
    }
    let vwgt: Vec<u64> = lists.iter().map(|(w, _)| *w).collect();
    let (adj, ewgt): (Vec<u32>, Vec<u32>) = lists.into_par_iter().flat_map_iter(|(_, l)| l).unzip();
    (Level { xadj, adj, ewgt: Some(ewgt), vwgt }, map)
}

/// Edge weights stored in 32 bits (saturated; see [`Level::ewgt`]).
fn narrow(summed: &[(u32, u64)]) -> Vec<(u32, u32)> {
    summed.iter().map(|&(cu, w)| (cu, w.min(u32::MAX as u64) as u32)).collect()
}

/// Two lists of (key, sum) with ascending keys merged into one, the sums of equal keys added.
fn merge_sums(a: Vec<(u32, u64)>, b: Vec<(u32, u64)>) -> Vec<(u32, u64)> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].0.cmp(&b[j].0) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                out.push((a[i].0, a[i].1 + b[j].1));
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}
