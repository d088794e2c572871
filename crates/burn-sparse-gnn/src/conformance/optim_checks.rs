//! The fused Adam step on a backend: against the CPU reference of the kernels crate, and a few
//! training steps of [`FusedAdam`](crate::optim::FusedAdam) against Burn's `Adam`.

use super::measure::normwise_error;
use crate::backend::SparseGnnAutodiffBackend;
use crate::backend::SparseGnnBackend;
use crate::optim::{AdamStep, FusedAdamConfig};
use crate::random::random_values;
use burn::nn::{Linear, LinearConfig};
use burn::optim::decay::WeightDecayConfig;
use burn::optim::{AdamConfig, GradientsParams, Optimizer};
use burn::tensor::{Tensor, TensorData, TensorPrimitive};
use sparse_gnn_kernels::optim as kernel;

fn host<B: SparseGnnBackend>(t: burn::tensor::ops::FloatTensor<B>) -> Vec<f64> {
    Tensor::<B, 1>::from_primitive(TensorPrimitive::Float(t))
        .into_data()
        .convert::<f64>()
        .into_vec()
        .unwrap_or_default()
}

/// `adam_step` on `B` against the CPU reference: tensors of 1, 7, 1,031 and 65,537 entries of
/// random values (second moments non-negative, a few zero gradients), at the first step without
/// weight decay and at step 5 with it. Returns `(case, normwise error)` of the parameter and
/// both moments, the largest of the three; all must be at rounding level (below 1e-5).
pub fn adam_checks<B: SparseGnnBackend>(device: &B::Device) -> Vec<(String, Option<f64>)> {
    let mut out = Vec::new();
    for n in [1usize, 7, 1_031, 65_537] {
        for (time, weight_decay) in [(1u32, 0.0f32), (5, 0.01)] {
            let step = AdamStep { lr: 0.01, beta_1: 0.9, beta_2: 0.999, epsilon: 1e-8, weight_decay, time };
            let vals = |seed: u64| -> Vec<f32> { random_values(n, seed).into_iter().map(|v| v as f32).collect() };
            let (p, mut g, m) = (vals(31 + n as u64), vals(32 + n as u64), vals(33 + n as u64));
            g.iter_mut().step_by(5).for_each(|v| *v = 0.0);
            let s: Vec<f32> = vals(34 + n as u64).into_iter().map(|v| v * v * 0.1).collect();
            let (m, s) = if time == 1 { (vec![0.0; n], vec![0.0; n]) } else { (m, s) };
            let want = kernel::reference(&p, &g, &m, &s, step);
            let dev = |v: &[f32]| {
                Tensor::<B, 1>::from_data(TensorData::new(v.to_vec(), [n]), device).into_primitive().tensor()
            };
            let got = B::adam_step(dev(&p), dev(&g), dev(&m), dev(&s), step);
            let want = [want.0, want.1, want.2];
            let err = got
                .into_iter()
                .zip(want)
                .map(|(a, b)| normwise_error(&host::<B>(a), &b.iter().map(|&v| v as f64).collect::<Vec<_>>()))
                .fold(0.0, f64::max);
            out.push((format!("adam step, n {n}, step {time}, weight decay {weight_decay}"), Some(err)));
        }
    }
    out
}

/// Ten steps of a 33 x 17 linear map trained on random data with [`FusedAdamConfig`] against
/// Burn's `AdamConfig` of the same hyper-parameters (with and without weight decay). Returns
/// `(case, normwise difference of the final weights and biases)`. The two compose the same
/// arithmetic in different orders, and Adam, which divides each update by the gradient's scale,
/// grows their last-bit differences over the steps: 3.8e-7 on the CPU and wgpu, 5.2e-5 on an
/// H200 (whose kernels contract multiply-adds). The CPU backends' bound is 1e-5, selftest's 1e-3.
pub fn fused_adam_checks<B: SparseGnnAutodiffBackend>(device: &B::Device) -> Vec<(String, Option<f64>)> {
    let mut out = Vec::new();
    for weight_decay in [0.0f32, 5e-4] {
        let x: Vec<f32> = random_values(64 * 33, 41).into_iter().map(|v| v as f32).collect();
        let x = Tensor::<B, 2>::from_data(TensorData::new(x, [64, 33]), device);
        let init = LinearConfig::new(33, 17).init::<B>(device);
        // parameters are initialised lazily: read them once so that both copies start equal
        let _ = (init.weight.val(), init.bias.as_ref().map(|b| b.val()));
        let loss = |l: &Linear<B>| l.forward(x.clone()).powi_scalar(2).mean();
        let mut fused =
            FusedAdamConfig::new().with_epsilon(1e-8).with_weight_decay(weight_decay).init::<B, Linear<B>>();
        let mut plain = AdamConfig::new()
            .with_epsilon(1e-8)
            .with_weight_decay((weight_decay > 0.0).then(|| WeightDecayConfig::new(weight_decay)))
            .init::<B, Linear<B>>();
        let (mut a, mut b) = (init.clone(), init);
        for _ in 0..10 {
            let ga = GradientsParams::from_grads(loss(&a).backward(), &a);
            a = fused.step(0.01, a, ga);
            let gb = GradientsParams::from_grads(loss(&b).backward(), &b);
            b = plain.step(0.01, b, gb);
        }
        let flat = |l: &Linear<B>| {
            let mut v: Vec<f64> = l.weight.val().into_data().convert::<f64>().into_vec().unwrap_or_default();
            if let Some(bias) = &l.bias {
                v.extend(bias.val().into_data().convert::<f64>().into_vec::<f64>().unwrap_or_default());
            }
            v
        };
        let err = normwise_error(&flat(&a), &flat(&b));
        out.push((format!("fused adam against adam, 10 steps, weight decay {weight_decay}"), Some(err)));
    }
    out
}
