//! Uploading a host structure to a device: index arrays (in pieces when long), edge groups,
//! the hot-column split and float vectors.

use super::options::{hot_split, GraphOptions};
use crate::ops::device::DeviceOps;
use crate::ops::primitive::{CsrPrim, GroupsPrim, HotPrim};
use burn::tensor::ops::IntTensor;
use burn::tensor::{DType, Int, Tensor, TensorData};
use rayon::prelude::*;
use sparse_gnn_kernels::csr::{CsrRef, EdgeGroups, HotSplit};
use sparse_gnn_kernels::heuristics;

pub(super) fn int_tensor<B: DeviceOps>(mut v: Vec<i32>, device: &B::Device) -> IntTensor<B> {
    if v.is_empty() {
        v.push(0);
    }
    let n = v.len();
    B::int_upload(TensorData::new(v, [n]), device)
}

/// Device indices: every value (node id, edge offset, edge id, slot offset) is unsigned
/// 32-bit, stored in the bits of an i32 (the kernels and [`crate::host`] read them as u32), so
/// edge offsets reach [`crate::data::MAX_EDGES`] where an i32 stops at 2^31 - 1. The groups'
/// staging slots are the one signed array (-1: the row has a single group).
pub(super) fn to_index<T: Copy + TryInto<u32>>(v: &[T]) -> Vec<i32> {
    v.iter().map(|&x| x.try_into().ok().expect("sizes were checked against the u32 limit") as i32).collect()
}

/// The edge groups of `csr` on `device`, each array uploaded through Burn (the host
/// construction of a sampled block's structure, on any backend).
pub(crate) fn upload_groups<B: burn::tensor::backend::Backend>(
    csr: &CsrRef<'_>,
    width: usize,
    device: &B::Device,
) -> GroupsPrim<IntTensor<B>> {
    let mut staged = Staged::default();
    let groups = groups_into(csr, width, &mut staged);
    let arrays: Vec<IntTensor<B>> = staged
        .arrays
        .into_iter()
        .map(|v| {
            let n = v.len();
            B::int_from_data(TensorData::new(v, [n]), device)
        })
        .collect();
    groups.map(&mut |i| arrays[i].clone())
}

fn groups_into<S: IndexSink>(csr: &CsrRef<'_>, width: usize, sink: &mut S) -> GroupsPrim<S::Out> {
    let g = EdgeGroups::new(csr, width);
    GroupsPrim {
        width: g.width,
        len: g.len(),
        n_slots: g.n_slots(),
        n_finish: g.finish_rows.len(),
        ptr: sink.short(to_index(&g.ptr)),
        row: sink.short(to_index(&g.row)),
        slot: sink.short(g.slot.clone()),
        finish_rows: sink.short(to_index(&g.finish_rows)),
        finish_ptr: sink.short(to_index(&g.finish_ptr)),
    }
}

/// Where the index arrays of a structure go as it is built: each to the device as it comes
/// ([`Direct`]), or kept on the host to go up together ([`Staged`]).
pub(super) trait IndexSink {
    /// What a structure holds for one array.
    type Out: Clone;
    /// An array already in the device layout (see [`to_index`]).
    fn short(&mut self, v: Vec<i32>) -> Self::Out;
    /// An owned array of u32 values.
    fn owned(&mut self, v: Vec<u32>) -> Self::Out;
    /// A borrowed array of u32 values.
    fn borrowed(&mut self, v: &[u32]) -> Self::Out;
}

/// Every array uploaded on its own, the long ones in pieces of `piece` entries: large graphs,
/// where the host must not hold copies of all the arrays at once.
pub(super) struct Direct<'a, B: DeviceOps> {
    pub device: &'a B::Device,
    pub piece: usize,
}

impl<B: DeviceOps> IndexSink for Direct<'_, B> {
    type Out = IntTensor<B>;
    fn short(&mut self, v: Vec<i32>) -> IntTensor<B> {
        int_tensor::<B>(v, self.device)
    }
    fn owned(&mut self, v: Vec<u32>) -> IntTensor<B> {
        owned_index::<B>(v, self.piece, self.device)
    }
    fn borrowed(&mut self, v: &[u32]) -> IntTensor<B> {
        index_in_pieces::<B>(v, self.piece, self.device)
    }
}

/// The arrays kept on the host and numbered in order, to go up in one upload
/// ([`crate::ops::device::DeviceOps::index_arrays`]): small graphs, where an upload per array costs more
/// than the data. Empty arrays get their padding entry here, as [`int_tensor`] gives it.
#[derive(Default)]
pub(super) struct Staged {
    pub arrays: Vec<Vec<i32>>,
}

