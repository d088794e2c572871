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
//!
//! The backend trait [`RowOps`] also holds the row scalings of half-precision copies and of the
//! mean's `1 / deg`.

mod autodiff;
mod cube;
mod host;

use crate::error::GraphError;
use crate::ops::primitive::prim;
use crate::ops::primitive::t2;
use crate::ops::primitive::CsrPrim;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::ops::IntTensor;
use burn::tensor::DType;
use burn::tensor::FloatDType;
use burn::tensor::Int;
use burn::tensor::Tensor;
use burn::tensor::TensorData;
use burn::tensor::TensorMetadata;
use burn::tensor::TensorPrimitive;
use sparse_gnn_kernels::config::KernelConfig;

/// Row operations: differentiable rows by distinct ids, rows added at ids, and row scalings (half copies, `1 / deg`).
///
/// Part of [`crate::backend::SparseGnnBackend`] (see its conventions).
pub trait RowOps: Backend {
    /// Differentiable rows `indices` (distinct) of a 2-D `x`: `x.select(0, indices)`, whose
    /// gradient is gathered through `inverse` (`[rows of x]`: the entry of `indices` naming each
    /// row, or `indices.len()` for a row not selected). See [`crate::ops::rows`].
    fn ad_take_rows(x: FloatTensor<Self>, indices: IntTensor<Self>, inverse: IntTensor<Self>) -> FloatTensor<Self> {
        let _ = inverse;
        Self::float_select(x, 0, indices)
    }

    /// [`Self::ad_take_rows`] in `dtype` (`None`: the dtype of `x`): the rows a halo exchange
    /// sends, in the type they travel in; the gradient comes back in the dtype of `x`. Default:
    /// the rows, then a cast; backends with kernels gather and convert in one pass.
    fn ad_take_rows_as(
        x: FloatTensor<Self>,
        indices: IntTensor<Self>,
        inverse: IntTensor<Self>,
        dtype: Option<FloatDType>,
    ) -> FloatTensor<Self> {
        let rows = Self::ad_take_rows(x, indices, inverse);
        match dtype {
            Some(d) if rows.dtype() != d.into() => Self::float_cast(rows, d),
            _ => rows,
        }
    }

    /// `base` (`[n, w]`) with row `i` of `values` (`[m, w]`, same device; another float dtype is
    /// converted to the dtype of `base`) added to its
    /// row `indices[i]`, for distinct `indices` (`[m]`); `inverse` (`[n]`) is their inverse map
    /// as in [`crate::ops::rows::RowIndex`]. The halo exchange's backward adds the returned halo
    /// gradients to the senders' gradients this way. Not differentiable. Default: the composed
    /// ops `base + [values; 0].select(inverse)` (three passes over `n` rows); backends with
    /// kernels add the `m` rows in place (one copy of `base` where it is shared). Both are
    /// deterministic and give the same values.
    fn add_rows(
        base: FloatTensor<Self>,
        values: FloatTensor<Self>,
        indices: IntTensor<Self>,
        inverse: IntTensor<Self>,
    ) -> FloatTensor<Self> {
        let _ = indices;
        let values = match base.dtype() {
            DType::F64 | DType::F32 | DType::F16 | DType::BF16 if values.dtype() != base.dtype() => {
                Self::float_cast(values, FloatDType::from(base.dtype()))
            }
            _ => values,
        };
        Self::float_add(base, crate::ops::rows::gather_back::<Self>(values, inverse))
    }

    /// The half copy of `x` (`[n, d]`) and its row scales (`[n, 1]`, dtype of `x`): each row
    /// divided by its largest magnitude (at least 1e-30) and rounded to `half`, so nothing
    /// overflows. Composed tensor ops by default; backends with kernels do it in one pass
    /// (`config`: the plane choice of the kernel).
    fn rows_to_half(
        x: FloatTensor<Self>,
        half: FloatDType,
        config: &KernelConfig,
    ) -> (FloatTensor<Self>, FloatTensor<Self>) {
        let _ = config;
        half_rows::<Self>(x, half)
    }

    /// `x_half * scale` (`scale`: `[n, 1]`, one factor per row) in `dtype`: the rounded `x` of
    /// [`Self::rows_to_half`], or any row scaling (`x_half` may have any float
    /// type; the mean's backward scales its gradient by `1 / deg` this way). Composed tensor
    /// ops by default; backends with kernels do it in one pass.
    fn rows_from_half(x_half: FloatTensor<Self>, scale: FloatTensor<Self>, dtype: FloatDType) -> FloatTensor<Self> {
        unscale_rows::<Self>(x_half, scale, dtype)
    }

