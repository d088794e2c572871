//! The ranks' model replicas kept equal: rank 0's parameters broadcast, gradients summed.

use crate::partitioned::devices::DistError;
use burn::module::{AutodiffModule, Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::record::{BinBytesRecorder, DoublePrecisionSettings, Recorder};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::{DType, Tensor, TensorData};
use burn_sparse_gnn::collective::{device_all_reduce_sum, Comm, CommError, RowTransport};
use burn_sparse_gnn::SparseGnnBackend;

/// The gradients of `model`'s parameters summed over the ranks (in rank order, so every rank
/// gets the same bits), all parameters in one collective: after each rank's backward pass of
/// its [`rank_loss`], the gradients of the one-process loss. A parameter without a gradient on
/// a rank counts as zero there.
pub fn sum_gradients<B: AutodiffBackend, M: AutodiffModule<B>>(
    model: &M,
    grads: GradientsParams,
    comm: &Comm,
) -> Result<GradientsParams, CommError>
where
    B::InnerBackend: SparseGnnBackend,
{
    if comm.row_transport() == RowTransport::Nccl {
        return sum_gradients_on_devices::<B, M>(model, grads, comm);
    }
    /// Every parameter's gradient (zeros where it has none) then 1 where it has one, in the
    /// model's parameter order, and each gradient's dtype.
    struct Gather<'a> {
        grads: &'a mut GradientsParams,
        flat: Vec<f64>,
        dtypes: Vec<burn::tensor::DType>,
    }
    impl<B: AutodiffBackend> ModuleVisitor<B> for Gather<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            let value = param.val();
            let n = value.shape().num_elements();
            let mine = self.grads.remove::<B::InnerBackend, D>(param.id);
            self.dtypes.push(mine.as_ref().map(|g| g.dtype()).unwrap_or_else(|| value.dtype()));
            match mine.map(|g| g.to_data().convert::<f64>().to_vec::<f64>()) {
                Some(Ok(v)) if v.len() == n => {
                    self.flat.extend(v);
                    self.flat.push(1.0);
                }
                _ => {
                    self.flat.extend(std::iter::repeat_n(0.0, n));
                    self.flat.push(0.0);
                }
            }
        }
    }
    /// The summed gradients back into `grads`, in the same order.
    struct Scatter<'a> {
        grads: &'a mut GradientsParams,
        sum: &'a [f64],
        dtypes: std::slice::Iter<'a, burn::tensor::DType>,
        at: usize,
    }
    impl<B: AutodiffBackend> ModuleVisitor<B> for Scatter<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            let value = param.val();
            let shape = value.shape();
            let n = shape.num_elements();
            let (Some(values), Some(&dtype)) = (self.sum.get(self.at..self.at + n), self.dtypes.next()) else {
                return;
            };
            let present = self.sum.get(self.at + n).copied().unwrap_or(0.0);
            self.at += n + 1;
            if present > 0.0 {
                let data = TensorData::new(values.to_vec(), shape).convert_dtype(dtype);
                self.grads.register::<B::InnerBackend, D>(param.id, Tensor::from_data(data, (&value.device(), dtype)));
            }
        }
    }
    comm.check()?;
    let mut grads = grads;
    let mut gather = Gather { grads: &mut grads, flat: Vec::new(), dtypes: Vec::new() };
    model.visit(&mut gather);
    let (flat, dtypes) = (gather.flat, gather.dtypes);
    // gradients held in f32 or narrower travel as f32 (exact), summed in f64 all the same
    let sum = match dtypes.iter().all(|d| matches!(d, DType::F32 | DType::F16 | DType::BF16)) {
        true => comm.all_reduce_sum_f32(&flat.iter().map(|&v| v as f32).collect::<Vec<f32>>())?,
        false => comm.all_reduce_sum(&flat)?,
    };
    model.visit(&mut Scatter { grads: &mut grads, sum: &sum, dtypes: dtypes.iter(), at: 0 });
    Ok(grads)
}

