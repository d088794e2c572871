//! `bench --ops launch`: what one small op costs the training loop, host work included: Burn's
//! element-wise ops on the inner backend and under autodiff, one of our sparse kernels on a
//! small graph, a small dense product, a small linear layer's forward and backward (each
//! sample [`LAUNCH_BATCH`] calls between two synchronisations); uploads of host vectors of 1 KiB
//! to 4 MiB through Burn (`upload-N`) and through [`burn_sparse_gnn::upload`]
//! (`upload-direct-N`; below its 8 KiB threshold that is Burn's upload too); the bench graph
//! built with `Graph::new` and `Graph::new_packed`. The record is one call.

use crate::error::Result;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::Tensor;
use burn_sparse_gnn::dense::{DenseOps, LinearPrecision, ProductMath};
use burn_sparse_gnn::{ops, Graph, Reduce, SparseGnnAutodiffBackend};

use super::timing::{random_matrix, time_batched};
use super::{Bench, Record};

/// Calls per timing sample of `--ops launch`.
const LAUNCH_BATCH: usize = 200;

impl Bench {
    /// Per-call times of small ops (`[32, 64]` operands, a 32-node ring graph): the cost of a
    /// launch where the work itself takes microseconds, as in graph classification's batches.
    pub(super) fn run_launch<B: SparseGnnAutodiffBackend>(
        &self,
        device: &B::Device,
        backend: &str,
        emit: &mut dyn FnMut(Record) -> Result<()>,
    ) -> Result<()> {
        type I<B> = <B as AutodiffBackend>::InnerBackend;
        let dev_name = self.device_name.clone().unwrap_or_else(|| backend.to_string());
        let (rows, width) = (32usize, 64usize);
        let (x, _) = random_matrix::<I<B>>(rows, width, 1, device);
        let (y, _) = random_matrix::<I<B>>(rows, width, 2, device);
        let (w, _) = random_matrix::<I<B>>(width, width, 3, device);
        let src: Vec<i64> = (0..rows as i64).collect();
        let dst: Vec<i64> = (0..rows as i64).map(|i| (i + 1) % rows as i64).collect();
        let opts = burn_sparse_gnn::BuildOptions { symmetrize: true, add_self_loops: false, dedup: true };
        let csr = burn_sparse_gnn::Csr::from_edges(rows, &src, &dst, None, opts)
            .map_err(|e| crate::error::AppError::graph("the launch benchmark's ring graph", e))?;
        let g = Graph::<I<B>>::new(&csr, device, self.options);
        let xa = Tensor::<B, 2>::from_inner(x.clone()).require_grad();
        let ya = Tensor::<B, 2>::from_inner(y.clone()).require_grad();
        let wa = Tensor::<B, 2>::from_inner(w.clone()).require_grad();
        let mut out = |variant: &str, s: super::timing::Stats| {
            let mut r = self.record("launch", width, None, &s, &dev_name);
            r.variant = Some(variant.into());
            emit(r)
        };
        let (warm, runs, n) = (self.warmup, self.runs, LAUNCH_BATCH);
        out("scalar-add", time_batched::<I<B>, _>(device, warm, runs, n, || x.clone() + 1.0))?;
        out("add", time_batched::<I<B>, _>(device, warm, runs, n, || x.clone() + y.clone()))?;
        out("autodiff-add", time_batched::<I<B>, _>(device, warm, runs, n, || xa.clone() + ya.clone()))?;
        out("spmm", time_batched::<I<B>, _>(device, warm, runs, n, || ops::spmm(&g, x.clone(), Reduce::Sum)))?;
        out(
            "dense-product",
            time_batched::<I<B>, _>(device, warm, runs, n, || {
                let p = I::<B>::dense_product(
                    x.clone().into_primitive().tensor(),
                    w.clone().into_primitive().tensor(),
                    false,
                    false,
                    ProductMath::F32,
                );
                Tensor::<I<B>, 2>::from_primitive(burn::tensor::TensorPrimitive::Float(p))
            }),
        )?;
        out(
            "linear-fwd-bwd",
            time_batched::<I<B>, _>(device, warm, runs, n, || {
                let z = ops::linear(xa.clone(), wa.clone(), None, LinearPrecision::F32);
                let grads = z.sum().backward();
                wa.grad(&grads)
            }),
        )?;
        // uploads of host vectors through Burn and through `DeviceOps::float_upload`, and the
        // bench graph built on the device both ways
        for len in [256usize, 65_536, 1 << 20] {
            let v: Vec<f32> = (0..len).map(|i| i as f32).collect();
            let s = time_batched::<I<B>, _>(device, warm, runs, 20, || {
                Tensor::<I<B>, 1>::from_data(burn::tensor::TensorData::new(v.clone(), [len]), device)
            });
            out(&format!("upload-{len}"), s)?;
            let s = time_batched::<I<B>, _>(device, warm, runs, 20, || {
                burn_sparse_gnn::upload::<I<B>, 1>(burn::tensor::TensorData::new(v.clone(), [len]), device)
            });
            out(&format!("upload-direct-{len}"), s)?;
        }
        let s = time_batched::<I<B>, _>(device, warm, runs, 5, || Graph::<I<B>>::new(&self.adj, device, self.options));
        out("graph-new", s)?;
        let s = time_batched::<I<B>, _>(device, warm, runs, 5, || {
            Graph::<I<B>>::new_packed(&self.adj, device, self.options)
        });
        out("graph-new-packed", s)?;
        Ok(())
    }
}