impl IndexSink for Staged {
    type Out = usize;
    fn short(&mut self, mut v: Vec<i32>) -> usize {
        if v.is_empty() {
            v.push(0);
        }
        self.arrays.push(v);
        self.arrays.len() - 1
    }
    fn owned(&mut self, v: Vec<u32>) -> usize {
        self.short(v.into_iter().map(|x| x as i32).collect())
    }
    fn borrowed(&mut self, v: &[u32]) -> usize {
        self.short(v.iter().map(|&x| x as i32).collect())
    }
}

/// An index array of u32 values (see [`to_index`]) on the device, written into one device
/// tensor a piece of `piece` entries at a time. A backend may copy what it uploads once more on
/// the host and keep that copy until later device work (Burn's upload on CubeCL's runtimes
/// does; a flush comes with a kernel launch): in pieces, the host holds at most
/// a few pieces next to `values` instead of copies of every array of a graph, 17 GB each at
/// 4.29B edges. Each piece's write is a kernel launch, which lets the runtime free the copies
/// of the pieces before it.
pub(super) fn index_in_pieces<B: DeviceOps>(values: &[u32], piece: usize, device: &B::Device) -> IntTensor<B> {
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
pub(super) fn owned_index<B: DeviceOps>(v: Vec<u32>, piece: usize, device: &B::Device) -> IntTensor<B> {
    if v.len() > piece {
        return index_in_pieces::<B>(&v, piece, device);
    }
    // same size and alignment: `collect` reuses the allocation
    int_tensor::<B>(v.into_iter().map(|x| x as i32).collect(), device)
}

/// The column array of a structure being uploaded: the caller's (copied once for the upload)
/// or one built for the upload (uploaded in its own allocation).
pub(super) enum Cols<'a> {
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
pub(super) fn upload_csr<S: IndexSink>(
    (n_rows, n_cols): (usize, usize),
    row_ptr: &[usize],
    cols: Cols<'_>,
    opts: &GraphOptions,
    sink: &mut S,
) -> CsrPrim<S::Out> {
    let (groups, cbsr_groups, hot, max_degree, nnz) = {
        let csr = CsrRef { n_rows, n_cols, row_ptr, col_idx: cols.as_slice() };
        let max_degree = (0..csr.n_rows).map(|i| csr.degree(i)).max().unwrap_or(0);
        let group_width = opts.group_width.resolve(|| heuristics::group_width(csr.n_rows, csr.nnz())).max(1);
        let groups = groups_into(&csr, group_width, sink);
        let cbsr_groups = if opts.cbsr_group_width == group_width {
            groups.clone()
        } else {
            groups_into(&csr, opts.cbsr_group_width.max(1), sink)
        };
        let hot = hot_split(&csr, opts).map(|(s, forced)| {
            let cold_groups = groups_into(&s.cold(&csr), opts.cold_group_width.max(1), sink);
            let (len, nnz, cold_nnz) = (s.cols.len(), s.hot_edges(), s.cold_col.len());
            let HotSplit { cols, cold_ptr, cold_col, hot_ptr, hot_rank } = s;
            drop(cold_ptr);
            HotPrim {
                len,
                nnz,
                hot_ptr: sink.short(to_index(&hot_ptr)),
                hot_rank: sink.owned(hot_rank),
                cols: sink.owned(cols),
                cold_nnz,
                cold_col: sink.owned(cold_col),
                cold_groups,
                forced,
            }
        });
        (groups, cbsr_groups, hot, max_degree, csr.nnz())
    };
    let col_idx = match cols {
        Cols::Borrowed(c) => sink.borrowed(c),
        Cols::Owned(c) => sink.owned(c),
    };
    CsrPrim {
        n_rows,
        n_cols,
        nnz,
        max_degree,
        row_ptr: sink.short(to_index(row_ptr)),
        col_idx,
        groups,
        cbsr_groups,
        hot,
        kernels: opts.kernels,
    }
}

pub(super) fn norms(deg: &[usize]) -> (Vec<f64>, Vec<f64>) {
    let inv = deg.iter().map(|&d| if d == 0 { 0.0 } else { 1.0 / d as f64 }).collect();
    let inv_sqrt = deg.iter().map(|&d| if d == 0 { 0.0 } else { 1.0 / (d as f64).sqrt() }).collect();
    (inv, inv_sqrt)
}

/// A float tensor in the backend's float type (the device default dtype is shared by every
/// backend of a device, so it is not used here).
pub(super) fn float_tensor<B: DeviceOps>(v: Vec<f64>, device: &B::Device) -> Tensor<B, 1> {
    let n = v.len();
    let dtype = <B::FloatElem as burn::tensor::Element>::dtype();
    crate::ops::device::upload(TensorData::new(v, [n]).convert_dtype(dtype), device)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
