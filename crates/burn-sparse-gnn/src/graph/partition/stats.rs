//! Sizes, cut and balance of a partitioned graph ([`PartitionStats`]).

use super::assignment::PartitionMethod;
use super::build::PartitionedGraph;
use rayon::prelude::*;
use serde::Serialize;

/// Sizes of one part.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PartStats {
    /// The part's index.
    pub part: usize,
    /// Nodes (rows) the part owns.
    pub owned: usize,
    /// Edges of its rows.
    pub local_edges: usize,
    /// Halo nodes it receives per exchange.
    pub halo: usize,
    /// Edges of its rows whose source is in another part.
    pub cut_edges: usize,
    /// Rows it sends per exchange.
    pub send_rows: usize,
}

/// Sizes and balance of a [`PartitionedGraph`], for results files.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PartitionStats {
    /// The partitioner.
    pub method: PartitionMethod,
    /// Number of parts.
    pub parts: usize,
    /// Nodes of the graph.
    pub n_nodes: usize,
    /// Edges of the graph.
    pub edges: usize,
    /// Per part, in part order.
    pub per_part: Vec<PartStats>,
    /// Edges whose source is in another part than their destination.
    pub cut_edges: usize,
    /// `cut_edges / edges` (0 for a graph without edges).
    pub cut_fraction: f64,
    /// Halo rows of all parts together: the feature rows moved per exchange.
    pub halo_total: usize,
    /// Most nodes owned by one part.
    pub max_owned: usize,
    /// Mean nodes per part.
    pub mean_owned: f64,
    /// `max_owned / mean_owned` (1 = perfectly balanced).
    pub owned_imbalance: f64,
    /// Most edges of one part.
    pub max_edges: usize,
    /// Mean edges per part.
    pub mean_edges: f64,
    /// `max_edges / mean_edges` (1 = perfectly balanced; 1 for a graph without edges).
    pub edge_imbalance: f64,
}

impl PartitionStats {
    /// Bytes moved per exchange of `width` features of `bytes_per_elem` bytes each:
    /// `halo_total * width * bytes_per_elem`.
    pub fn halo_bytes(&self, width: usize, bytes_per_elem: usize) -> u64 {
        self.halo_total as u64 * width as u64 * bytes_per_elem as u64
    }
}

impl PartitionedGraph {
    /// Sizes, cut and balance.
    pub fn stats(&self) -> PartitionStats {
        let per_part: Vec<PartStats> = self
            .parts
            .iter()
            .map(|lp| {
                let n_own = lp.owned.len() as u32;
                let cut = lp.adj.col_idx().par_iter().filter(|&&c| c >= n_own).count();
                PartStats {
                    part: lp.part,
                    owned: lp.owned.len(),
                    local_edges: lp.adj.nnz(),
                    halo: lp.halo.len(),
                    cut_edges: cut,
                    send_rows: lp.send_rows(),
                }
            })
            .collect();
        let p = per_part.len().max(1) as f64;
        let edges: usize = per_part.iter().map(|s| s.local_edges).sum();
        let cut_edges: usize = per_part.iter().map(|s| s.cut_edges).sum();
        let max_owned = per_part.iter().map(|s| s.owned).max().unwrap_or(0);
        let max_edges = per_part.iter().map(|s| s.local_edges).max().unwrap_or(0);
        let mean_owned = self.n_nodes as f64 / p;
        let mean_edges = edges as f64 / p;
        PartitionStats {
            method: self.method,
            parts: self.parts.len(),
            n_nodes: self.n_nodes,
            edges,
            cut_edges,
            cut_fraction: if edges == 0 { 0.0 } else { cut_edges as f64 / edges as f64 },
            halo_total: per_part.iter().map(|s| s.halo).sum(),
            max_owned,
            mean_owned,
            owned_imbalance: if mean_owned > 0.0 { max_owned as f64 / mean_owned } else { 1.0 },
            max_edges,
            mean_edges,
            edge_imbalance: if mean_edges > 0.0 { max_edges as f64 / mean_edges } else { 1.0 },
            per_part,
        }
    }
}
