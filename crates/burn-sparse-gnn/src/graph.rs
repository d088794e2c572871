//! Device graphs: the CSR structure uploaded once, with its transpose, degree norms and the
//! edge-group partition every kernel uses for load balance.

use crate::data::{Csr, GraphData};
pub use crate::ops::primitive::{CsrPrim, GraphPrim, GraphPrimitive, GroupsPrim, HotPrim, KernelPolicy, SspmmStrategy};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::ops::IntTensor;
use burn::tensor::{DType, Int, Tensor, TensorData};
use rayon::prelude::*;
use sparse_gnn_kernels::config::{Choice, KernelConfig};
use sparse_gnn_kernels::csr::{transpose, CsrRef, EdgeGroups, HotSplit, HotStats, Transpose};
use sparse_gnn_kernels::heuristics;
use std::time::Instant;

/// Options of a device graph: its kernels' launch configuration and the structures built for
/// them. `Default` is the measured heuristics of [`sparse_gnn_kernels::heuristics`] and reads
/// no environment; benchmarks and tests force values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GraphOptions {
    /// Maximum edges per edge group (load-balance unit of the SpMM family and the SDDMM).
    /// Auto: [`heuristics::group_width`] (64 on graphs of average degree below 128, else 256).
    pub group_width: Choice<usize>,
    /// Maximum edges per edge group of the CBSR kernels (SpGEMM / SSpMM).
    pub cbsr_group_width: usize,
    /// Kernel choices that trade determinism for speed.
    pub policy: KernelPolicy,
    /// Most-read columns split off for the two-pass SpMM sum / mean (see
    /// [`sparse_gnn_kernels::spmm::hot`]). Auto: [`heuristics::HOT_COLS`] columns where
    /// [`heuristics::hot_split_pays`] (large graphs whose rows gather many edges of those
    /// columns), else none. `Forced(n)`: `n` columns whenever any edge lands on them (0: never).
    /// The split stores the cold edges' columns and groups a second time (about 4 bytes per edge,
    /// for the adjacency and its transpose) and serves only unweighted f32 sums and means of
    /// widths that are multiples of 4 (elsewhere the single pass was measured faster), so a
    /// graph aggregated in half precision should force 0.
    pub hot_cols: Choice<usize>,
    /// Maximum edges per edge group of the cold edges of a split structure (only the SpMM sum
    /// / mean reads them, so they need not share the groups of the other kernels).
    pub cold_group_width: usize,
    /// Launch configuration of every kernel that reads the graph.
    pub kernels: KernelConfig,
    /// Index arrays longer than this many entries (the columns, the transpose's edge
    /// permutation, the split's edge lists) are written to the device this many entries at a
    /// time, so that the host holds no second copy of a whole array while it goes up (see
    /// [`DEFAULT_UPLOAD_PIECE`]). The device graph is the same for every value.
    pub upload_piece: usize,
}

/// Default [`GraphOptions::cold_group_width`].
pub const DEFAULT_COLD_GROUP_WIDTH: usize = 1024;

/// Default [`GraphOptions::upload_piece`]: 2^26 entries, 256 MiB.
pub const DEFAULT_UPLOAD_PIECE: usize = 1 << 26;

/// Default [`GraphOptions::cbsr_group_width`].
pub const DEFAULT_CBSR_GROUP_WIDTH: usize = 256;

impl Default for GraphOptions {
    fn default() -> Self {
        Self {
            group_width: Choice::Auto,
            cbsr_group_width: DEFAULT_CBSR_GROUP_WIDTH,
            policy: KernelPolicy::default(),
            hot_cols: Choice::Auto,
            cold_group_width: DEFAULT_COLD_GROUP_WIDTH,
            kernels: KernelConfig::default(),
            upload_piece: DEFAULT_UPLOAD_PIECE,
        }
    }
}

impl GraphOptions {
    /// These options with edge groups of `width` edges for every kernel family.
    pub fn with_group_width(self, width: usize) -> Self {
        Self { group_width: Choice::Forced(width), cbsr_group_width: width, ..self }
    }
}

