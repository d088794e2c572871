//! Batch normalisation: the kernels (wgpu) and the host implementation (NdArray) against the
//! CPU reference, and the differentiable op against Burn's `BatchNorm` (output, gradients of
//! the states, `gamma` and `beta`, the batch statistics its running averages take).

use burn::backend::{Autodiff, NdArray};
use burn::module::Param;
use burn::nn::BatchNormConfig;
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Distribution, Tensor, Tolerance};
use burn_sparse_gnn::conformance::norm_checks;
use burn_sparse_gnn::SparseGnnBackend;

fn assert_close(checks: &[(String, Option<f64>)]) {
    assert_eq!(checks.len(), 7);
    for (what, err) in checks {
        println!("{what}: {err:?}");
        assert!(err.is_some_and(|e| e <= 5e-5), "{what}: {err:?}");
    }
}

#[test]
fn host_batch_norm_matches_the_reference() {
    assert_close(&norm_checks::<NdArray>(&Default::default()));
}

#[cfg(feature = "wgpu")]
#[test]
fn batch_norm_kernels_match_the_reference_on_wgpu() {
    assert_close(&norm_checks::<burn_sparse_gnn::Wgpu>(&burn::backend::wgpu::WgpuDevice::DefaultDevice));
}

fn matches_burns_batch_norm<B: AutodiffBackend + SparseGnnBackend>(device: &B::Device) {
    let (n, c) = (203usize, 37usize);
    let x = Tensor::<B, 2>::random([n, c], Distribution::Normal(2.0, 3.0), device);
    let w = Tensor::<B, 2>::random([n, c], Distribution::Uniform(-1.0, 1.0), device);
    let gamma = Tensor::<B, 1>::random([c], Distribution::Uniform(0.5, 1.5), device);
    let beta = Tensor::<B, 1>::random([c], Distribution::Uniform(-0.5, 0.5), device);
    let tol = Tolerance::<f32>::absolute(2e-4);

    let mut burn_bn = BatchNormConfig::new(c).init::<B>(device);
    burn_bn.gamma = Param::from_tensor(gamma.clone());
    burn_bn.beta = Param::from_tensor(beta.clone());
    let xa = x.clone().require_grad();
    let ya = burn_bn.forward(xa.clone());
    let ga = (ya.clone() * w.clone()).sum().backward();

    let (xb, gb_, bb) = (x.require_grad(), gamma.require_grad(), beta.require_grad());
    let (yb, mean, var) = burn_sparse_gnn::ops::batch_norm(xb.clone(), gb_.clone(), bb.clone(), 1e-5).unwrap();
    let gb = (yb.clone() * w).sum().backward();

    yb.to_data().assert_approx_eq::<f32>(&ya.to_data(), tol);
    xb.grad(&gb).unwrap().to_data().assert_approx_eq::<f32>(&xa.grad(&ga).unwrap().to_data(), tol);
    let burn_gamma = burn_bn.gamma.val().grad(&ga).unwrap();
    gb_.grad(&gb).unwrap().to_data().assert_approx_eq::<f32>(&burn_gamma.to_data(), Tolerance::absolute(2e-3));
    let burn_beta = burn_bn.beta.val().grad(&ga).unwrap();
    bb.grad(&gb).unwrap().to_data().assert_approx_eq::<f32>(&burn_beta.to_data(), Tolerance::absolute(2e-3));
    // the batch statistics (what the running averages take): mean and biased variance
    let x = xb.detach();
    let want_mean = x.clone().mean_dim(0).reshape([c]);
    let want_var = (x - want_mean.clone().unsqueeze_dim::<2>(0)).square().mean_dim(0).reshape([c]);
    mean.to_data().assert_approx_eq::<f32>(&want_mean.to_data(), Tolerance::absolute(1e-4));
    var.to_data().assert_approx_eq::<f32>(&want_var.to_data(), Tolerance::absolute(1e-3));
}

#[test]
fn batch_norm_matches_burns_on_the_host() {
    matches_burns_batch_norm::<Autodiff<NdArray>>(&Default::default());
}

#[cfg(feature = "wgpu")]
#[test]
fn batch_norm_matches_burns_on_wgpu() {
    matches_burns_batch_norm::<Autodiff<burn_sparse_gnn::Wgpu>>(&burn::backend::wgpu::WgpuDevice::DefaultDevice);
}
