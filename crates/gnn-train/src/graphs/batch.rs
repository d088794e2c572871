//! Batches of whole graphs: a set of graphs held on the host once, and per batch one
//! block-diagonal graph of the batch's graphs, its pooling pattern, features and labels,
//! uploaded in one go: one upload per array, not per graph, and for small batches the two
//! graphs' index arrays and float vectors in one upload each ([`Graph::new_packed`]).

use super::tu::{TuDataset, TuEncoding, TuError};
use burn::data::dataloader::batcher::Batcher;
use burn::tensor::{Int, Tensor, TensorData};
use burn_sparse_gnn::{BuildOptions, Csr, Graph, GraphOptions, SparseGnnBackend};
use gnn_models::pool_pattern;
use std::sync::Arc;

/// Batches of at most this many edges plus nodes build their device graphs with
/// [`Graph::new_packed`] (each graph's index arrays in one upload, its float vectors in
/// another), larger ones with [`Graph::new`], which uploads long arrays in pieces and never
/// holds all of them on the host. Every batch of 1,024 NCI1 or PROTEINS graphs (up to 185k
/// entries) is packed: on one H200 a 30k-node, 65k-edge graph took 3.99 ms packed and 4.43 ms
/// with `Graph::new` (`bench --ops launch`).
pub const PACKED_BATCH_ENTRIES: usize = 1 << 18;

/// A set of graphs on the host: every graph's nodes contiguous, features encoded.
#[derive(Clone, Debug)]
pub struct GraphSet {
    /// The dataset's name.
    pub name: String,
    /// Node offsets of the graphs, `[graphs + 1]`.
    pub graph_ptr: Vec<usize>,
    /// The adjacency over all nodes (with a self-loop on every node where the model needs one).
    pub adjacency: Csr,
    /// Node features, `[nodes, d_in]` row-major.
    pub x: Vec<f32>,
    /// Feature width.
    pub d_in: usize,
    /// Class index of every graph (`None`: unlabeled graphs, for prediction).
    pub labels: Option<Vec<i64>>,
    /// How the features and classes were encoded.
    pub encoding: TuEncoding,
    /// Device options of each batch's graph.
    pub opts: GraphOptions,
}

impl GraphSet {
    /// Encodes `data` with `encoding` ([`TuEncoding::fit`] on the training dataset);
    /// `self_loops`: give every node a self-loop (GAT).
    pub fn new(data: &TuDataset, encoding: TuEncoding, self_loops: bool, opts: GraphOptions) -> Result<Self, TuError> {
        let x = encoding.features(data)?;
        let labels = encoding.classes_of(data)?;
        let adjacency = match self_loops {
            false => data.adjacency.clone(),
            true => {
                let a = &data.adjacency;
                let (mut src, mut dst) = (Vec::with_capacity(a.nnz()), Vec::with_capacity(a.nnz()));
                for r in 0..a.n_rows() {
                    for &c in &a.col_idx()[a.row_ptr()[r]..a.row_ptr()[r + 1]] {
                        src.push(c as i64);
                        dst.push(r as i64);
                    }
                }
                let o = BuildOptions { symmetrize: false, add_self_loops: true, dedup: true };
                Csr::from_edges(a.n_rows(), &src, &dst, None, o).map_err(|e| TuError::Encoding(e.to_string()))?
            }
        };
        Ok(Self {
            name: data.name.clone(),
            graph_ptr: data.graph_ptr.clone(),
            adjacency,
            x,
            d_in: encoding.width(),
            labels,
            encoding,
            opts,
        })
    }

    /// Number of graphs.
    pub fn num_graphs(&self) -> usize {
        self.graph_ptr.len() - 1
    }

    /// Number of classes.
    pub fn num_classes(&self) -> usize {
        self.encoding.classes()
    }

    /// Nodes of graph `g`.
    pub fn nodes_of(&self, g: usize) -> std::ops::Range<usize> {
        self.graph_ptr[g]..self.graph_ptr[g + 1]
    }