/// What a device graph resolved its options to (for benchmark records and logs).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct GraphShape {
    /// Edge-group width of the SpMM family.
    pub group_width: usize,
    /// Edge-group width of the CBSR kernels.
    pub cbsr_group_width: usize,
    /// Hot columns split off the adjacency (0: no split).
    pub hot_cols: usize,
    /// Hot columns split off the transpose (0: no split).
    pub hot_cols_transpose: usize,
    /// Edge-group width of the cold edges of a split structure.
    pub cold_group_width: usize,
}

/// Degrees and degree normalisations of every node (norms are 0 where the degree is 0).
#[derive(Clone, Debug)]
pub struct DegreeNorms<B: Backend> {
    /// In-degree (row length), as floats.
    pub in_degree: Tensor<B, 1>,
    /// Out-degree (column length), as floats.
    pub out_degree: Tensor<B, 1>,
    /// `1 / d_in` (row degree).
    pub in_inv: Tensor<B, 1>,
    /// `1 / sqrt(d_in)`.
    pub in_inv_sqrt: Tensor<B, 1>,
    /// `1 / d_out` (column degree).
    pub out_inv: Tensor<B, 1>,
    /// `1 / sqrt(d_out)`.
    pub out_inv_sqrt: Tensor<B, 1>,
}

/// Weighted degrees of a graph with edge weights: the sum of the weights of every row's edges
/// and of every column's edges (f64 sums on the host, stored in the backend's float type).
#[derive(Clone, Debug)]
pub struct WeightSums<B: Backend> {
    /// `[n_rows]` weighted in-degree.
    pub rows: Tensor<B, 1>,
    /// `[n_cols]` weighted out-degree.
    pub cols: Tensor<B, 1>,
}

/// Per-graph memo of derived node vectors (e.g. a layer's normalisation), shared by clones.
type Memo<B> = std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, Tensor<B, 1>>>>;

/// A graph on a device: the structure every sparse op of [`crate::ops`] takes.
#[derive(Clone, Debug)]
pub struct Graph<B: Backend> {
    prim: GraphPrimitive<B>,
    weights: Option<Tensor<B, 1>>,
    weight_sums: Option<WeightSums<B>>,
    norms: DegreeNorms<B>,
    setup_seconds: f64,
    memo: Memo<B>,
}

fn int_tensor<B: Backend>(mut v: Vec<i32>, device: &B::Device) -> IntTensor<B> {
    if v.is_empty() {
        v.push(0);
    }
    let n = v.len();
    Tensor::<B, 1, Int>::from_data(TensorData::new(v, [n]), (device, DType::I32)).into_primitive()
}

/// Device indices: every value (node id, edge offset, edge id, slot offset) is unsigned
/// 32-bit, stored in the bits of an i32 (the kernels and [`crate::host`] read them as u32), so
/// edge offsets reach [`crate::data::MAX_EDGES`] where an i32 stops at 2^31 - 1. The groups'
/// staging slots are the one signed array (-1: the row has a single group).
fn to_index<T: Copy + TryInto<u32>>(v: &[T]) -> Vec<i32> {
    v.iter().map(|&x| x.try_into().ok().expect("sizes were checked against the u32 limit") as i32).collect()
}

fn upload_groups<B: Backend>(csr: &CsrRef<'_>, width: usize, device: &B::Device) -> GroupsPrim<IntTensor<B>> {
    let g = EdgeGroups::new(csr, width);
    GroupsPrim {
        width: g.width,
        len: g.len(),
        n_slots: g.n_slots(),
        n_finish: g.finish_rows.len(),
        ptr: int_tensor::<B>(to_index(&g.ptr), device),
        row: int_tensor::<B>(to_index(&g.row), device),
        slot: int_tensor::<B>(g.slot.clone(), device),
        finish_rows: int_tensor::<B>(to_index(&g.finish_rows), device),
        finish_ptr: int_tensor::<B>(to_index(&g.finish_ptr), device),
    }
}

