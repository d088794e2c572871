//! `bench --ops matmul`: the dense products of the linear layers.

use crate::error::Result;
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::Tensor;
use burn_sparse_gnn::dense::DenseOps;
use burn_sparse_gnn::SparseGnnAutodiffBackend;

use super::timing::host;
use super::timing::{random_matrix, rel_err, time, time_batched};
use super::{Bench, Record};

/// Products per timing sample of `--ops matmul` (see [`time_batched`]).
const MATMUL_BATCH: usize = 10;

impl Bench {
    /// Dense products of a GNN's linear layers over all nodes ([`DenseOps::dense_product`]:
    /// cuBLAS on CUDA): forward `x w`, the input gradient `dy w^T` and the weight gradient
    /// `x^T dy`, in exact f32 and TF32 on f32 inputs and with f16 / bf16 inputs (f32
    /// accumulation; the output in the half type, and in f32 as the layers use it), each checked
    /// against an f64 product on sampled rows and timed over [`MATMUL_BATCH`] calls per sample;
    /// and a whole linear layer's forward + backward through autodiff (`ops::linear`) in each
    /// precision.
    pub(super) fn run_matmul<B: SparseGnnAutodiffBackend>(
        &self,
        device: &B::Device,
        backend: &str,
        emit: &mut dyn FnMut(Record) -> Result<()>,
    ) -> Result<()> {
        use burn::tensor::FloatDType;
        use burn_sparse_gnn::dense::{LinearPrecision, ProductMath};
        type I<B> = <B as AutodiffBackend>::InnerBackend;
        let dev_name = self.device_name.clone().unwrap_or_else(|| backend.to_string());
        let n = self.adj.n_rows();
        let modes: [(&str, ProductMath, Option<FloatDType>); 4] = [
            ("f32", ProductMath::F32, None),
            ("tf32", ProductMath::Tf32, None),
            ("f16", ProductMath::F32, Some(FloatDType::F16)),
            ("bf16", ProductMath::F32, Some(FloatDType::BF16)),
        ];
        for (d_in, d_out) in [(256usize, 256usize), (602, 256), (256, 41)] {
            let (x, _) = random_matrix::<I<B>>(n, d_in, 1, device);
            let (w, _) = random_matrix::<I<B>>(d_in, d_out, 2, device);
            let (dy, _) = random_matrix::<I<B>>(n, d_out, 3, device);
            let flops = 2.0 * n as f64 * d_in as f64 * d_out as f64;
            let rows: Vec<usize> = (0..64).map(|i| i * n / 64).collect();
            for (name, math, half) in modes {
                if let Some(h) = half {
                    if !I::<B>::supports_dtype(device, h.into()) {
                        eprintln!("skipped: matmul {name}: not supported by this device");
                        continue;
                    }
                }
                let cast = |t: &Tensor<I<B>, 2>| match half {
                    Some(h) => t.clone().cast(h),
                    None => t.clone(),
                };
                let (xc, wc, dyc) = (cast(&x), cast(&w), cast(&dy));
                // `half_out` (half inputs): the product in their type, as torch.matmul returns
                // it; otherwise the f32 output the layers use ("-f32" variants for half inputs)
                let product = |a: &Tensor<I<B>, 2>, b: &Tensor<I<B>, 2>, ta: bool, tb: bool, half_out: bool| {
                    let (a, b) = (a.clone().into_primitive().tensor(), b.clone().into_primitive().tensor());
                    let p = if half_out {
                        I::<B>::dense_product_half(a, b, ta, tb)
                    } else {
                        I::<B>::dense_product(a, b, ta, tb, math)
                    };
                    Tensor::<I<B>, 2>::from_primitive(burn::tensor::TensorPrimitive::Float(p))
                };
                // the forward product against f64 on sampled rows of the stored (rounded) inputs
                let xs = host(xc.clone().cast(FloatDType::F32));
                let ws = host(wc.clone().cast(FloatDType::F32));
                let want: Vec<f64> = rows
                    .iter()
                    .flat_map(|&r| (0..d_out).map(move |c| (r, c)))
                    .map(|(r, c)| (0..d_in).map(|t| xs[r * d_in + t] * ws[t * d_out + c]).sum::<f64>())
                    .collect();
                let fwd_error = |half_out: bool| {
                    let y = host(product(&xc, &wc, false, false, half_out).cast(FloatDType::F32));
                    let got: Vec<f64> = rows
                        .iter()
                        .flat_map(|&r| (0..d_out).map(move |c| (r, c)))
                        .map(|(r, c)| y[r * d_out + c])
                        .collect();
                    rel_err(&got, &want)
                };
                let outputs: &[&str] = if half.is_some() { &["", "-f32"] } else { &[""] };
                for out in outputs {
                    for (variant, ta, tb) in [("fwd", false, false), ("dgrad", false, true), ("wgrad", true, false)] {
                        let (a, b) = match variant {
                            "fwd" => (&xc, &wc),
                            "dgrad" => (&dyc, &wc),
                            _ => (&xc, &dyc),
                        };
                        let half_out = half.is_some() && out.is_empty();
                        let s = time_batched::<I<B>, _>(device, self.warmup, self.runs, MATMUL_BATCH, || {
                            product(a, b, ta, tb, half_out)
                        });
                        let mut r = self.record("matmul", d_out, Some(d_in), &s, &dev_name);
                        r.dtype = name.into();
                        r.variant = Some(format!("{variant}{out}"));
                        r.gbps = Some(flops / s.median / 1e9);
                        r.check_error = (variant == "fwd").then(|| fwd_error(half_out));
                        emit(r)?;
                    }
                }
            }
            // a whole layer (forward, backward of the input and the weight) through autodiff
            let xa = Tensor::<B, 2>::from_inner(x.clone()).require_grad();
            let dya = Tensor::<B, 2>::from_inner(dy.clone());
            let precisions = [
                ("f32", LinearPrecision::F32),
                ("tf32", LinearPrecision::Tf32),
                ("f16", LinearPrecision::Half(FloatDType::F16)),
                ("bf16", LinearPrecision::Half(FloatDType::BF16)),
            ];
            for (name, p) in precisions {
                if let LinearPrecision::Half(h) = p {
                    if !I::<B>::supports_dtype(device, h.into()) {
                        continue;
                    }
                }
                let s = time::<I<B>, _>(device, self.warmup, self.runs, || {
                    let wa = Tensor::<B, 2>::from_inner(w.clone()).require_grad();
                    let y = burn_sparse_gnn::ops::linear(xa.clone(), wa.clone(), None, p);
                    let grads = (y * dya.clone()).sum().backward();
                    (wa.grad(&grads).map(|g| g.sum()), xa.grad(&grads).map(|g| g.sum()))
                });
                let mut r = self.record("matmul", d_out, Some(d_in), &s, &dev_name);
                r.dtype = name.into();
                r.variant = Some("layer-fwd-bwd".into());
                r.gbps = Some(3.0 * flops / s.median / 1e9);
                emit(r)?;
            }
        }
        Ok(())
    }
}