    /// The host arrays of a batch of `graphs` (in that order): the block-diagonal adjacency,
    /// the batch's node offsets per graph, the features and the class indices (0 where the
    /// set is unlabeled).
    pub fn gather(&self, graphs: &[usize]) -> (Csr, Vec<usize>, Vec<f32>, Vec<i64>) {
        let (rp, ci, d) = (self.adjacency.row_ptr(), self.adjacency.col_idx(), self.d_in);
        let nodes: usize = graphs.iter().map(|&g| self.nodes_of(g).len()).sum();
        let edges: usize = graphs.iter().map(|&g| rp[self.graph_ptr[g + 1]] - rp[self.graph_ptr[g]]).sum();
        let mut row_ptr = Vec::with_capacity(nodes + 1);
        row_ptr.push(0i64);
        let mut cols = Vec::with_capacity(edges);
        let mut node_ptr = Vec::with_capacity(graphs.len() + 1);
        node_ptr.push(0usize);
        let mut x = Vec::with_capacity(nodes * d);
        for &g in graphs {
            let r = self.nodes_of(g);
            let base = *node_ptr.last().unwrap_or(&0);
            for row in r.clone() {
                cols.extend(ci[rp[row]..rp[row + 1]].iter().map(|&c| (c as usize - r.start + base) as u32));
                row_ptr.push(cols.len() as i64);
            }
            x.extend_from_slice(&self.x[r.start * d..r.end * d]);
            node_ptr.push(base + r.len());
        }
        let adj = Csr::from_columns(nodes, nodes, &row_ptr, cols, None)
            .unwrap_or_else(|e| panic!("a batch of valid graphs is a valid block-diagonal graph: {e}"));
        let labels = match &self.labels {
            Some(l) => graphs.iter().map(|&g| l[g]).collect(),
            None => vec![0; graphs.len()],
        };
        (adj, node_ptr, x, labels)
    }

    /// The batch of `graphs` on `device`.
    pub fn batch<B: SparseGnnBackend>(&self, graphs: &[usize], device: &B::Device) -> GraphSetBatch<B> {
        let (adj, node_ptr, x, labels) = self.gather(graphs);
        let n = adj.n_rows();
        let pool = pool_pattern(&node_ptr).unwrap_or_else(|e| panic!("a batch's pooling pattern is valid: {e}"));
        let (graph, pool) = if adj.nnz() + n <= PACKED_BATCH_ENTRIES {
            (Graph::new_packed(&adj, device, self.opts), Graph::new_packed(&pool, device, GraphOptions::default()))
        } else {
            (Graph::new(&adj, device, self.opts), Graph::new(&pool, device, GraphOptions::default()))
        };
        GraphSetBatch {
            graph,
            pool,
            x: burn_sparse_gnn::upload(TensorData::new(x, [n, self.d_in]), device),
            labels: burn_sparse_gnn::upload_int(TensorData::new(labels, [graphs.len()]), device),
            ids: graphs.to_vec(),
        }
    }
}

/// A batch of graphs on a device.
#[derive(Clone, Debug)]
pub struct GraphSetBatch<B: burn::tensor::backend::Backend> {
    /// The batch's graphs as one block-diagonal graph.
    pub graph: Graph<B>,
    /// The pooling pattern, `[graphs, nodes]`.
    pub pool: Graph<B>,
    /// Node features.
    pub x: Tensor<B, 2>,
    /// Class index of each graph.
    pub labels: Tensor<B, 1, Int>,
    /// The graphs' ids in the set.
    pub ids: Vec<usize>,
}

/// burn-train's batcher over graph ids of a [`GraphSet`] (the items of an `InMemDataset`; the
/// data loader shuffles them each epoch with its seed and cuts the batches).
#[derive(Clone, Debug)]
pub struct GraphSetBatcher {
    set: Arc<GraphSet>,
}

impl GraphSetBatcher {
    pub fn new(set: Arc<GraphSet>) -> Self {
        Self { set }
    }

    pub fn set(&self) -> &GraphSet {
        &self.set
    }
}

impl<B: SparseGnnBackend> Batcher<B, usize, GraphSetBatch<B>> for GraphSetBatcher {
    fn batch(&self, items: Vec<usize>, device: &B::Device) -> GraphSetBatch<B> {
        self.set.batch(&items, device)
    }
}
