//! Adam's update of one parameter tensor in one pass.
//!
//! Burn's `Adam` composes its update from a dozen tensor operations (two scalings and a sum per
//! moment, a square, a square root, a shifted division, the learning-rate scaling and the
//! subtraction), each a kernel launch and a pass over the tensor. On graph-classification
//! batches, where a step updates some thirty small tensors, those launches cost more than the
//! arithmetic (3.6 ms a step on an H200 for a 4-layer GIN). This kernel reads the parameter, its
//! gradient and both moments once and writes the three new tensors once:
//!
//! ```text
//! g  = grad + weight_decay * param
//! m' = beta_1 * m + (1 - beta_1) * g
//! v' = beta_2 * v + (1 - beta_2) * g^2
//! param' = param - lr * c * m' / (sqrt(v') + epsilon * sqrt(1 - beta_2^t)),
//!     c = sqrt(1 - beta_2^t) / (1 - beta_1^t)
//! ```
//!
//! which is Burn's `Adam` (its bias correction folded into `c` and the shifted epsilon, as
//! Burn writes it), `t` the step number counted from 1. The arithmetic is in f32 whatever the
//! storage type.

use crate::device::cube_count;
use cubecl::prelude::*;

/// The hyper-parameters of one Adam step.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamStep {
    /// The learning rate.
    pub lr: f64,
    /// Decay of the first moment.
    pub beta_1: f32,
    /// Decay of the second moment.
    pub beta_2: f32,
    /// Added to the second moment's square root (Burn's default: 1e-5).
    pub epsilon: f32,
    /// L2 penalty added to the gradient (`grad + weight_decay * param`; 0: none).
    pub weight_decay: f32,
    /// The step number, counted from 1 (bias correction).
    pub time: u32,
}

/// The scalars the kernel applies, derived from an [`AdamStep`] on the host.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct AdamFactors {
    /// `lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)`.
    pub step_size: f32,
    /// `epsilon * sqrt(1 - beta_2^t)`.
    pub epsilon: f32,
}

impl AdamStep {
    /// The step's scalars (computed in f64, then rounded to f32 once).
    pub fn factors(&self) -> AdamFactors {
        let t = self.time.max(1) as i32;
        let b2 = (1.0 - (self.beta_2 as f64).powi(t)).sqrt();
        let b1 = 1.0 - (self.beta_1 as f64).powi(t);
        AdamFactors { step_size: (self.lr * b2 / b1) as f32, epsilon: (self.epsilon as f64 * b2) as f32 }
    }
}

#[cube(launch_unchecked)]
#[allow(clippy::too_many_arguments)]
fn adam_update<F: Float, N: Size>(
    param: &Array<Vector<F, N>>,
    grad: &Array<Vector<F, N>>,
    moment_1: &Array<Vector<F, N>>,
    moment_2: &Array<Vector<F, N>>,
    param_out: &mut Array<Vector<F, N>>,
    moment_1_out: &mut Array<Vector<F, N>>,
    moment_2_out: &mut Array<Vector<F, N>>,
    len: usize,
    beta_1: f32,
    beta_2: f32,
    weight_decay: f32,
    step_size: f32,
    epsilon: f32,
    #[define(F)] _dtype: StorageType,
) {
    let v = ABSOLUTE_POS;
    if v * N::value() >= len {
        terminate!();
    }
    let p = Vector::<f32, N>::cast_from(param[v]);
    let g = Vector::<f32, N>::cast_from(grad[v]) + p * Vector::new(weight_decay);
    let m = Vector::<f32, N>::cast_from(moment_1[v]) * Vector::new(beta_1) + g * Vector::new(1.0 - beta_1);
    let s = Vector::<f32, N>::cast_from(moment_2[v]) * Vector::new(beta_2) + g * g * Vector::new(1.0 - beta_2);
    let update = m * Vector::new(step_size) / (Vector::sqrt(s) + Vector::new(epsilon));
    param_out[v] = Vector::cast_from(p - update);
    moment_1_out[v] = Vector::cast_from(m);
    moment_2_out[v] = Vector::cast_from(s);
}

