//! The partitioners (METIS k-way, Greedy streaming, Contiguous ranges; the multilevel one in
//! `multilevel/`; the symmetrised graph they work on in `symmetric.rs`) and [`partition`], which runs the one asked for.

use super::assignment::{check_graph, Partition, PartitionError, PartitionMethod, PartitionOptions};
use super::multilevel::multilevel;
use super::symmetric::{symmetrize, SymGraph};
use crate::graph::csr::Csr;
use rayon::prelude::*;

/// Assigns every node of `adj` (square; row = destination) to one of `opts.parts` parts.
///
/// Parts are balanced by the node weight `in-degree + 1`; none is empty. Equal inputs give equal
/// assignments.
///
/// # Errors
/// Zero parts, more parts than nodes, a non-square adjacency, a METIS failure.
///
/// # Example
/// ```
/// use burn_sparse_gnn::partition::{partition, PartitionMethod, PartitionOptions, PartitionedGraph};
/// use burn_sparse_gnn::{BuildOptions, Csr};
///
/// // two triangles 0-1-2 and 3-4-5 joined by the edge 2-3, stored both ways
/// let src = [0, 1, 2, 3, 4, 5, 2];
/// let dst = [1, 2, 0, 4, 5, 3, 3];
/// let adj = Csr::from_edges(6, &src, &dst, None, BuildOptions::undirected()).unwrap();
/// let p = partition(&adj, &PartitionOptions::new(2, PartitionMethod::Multilevel)).unwrap();
/// assert_eq!(p.assignment[0], p.assignment[1]);
/// assert_ne!(p.assignment[0], p.assignment[4]);
///
/// let g = PartitionedGraph::build(&adj, &p).unwrap();
/// // the edge 2-3 is cut in both directions; each part reads one halo node
/// assert_eq!(g.stats().cut_edges, 2);
/// assert_eq!(g.parts[0].halo.len(), 1);
/// ```
pub fn partition(adj: &Csr, opts: &PartitionOptions) -> Result<Partition, PartitionError> {
    let n = check_graph(adj, opts.parts)?;
    let weight = node_weights(adj);
    let parts = opts.parts;
    let (mut assignment, method) = if parts == 1 {
        (vec![0u32; n], opts.method)
    } else {
        match opts.method {
            PartitionMethod::Contiguous => (contiguous(&weight, parts), PartitionMethod::Contiguous),
            PartitionMethod::Greedy => {
                let sym = symmetrize(adj);
                (greedy(&sym, &weight, parts, opts.seed), PartitionMethod::Greedy)
            }
            PartitionMethod::Metis => {
                let sym = symmetrize(adj);
                let total: u64 = weight.iter().sum();
                if sym.adj.len() > i32::MAX as usize || total > i32::MAX as u64 {
                    log::warn!(
                        "METIS takes 32-bit indices: {} symmetrised adjacency entries, total vertex weight {}; \
                         partitioning with Greedy instead",
                        sym.adj.len(),
                        total
                    );
                    (greedy(&sym, &weight, parts, opts.seed), PartitionMethod::Greedy)
                } else {
                    (metis_kway(&sym.xadj, &sym.adj, None, &weight, parts, opts.seed)?, PartitionMethod::Metis)
                }
            }
            PartitionMethod::Multilevel => {
                (multilevel(symmetrize(adj), &weight, parts, opts.seed)?, PartitionMethod::Multilevel)
            }
        }
    };
    fill_empty_parts(&mut assignment, parts);
    Ok(Partition { parts, assignment, method, seed: opts.seed })
}

pub(super) const NONE: u32 = u32::MAX;
/// `in-degree + 1` of every node: the work of its row.
pub(super) fn node_weights(adj: &Csr) -> Vec<u64> {
    adj.row_ptr().par_windows(2).map(|w| (w[1] - w[0]) as u64 + 1).collect()
}