/// The hot-column split `opts` asks for on `csr`: the heuristic's (which looks at the graph's
/// column statistics) or the forced column count.
fn hot_split(csr: &CsrRef<'_>, opts: &GraphOptions) -> Option<(HotSplit, bool)> {
    match opts.hot_cols {
        Choice::Forced(0) => None,
        Choice::Forced(cols) => HotSplit::new(csr, cols, 0.0, 0).map(|s| (s, true)),
        Choice::Auto => {
            if !auto_split_pays(csr) {
                return None;
            }
            HotSplit::new(csr, heuristics::HOT_COLS, 0.0, 0).map(|s| (s, false))
        }
    }
}

/// The heuristic's decision for a structure: large enough, and its most-read columns take
/// enough of the traffic.
fn auto_split_pays(csr: &CsrRef<'_>) -> bool {
    csr.nnz() >= heuristics::HOT_MIN_EDGES && heuristics::hot_split_pays(&HotStats::new(csr, heuristics::HOT_COLS))
}

impl GraphOptions {
    /// Whether [`Graph::new`] with these options splits off the hot columns of `adj` (the
    /// heuristic's decision, without building the split): memory estimates count the split's
    /// second copy of the cold edges.
    pub fn splits_hot_columns(&self, adj: &Csr) -> bool {
        match self.hot_cols {
            Choice::Forced(cols) => cols > 0,
            Choice::Auto => auto_split_pays(&adj.as_ref()),
        }
    }

    /// The most staging slots one sparse kernel over `adj` or its transpose allocates with
    /// these options: one per edge group of a row whose edges span several groups, at the SpMM
    /// and the CBSR group widths (the hot-column split's cold edges are counted at the SpMM
    /// width too, an upper bound). While such a kernel runs, each slot holds an f32 row of the
    /// aggregated width: memory estimates count them.
    pub fn staging_slots(&self, adj: &Csr) -> usize {
        let slots = |degrees: &[usize], width: usize| -> usize {
            degrees.iter().filter(|&&d| d > width).map(|&d| d.div_ceil(width)).sum()
        };
        let nnz = adj.nnz();
        [(adj.row_degrees(), adj.n_rows()), (adj.col_degrees(), adj.n_cols())]
            .iter()
            .flat_map(|(degrees, rows)| {
                let spmm = self.group_width.resolve(|| heuristics::group_width(*rows, nnz)).max(1);
                [spmm, self.cbsr_group_width.max(1)].map(|w| slots(degrees, w))
            })
            .max()
            .unwrap_or(0)
    }
}

/// An index array of u32 values (see [`to_index`]) on the device, written into one device
/// tensor a piece of `piece` entries at a time. A backend may copy what it uploads once more on
/// the host and keep that copy until later device work (CubeCL's CUDA runtime frees its copies
/// two flushes later, and a flush comes with a kernel launch): in pieces, the host holds at most
/// a few pieces next to `values` instead of copies of every array of a graph, 17 GB each at
/// 4.29B edges. Each piece's write is a kernel launch, which lets the runtime free the copies
/// of the pieces before it.
fn index_in_pieces<B: Backend>(values: &[u32], piece: usize, device: &B::Device) -> IntTensor<B> {
    let piece = piece.max(1);
    if values.len() <= piece {
        return int_tensor::<B>(values.iter().map(|&x| x as i32).collect(), device);
    }
    let n = values.len();
    let mut out = Tensor::<B, 1, Int>::empty([n], (device, DType::I32));
    for (i, chunk) in values.chunks(piece).enumerate() {
        let start = i * piece;
        let part =
            Tensor::<B, 1, Int>::from_primitive(int_tensor::<B>(chunk.par_iter().map(|&x| x as i32).collect(), device));
        out = out.slice_assign(start..start + chunk.len(), part);
    }
    out.into_primitive()
}

/// An owned index array on the device. A short one is reinterpreted as i32 in its own
/// allocation (see [`to_index`]) and uploaded as is; a long one goes up in pieces
/// ([`index_in_pieces`]) and is freed right after.
fn owned_index<B: Backend>(v: Vec<u32>, piece: usize, device: &B::Device) -> IntTensor<B> {
    if v.len() > piece {
        return index_in_pieces::<B>(&v, piece, device);
    }
    // same size and alignment: `collect` reuses the allocation
    int_tensor::<B>(v.into_iter().map(|x| x as i32).collect(), device)
}

