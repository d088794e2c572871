//! Rows of a node tensor picked by a list of distinct row ids: the halo exchange of a
//! partitioned graph, and the gather of its parts' outputs.
//!
//! Burn's `select` differentiates through `select_assign`, whose CubeCL kernel runs one thread
//! per column and walks the selected rows one after another: for a selection of a million rows
//! that is a million dependent steps per thread (seconds on an H200 for the exchange of a
//! products-scale graph). Because the rows here are distinct, the backward is a gather instead:
//! the gradient of source row `j` is the gradient of the entry that picked it, or zero, so
//! `dx = [dy; 0].select(inverse)` with `inverse[j]` = that entry (or the zero row). Parallel over
//! every element and deterministic, like the forward.

use crate::backend::SparseGnnBackend;
use crate::error::GraphError;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{Int, Tensor, TensorData, TensorPrimitive};

/// Distinct rows of a `[source_rows, w]` tensor, with the inverse map the backward gathers by.
#[derive(Clone, Debug)]
pub struct RowIndex<B: Backend> {
    indices: Tensor<B, 1, Int>,
    inverse: Tensor<B, 1, Int>,
    source_rows: usize,
}

/// Per row of `0..len`: the entry of `rows` naming it, or `rows.len()`. Errors when a row is
/// out of range or named twice.
fn entries_of(rows: &[u32], len: usize) -> Result<Vec<i32>, GraphError> {
    let none = rows.len() as i32;
    let mut entries = vec![none; len];
    for (entry, &r) in rows.iter().enumerate() {
        let row = r as usize;
        let issue = match entries.get(row) {
            None => "outside the source",
            Some(&e) if e != none => "named twice",
            Some(_) => {
                entries[row] = entry as i32;
                continue;
            }
        };
        return Err(GraphError::RowSelection { entry, row, rows: len, issue });
    }
    Ok(entries)
}

fn int_tensor<B: Backend>(v: Vec<i32>, device: &B::Device) -> Tensor<B, 1, Int> {
    let n = v.len();
    Tensor::from_data(TensorData::new(v, [n]), device)
}

impl<B: Backend> RowIndex<B> {
    /// The rows `rows` (in that order) of a tensor of `source_rows` rows, on `device`. Errors
    /// when a row is out of range or named twice.
    pub fn new(rows: &[u32], source_rows: usize, device: &B::Device) -> Result<Self, GraphError> {
        let limit = i32::MAX as usize;
        if rows.len() >= limit || source_rows > limit {
            return Err(GraphError::TooLarge { what: "selected rows", count: rows.len().max(source_rows), limit });
        }
        let inverse = entries_of(rows, source_rows)?;
        Ok(Self {
            indices: int_tensor::<B>(rows.iter().map(|&r| r as i32).collect(), device),
            inverse: int_tensor::<B>(inverse, device),
            source_rows,
        })
    }

    /// Number of selected rows.
    pub fn len(&self) -> usize {
        self.indices.dims()[0]
    }

    /// Whether no row is selected.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Rows of the tensors this selection applies to.
    pub fn source_rows(&self) -> usize {
        self.source_rows
    }

    /// The selected row ids (`[len]`).
    pub fn indices(&self) -> Tensor<B, 1, Int> {
        self.indices.clone()
    }

    /// Per source row: the entry of the selection naming it, or `len()` (`[source_rows]`).
    pub fn inverse(&self) -> Tensor<B, 1, Int> {
        self.inverse.clone()
    }
}

impl<B: AutodiffBackend> RowIndex<B> {
    /// The same selection for the inner (non-autodiff) backend.
    pub fn inner(&self) -> RowIndex<B::InnerBackend> {
        RowIndex {
            indices: self.indices.clone().inner(),
            inverse: self.inverse.clone().inner(),
            source_rows: self.source_rows,
        }
    }
}

/// The rows of `x` that `rows` selects (differentiable, see the module docs). Panics when `x`
/// does not have `rows.source_rows()` rows; [`try_take_rows`] returns the error instead.
pub fn take_rows<B: SparseGnnBackend>(x: Tensor<B, 2>, rows: &RowIndex<B>) -> Tensor<B, 2> {
    match try_take_rows(x, rows) {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    }
}

/// [`take_rows`], with an error when `x` does not have `rows.source_rows()` rows.
pub fn try_take_rows<B: SparseGnnBackend>(x: Tensor<B, 2>, rows: &RowIndex<B>) -> Result<Tensor<B, 2>, crate::OpError> {
    let dims = x.dims();
    if dims[0] != rows.source_rows {
        return Err(crate::OpError::Shape {
            op: "take_rows",
            what: "x",
            got: dims.to_vec(),
            expected: format!("[{}, _]", rows.source_rows),
        });
    }
    let out = B::ad_take_rows(
        x.into_primitive().tensor(),
        rows.indices.clone().into_primitive(),
        rows.inverse.clone().into_primitive(),
    );
    Ok(Tensor::from_primitive(TensorPrimitive::Float(out)))
}

/// Rows of a `[kept, w]` tensor spread over `len` positions, zeros elsewhere (the sampled halo
/// rows of a boundary-sampled exchange put back at their columns). The backward pass picks the
/// rows at the kept positions, the forward pass is a gather through the inverse map, both
/// parallel over every element (see the module docs).
#[derive(Clone, Debug)]
pub struct RowSpread<B: Backend> {
    /// Per position: the kept entry it holds, or `kept` (the zero row).
    indices: Tensor<B, 1, Int>,
    /// Per kept entry its position, then `len` (for the zero row).
    inverse: Tensor<B, 1, Int>,
    kept: usize,
    len: usize,
}

impl<B: Backend> RowSpread<B> {
    /// Entry `i` of the kept rows goes to position `positions[i]` of `len`. Errors when a
    /// position is out of range or named twice.
    pub fn new(positions: &[u32], len: usize, device: &B::Device) -> Result<Self, GraphError> {
        let kept = positions.len();
        let limit = i32::MAX as usize - 1;
        if len > limit {
            return Err(GraphError::TooLarge { what: "spread rows", count: len, limit });
        }
        let indices = entries_of(positions, len)?;
        let mut inverse: Vec<i32> = positions.iter().map(|&p| p as i32).collect();
        inverse.push(len as i32);
        Ok(Self { indices: int_tensor::<B>(indices, device), inverse: int_tensor::<B>(inverse, device), kept, len })
    }

    /// Number of kept rows.
    pub fn kept(&self) -> usize {
        self.kept
    }

    /// Number of positions (rows of the spread tensor).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are no positions.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// `x` (`[spread.kept(), w]`) spread over `spread.len()` rows, zeros elsewhere
/// (differentiable). Panics when `x` has another number of rows.
pub fn spread_rows<B: SparseGnnBackend>(x: Tensor<B, 2>, spread: &RowSpread<B>) -> Tensor<B, 2> {
    let [rows, width] = x.dims();
    assert_eq!(rows, spread.kept, "spread_rows: x has {rows} rows, the spread keeps {}", spread.kept);
    let zero = Tensor::<B, 2>::zeros([1, width], (&x.device(), x.dtype()));
    let ext = Tensor::cat(vec![x, zero], 0);
    let out = B::ad_take_rows(
        ext.into_primitive().tensor(),
        spread.indices.clone().into_primitive(),
        spread.inverse.clone().into_primitive(),
    );
    Tensor::from_primitive(TensorPrimitive::Float(out))
}
