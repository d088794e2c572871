//! ReLU + dropout with counter-based masks: the kernels (wgpu) and the host implementation
//! (NdArray) against the CPU reference, exactly; and the masks' statistics.

use burn::backend::{Autodiff, NdArray};
use burn::tensor::{Int, Tensor, TensorData};
use burn_sparse_gnn::conformance::relu_dropout_checks;
use burn_sparse_gnn::dropout::{relu_dropout, DropoutSeed};

const WIDTHS: [usize; 6] = [1, 31, 32, 33, 100, 256];

fn assert_exact(checks: &[(String, f64)]) {
    assert_eq!(checks.len(), WIDTHS.len() * 9);
    for (what, diff) in checks {
        assert_eq!(*diff, 0.0, "{what}");
    }
}

#[test]
fn host_implementation_matches_the_reference() {
    assert_exact(&relu_dropout_checks::<Autodiff<NdArray>>(&Default::default(), &WIDTHS));
}

#[cfg(feature = "wgpu")]
#[test]
fn kernels_match_the_reference_on_wgpu() {
    let device = burn::backend::wgpu::WgpuDevice::DefaultDevice;
    assert_exact(&relu_dropout_checks::<Autodiff<burn_sparse_gnn::Wgpu>>(&device, &WIDTHS));
}

#[test]
fn drops_the_asked_share_and_rows_follow_their_global_ids() {
    type B = Autodiff<NdArray>;
    let dev = Default::default();
    let (n, d) = (400, 64);
    let x = Tensor::<B, 2>::ones([n, d], &dev);
    let seed = DropoutSeed::<B>::from_floats([0.11, 0.52], &dev);
    let y = relu_dropout(x.clone(), false, 0.3, Some(&seed), None).unwrap();
    let yv = y.into_data().to_vec::<f32>().unwrap();
    let kept = yv.iter().filter(|&&v| v != 0.0).count() as f64 / (n * d) as f64;
    assert!((kept - 0.7).abs() < 0.02, "kept {kept}");
    assert!(yv.iter().all(|&v| v == 0.0 || (v - 1.0 / 0.7).abs() < 1e-6));
    // rows 10..20 of the whole tensor equal a 10-row tensor whose rows are those global ids
    let ids = Tensor::<B, 1, Int>::from_data(TensorData::new((10..20i64).collect::<Vec<_>>(), [10]), &dev);
    let part = relu_dropout(x.clone().slice([10..20]), false, 0.3, Some(&seed), Some(&ids)).unwrap();
    assert_eq!(part.into_data().to_vec::<f32>().unwrap(), yv[10 * d..20 * d].to_vec());
    // another seed, other masks; no seed or probability 0: the identity
    let other = DropoutSeed::<B>::from_floats([0.12, 0.52], &dev);
    let y2 = relu_dropout(x.clone(), false, 0.3, Some(&other), None).unwrap().into_data().to_vec::<f32>().unwrap();
    assert_ne!(y2, yv);
    let same = relu_dropout(x.clone(), false, 0.3, None, None).unwrap().into_data().to_vec::<f32>().unwrap();
    assert!(same.iter().all(|&v| v == 1.0));
    assert!(relu_dropout(x.clone(), false, 1.0, Some(&seed), None).is_err());
    assert!(relu_dropout(x, false, 0.3, Some(&seed), Some(&ids)).is_err());
}