/// [`sum_gradients`] where the rows move through NCCL: the gradients, as f32 and flattened
/// into one vector in the model's parameter order (zeros where a rank has none), summed on the
/// devices ([`device_all_reduce_sum`]: gathered, then added in rank order, the same bits on
/// every rank), and whether each parameter has a gradient on some rank through the host.
fn sum_gradients_on_devices<B: AutodiffBackend, M: AutodiffModule<B>>(
    model: &M,
    grads: GradientsParams,
    comm: &Comm,
) -> Result<GradientsParams, CommError>
where
    B::InnerBackend: SparseGnnBackend,
{
    type I<B> = <B as AutodiffBackend>::InnerBackend;
    struct Gather<'a, B: AutodiffBackend> {
        grads: &'a mut GradientsParams,
        flat: Vec<Tensor<I<B>, 1>>,
        present: Vec<f64>,
        dtypes: Vec<DType>,
    }
    impl<B: AutodiffBackend> ModuleVisitor<B> for Gather<'_, B> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            let value = param.val();
            let n = value.shape().num_elements();
            let mine = self.grads.remove::<B::InnerBackend, D>(param.id);
            self.dtypes.push(mine.as_ref().map(|g| g.dtype()).unwrap_or_else(|| value.dtype()));
            self.present.push(f64::from(u8::from(mine.is_some())));
            if n > 0 {
                // (no device work on empty tensors: CUDA refuses launches of no blocks)
                self.flat.push(match mine {
                    Some(g) => g.reshape([n]).cast(DType::F32),
                    None => Tensor::zeros([n], (&value.device(), DType::F32)),
                });
            }
        }
    }
    struct Scatter<'a, B: AutodiffBackend> {
        grads: &'a mut GradientsParams,
        sum: Tensor<I<B>, 1>,
        present: &'a [f64],
        dtypes: &'a [DType],
        at: usize,
        k: usize,
    }
    impl<B: AutodiffBackend> ModuleVisitor<B> for Scatter<'_, B> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            let shape = param.val().shape();
            let n = shape.num_elements();
            let (Some(&present), Some(&dtype)) = (self.present.get(self.k), self.dtypes.get(self.k)) else {
                return;
            };
            let at = self.at;
            (self.at, self.k) = (at + n, self.k + 1);
            if present > 0.0 && n > 0 {
                let g = self.sum.clone().slice([at..at + n]).reshape(shape).cast(dtype);
                self.grads.register::<B::InnerBackend, D>(param.id, g);
            }
        }
    }
    comm.check()?;
    let mut grads = grads;
    let mut gather = Gather::<B> { grads: &mut grads, flat: Vec::new(), present: Vec::new(), dtypes: Vec::new() };
    model.visit(&mut gather);
    let (flat, present, dtypes) = (gather.flat, gather.present, gather.dtypes);
    let present = comm.all_reduce_sum(&present)?;
    if flat.is_empty() {
        return Ok(grads);
    }
    let sum = match device_all_reduce_sum(Tensor::cat(flat, 0), comm) {
        Some(r) => r?,
        None => return Err(CommError::Config("the gradients cannot be summed on the devices".into())),
    };
    model.visit(&mut Scatter::<B> { grads: &mut grads, sum, present: &present, dtypes: &dtypes, at: 0, k: 0 });
    Ok(grads)
}

/// Rank 0's parameters on every rank (the replicas start equal whatever each rank drew; the
/// values travel as f64, so f32 and f64 parameters arrive exactly).
pub fn broadcast_model<B: Backend, M: Module<B>>(model: M, comm: &Comm, device: &B::Device) -> Result<M, DistError> {
    let recorder = BinBytesRecorder::<DoublePrecisionSettings>::default();
    let bytes = match comm.rank() {
        0 => recorder
            .record(model.clone().into_record(), ())
            .map_err(|e| DistError::Ranks(format!("serialising the parameters: {e}")))?,
        _ => Vec::new(),
    };
    let bytes = comm.broadcast(bytes).map_err(DistError::Comm)?;
    let record =
        recorder.load(bytes, device).map_err(|e| DistError::Ranks(format!("reading rank 0's parameters: {e}")))?;
    Ok(model.load_record(record))
}
