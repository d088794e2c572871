//! The rules by which blocks become graphs, and the full-neighbour blocks of layer-wise
//! inference (built on the host once per run).

use crate::error::TrainError;
use burn::tensor::TensorData;
use burn_sparse_gnn::ops::neighbors::BlockGraphSpec;
use burn_sparse_gnn::{Csr, Graph, GraphOptions};
use std::sync::Arc;

/// A block on the host: `n_dst` destination rows over `src.len()` source columns, the
/// destinations first among the sources.
#[derive(Clone, Debug, PartialEq)]
pub struct HostBlock {
    /// Destination rows.
    pub n_dst: usize,
    /// `[n_dst + 1]`.
    pub row_ptr: Vec<i64>,
    /// `[nnz]`: each edge's source column (a local id).
    pub col_idx: Vec<u32>,
    /// `[n_src]`: the global id of each source column.
    pub src: Vec<u32>,
}

impl HostBlock {
    /// The block of the destination rows `rows` of `adj` with every neighbour (layer-wise
    /// inference): the rows first among the sources, then their other neighbours in order of
    /// first appearance. `mark`: `[adj.n_cols()]` scratch, every entry `u32::MAX`, left so.
    pub fn full(adj: &Csr, rows: std::ops::Range<usize>, mark: &mut [u32]) -> Self {
        let mut src: Vec<u32> = rows.clone().map(|r| r as u32).collect();
        for (i, &r) in src.iter().enumerate() {
            mark[r as usize] = i as u32;
        }
        let (ptr, cols) = (adj.row_ptr(), adj.col_idx());
        let mut row_ptr = Vec::with_capacity(rows.len() + 1);
        row_ptr.push(0i64);
        let mut col_idx = Vec::with_capacity(ptr[rows.end] - ptr[rows.start]);
        for r in rows.clone() {
            for &c in &cols[ptr[r]..ptr[r + 1]] {
                let m = &mut mark[c as usize];
                if *m == u32::MAX {
                    *m = src.len() as u32;
                    src.push(c);
                }
                col_idx.push(*m);
            }
            row_ptr.push(col_idx.len() as i64);
        }
        for &s in &src {
            mark[s as usize] = u32::MAX;
        }
        Self { n_dst: rows.len(), row_ptr, col_idx, src }
    }

    /// Edges.
    pub fn nnz(&self) -> usize {
        self.col_idx.len()
    }
}

/// How a block becomes a device graph: with the whole graph's degrees, the self-loops GAT
/// attends through, and the weighting of sampled sums.
///
/// - Columns (sources) take their whole-graph out-degree, so GCN's `1 / sqrt(d_j)` is the
///   full graph's (the choice the GCN paper's normalisation implies, and the one under which a
///   block with every neighbour gives exactly the whole-graph layer).
/// - Rows (destinations) take the block's own edge count: a mean aggregation (GraphSAGE mean,
///   GIN's half-safe mean) averages over the sampled neighbours.
/// - Where the model sums its neighbours (GCN, GIN, GraphSAGE sum) and the block holds a
///   sample, each edge of a row with `c` of its `d` neighbours sampled weighs `d / c`, and the
///   row's weighted degree is `d`: the sum, and GCN's normalisation `1 / sqrt(d_i)`, estimate
///   the whole neighbourhood's without bias, as the boundary sampling of partitioned training
///   scales its halo rows.
/// - With `self_loops` (GAT) every destination gets the edge from itself where the block lacks
///   it.
#[derive(Clone, Debug)]
pub struct BlockRules {
    in_degree: Arc<Vec<u32>>,
    out_degree: Arc<Vec<u32>>,
    self_loops: bool,
    scale_sums: bool,
    cbsr_groups: bool,
    opts: GraphOptions,
}

impl BlockRules {
    /// The rules of blocks of `adj` (a square graph without edge weights): `self_loops` adds the
    /// destinations' self-loops (a model that [`needs_self_loops`]), `scale_sums` weighs the
    /// sampled edges of a summing model ([`sums_neighbours`]); `opts` the device graphs'
    /// options.
    ///
    /// [`needs_self_loops`]: gnn_models::GnnModelConfig::needs_self_loops
    /// [`sums_neighbours`]: gnn_models::GnnModelConfig::sums_neighbours
    pub fn new(adj: &Csr, self_loops: bool, scale_sums: bool, opts: GraphOptions) -> Result<Self, TrainError> {
        if adj.n_rows() != adj.n_cols() {
            return Err(TrainError::Data(format!(
                "blocks need a square graph, this one is {} x {}",
                adj.n_rows(),
                adj.n_cols()
            )));
        }
        if adj.weights().is_some() {
            return Err(TrainError::Data(
                "mini-batch training does not read edge weights: train the weighted graph full-graph".into(),
            ));
        }
        let in_degree = adj.row_degrees().into_iter().map(|d| d as u32).collect();
        let out_degree = adj.col_degrees().into_iter().map(|d| d as u32).collect();
        Ok(Self {
            in_degree: Arc::new(in_degree),
            out_degree: Arc::new(out_degree),
            self_loops,
            scale_sums,
            cbsr_groups: true,
            opts,
        })
    }

