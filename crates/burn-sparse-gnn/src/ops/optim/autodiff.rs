//! `Autodiff<B>` implementation of [`super::OptimOps`]: the inner backend's update, untracked
//! (an optimizer step is never differentiated).

use super::AdamStep;
use super::OptimOps;
use crate::backend::SparseGnnBackend;
use crate::ops::tracking::*;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::Autodiff;
use burn::tensor::ops::FloatTensor;

impl<B: SparseGnnBackend, C: CheckpointStrategy> OptimOps for Autodiff<B, C> {
    fn adam_step(
        param: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        moment_1: FloatTensor<Self>,
        moment_2: FloatTensor<Self>,
        step: AdamStep,
    ) -> [FloatTensor<Self>; 3] {
        B::adam_step(param.primitive, grad.primitive, moment_1.primitive, moment_2.primitive, step)
            .map(untracked::<B, C>)
    }
}
