//! Dynamic loss scaling for mixed-precision training, as `torch.amp.GradScaler` does it.
//!
//! In mixed f16 the gradients pass through half-precision tensors on their way back (the casts
//! around the sparse aggregations). The loss is a mean over the training nodes, so each entry
//! of the logits' gradient is about `1 / (|train| * classes)` to `1 / |train|`: at the reddit
//! scale (153k training nodes, 41 classes) 1.6e-7 to 6.5e-6, the subnormal range of f16
//! (normal numbers start at 6.1e-5, the smallest step is 6.0e-8), where an entry keeps one to
//! seven significant bits or rounds to zero. Scaling the loss by `S` before the backward pass
//! scales every gradient by `S` on its way through the half tensors; the parameters' gradients
//! (f32) are divided by `S` (a power of two: exact) before the optimizer step. A step whose
//! gradients are not all finite (a half tensor overflowed: `S` too large) is skipped, so the
//! parameters and the optimizer's moments keep their values, and `S` halves; after
//! `growth_interval` finite steps in a row `S` doubles.
//!
//! ```
//! use gnn_train::{LossScaleConfig, LossScaler};
//!
//! let mut scaler = LossScaler::new(LossScaleConfig::default());
//! assert_eq!(scaler.scale(), 65536.0);
//! scaler.update(false); // gradients not finite: skip the step, halve the scale
//! assert_eq!((scaler.scale(), scaler.skipped_steps()), (32768.0, 1));
//! ```

use burn::module::{AutodiffModule, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{ElementConversion, Tensor};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

/// Settings of [`LossScaler`] (`torch.amp.GradScaler`'s defaults).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LossScaleConfig {
    /// The first scale.
    pub init: f32,
    /// Finite steps in a row after which the scale doubles.
    pub growth_interval: u32,
}

impl Default for LossScaleConfig {
    fn default() -> Self {
        Self { init: 65536.0, growth_interval: 2000 }
    }
}

/// The scale of the loss and what it did (see the [module docs](self)).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LossScaler {
    config: LossScaleConfig,
    scale: f32,
    finite_in_a_row: u32,
    skipped: u64,
}

/// The smallest scale: below it a skipped step is not retried with a smaller one.
const MIN_SCALE: f32 = 1.0 / 65536.0;

impl LossScaler {
    /// A scaler at `config.init`.
    pub fn new(config: LossScaleConfig) -> Self {
        Self { config, scale: config.init.max(MIN_SCALE), finite_in_a_row: 0, skipped: 0 }
    }

    /// The scale the next backward pass multiplies the loss by.
    pub fn scale(&self) -> f32 {
        self.scale
    }

    /// Steps skipped so far (gradients not finite).
    pub fn skipped_steps(&self) -> u64 {
        self.skipped
    }

    /// Records a step's outcome: `finite` gradients keep (and after `growth_interval` such
    /// steps double) the scale; otherwise the step counts as skipped and the scale halves.
    pub fn update(&mut self, finite: bool) {
        if finite {
            self.finite_in_a_row += 1;
            if self.finite_in_a_row >= self.config.growth_interval {
                self.finite_in_a_row = 0;
                self.scale = (self.scale * 2.0).min(f32::MAX / 2.0);
            }
        } else {
            self.skipped += 1;
            self.finite_in_a_row = 0;
            self.scale = (self.scale * 0.5).max(MIN_SCALE);
        }
    }

    /// Divides the gradients of `module`'s parameters in `grads` (computed from the loss times
    /// [`LossScaler::scale`]) by the scale and updates the scale ([`LossScaler::update`]).
    /// Returns whether they were all finite; when not, `grads` is emptied, so that an optimizer
    /// step leaves every parameter and its moments as they are.
    pub fn unscale<B: AutodiffBackend, M: AutodiffModule<B>>(
        &mut self,
        grads: &mut GradientsParams,
        module: &M,
    ) -> bool {
        let mut visitor = Unscale::<B> { grads, factor: 1.0 / self.scale, sums: Vec::new() };
        module.visit(&mut visitor);
        let sums = std::mem::take(&mut visitor.sums);
        // one read of the device: the sum of every gradient's sum is finite exactly when every
        // entry is (an overflowing f32 sum of finite entries would need entries near 1e38)
        let finite = match sums.first().map(|s| s.device()) {
            Some(device) => {
                let all = Tensor::cat(sums.into_iter().map(|s| s.to_device(&device)).collect(), 0).sum();
                all.into_scalar().elem::<f64>().is_finite()
            }
            None => true,
        };
        if !finite {
            *grads = GradientsParams::new();
        }
        self.update(finite);
        finite
    }
}