    /// The rules of the blocks `model` trains on: its self-loops, its weighting of summed
    /// neighbours, and the CBSR kernels' edge partition only where its layers run them.
    pub fn for_model(adj: &Csr, model: &gnn_models::GnnModelConfig, opts: GraphOptions) -> Result<Self, TrainError> {
        Ok(Self::new(adj, model.needs_self_loops(), model.sums_neighbours(), opts)?.with_cbsr_groups(model.runs_cbsr()))
    }

    /// Whether the blocks' graphs get the CBSR kernels' own edge partition (on by default; a
    /// model without MaxK or k-max-pooling, [`runs_cbsr`], does not read it, and without it each
    /// block is built with fewer launches).
    ///
    /// [`runs_cbsr`]: gnn_models::GnnModelConfig::runs_cbsr
    pub fn with_cbsr_groups(self, cbsr_groups: bool) -> Self {
        Self { cbsr_groups, ..self }
    }

    /// The whole graph's in-degree of node `v`.
    pub fn in_degree(&self, v: u32) -> u32 {
        self.in_degree[v as usize]
    }

    /// The device form of the rules for [`burn_sparse_gnn::ops::neighbors::block_graph`]: the
    /// whole graph's degrees uploaded to `device`.
    pub fn device_spec<B: burn_sparse_gnn::SparseGnnBackend>(&self, device: &B::Device) -> BlockGraphSpec<B> {
        let floats = |v: &[u32]| {
            let dtype = <B::FloatElem as burn::tensor::Element>::dtype();
            let d = TensorData::new(v.iter().map(|&x| x as f32).collect::<Vec<f32>>(), [v.len()]).convert_dtype(dtype);
            burn_sparse_gnn::upload::<B, 1>(d, device)
        };
        BlockGraphSpec {
            in_degree: floats(&self.in_degree),
            out_degree: floats(&self.out_degree),
            self_loops: self.self_loops,
            scale_sums: self.scale_sums,
            cbsr_groups: self.cbsr_groups,
            opts: self.opts,
        }
    }

    /// Whether every destination gets the edge from itself (then the sampler draws from the
    /// graph without its self-loops).
    pub fn self_loops(&self) -> bool {
        self.self_loops
    }

    /// The device graph of `b`; `sampled`: its rows hold a sample of their neighbours (the sums'
    /// weights apply), else every neighbour.
    pub fn graph<B: burn_sparse_gnn::SparseGnnBackend>(
        &self,
        b: HostBlock,
        sampled: bool,
        device: &B::Device,
    ) -> Result<Graph<B>, TrainError> {
        let HostBlock { n_dst, mut row_ptr, mut col_idx, src } = b;
        let n_src = src.len();
        let data = |e: burn_sparse_gnn::GraphError| TrainError::Data(format!("block: {e}"));
        if self.self_loops {
            let has_loop = |r: usize, cols: &[u32], ptr: &[i64]| {
                cols[ptr[r] as usize..ptr[r + 1] as usize].iter().any(|&c| c as usize == r)
            };
            if (0..n_dst).any(|r| !has_loop(r, &col_idx, &row_ptr)) {
                let mut ptr = Vec::with_capacity(n_dst + 1);
                let mut cols = Vec::with_capacity(col_idx.len() + n_dst);
                ptr.push(0i64);
                for r in 0..n_dst {
                    let row = &col_idx[row_ptr[r] as usize..row_ptr[r + 1] as usize];
                    cols.extend_from_slice(row);
                    if !row.iter().any(|&c| c as usize == r) {
                        cols.push(r as u32);
                    }
                    ptr.push(cols.len() as i64);
                }
                (row_ptr, col_idx) = (ptr, cols);
            }
        }
        let counts: Vec<usize> = row_ptr.windows(2).map(|w| (w[1] - w[0]) as usize).collect();
        let out_deg: Vec<usize> = src.iter().map(|&s| self.out_degree[s as usize] as usize).collect();
        let weighted = sampled && self.scale_sums;
        let weights = weighted.then(|| {
            let mut w = Vec::with_capacity(col_idx.len());
            for (r, &c) in counts.iter().enumerate() {
                let share = self.in_degree[src[r] as usize] as f32 / c.max(1) as f32;
                w.extend(std::iter::repeat_n(share, c));
            }
            w
        });
        let csr = Csr::from_columns(n_dst, n_src, &row_ptr, col_idx, weights).map_err(data)?;
        let g = Graph::<B>::with_degrees(&csr, device, self.opts, counts, out_deg.clone()).map_err(data)?;
        if !weighted {
            return Ok(g);
        }
        let rows = src[..n_dst].iter().map(|&s| self.in_degree[s as usize] as f64).collect();
        g.with_weight_sums(rows, out_deg.into_iter().map(|d| d as f64).collect()).map_err(data)
    }
}