/// The column array of a structure being uploaded: the caller's (copied once for the upload)
/// or one built for the upload (uploaded in its own allocation).
enum Cols<'a> {
    Borrowed(&'a [u32]),
    Owned(Vec<u32>),
}

impl Cols<'_> {
    fn as_slice(&self) -> &[u32] {
        match self {
            Cols::Borrowed(c) => c,
            Cols::Owned(c) => c,
        }
    }
}

/// Uploads a structure of `n_rows x n_cols` (`row_ptr`, `cols`) with its edge groups and its
/// hot-column split. Host memory: the split's edge lists exist only until they are uploaded,
/// and every array of the edge count goes up in pieces, so besides the columns at most one
/// structure-sized array is made here at a time.
fn upload_csr<B: Backend>(
    (n_rows, n_cols): (usize, usize),
    row_ptr: &[usize],
    cols: Cols<'_>,
    opts: &GraphOptions,
    device: &B::Device,
) -> CsrPrim<IntTensor<B>> {
    let (groups, cbsr_groups, hot, max_degree, nnz) = {
        let csr = CsrRef { n_rows, n_cols, row_ptr, col_idx: cols.as_slice() };
        let max_degree = (0..csr.n_rows).map(|i| csr.degree(i)).max().unwrap_or(0);
        let group_width = opts.group_width.resolve(|| heuristics::group_width(csr.n_rows, csr.nnz())).max(1);
        let groups = upload_groups::<B>(&csr, group_width, device);
        let cbsr_groups = if opts.cbsr_group_width == group_width {
            groups.clone()
        } else {
            upload_groups::<B>(&csr, opts.cbsr_group_width.max(1), device)
        };
        let hot = hot_split(&csr, opts).map(|(s, forced)| {
            let cold_groups = upload_groups::<B>(&s.cold(&csr), opts.cold_group_width.max(1), device);
            let (len, nnz, cold_nnz) = (s.cols.len(), s.hot_edges(), s.cold_col.len());
            let HotSplit { cols, cold_ptr, cold_col, hot_ptr, hot_rank } = s;
            drop(cold_ptr);
            HotPrim {
                len,
                nnz,
                hot_ptr: int_tensor::<B>(to_index(&hot_ptr), device),
                hot_rank: owned_index::<B>(hot_rank, opts.upload_piece, device),
                cols: owned_index::<B>(cols, opts.upload_piece, device),
                cold_nnz,
                cold_col: owned_index::<B>(cold_col, opts.upload_piece, device),
                cold_groups,
                forced,
            }
        });
        (groups, cbsr_groups, hot, max_degree, csr.nnz())
    };
    let col_idx = match cols {
        Cols::Borrowed(c) => index_in_pieces::<B>(c, opts.upload_piece, device),
        Cols::Owned(c) => owned_index::<B>(c, opts.upload_piece, device),
    };
    CsrPrim {
        n_rows,
        n_cols,
        nnz,
        max_degree,
        row_ptr: int_tensor::<B>(to_index(row_ptr), device),
        col_idx,
        groups,
        cbsr_groups,
        hot,
        kernels: opts.kernels,
    }
}

fn norms(deg: &[usize]) -> (Vec<f64>, Vec<f64>) {
    let inv = deg.iter().map(|&d| if d == 0 { 0.0 } else { 1.0 / d as f64 }).collect();
    let inv_sqrt = deg.iter().map(|&d| if d == 0 { 0.0 } else { 1.0 / (d as f64).sqrt() }).collect();
    (inv, inv_sqrt)
}

/// A float tensor in the backend's float type (the device default dtype is shared by every
/// backend of a device, so it is not used here).
fn float_tensor<B: Backend>(v: Vec<f64>, device: &B::Device) -> Tensor<B, 1> {
    let n = v.len();
    let dtype = <B::FloatElem as burn::tensor::Element>::dtype();
    Tensor::from_data(TensorData::new(v, [n]).convert_dtype(dtype), (device, dtype))
}