struct Unscale<'a, B: AutodiffBackend> {
    grads: &'a mut GradientsParams,
    factor: f32,
    sums: Vec<Tensor<B::InnerBackend, 1>>,
}

impl<B: AutodiffBackend> ModuleVisitor<B> for Unscale<'_, B> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if let Some(g) = self.grads.remove::<B::InnerBackend, D>(param.id) {
            let g = g.mul_scalar(self.factor);
            self.sums.push(g.clone().sum());
            self.grads.register::<B::InnerBackend, D>(param.id, g);
        }
    }
}

/// A model's loss scaler, shared by the clones burn-train makes of the model (`None`: the model
/// trains without scaling). The classifiers of every task hold one.
#[derive(Clone, Debug, Default)]
pub struct SharedLossScaler(Option<Arc<Mutex<LossScaler>>>);

impl SharedLossScaler {
    /// A scaler configured by `config` (`None`: none).
    pub fn new(config: Option<LossScaleConfig>) -> Self {
        Self(config.map(|c| Arc::new(Mutex::new(LossScaler::new(c)))))
    }

    /// The scaler's state (scale, skipped steps), where there is one.
    pub fn state(&self) -> Option<LossScaler> {
        self.0.as_ref().map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).clone())
    }

    /// The shared scaler, where there is one (what a training step updates).
    pub fn get(&self) -> Option<&Arc<Mutex<LossScaler>>> {
        self.0.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scale_halves_on_overflow_and_doubles_after_the_growth_interval() {
        let mut s = LossScaler::new(LossScaleConfig { init: 8.0, growth_interval: 3 });
        s.update(true);
        s.update(true);
        assert_eq!(s.scale(), 8.0);
        s.update(false);
        assert_eq!((s.scale(), s.skipped_steps()), (4.0, 1));
        for _ in 0..3 {
            s.update(true);
        }
        assert_eq!(s.scale(), 8.0);
        for _ in 0..100 {
            s.update(false);
        }
        assert_eq!(s.scale(), MIN_SCALE);
        assert_eq!(s.skipped_steps(), 101);
    }

    type B = burn::backend::Autodiff<burn::backend::NdArray>;

    fn layer() -> burn::nn::Linear<B> {
        burn::nn::LinearConfig::new(3, 2).init::<B>(&Default::default())
    }

    fn gradients(lin: &burn::nn::Linear<B>, scale: f32, poison: bool) -> GradientsParams {
        let x = Tensor::<B, 2>::from_data([[1.0, -2.0, 0.5], [0.25, 4.0, -1.0]], &Default::default());
        let mut loss = lin.forward(x).powf_scalar(2.0).sum().mul_scalar(1e-3);
        if poison {
            loss = loss.mul_scalar(f32::INFINITY);
        }
        GradientsParams::from_grads(loss.mul_scalar(scale).backward(), lin)
    }

    #[test]
    fn unscaling_gives_the_unscaled_gradients_bit_for_bit() {
        let lin = layer();
        let plain = gradients(&lin, 1.0, false);
        let mut scaled = gradients(&lin, 65536.0, false);
        let mut s = LossScaler::new(LossScaleConfig::default());
        assert!(s.unscale::<B, _>(&mut scaled, &lin));
        let w = |g: &GradientsParams| g.get::<burn::backend::NdArray, 2>(lin.weight.id).expect("weight gradient");
        assert_eq!(w(&scaled).into_data(), w(&plain).into_data());
        assert_eq!((s.scale(), s.skipped_steps()), (65536.0, 0));
    }

    #[test]
    fn gradients_that_are_not_finite_are_dropped_and_halve_the_scale() {
        let lin = layer();
        let mut grads = gradients(&lin, 65536.0, true);
        let mut s = LossScaler::new(LossScaleConfig::default());
        assert!(!s.unscale::<B, _>(&mut grads, &lin));
        assert!(grads.is_empty());
        assert_eq!((s.scale(), s.skipped_steps()), (32768.0, 1));
    }
}