/// Writes the Adam step of `param` (`len` contiguous entries of `dtype`, as are all six
/// bindings) into `param_out`, `moment_1_out` and `moment_2_out`.
#[allow(clippy::too_many_arguments)]
pub fn launch_adam<R: Runtime>(
    client: &ComputeClient<R>,
    param: TensorBinding<R>,
    grad: TensorBinding<R>,
    moment_1: TensorBinding<R>,
    moment_2: TensorBinding<R>,
    param_out: TensorBinding<R>,
    moment_1_out: TensorBinding<R>,
    moment_2_out: TensorBinding<R>,
    len: usize,
    step: AdamStep,
    dtype: StorageType,
) {
    if len == 0 {
        return;
    }
    let vec = crate::device::vector_width(
        client,
        dtype.size(),
        len,
        &[&param, &grad, &moment_1, &moment_2, &param_out, &moment_1_out, &moment_2_out],
    )
    .min(4);
    let f = step.factors();
    let threads = 256u32;
    unsafe {
        adam_update::launch_unchecked::<R>(
            client,
            cube_count(client, (len / vec).div_ceil(threads as usize)),
            CubeDim::new_1d(threads),
            vec,
            param.into_array_arg(),
            grad.into_array_arg(),
            moment_1.into_array_arg(),
            moment_2.into_array_arg(),
            param_out.into_array_arg(),
            moment_1_out.into_array_arg(),
            moment_2_out.into_array_arg(),
            len,
            step.beta_1,
            step.beta_2,
            step.weight_decay,
            f.step_size,
            f.epsilon,
            dtype,
        );
    }
}

/// The CPU reference (and the host implementation of the backends without the kernel): the new
/// parameter and moments, entry by entry, with the kernel's f32 arithmetic.
pub fn reference(
    param: &[f32],
    grad: &[f32],
    moment_1: &[f32],
    moment_2: &[f32],
    step: AdamStep,
) -> (Vec<f32>, Vec<f32>, Vec<f32>) {
    let f = step.factors();
    let n = param.len();
    let (mut p_out, mut m_out, mut s_out) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
    for i in 0..n {
        let p = param[i];
        let g = grad[i] + p * step.weight_decay;
        let m = moment_1[i] * step.beta_1 + g * (1.0 - step.beta_1);
        let s = moment_2[i] * step.beta_2 + g * g * (1.0 - step.beta_2);
        p_out.push(p - m * f.step_size / (s.sqrt() + f.epsilon));
        m_out.push(m);
        s_out.push(s);
    }
    (p_out, m_out, s_out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_step_moves_every_entry_by_about_the_learning_rate() {
        // with zero moments, step 1 is lr * g / (|g| + eps'): a signed step of size ~lr
        let step = AdamStep { lr: 0.01, beta_1: 0.9, beta_2: 0.999, epsilon: 1e-8, weight_decay: 0.0, time: 1 };
        let (p, m, s) = reference(&[1.0, -2.0, 0.5], &[0.3, -4.0, 0.0], &[0.0; 3], &[0.0; 3], step);
        assert!((p[0] - 0.99).abs() < 1e-6 && (p[1] + 1.99).abs() < 1e-6 && p[2] == 0.5, "{p:?}");
        // f32 products of the decay factors: within a few ulp of the exact moments
        assert!((m[0] - 0.03).abs() < 1e-6 && (s[1] - 0.016).abs() < 1e-6, "{m:?} {s:?}");
    }

    #[test]
    fn weight_decay_adds_to_the_gradient() {
        let step = AdamStep { lr: 0.1, beta_1: 0.9, beta_2: 0.999, epsilon: 1e-8, weight_decay: 0.5, time: 3 };
        let plain = reference(&[2.0], &[1.0], &[0.2], &[0.1], step);
        let moved = reference(&[2.0], &[2.0], &[0.2], &[0.1], AdamStep { weight_decay: 0.0, ..step });
        assert_eq!(plain, moved);
    }
}
