//! Batch normalisation of node states through `burn_sparse_gnn::ops::batch_norm` (two kernels
//! forward, two backward), with the fields, initialisation, running averages and record of
//! Burn's `BatchNorm`: a model saved with Burn's module loads into this one.

use burn::module::{Module, Param, RunningState};
use burn::nn::BatchNormConfig;
use burn::tensor::backend::Backend;
use burn::tensor::Tensor;
use burn_sparse_gnn::{ops, SparseGnnBackend};

/// Batch normalisation over the rows of `[n, c]` states: batch statistics while the backend
/// tracks gradients (and running averages updated with `momentum`), the running averages
/// otherwise.
///
/// ```
/// use burn::backend::{Autodiff, NdArray};
/// use burn::tensor::Tensor;
/// use gnn_models::norm::BatchNorm;
/// type B = Autodiff<NdArray>;
/// let dev = Default::default();
/// let bn = BatchNorm::<B>::new(2, &dev);
/// let y = bn.forward(Tensor::from_floats([[1.0, 4.0], [3.0, 4.0]], &dev));
/// let v = y.to_data().to_vec::<f32>().unwrap();
/// assert!((v[0] + 1.0).abs() < 1e-4 && (v[2] - 1.0).abs() < 1e-4 && v[1] == 0.0);
/// ```
#[derive(Module, Debug)]
pub struct BatchNorm<B: Backend> {
    /// Scale, `[c]`.
    pub gamma: Param<Tensor<B, 1>>,
    /// Shift, `[c]`.
    pub beta: Param<Tensor<B, 1>>,
    /// Running mean of the batches' means.
    pub running_mean: RunningState<Tensor<B, 1>>,
    /// Running mean of the batches' biased variances.
    pub running_var: RunningState<Tensor<B, 1>>,
    /// Weight of the newest batch in the running averages.
    pub momentum: f64,
    /// Added to the variance under the square root.
    pub epsilon: f64,
}

impl<B: Backend> BatchNorm<B> {
    /// `c` features, Burn's defaults (`gamma` 1, `beta` 0, momentum 0.1, epsilon 1e-5).
    pub fn new(c: usize, device: &B::Device) -> Self {
        let b = BatchNormConfig::new(c).init::<B>(device);
        Self {
            gamma: b.gamma,
            beta: b.beta,
            running_mean: b.running_mean,
            running_var: b.running_var,
            momentum: b.momentum,
            epsilon: b.epsilon,
        }
    }
}

impl<B: SparseGnnBackend> BatchNorm<B> {
    /// Normalises `x` (`[n, c]`, at least one row while training).
    pub fn forward(&self, x: Tensor<B, 2>) -> Tensor<B, 2> {
        let device = x.device();
        if !B::ad_enabled(&device) {
            let mean = self.running_mean.value().to_device(&device).unsqueeze_dim::<2>(0);
            let std = self.running_var.value().to_device(&device).add_scalar(self.epsilon).sqrt().unsqueeze_dim::<2>(0);
            let dtype = x.dtype();
            let y = (x.cast(burn::tensor::FloatDType::F32) - mean) / std * self.gamma.val().unsqueeze_dim::<2>(0)
                + self.beta.val().unsqueeze_dim::<2>(0);
            return y.cast(dtype);
        }
        let (y, mean, var) = ops::batch_norm(x, self.gamma.val(), self.beta.val(), self.epsilon)
            .unwrap_or_else(|e| panic!("batch normalisation of the node states: {e}"));
        // both running statistics in one launch (six as tensor ops)
        let (old_mean, old_var) = (self.running_mean.value_sync(), self.running_var.value_sync());
        let (running_mean, running_var) =
            ops::batch_norm_running(old_mean.to_device(&device), old_var.to_device(&device), mean, var, self.momentum)
                .unwrap_or_else(|e| panic!("the running statistics have one entry per column: {e}"));
        self.running_mean.update(running_mean);
        self.running_var.update(running_var);
        y
    }
}