    /// `x / max(deg, 1)` per row in `dtype`, the degrees from `row_ptr` (`[n + 1]`, one row of
    /// `x` per row): the chain rule of the mean aggregation. Composed tensor ops by default (the
    /// degrees, their reciprocal taken in f32 and rounded to `dtype`, then
    /// [`Self::rows_from_half`]); backends with kernels do it in one pass with the
    /// same arithmetic.
    fn inv_degree_rows(row_ptr: IntTensor<Self>, x: FloatTensor<Self>, dtype: FloatDType) -> FloatTensor<Self> {
        crate::ops::rows::inv_degree_rows_composed::<Self>(row_ptr, x, dtype)
    }
}

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
pub fn take_rows<B: RowOps>(x: Tensor<B, 2>, rows: &RowIndex<B>) -> Tensor<B, 2> {
    match try_take_rows(x, rows) {
        Ok(t) => t,
        Err(e) => panic!("{e}"),
    }
}

/// [`take_rows`], with an error when `x` does not have `rows.source_rows()` rows.
pub fn try_take_rows<B: RowOps>(x: Tensor<B, 2>, rows: &RowIndex<B>) -> Result<Tensor<B, 2>, crate::error::OpError> {
    let dims = x.dims();
    if dims[0] != rows.source_rows {
        return Err(crate::error::OpError::Shape {
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
pub fn spread_rows<B: RowOps>(x: Tensor<B, 2>, spread: &RowSpread<B>) -> Tensor<B, 2> {
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

/// `dy / max(deg, 1)` per row of `csr` in `dtype` (the mean's chain rule), in one pass on the
/// backends with kernels ([`RowOps::inv_degree_rows`]).
pub(crate) fn inv_degree_rows<B: RowOps>(
    csr: &CsrPrim<burn::tensor::ops::IntTensor<B>>,
    dy: FloatTensor<B>,
    dtype: FloatDType,
) -> FloatTensor<B> {
    B::inv_degree_rows(csr.row_ptr.clone(), dy, dtype)
}

/// The composed ops of [`RowOps::inv_degree_rows`]: the degrees from `row_ptr`
/// (`[n + 1]`), their reciprocal taken in f32 and rounded once to `dtype`, and the row scaling
/// of [`RowOps::rows_from_half`].
pub fn inv_degree_rows_composed<B: RowOps>(
    row_ptr: burn::tensor::ops::IntTensor<B>,
    dy: FloatTensor<B>,
    dtype: FloatDType,
) -> FloatTensor<B> {
    let n = dy.shape()[0];
    let rp: Tensor<B, 1, Int> = Tensor::from_primitive(row_ptr);
    let deg = rp.clone().slice([1..n + 1]) - rp.slice([0..n]);
    let deg = deg.clamp_min(1).float().cast(FloatDType::F32);
    // a division, not `recip()`: NdArray's reciprocal is a 12-bit SIMD approximation on x86
    // (relative error up to 2.4e-4, which showed in the CPU backend's mean gradients)
    let inv = (deg.ones_like() / deg).cast(dtype);
    B::rows_from_half(dy, prim(inv.unsqueeze_dim::<2>(1)), dtype)
}

/// The half-precision copy of `x` (`[n, d]`) kept by a half-precision linear layer
/// ([`crate::ops::dense::precision::LinearPrecision::Half`]):
/// each row divided by its largest magnitude (`scale`, `[n, 1]` in the dtype of `x`) before the
/// cast, so no value overflows the half type (f16 stops at 65,504) and every row keeps the full
/// half-precision mantissa relative to its largest entry.
pub(crate) fn half_rows<B: Backend>(x: FloatTensor<B>, half: FloatDType) -> (FloatTensor<B>, FloatTensor<B>) {
    let x: Tensor<B, 2> = Tensor::from_primitive(burn::tensor::TensorPrimitive::Float(x));
    let scale = x.clone().abs().max_dim(1).clamp_min(1e-30);
    let x_half = (x / scale.clone()).cast(half);
    (x_half.into_primitive().tensor(), scale.into_primitive().tensor())
}

/// `x_half * scale` in `dtype`: the rounded `x` of [`half_rows`].
pub(crate) fn unscale_rows<B: Backend>(
    x_half: FloatTensor<B>,
    scale: FloatTensor<B>,
    dtype: FloatDType,
) -> FloatTensor<B> {
    let xh: Tensor<B, 2> = Tensor::from_primitive(burn::tensor::TensorPrimitive::Float(x_half));
    let s: Tensor<B, 2> = Tensor::from_primitive(burn::tensor::TensorPrimitive::Float(scale));
    (xh.cast(dtype) * s).into_primitive().tensor()
}

/// The gradient of a sender's state from the gradient of the rows it sent: `[dy; 0]` gathered
/// through the route's inverse (also `take_rows`'s backward).
pub(crate) fn gather_back<B: Backend>(dy: FloatTensor<B>, inverse: IntTensor<B>) -> FloatTensor<B> {
    let dy = t2::<B>(dy);
    let width = dy.dims()[1];
    let zero = Tensor::<B, 2>::zeros([1, width], (&dy.device(), dy.dtype()));
    let inverse = Tensor::<B, 1, Int>::from_primitive(inverse);
    prim(Tensor::cat(vec![dy, zero], 0).select(0, inverse))
}
