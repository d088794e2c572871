//! ReLU and dropout in one differentiable pass, with masks that are a hash of a seed, the row's
//! global node id and the column (see [`sparse_gnn_kernels::dropout`]).
//!
//! A model draws one [`DropoutSeed`] per dropout site and forward pass, on the device, with the
//! backend's random generator (so `B::seed` fixes the masks and nothing waits for the host).
//! Because the mask of an entry depends only on (seed, node, column), a part of a partitioned
//! graph that passes its rows' global ids draws exactly the rows of the whole graph's mask: the
//! partitioned model equals the one-device model without drawing whole-graph masks anywhere.
//!
//! ```
//! use burn::backend::{Autodiff, NdArray};
//! use burn::tensor::Tensor;
//! use burn_sparse_gnn::dropout::{relu_dropout, DropoutSeed};
//! type B = Autodiff<NdArray>;
//! let dev = Default::default();
//! let x = Tensor::<B, 2>::from_floats([[-1.0, 2.0, 3.0, 4.0]], &dev).require_grad();
//! let seed = DropoutSeed::<B>::from_floats([0.3, 0.7], &dev);
//! let y = relu_dropout(x.clone(), true, 0.5, Some(&seed), None).unwrap();
//! let yv = y.to_data().to_vec::<f32>().unwrap();
//! assert_eq!(yv[0], 0.0); // clipped by the ReLU
//! assert!(yv[1..].iter().zip([2.0, 3.0, 4.0]).all(|(&v, x)| v == 0.0 || v == 2.0 * x));
//! let dx = x.grad(&y.sum().backward()).unwrap().to_data().to_vec::<f32>().unwrap();
//! assert!(dx.iter().zip(&yv).all(|(&g, &v)| g == if v == 0.0 { 0.0 } else { 2.0 }));
//! ```

mod autodiff;
mod cube;
mod host;

use crate::error::OpError;
use crate::ops::primitive::ReluDropout;
use burn::tensor::backend::Backend;
use burn::tensor::ops::FloatTensor;
use burn::tensor::ops::IntTensor;
use burn::tensor::Distribution;
use burn::tensor::Int;
use burn::tensor::Tensor;
use burn::tensor::TensorData;
use burn::tensor::TensorMetadata;
use burn::tensor::TensorPrimitive;
use sparse_gnn_kernels::dropout as kernel;

/// ReLU and dropout in one pass with a counter-based bit mask.
///
/// Part of [`crate::backend::SparseGnnBackend`] (see its conventions).
pub trait DropoutOps: Backend {
    /// ReLU and / or dropout of a 2-D `x` in one pass with a counter-based mask (see
    /// [`crate::dropout`]): the output and the mask words (`[n * ceil(d / 32)]`, one bit per
    /// entry, as i32 bit patterns). `seed`: `[2]` floats in `[0, 1)` (read when
    /// `spec.prob > 0`); `rows`: each row's global id (the row index when `None`). Computed on
    /// the host by default (the CPU backends); backends with kernels override it.
    fn relu_dropout(
        x: FloatTensor<Self>,
        spec: ReluDropout,
        seed: Option<FloatTensor<Self>>,
        rows: Option<IntTensor<Self>>,
    ) -> (FloatTensor<Self>, IntTensor<Self>) {
        crate::ops::dropout::host_relu_dropout::<Self>(x, spec, seed, rows)
    }

    /// The gradient of [`Self::relu_dropout`]: `dy` where the mask bit is set,
    /// times `1 / (1 - spec.prob)`, 0 elsewhere. On the host by default.
    fn relu_dropout_grad(dy: FloatTensor<Self>, mask: IntTensor<Self>, spec: ReluDropout) -> FloatTensor<Self> {
        crate::ops::dropout::host_relu_dropout_grad::<Self>(dy, mask, spec)
    }