/// Moves one node into every empty part, taken from the part with the most nodes (its highest
/// id), so that every part of a graph with at least `parts` nodes owns a node.
fn fill_empty_parts(assignment: &mut [u32], parts: usize) {
    let mut count = vec![0usize; parts];
    for &q in assignment.iter() {
        count[q as usize] += 1;
    }
    for empty in 0..parts {
        if count[empty] > 0 {
            continue;
        }
        let Some((donor, &size)) = count.iter().enumerate().max_by_key(|&(i, &c)| (c, std::cmp::Reverse(i))) else {
            return;
        };
        if size < 2 {
            return;
        }
        if let Some(v) = assignment.iter().rposition(|&q| q as usize == donor) {
            assignment[v] = empty as u32;
            count[donor] -= 1;
            count[empty] += 1;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// partitioners

/// Consecutive ranges: node `v` goes to the part whose weight quantile holds the middle of `v`'s
/// weight; boundaries are then clamped so that every part gets at least one node.
fn contiguous(weight: &[u64], parts: usize) -> Vec<u32> {
    let n = weight.len();
    let total: u128 = weight.iter().map(|&w| w as u128).sum();
    // twice the weight before the middle of node v
    let mut mid = Vec::with_capacity(n);
    let mut before: u128 = 0;
    for &w in weight {
        mid.push(2 * before + w as u128);
        before += w as u128;
    }
    let mut bounds = vec![0usize; parts + 1];
    bounds[parts] = n;
    for (k, b) in bounds.iter_mut().enumerate().take(parts).skip(1) {
        // first node whose middle lies at or past k / parts of the total weight
        let target = 2 * k as u128 * total;
        *b = mid.partition_point(|&m| m * (parts as u128) < target);
    }
    for k in 1..parts {
        bounds[k] = bounds[k].max(bounds[k - 1] + 1);
    }
    for k in (1..parts).rev() {
        bounds[k] = bounds[k].min(bounds[k + 1] - 1);
    }
    let mut assignment = vec![0u32; n];
    for k in 0..parts {
        assignment[bounds[k]..bounds[k + 1]].fill(k as u32);
    }
    assignment
}

/// Breadth-first order of all nodes: from `first`, then from the lowest unvisited id of each
/// further component.
fn bfs_order(sym: &SymGraph, first: usize) -> Vec<u32> {
    let n = sym.xadj.len() - 1;
    let mut seen = vec![false; n];
    let mut order: Vec<u32> = Vec::with_capacity(n);
    let roots = std::iter::once(first).chain(0..n);
    for root in roots {
        if seen[root] {
            continue;
        }
        seen[root] = true;
        let mut head = order.len();
        order.push(root as u32);
        while head < order.len() {
            let v = order[head] as usize;
            head += 1;
            for &u in sym.neighbours(v) {
                if !seen[u as usize] {
                    seen[u as usize] = true;
                    order.push(u);
                }
            }
        }
    }
    order
}

/// Capacity of a Greedy part above the mean part weight.
const GREEDY_SLACK: f64 = 0.03;
/// Restreaming passes of Greedy at most (fewer once a pass moves fewer than 0.1 % of the nodes).
const GREEDY_RESTREAMS: usize = 12;

/// Greedy: parts grown one after another ([`grow_parts`]), then refined by restreaming passes
/// in breadth-first order: each node moves to the part maximising
/// `neighbours there - alpha * ((load + w)^1.5 - load^1.5)` under a hard capacity,
/// `alpha = edges * P^0.5 / total_weight^1.5` (Fennel's objective with `gamma = 1.5`, computed
/// with `sqrt`, which is exactly rounded, so the result is the same on every platform).
fn greedy(sym: &SymGraph, weight: &[u64], parts: usize, seed: u64) -> Vec<u32> {
    let n = weight.len();
    let total: u64 = weight.iter().sum();
    let cap = total as f64 / parts as f64 * (1.0 + GREEDY_SLACK);
    let edges = sym.adj.len() as f64 / 2.0;
    let alpha = edges * (parts as f64).sqrt() / (total as f64 * (total as f64).sqrt());
    let order = bfs_order(sym, (seed % n as u64) as usize);
    let mut assign = grow_parts(sym, weight, parts, &order);
    let mut load = vec![0u64; parts];
    for (v, &q) in assign.iter().enumerate() {
        load[q as usize] += weight[v];
    }
    let mut count = vec![0u32; parts];
    let mut touched: Vec<usize> = Vec::with_capacity(parts);
    for _ in 0..GREEDY_RESTREAMS {
        let mut moved = 0usize;
        for &v in &order {
            let v = v as usize;
            let old = assign[v];
            load[old as usize] -= weight[v];
            for &u in sym.neighbours(v) {
                let q = assign[u as usize] as usize;
                if count[q] == 0 {
                    touched.push(q);
                }
                count[q] += 1;
            }
            let best = greedy_choice(&count, &load, weight[v], cap, alpha, old);
            for q in touched.drain(..) {
                count[q] = 0;
            }
            assign[v] = best as u32;
            load[best] += weight[v];
            if best as u32 != old {
                moved += 1;
            }
        }
        // converged: fewer than 0.1 % of the nodes moved
        if moved * 1000 < n.max(1) {
            break;
        }
    }
    assign
}

/// Grows parts `0..P-1` one after another to their share of the total weight: part `k` starts
/// at the first unassigned node of `order` and repeatedly takes the unassigned node with the
/// most neighbours already in part `k` (ties to the lower id; a new start from `order` when its
/// region has no unassigned neighbour left). The last part takes the rest.
fn grow_parts(sym: &SymGraph, weight: &[u64], parts: usize, order: &[u32]) -> Vec<u32> {
    let n = weight.len();
    let total: u128 = weight.iter().map(|&w| w as u128).sum();
    let mut assign = vec![NONE; n];
    let mut conn = vec![0u32; n];
    let mut touched: Vec<u32> = Vec::new();
    let mut heap: std::collections::BinaryHeap<u64> = std::collections::BinaryHeap::new();
    // key: connections in the high half, the complement of the id in the low half
    let key = |c: u32, v: u32| ((c as u64) << 32) | (u32::MAX - v) as u64;
    let mut next_start = 0usize;
    let mut filled: u128 = 0;
    for k in 0..parts.saturating_sub(1) {
        let target = total * (k as u128 + 1) / parts as u128;
        while filled < target {
            let mut pick = None;
            while let Some(top) = heap.pop() {
                let (c, v) = ((top >> 32) as u32, u32::MAX - top as u32);
                if assign[v as usize] == NONE && conn[v as usize] == c {
                    pick = Some(v as usize);
                    break;
                }
            }
            let v = match pick {
                Some(v) => v,
                None => {
                    while next_start < n && assign[order[next_start] as usize] != NONE {
                        next_start += 1;
                    }
                    match order.get(next_start) {
                        Some(&v) => v as usize,
                        None => break,
                    }
                }
            };
            assign[v] = k as u32;
            filled += weight[v] as u128;
            for &u in sym.neighbours(v) {
                let ui = u as usize;
                if assign[ui] == NONE {
                    if conn[ui] == 0 {
                        touched.push(u);
                    }
                    conn[ui] += 1;
                    heap.push(key(conn[ui], u));
                }
            }
        }
        heap.clear();
        for u in touched.drain(..) {
            conn[u as usize] = 0;
        }
    }
    let last = parts.saturating_sub(1) as u32;
    for a in assign.iter_mut().filter(|a| **a == NONE) {
        *a = last;
    }
    assign
}

/// The part for a node of weight `w` with `count[q]` neighbours in part `q`: among the parts it
/// fits in (`load + w <= cap`), the highest `count - alpha * ((load + w)^1.5 - load^1.5)`,
/// then its previous part `old`, then the lighter part, then the lower index; the lightest part
/// where it fits nowhere.
fn greedy_choice(count: &[u32], load: &[u64], w: u64, cap: f64, alpha: f64, old: u32) -> usize {
    let mut best: Option<(usize, f64)> = None;
    for q in 0..load.len() {
        let (l, after) = (load[q] as f64, (load[q] + w) as f64);
        if after > cap {
            continue;
        }
        let score = count[q] as f64 - alpha * (after * after.sqrt() - l * l.sqrt());
        let better = match best {
            None => true,
            Some((b, bs)) => {
                if score != bs {
                    score > bs
                } else if (q as u32 == old) != (b as u32 == old) {
                    q as u32 == old
                } else {
                    load[q] < load[b]
                }
            }
        };
        if better {
            best = Some((q, score));
        }
    }
    match best {
        Some((q, _)) => q,
        None => (0..load.len()).min_by_key(|&q| (load[q], q)).unwrap_or(0),
    }
}

/// Serialises the calls into METIS (see [`metis_kway`]).
static METIS_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// METIS k-way edge-cut partitioning of the undirected graph `xadj` / `adj` (no self-loops, no
/// duplicates; edge weights `adjwgt`, 1 where `None`) with node weights `weight`. Errors where
/// the graph or its weights do not fit METIS' 32-bit indices.
pub(super) fn metis_kway(
    xadj: &[usize],
    adj: &[u32],
    adjwgt: Option<&[u32]>,
    weight: &[u64],
    parts: usize,
    seed: u64,
) -> Result<Vec<u32>, PartitionError> {
    let n = weight.len();
    let err = |what: &str| PartitionError::Metis(format!("{what} exceeds 32-bit indices"));
    let to_i32 = |v: &[u64], what: &str| -> Result<Vec<i32>, PartitionError> {
        v.par_iter().map(|&w| i32::try_from(w)).collect::<Result<_, _>>().map_err(|_| err(what))
    };
    let xadj: Vec<i32> =
        xadj.par_iter().map(|&x| i32::try_from(x)).collect::<Result<_, _>>().map_err(|_| err("adjacency"))?;
    let adjncy: Vec<i32> = adj.par_iter().map(|&x| x as i32).collect();
    let vwgt = to_i32(weight, "vertex weight")?;
    if weight.iter().sum::<u64>() > i32::MAX as u64 {
        return Err(err("total vertex weight"));
    }
    let adjwgt = adjwgt
        .map(|w| {
            w.par_iter().map(|&w| i32::try_from(w)).collect::<Result<Vec<i32>, _>>().map_err(|_| err("edge weight"))
        })
        .transpose()?;
    let nparts = i32::try_from(parts).map_err(|_| err("parts"))?;
    let mut part = vec![0i32; n];
    let seed = (seed % i32::MAX as u64) as i32;
    // METIS keeps its random generator in process-global state: one call at a time, so that
    // equal seeds give equal partitions
    let _guard = METIS_LOCK.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let graph = metis::Graph::new(1, nparts, &xadj, &adjncy).map_err(|e| PartitionError::Metis(format!("{e:?}")))?;
    let graph = match &adjwgt {
        Some(w) => graph.set_adjwgt(w),
        None => graph,
    };
    graph
        .set_vwgt(&vwgt)
        .set_option(metis::option::Seed(seed))
        .part_kway(&mut part)
        .map_err(|e| PartitionError::Metis(e.to_string()))?;
    part.into_par_iter()
        .enumerate()
        .map(|(v, q)| {
            u32::try_from(q)
                .ok()
                .filter(|&q| (q as usize) < parts)
                .ok_or_else(|| PartitionError::Metis(format!("node {v} assigned to part {q}")))
        })
        .collect()
}