impl<B: Backend> Graph<B> {
    /// Uploads `adj` and precomputes its transpose, degree norms and edge groups
    /// (O(N + E) host work, timed in [`Graph::setup_seconds`]).
    pub fn new(adj: &Csr, device: &B::Device, opts: GraphOptions) -> Self {
        Self::build(adj, device, opts, adj.row_degrees(), adj.col_degrees(), Instant::now())
    }

    /// [`Graph::new`] with the degrees of a larger graph this one is a part of: `in_degree[i]`
    /// for each row and `out_degree[j]` for each column. A part of a partitioned graph holds
    /// whole rows, so its row degrees are its own, but its columns (own and halo nodes) see
    /// only the edges into its rows: the normalisations (GCN's `1/sqrt(d_out)`, ...) need the
    /// columns' global degrees to give the same result as the whole graph. The weighted degrees
    /// of a weighted `adj` are its own until [`Graph::with_weight_sums`] gives the larger
    /// graph's.
    ///
    /// Errors when the vectors do not have one entry per row / column.
    pub fn with_degrees(
        adj: &Csr,
        device: &B::Device,
        opts: GraphOptions,
        in_degree: Vec<usize>,
        out_degree: Vec<usize>,
    ) -> Result<Self, crate::GraphError> {
        let start = Instant::now();
        if in_degree.len() != adj.n_rows() {
            return Err(crate::GraphError::NodeCount {
                what: "row degrees",
                got: in_degree.len(),
                nodes: adj.n_rows(),
            });
        }
        if out_degree.len() != adj.n_cols() {
            return Err(crate::GraphError::NodeCount {
                what: "column degrees",
                got: out_degree.len(),
                nodes: adj.n_cols(),
            });
        }
        Ok(Self::build(adj, device, opts, in_degree, out_degree, start))
    }

    fn build(
        adj: &Csr,
        device: &B::Device,
        opts: GraphOptions,
        in_deg: Vec<usize>,
        out_deg: Vec<usize>,
        start: Instant,
    ) -> Self {
        // host copies one at a time next to `adj`: the adjacency goes up before the transpose
        // is built; of the transpose the permutation goes up first, then its hot-column split,
        // then its columns, each array uploaded from its own allocation (at most three arrays of
        // the edge count at once, with `adj`)
        let r = adj.as_ref();
        let csr = upload_csr::<B>((r.n_rows, r.n_cols), r.row_ptr, Cols::Borrowed(r.col_idx), &opts, device);
        let Transpose { row_ptr: t_ptr, col_idx: t_col, perm } = transpose(&r);
        let t_perm = owned_index::<B>(perm, opts.upload_piece, device);
        let csc = upload_csr::<B>((r.n_cols, r.n_rows), &t_ptr, Cols::Owned(t_col), &opts, device);
        let prim = GraphPrim { csr, csc, t_perm, policy: opts.policy };
        let (in_inv, in_inv_sqrt) = norms(&in_deg);
        let (out_inv, out_inv_sqrt) = norms(&out_deg);
        let norms = DegreeNorms {
            in_degree: float_tensor(in_deg.iter().map(|&d| d as f64).collect(), device),
            out_degree: float_tensor(out_deg.iter().map(|&d| d as f64).collect(), device),
            in_inv: float_tensor(in_inv, device),
            in_inv_sqrt: float_tensor(in_inv_sqrt, device),
            out_inv: float_tensor(out_inv, device),
            out_inv_sqrt: float_tensor(out_inv_sqrt, device),
        };
        let weights = adj.weights().map(|w| float_tensor(w.iter().map(|&v| v as f64).collect(), device));
        let weight_sums = match (adj.row_weight_sums(), adj.col_weight_sums()) {
            (Some(rows), Some(cols)) => {
                Some(WeightSums { rows: float_tensor(rows, device), cols: float_tensor(cols, device) })
            }
            _ => None,
        };
        Self {
            prim,
            weights,
            weight_sums,
            norms,
            setup_seconds: start.elapsed().as_secs_f64(),
            memo: Default::default(),
        }
    }

