//! `take_rows`: the rows of distinct ids, with a gather as backward. Its value and gradient
//! equal Burn's `select` (whose backward scatters), on the CPU and on wgpu; bad selections are
//! errors.

use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Int, Tensor, TensorData};
use burn_sparse_gnn::{take_rows, try_take_rows, GraphError, RowIndex, SparseGnnBackend};

fn values(n: usize, seed: u64) -> Vec<f32> {
    burn_sparse_gnn::random::random_values(n, seed).into_iter().map(|v| v as f32).collect()
}

/// Value and gradient of `sum(take_rows(x, rows) * r)` against the same through `select`.
fn check<B: SparseGnnBackend + AutodiffBackend>(device: &B::Device) {
    let (n, w) = (37usize, 5usize);
    // every third row in reverse, then a few others: distinct, unordered, some rows unused
    let mut rows: Vec<u32> = (0..n as u32).rev().step_by(3).collect();
    rows.extend([1u32, 2, 4]);
    let m = rows.len();
    let x = Tensor::<B, 2>::from_data(TensorData::new(values(n * w, 1), [n, w]), device).require_grad();
    let r = Tensor::<B, 2>::from_data(TensorData::new(values(m * w, 2), [m, w]), device);
    let idx = RowIndex::<B>::new(&rows, n, device).expect("distinct rows in range");
    assert_eq!((idx.len(), idx.source_rows()), (m, n));

    let ours = take_rows(x.clone(), &idx);
    let ids: Vec<i32> = rows.iter().map(|&r| r as i32).collect();
    let plain = x.clone().select(0, Tensor::<B, 1, Int>::from_data(TensorData::new(ids, [m]), device));
    let a: Vec<f32> = ours.clone().into_data().to_vec().unwrap();
    let b: Vec<f32> = plain.clone().into_data().to_vec().unwrap();
    assert_eq!(a, b, "forward");

    let ga: Vec<f32> = x.grad(&(ours * r.clone()).sum().backward()).unwrap().into_data().to_vec().unwrap();
    let gb: Vec<f32> = x.grad(&(plain * r).sum().backward()).unwrap().into_data().to_vec().unwrap();
    assert_eq!(ga.len(), n * w);
    assert_eq!(ga, gb, "gradient");
    // rows not selected get a zero gradient
    let unused = (0..n).find(|i| !rows.contains(&(*i as u32))).unwrap();
    assert!(ga[unused * w..(unused + 1) * w].iter().all(|&g| g == 0.0));
}

#[test]
fn take_rows_equals_select_on_the_cpu() {
    check::<Autodiff<NdArray>>(&Default::default());
}

#[cfg(feature = "wgpu")]
#[test]
fn take_rows_equals_select_on_wgpu() {
    check::<Autodiff<burn_sparse_gnn::Wgpu>>(&Default::default());
}

#[test]
fn repeated_or_out_of_range_rows_are_errors() {
    type B = NdArray;
    let device = Default::default();
    let e = RowIndex::<B>::new(&[0, 3, 1, 3], 5, &device).unwrap_err();
    assert_eq!(e, GraphError::RowSelection { entry: 3, row: 3, rows: 5, issue: "named twice" });
    let e = RowIndex::<B>::new(&[0, 5], 5, &device).unwrap_err();
    assert_eq!(e, GraphError::RowSelection { entry: 1, row: 5, rows: 5, issue: "outside the source" });
    assert!(e.to_string().contains("entry 1 is row 5"));
    // an empty selection is valid
    assert!(RowIndex::<B>::new(&[], 5, &device).unwrap().is_empty());
}

#[test]
fn a_tensor_of_other_rows_is_an_error() {
    type B = NdArray;
    let device = Default::default();
    let idx = RowIndex::<B>::new(&[0, 2], 3, &device).unwrap();
    let x = Tensor::<B, 2>::zeros([4, 2], &device);
    let e = try_take_rows(x, &idx).unwrap_err();
    assert!(e.to_string().contains("take_rows"), "{e}");
}