    /// Differentiable [`Self::relu_dropout`] (backward: the masked scale).
    fn ad_relu_dropout(
        x: FloatTensor<Self>,
        spec: ReluDropout,
        seed: Option<FloatTensor<Self>>,
        rows: Option<IntTensor<Self>>,
    ) -> FloatTensor<Self> {
        Self::relu_dropout(x, spec, seed, rows).0
    }
}

/// The seed of one dropout mask: two floats in `[0, 1)` on a device.
#[derive(Clone, Debug)]
pub struct DropoutSeed<B: Backend>(Tensor<B, 1>);

impl<B: Backend> DropoutSeed<B> {
    /// A seed drawn with the backend's random generator on `device` (follows `B::seed`).
    pub fn draw(device: &B::Device) -> Self {
        Self(Tensor::random([2], Distribution::Uniform(0.0, 1.0), device))
    }

    /// A given seed (each float in `[0, 1)`; others are wrapped into it).
    pub fn from_floats(s: [f32; 2], device: &B::Device) -> Self {
        let s = s.map(|v| v.rem_euclid(1.0));
        Self(Tensor::from_data(TensorData::new(s.to_vec(), [2]), device))
    }

    /// A seed held in a tensor of two floats in `[0, 1)` (e.g. another seed's
    /// [`DropoutSeed::tensor`] read back and sent to another process). Errors when the tensor
    /// does not hold two values.
    pub fn from_tensor(t: Tensor<B, 1>) -> Result<Self, OpError> {
        match t.dims() {
            [2] => Ok(Self(t)),
            d => Err(OpError::Shape { op: "dropout seed", what: "seed", got: d.to_vec(), expected: "[2]".into() }),
        }
    }

    /// The same seed on `device`.
    pub fn to_device(&self, device: &B::Device) -> Self {
        Self(self.0.clone().to_device(device))
    }

    /// The seed tensor (`[2]`).
    pub fn tensor(&self) -> &Tensor<B, 1> {
        &self.0
    }
}

/// `relu(x)` (when `relu`) with dropout of probability `prob` (when `seed` is given and
/// `prob > 0`; kept entries are scaled by `1 / (1 - prob)`), differentiable. `rows`: the global
/// node id of each row of `x` (`[n]`; the row index when `None`), which keys the mask.
///
/// Errors when `prob` is not in `[0, 1)` or `rows` does not have one id per row.
pub fn relu_dropout<B: DropoutOps>(
    x: Tensor<B, 2>,
    relu: bool,
    prob: f64,
    seed: Option<&DropoutSeed<B>>,
    rows: Option<&Tensor<B, 1, Int>>,
) -> Result<Tensor<B, 2>, OpError> {
    if !(0.0..1.0).contains(&prob) {
        return Err(OpError::Config {
            op: "relu_dropout",
            msg: format!("the drop probability {prob} is not in [0, 1)"),
        });
    }
    if let Some(r) = rows {
        if r.dims()[0] != x.dims()[0] {
            return Err(OpError::Shape {
                op: "relu_dropout",
                what: "row ids",
                got: r.dims().to_vec(),
                expected: format!("[{}]", x.dims()[0]),
            });
        }
    }
    let seed = seed.filter(|_| prob > 0.0);
    let spec = ReluDropout { relu, prob: if seed.is_some() { prob } else { 0.0 } };
    if !relu && spec.prob == 0.0 {
        return Ok(x);
    }
    Ok(Tensor::from_primitive(TensorPrimitive::Float(B::ad_relu_dropout(
        x.into_primitive().tensor(),
        spec,
        seed.map(|s| s.0.clone().into_primitive().tensor()),
        rows.map(|r| r.clone().into_primitive()),
    ))))
}

/// A 2-D float tensor on the host: its values as f32, its shape, and its values as f64 where
/// it holds f64 (the reference backend), so that the masked scale stays exact there.
fn host_values<B: Backend>(t: FloatTensor<B>) -> (Vec<f32>, Vec<usize>, Option<Vec<f64>>) {
    let t = Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(crate::ops::host_io::own_float::<B>(t)));
    let dims = t.dims().to_vec();
    let data = t.into_data();
    let wide = (data.dtype == burn::tensor::DType::F64).then(|| data.clone().convert::<f64>().into_vec::<f64>());
    let wide = wide.and_then(|v| v.ok());
    (data.convert::<f32>().into_vec::<f32>().unwrap_or_default(), dims, wide)
}