    /// The graph with the weighted degrees of a larger graph it is a part of (see
    /// [`Graph::with_degrees`]): `rows[i]` the sum of the weights of row `i`'s edges and
    /// `cols[j]` of column `j`'s edges, in the whole graph. A graph without edge weights is
    /// returned as it is. Forgets the derived vectors remembered so far ([`Graph::memoized`]).
    ///
    /// Errors when the vectors do not have one entry per row / column.
    pub fn with_weight_sums(mut self, rows: Vec<f64>, cols: Vec<f64>) -> Result<Self, crate::GraphError> {
        if rows.len() != self.n_rows() {
            return Err(crate::GraphError::NodeCount {
                what: "row weight sums",
                got: rows.len(),
                nodes: self.n_rows(),
            });
        }
        if cols.len() != self.n_cols() {
            return Err(crate::GraphError::NodeCount {
                what: "column weight sums",
                got: cols.len(),
                nodes: self.n_cols(),
            });
        }
        if self.weights.is_none() {
            return Ok(self);
        }
        let device = self.device();
        self.weight_sums = Some(WeightSums { rows: float_tensor(rows, &device), cols: float_tensor(cols, &device) });
        self.memo = Default::default();
        Ok(self)
    }

    /// [`Graph::new`] on the adjacency of a dataset.
    pub fn from_data(data: &GraphData, device: &B::Device, opts: GraphOptions) -> Self {
        Self::new(data.adjacency(), device, opts)
    }

    /// Primitive form (for backend implementations).
    pub fn prim(&self) -> &GraphPrimitive<B> {
        &self.prim
    }
    /// Number of nodes (rows).
    pub fn num_nodes(&self) -> usize {
        self.prim.csr.n_rows
    }
    /// Number of rows (destination nodes).
    pub fn n_rows(&self) -> usize {
        self.prim.csr.n_rows
    }
    /// Number of columns (source nodes).
    pub fn n_cols(&self) -> usize {
        self.prim.csr.n_cols
    }
    /// Number of edges.
    pub fn num_edges(&self) -> usize {
        self.prim.csr.nnz
    }
    /// Stored edge weights (from the adjacency, `[nnz]` in CSR order), if any.
    pub fn weights(&self) -> Option<&Tensor<B, 1>> {
        self.weights.as_ref()
    }
    /// Weighted degrees (present exactly when the graph has edge weights).
    pub fn weight_sums(&self) -> Option<&WeightSums<B>> {
        self.weight_sums.as_ref()
    }
    /// Degree norms.
    pub fn norms(&self) -> &DegreeNorms<B> {
        &self.norms
    }
    /// Seconds spent building the device graph.
    pub fn setup_seconds(&self) -> f64 {
        self.setup_seconds
    }
    /// A node vector derived from the graph, computed once per graph by `compute` and
    /// remembered under `key` (e.g. a GCN normalisation that every epoch reuses).
    pub fn memoized(&self, key: &str, compute: impl FnOnce(&Self) -> Tensor<B, 1>) -> Tensor<B, 1> {
        let mut memo = self.memo.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(t) = memo.get(key) {
            return t.clone();
        }
        let t = compute(self);
        memo.insert(key.to_string(), t.clone());
        t
    }

    /// Device of the graph.
    pub fn device(&self) -> B::Device {
        self.norms.in_inv.device()
    }

    /// Launch configuration of the graph's kernels.
    pub fn kernel_config(&self) -> &KernelConfig {
        &self.prim.csr.kernels
    }

    /// What the graph's options resolved to.
    pub fn shape(&self) -> GraphShape {
        let (csr, csc) = (&self.prim.csr, &self.prim.csc);
        GraphShape {
            group_width: csr.groups.width,
            cbsr_group_width: csr.cbsr_groups.width,
            hot_cols: csr.hot.as_ref().map_or(0, |h| h.len),
            hot_cols_transpose: csc.hot.as_ref().map_or(0, |h| h.len),
            cold_group_width: csr.hot.as_ref().or(csc.hot.as_ref()).map_or(0, |h| h.cold_groups.width),
        }
    }
}

