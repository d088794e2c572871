//! Refinement: label propagation of the parts under the balance constraint.

use super::{best_label, mix, shuffled, Level, Scratch, ScratchPool, CHUNK, REFINE_CONVERGED, REFINE_ROUNDS};
use crate::graph::partition::partitioners::NONE;
use rayon::prelude::*;

/// Label propagation refinement: every node moves to the part it has the most edge weight to,
/// where that beats its own part and the part stays within `max_part`; rounds until no node
/// moves (at most [`REFINE_ROUNDS`]).
pub(super) fn refine(g: &Level, part: &mut [u32], parts: usize, max_part: u64, seed: u64, pool: &ScratchPool) {
    let n = g.n();
    let mut load = vec![0u64; parts];
    for (v, &q) in part.iter().enumerate() {
        load[q as usize] += g.vwgt[v];
    }
    let order = shuffled(n, seed);
    for round in 0..REFINE_ROUNDS {
        let round_seed = mix(seed ^ round as u64);
        let mut moved = 0usize;
        for chunk in order.chunks(CHUNK) {
            let (pt, ld) = (&*part, &load);
            let wanted: Vec<u32> = chunk
                .par_iter()
                .map(|&v| pool.with(|s| best_part(g, v as usize, pt, ld, max_part, round_seed, s)))
                .collect();
            for (&v, &q) in chunk.iter().zip(&wanted) {
                if q == NONE {
                    continue;
                }
                let (v, old) = (v as usize, part[v as usize] as usize);
                let w = g.vwgt[v];
                if load[q as usize] + w > max_part {
                    continue;
                }
                load[old] -= w;
                load[q as usize] += w;
                part[v] = q;
                moved += 1;
            }
        }
        if moved * REFINE_CONVERGED < n {
            break;
        }
    }
}

/// The part `v` moves to: the one with the most edge weight from `v` among those it fits in,
/// if more than to its own part; ties broken by the seed. `NONE` to stay.
fn best_part(g: &Level, v: usize, part: &[u32], load: &[u64], max_part: u64, seed: u64, s: &mut Scratch) -> u32 {
    let own = part[v] as usize;
    s.rate_dense(g.edges(v).map(|(u, w)| (part[u] as usize, w)));
    if s.rated.len() < 2 && s.rated.first().is_none_or(|&(q, _)| q as usize == own) {
        // an inner node
        return NONE;
    }
    let w = g.vwgt[v];
    best_label(v, own, seed, s, |q| load[q] + w <= max_part)
}
