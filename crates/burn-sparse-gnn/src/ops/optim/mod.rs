//! Adam in one kernel per parameter tensor: [`FusedAdam`], a Burn optimizer with the
//! arithmetic, hyper-parameters and saved state of Burn's `Adam`, whose update of a tensor is
//! one [`OptimOps::adam_step`] launch instead of about a dozen tensor operations (see
//! [`sparse_gnn_kernels::optim`]).
//!
//! Its state is Burn's `AdamState`, so checkpoints of `Adam` and `FusedAdam` hold the same
//! records and either resumes the other's.
//!
//! ```
//! use burn::backend::{Autodiff, NdArray};
//! use burn::module::Module;
//! use burn::nn::LinearConfig;
//! use burn::optim::{GradientsParams, Optimizer};
//! use burn::tensor::Tensor;
//! use burn_sparse_gnn::optim::FusedAdamConfig;
//! type B = Autodiff<NdArray>;
//! let dev = Default::default();
//! let linear = LinearConfig::new(3, 2).init::<B>(&dev);
//! let mut optim = FusedAdamConfig::new().init::<B, burn::nn::Linear<B>>();
//! let x = Tensor::<B, 2>::ones([4, 3], &dev);
//! let grads = GradientsParams::from_grads(linear.forward(x).sum().backward(), &linear);
//! let before = linear.weight.val().into_data();
//! let linear = optim.step(0.01, linear, grads);
//! // every weight's gradient is positive: the first step lowers each by about the rate
//! let moved = linear.weight.val().into_data().to_vec::<f32>().unwrap();
//! let before = before.to_vec::<f32>().unwrap();
//! assert!(moved.iter().zip(&before).all(|(a, b)| ((b - a) - 0.01).abs() < 1e-4));
//! ```

mod autodiff;
mod cube;
mod host;

use burn::config::Config;
use burn::module::AutodiffModule;
use burn::optim::adaptor::OptimizerAdaptor;
use burn::optim::grad_clipping::GradientClippingConfig;
use burn::optim::{AdamState, AdaptiveMomentumState, LearningRate, SimpleOptimizer};
use burn::tensor::backend::{AutodiffBackend, Backend};
use burn::tensor::ops::FloatTensor;
use burn::tensor::{Tensor, TensorData, TensorMetadata, TensorPrimitive};
pub use sparse_gnn_kernels::optim::AdamStep;

/// Optimizer updates in one kernel.
///
/// Part of [`crate::backend::SparseGnnBackend`].
pub trait OptimOps: Backend {
    /// One Adam step of `param` (any rank; `grad`, `moment_1` and `moment_2` of its shape):
    /// the new parameter and moments, `[param, moment_1, moment_2]`, in `param`'s dtype (the
    /// others are converted to it; see
    /// [`sparse_gnn_kernels::optim`] for the arithmetic). Computed on the host by default (the
    /// CPU backends); backends with kernels override it.
    fn adam_step(
        param: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        moment_1: FloatTensor<Self>,
        moment_2: FloatTensor<Self>,
        step: AdamStep,
    ) -> [FloatTensor<Self>; 3] {
        host_adam_step::<Self>(param, grad, moment_1, moment_2, step)
    }
}

fn host_f32<B: Backend>(t: FloatTensor<B>) -> Vec<f32> {
    let t = Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(crate::ops::host_io::own_float::<B>(t)));
    t.into_data().convert::<f32>().into_vec::<f32>().unwrap_or_default()
}