impl<B: AutodiffBackend> Graph<B> {
    /// The same graph on the inner (non-autodiff) backend, sharing the device buffers.
    pub fn inner(&self) -> Graph<B::InnerBackend> {
        let n = &self.norms;
        Graph {
            prim: self.prim.clone().map(B::int_inner),
            weights: self.weights.as_ref().map(|w| w.clone().inner()),
            weight_sums: self
                .weight_sums
                .as_ref()
                .map(|s| WeightSums { rows: s.rows.clone().inner(), cols: s.cols.clone().inner() }),
            norms: DegreeNorms {
                in_degree: n.in_degree.clone().inner(),
                out_degree: n.out_degree.clone().inner(),
                in_inv: n.in_inv.clone().inner(),
                in_inv_sqrt: n.in_inv_sqrt.clone().inner(),
                out_inv: n.out_inv.clone().inner(),
                out_inv_sqrt: n.out_inv_sqrt.clone().inner(),
            },
            setup_seconds: self.setup_seconds,
            memo: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::{random_csr, RandomGraphSpec};

    /// Edge offsets past the i32 range go to the device as the bits of an i32 and read back as
    /// the same unsigned values, up to the edge limit.
    #[test]
    fn edge_offsets_past_the_i32_range_read_back_unsigned() {
        let offsets = [0usize, 1, i32::MAX as usize, i32::MAX as usize + 1, 3_900_000_000, crate::data::MAX_EDGES];
        let t = int_tensor::<crate::Cpu>(to_index(&offsets), &Default::default());
        assert_eq!(crate::ops::host_io::read_index::<crate::Cpu>(t), offsets);
    }

    /// An index array written in pieces reads back whole: pieces of odd sizes, a last piece
    /// shorter than the others, values past the i32 range, and the short path.
    #[test]
    fn index_arrays_uploaded_in_pieces_read_back_whole() {
        let dev = Default::default();
        let values: Vec<u32> = (0..1_003u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
        for piece in [1, 7, 64, 1_002, 1_003, 5_000] {
            let t = index_in_pieces::<crate::Cpu>(&values, piece, &dev);
            let back = crate::ops::host_io::read_index::<crate::Cpu>(t);
            assert_eq!(back.len(), values.len(), "piece {piece}");
            assert!(back.iter().zip(&values).all(|(&b, &v)| b == v as usize), "piece {piece}");
        }
    }

    /// `staging_slots` counts what the kernels' edge groups hold: the most slots over the
    /// adjacency and its transpose at the SpMM and CBSR group widths.
    #[test]
    fn staging_slots_match_the_edge_groups() {
        for (n_rows, n_cols, avg_degree, hub_degree) in [(301, 301, 6, 10_000), (97, 1_203, 300, 2_500), (50, 50, 3, 0)]
        {
            let spec = RandomGraphSpec {
                n_rows,
                n_cols,
                avg_degree,
                hub_degree,
                self_loops: n_rows == n_cols,
                ..Default::default()
            };
            let adj = random_csr(&spec);
            let r = adj.as_ref();
            let t = transpose(&r);
            let tr = t.as_csr(&r);
            for opts in [GraphOptions::default(), GraphOptions::default().with_group_width(7)] {
                let mut want = 0;
                for csr in [&r, &tr] {
                    let spmm = opts.group_width.resolve(|| heuristics::group_width(csr.n_rows, csr.nnz()));
                    for width in [spmm, opts.cbsr_group_width] {
                        want = want.max(EdgeGroups::new(csr, width).n_slots());
                    }
                }
                assert_eq!(opts.staging_slots(&adj), want, "{n_rows}x{n_cols}, {:?}", opts.group_width);
                // a hub row always spans several groups of these widths
                assert!(hub_degree == 0 || want > 0);
            }
        }
    }
}
