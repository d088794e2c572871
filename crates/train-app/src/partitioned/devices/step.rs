//! One training step on the parts, and the evaluation after it.

use crate::error::{AppError, Result};
use crate::training::HostGraph;
use burn::optim::Optimizer;
use burn::tensor::Tensor;
use burn_sparse_gnn::{SparseGnnAutodiffBackend, SparseGnnBackend};
use gnn_models::partitioned::devices::partitioned_loss;
use gnn_models::GnnModel;
use gnn_train::LossScaler;

use crate::partitioned::run::scalar;

use super::setup::PartitionedData;

/// One training step on the parts; returns the loss. With `scaler`, the backward pass starts
/// from the loss times its scale and the step is skipped when the gradients are not finite
/// ([`gnn_train::loss_scale`]).
/// With boundary sampling (`data.report.boundary_sampling`), the halo rows that cross are
/// drawn from `seed` and `step`.
pub fn train_step<B: SparseGnnAutodiffBackend, O: Optimizer<GnnModel<B>, B>>(
    model: GnnModel<B>,
    optim: &mut O,
    data: &PartitionedData<B>,
    lr: f64,
    seed: u64,
    step: u64,
    scaler: Option<&mut LossScaler>,
) -> Result<(GnnModel<B>, Tensor<B, 1>)> {
    let halo = match data.report.boundary_sampling {
        Some(rate) => Some(
            data.dg
                .sample_halo(&gnn_models::BoundarySampling { rate, seed }, step)
                .map_err(|e| AppError::Config(e.to_string()))?,
        ),
        None => None,
    };
    let (logits, replicas) = model
        .forward_partitioned_replicas(&data.dg, data.xs.clone(), halo.as_ref())
        .map_err(|e| AppError::Config(e.to_string()))?;
    let loss = partitioned_loss(&data.dg, &logits, &data.labels, &data.weights[0]);
    let grads = match scaler {
        Some(scaler) => {
            let mut grads = replicas.gradients(&model, loss.clone().mul_scalar(scaler.scale()).backward());
            scaler.unscale::<B, GnnModel<B>>(&mut grads, &model);
            grads
        }
        None => replicas.gradients(&model, loss.backward()),
    };
    Ok((optim.step(lr, model, grads), loss.detach()))
}

/// Accuracy of `model` (no autodiff) on train, valid and test, and its loss on valid (the
/// validation loss a whole-graph run logs, which `--patience` watches).
pub fn accuracies<B: SparseGnnBackend>(
    model: &GnnModel<B>,
    data: &PartitionedData<B>,
    host: &HostGraph,
) -> Result<([f64; 3], f64)> {
    let plogits = model.forward_partitioned(&data.dg, data.xs.clone()).map_err(|e| AppError::Config(e.to_string()))?;
    let valid_loss = scalar(partitioned_loss(&data.dg, &plogits, &data.labels, &data.weights[1]));
    let logits = data.dg.gather(plogits);
    let pred: Vec<i64> = logits.argmax(1).into_data().convert::<i64>().to_vec().unwrap_or_default();
    let labels = host.data.labels();
    let Some(split) = host.data.split() else { return Ok(([f64::NAN; 3], valid_loss)) };
    let acc = [&split.train, &split.valid, &split.test].map(|ids| {
        let hit = ids.iter().filter(|&&i| pred.get(i as usize) == labels.get(i as usize)).count();
        hit as f64 / ids.len().max(1) as f64
    });
    Ok((acc, valid_loss))
}