/// The host implementation of [`OptimOps::adam_step`] (the CPU backends): the kernels' CPU
/// reference.
pub(crate) fn host_adam_step<B: Backend>(
    param: FloatTensor<B>,
    grad: FloatTensor<B>,
    moment_1: FloatTensor<B>,
    moment_2: FloatTensor<B>,
    step: AdamStep,
) -> [FloatTensor<B>; 3] {
    let device = B::float_device(&param);
    let (shape, dtype) = (param.shape(), param.dtype());
    let len = shape.num_elements();
    let flat = |t: FloatTensor<B>| host_f32::<B>(B::float_reshape(t, [len].into()));
    let (p, m, s) =
        sparse_gnn_kernels::optim::reference(&flat(param), &flat(grad), &flat(moment_1), &flat(moment_2), step);
    [p, m, s].map(|v| {
        let t = Tensor::<B, 1>::from_data(TensorData::new(v, [len]).convert_dtype(dtype), (&device, dtype));
        B::float_reshape(t.into_primitive().tensor(), shape.clone())
    })
}

/// The configuration of [`FusedAdam`]: Burn's `AdamConfig` without AMSGrad.
#[derive(Config, Debug)]
pub struct FusedAdamConfig {
    /// Decay of the first moment.
    #[config(default = 0.9)]
    pub beta_1: f32,
    /// Decay of the second moment.
    #[config(default = 0.999)]
    pub beta_2: f32,
    /// Added to the second moment's square root.
    #[config(default = 1e-5)]
    pub epsilon: f32,
    /// L2 penalty added to the gradient (Burn's `WeightDecayConfig`'s penalty; 0: none).
    #[config(default = 0.0)]
    pub weight_decay: f32,
    /// Gradient clipping before the step.
    pub grad_clipping: Option<GradientClippingConfig>,
}

impl FusedAdamConfig {
    /// The optimizer.
    pub fn build(&self) -> FusedAdam {
        FusedAdam { beta_1: self.beta_1, beta_2: self.beta_2, epsilon: self.epsilon, weight_decay: self.weight_decay }
    }

    /// The optimizer of module `M`'s parameters, for Burn's `Learner` or a hand-written loop.
    pub fn init<B, M>(&self) -> OptimizerAdaptor<FusedAdam, M, B>
    where
        B: AutodiffBackend<InnerBackend: OptimOps>,
        M: AutodiffModule<B>,
    {
        let mut optim = OptimizerAdaptor::from(self.build());
        if let Some(c) = &self.grad_clipping {
            optim = optim.with_grad_clipping(c.init());
        }
        optim
    }
}

/// Adam whose update of each parameter tensor is one [`OptimOps::adam_step`] launch.
#[derive(Clone, Debug)]
pub struct FusedAdam {
    beta_1: f32,
    beta_2: f32,
    epsilon: f32,
    weight_decay: f32,
}

impl<B: OptimOps> SimpleOptimizer<B> for FusedAdam {
    type State<const D: usize> = AdamState<B, D>;

    fn step<const D: usize>(
        &self,
        lr: LearningRate,
        tensor: Tensor<B, D>,
        grad: Tensor<B, D>,
        state: Option<Self::State<D>>,
    ) -> (Tensor<B, D>, Option<Self::State<D>>) {
        let (time, m, s) = match state {
            Some(s) => (s.momentum.time + 1, s.momentum.moment_1, s.momentum.moment_2),
            None => (1, tensor.zeros_like(), tensor.zeros_like()),
        };
        let step = AdamStep {
            lr,
            beta_1: self.beta_1,
            beta_2: self.beta_2,
            epsilon: self.epsilon,
            weight_decay: self.weight_decay,
            time: time as u32,
        };
        let [p, m, s] = B::adam_step(
            tensor.into_primitive().tensor(),
            grad.into_primitive().tensor(),
            m.into_primitive().tensor(),
            s.into_primitive().tensor(),
            step,
        )
        .map(|t| Tensor::<B, D>::from_primitive(TensorPrimitive::Float(t)));
        (p, Some(AdamState::new(AdaptiveMomentumState::new(time, m, s))))
    }

    fn to_device<const D: usize>(mut state: Self::State<D>, device: &B::Device) -> Self::State<D> {
        state.momentum = state.momentum.to_device(device);
        state
    }
}