/// `v` times `scale` where `mask` keeps the entry (the layout `kernel::reference_grad` reads),
/// 0 elsewhere, in f64.
fn masked_scale_f64(v: &[f64], mask: &[u32], n: usize, d: usize, scale: f64) -> Vec<f64> {
    let kept = kernel::reference_grad(&vec![1.0; n * d], mask, n, d, 1.0);
    v.iter().zip(&kept).map(|(&x, &k)| if k != 0.0 { x * scale } else { 0.0 }).collect()
}

fn keep_scale_f64(prob: f64) -> f64 {
    if prob <= 0.0 {
        1.0
    } else {
        1.0 / (1.0 - prob)
    }
}

/// The host implementation of [`DropoutOps::relu_dropout`] (the CPU backends).
pub(crate) fn host_relu_dropout<B: Backend>(
    x: FloatTensor<B>,
    spec: ReluDropout,
    seed: Option<FloatTensor<B>>,
    rows: Option<IntTensor<B>>,
) -> (FloatTensor<B>, IntTensor<B>) {
    let device = B::float_device(&x);
    let dtype = x.dtype();
    let (xv, dims, wide) = host_values::<B>(x);
    let (n, d) = (dims[0], dims[1]);
    let seed = match seed {
        Some(s) => {
            let v = Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(s)).into_data().convert::<f32>();
            let v = v.into_vec::<f32>().unwrap_or_default();
            [v.first().copied().unwrap_or(0.0), v.get(1).copied().unwrap_or(0.0)]
        }
        None => [0.0; 2],
    };
    let ids = rows.map(|r| {
        Tensor::<B, 1, Int>::from_primitive(r).into_data().convert::<i64>().into_vec::<i64>().unwrap_or_default()
    });
    let (y, mask) = kernel::reference(&xv, n, d, ids.as_deref(), seed, spec);
    let y = match wide {
        Some(x64) => TensorData::new(masked_scale_f64(&x64, &mask, n, d, keep_scale_f64(spec.prob)), [n, d]),
        None => TensorData::new(y, [n, d]).convert_dtype(dtype),
    };
    let y = Tensor::<B, 2>::from_data(y, (&device, dtype));
    // bit patterns as i32 values (exact in any int type of the backend)
    let words: Vec<i64> = mask.into_iter().map(|w| w as i32 as i64).collect();
    let len = words.len();
    let mask = Tensor::<B, 1, Int>::from_data(TensorData::new(words, [len]).convert::<B::IntElem>(), &device);
    (y.into_primitive().tensor(), mask.into_primitive())
}

/// The host implementation of [`DropoutOps::relu_dropout_grad`].
pub(crate) fn host_relu_dropout_grad<B: Backend>(
    dy: FloatTensor<B>,
    mask: IntTensor<B>,
    spec: ReluDropout,
) -> FloatTensor<B> {
    let device = B::float_device(&dy);
    let dtype = dy.dtype();
    let (dv, dims, wide) = host_values::<B>(dy);
    let (n, d) = (dims[0], dims[1]);
    let words: Vec<u32> = Tensor::<B, 1, Int>::from_primitive(mask)
        .into_data()
        .convert::<i64>()
        .into_vec::<i64>()
        .unwrap_or_default()
        .into_iter()
        .map(|w| w as u32)
        .collect();
    let dx = match wide {
        Some(dy64) => TensorData::new(masked_scale_f64(&dy64, &words, n, d, keep_scale_f64(spec.prob)), [n, d]),
        None => TensorData::new(kernel::reference_grad(&dv, &words, n, d, kernel::keep_scale(spec.prob)), [n, d])
            .convert_dtype(dtype),
    };
    Tensor::<B, 2>::from_data(dx, (&device, dtype)).into_primitive().tensor()
}
