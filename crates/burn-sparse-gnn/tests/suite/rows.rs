//! `take_rows`: the rows of distinct ids, with a gather as backward. Its value and gradient
//! equal Burn's `select` (whose backward scatters), on the CPU and on wgpu; bad selections are
//! errors.

use burn::backend::{Autodiff, NdArray};
use burn::tensor::backend::AutodiffBackend;
use burn::tensor::{Int, Tensor, TensorData};
use burn_sparse_gnn::{take_rows, try_take_rows, GraphError, RowIndex, SparseGnnBackend};

// values are read back through `convert::<f32>()`: tests in this binary also run the f64 CPU
// reference backend on the same CPU device, and which float type a tensor made from f32 data
// then holds depends on the order the tests ran in
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
    let a: Vec<f32> = ours.clone().into_data().convert::<f32>().to_vec().unwrap();
    let b: Vec<f32> = plain.clone().into_data().convert::<f32>().to_vec().unwrap();
    assert_eq!(a, b, "forward");

    let ga: Vec<f32> =
        x.grad(&(ours * r.clone()).sum().backward()).unwrap().into_data().convert::<f32>().to_vec().unwrap();
    let gb: Vec<f32> = x.grad(&(plain * r).sum().backward()).unwrap().into_data().convert::<f32>().to_vec().unwrap();
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

/// `exchange`, and `exchange_start` / `exchange_finish` with the own and halo rows put
/// together, over `p` parts of one device: value and every state's gradient equal the same
/// exchange composed of `take_rows`, `to_device` and `cat` (a route per other part, rows
/// unordered, some parts sending nothing to some others).
fn check_exchange<B: SparseGnnBackend + AutodiffBackend>(parts: usize, device: &B::Device) {
    let w = 3usize;
    let rows_of = |p: usize| 5 + 2 * p;
    let make = || -> Vec<Tensor<B, 2>> {
        (0..parts)
            .map(|p| {
                let n = rows_of(p);
                Tensor::<B, 2>::from_data(TensorData::new(values(n * w, 10 + p as u64), [n, w]), device).require_grad()
            })
            .collect()
    };
    // part p reads rows (p + q + 2i) % n_q of part q, for q != p with (p + q) % 3 != 0
    let mut routes: Vec<Vec<(usize, RowIndex<B>)>> = Vec::new();
    for p in 0..parts {
        let mut list = Vec::new();
        for q in (0..parts).filter(|&q| q != p && (p + q) % 3 != 0) {
            let n = rows_of(q);
            // (p + q) % 4 == 0: a route of no rows (moves nothing, adds no rows)
            let rows: Vec<u32> = (0..(p + q) % 4).map(|i| ((p + q + 2 * i) % n) as u32).rev().collect();
            list.push((q, RowIndex::<B>::new(&rows, n, device).expect("distinct rows")));
        }
        routes.push(list);
    }
    let route_refs: Vec<Vec<(usize, &RowIndex<B>)>> =
        routes.iter().map(|l| l.iter().map(|(q, r)| (*q, r)).collect()).collect();
    let devices = vec![device.clone(); parts];
    let weights: Vec<Tensor<B, 2>> = (0..parts)
        .map(|p| {
            let m = rows_of(p) + routes[p].iter().map(|(_, r)| r.len()).sum::<usize>();
            Tensor::<B, 2>::from_data(TensorData::new(values(m * w, 50 + p as u64), [m, w]), device)
        })
        .collect();
    let loss = |outs: Vec<Tensor<B, 2>>| -> Tensor<B, 1> {
        outs.into_iter().zip(&weights).map(|(o, r)| (o * r.clone()).sum()).reduce(|a, b| a + b).unwrap()
    };

    let states = make();
    let ours = burn_sparse_gnn::exchange::exchange(states.clone(), &devices, &route_refs).expect("valid exchange");
    let plain_states = make();
    let plain: Vec<Tensor<B, 2>> = (0..parts)
        .map(|p| {
            let mut pieces = vec![plain_states[p].clone()];
            for (q, rows) in &routes[p] {
                pieces.push(take_rows(plain_states[*q].clone(), rows).to_device(device));
            }
            Tensor::cat(pieces, 0)
        })
        .collect();
    for (a, b) in ours.iter().zip(&plain) {
        assert_eq!(a.dims(), b.dims());
        let (a, b): (Vec<f32>, Vec<f32>) = (
            a.clone().into_data().convert::<f32>().to_vec().unwrap(),
            b.clone().into_data().convert::<f32>().to_vec().unwrap(),
        );
        assert_eq!(a, b, "forward, {parts} parts");
    }
    // the exchange in two halves: own rows, work on them, then the halo rows
    let split_states = make();
    let start = burn_sparse_gnn::exchange::exchange_start(split_states.clone(), &devices, &route_refs, None)
        .expect("valid exchange");
    let after: Vec<Tensor<B, 2>> = start.own.iter().map(|o| o.clone() * 2.0).collect();
    let halos = burn_sparse_gnn::exchange::exchange_finish(start.halo, &after);
    let split: Vec<Tensor<B, 2>> = start
        .own
        .iter()
        .zip(&halos)
        .map(|(o, h)| match h {
            Some(h) => Tensor::cat(vec![o.clone(), h.clone()], 0),
            None => o.clone(),
        })
        .collect();
    for (a, b) in split.iter().zip(&plain) {
        assert_eq!(a.dims(), b.dims());
        let (a, b): (Vec<f32>, Vec<f32>) = (
            a.clone().into_data().convert::<f32>().to_vec().unwrap(),
            b.clone().into_data().convert::<f32>().to_vec().unwrap(),
        );
        assert_eq!(a, b, "forward of the halves, {parts} parts");
    }
    // every tensor of `after` reaches the loss (here with weight 0)
    let unused = after.into_iter().map(|t| t.sum() * 0.0).reduce(|a, b| a + b).expect("parts");
    let gs = (loss(split) + unused).backward();

    let ga = loss(ours).backward();
    let gb = loss(plain).backward();
    for p in 0..parts {
        let a: Vec<f32> = states[p].grad(&ga).expect("gradient").into_data().convert::<f32>().to_vec().unwrap();
        let b: Vec<f32> = plain_states[p].grad(&gb).expect("gradient").into_data().convert::<f32>().to_vec().unwrap();
        let c: Vec<f32> = split_states[p].grad(&gs).expect("gradient").into_data().convert::<f32>().to_vec().unwrap();
        assert_eq!(a.len(), rows_of(p) * w);
        assert_eq!(c.len(), rows_of(p) * w);
        for ((x, z), y) in a.iter().zip(&c).zip(&b) {
            assert!((x - y).abs() <= 1e-6 * (1.0 + y.abs()), "gradient of part {p} of {parts}: {x} vs {y}");
            assert!((z - y).abs() <= 1e-6 * (1.0 + y.abs()), "halves: gradient of part {p} of {parts}: {z} vs {y}");
        }
    }
}

#[test]
fn exchange_equals_take_rows_and_cat_on_the_cpu() {
    // 3 and 5 parts (5: with routes of no rows): one output node per part, all children of
    // every state; 9 parts: the composed path for more than 8 parts
    for parts in [1, 2, 3, 5, 9] {
        check_exchange::<Autodiff<NdArray>>(parts, &Default::default());
    }
}

#[test]
fn exchange_is_the_same_over_either_device_links() {
    // the choice moves rows between GPUs on CUDA (checked there by the self test); elsewhere
    // it must leave the exchange as it is
    use burn_sparse_gnn::exchange::{device_links, set_device_links, DeviceLinks};
    assert_eq!(device_links(), DeviceLinks::Nccl);
    for links in [DeviceLinks::PeerCopies, DeviceLinks::Nccl] {
        set_device_links(links);
        assert_eq!(device_links(), links);
        check_exchange::<Autodiff<NdArray>>(3, &Default::default());
    }
    set_device_links(DeviceLinks::default());
}

#[cfg(feature = "wgpu")]
#[test]
fn exchange_equals_take_rows_and_cat_on_wgpu() {
    check_exchange::<Autodiff<burn_sparse_gnn::Wgpu>>(4, &Default::default());
}

#[test]
fn exchange_refuses_bad_routes() {
    type B = NdArray;
    let device = Default::default();
    let states = vec![Tensor::<B, 2>::zeros([3, 2], &device), Tensor::<B, 2>::zeros([4, 2], &device)];
    let devices = vec![device; 2];
    let rows = RowIndex::<B>::new(&[0, 2], 3, &device).unwrap();
    // a route from the part itself
    let e = burn_sparse_gnn::exchange::exchange(states.clone(), &devices, &[vec![(0, &rows)], vec![]]).unwrap_err();
    assert!(e.to_string().contains("route from part 0"), "{e}");
    // rows of a 3-row state named for the 4-row one
    let e = burn_sparse_gnn::exchange::exchange(states.clone(), &devices, &[vec![(1, &rows)], vec![]]).unwrap_err();
    assert!(e.to_string().contains("[3, _]"), "{e}");
    // one route list for two states
    let e = burn_sparse_gnn::exchange::exchange(states.clone(), &devices, &[vec![]]).unwrap_err();
    assert!(e.to_string().contains("one per state"), "{e}");
    // states of different widths
    let mixed = vec![Tensor::<B, 2>::zeros([3, 2], &device), Tensor::<B, 2>::zeros([4, 5], &device)];
    let e = burn_sparse_gnn::exchange::exchange(mixed, &devices, &[vec![], vec![]]).unwrap_err();
    assert!(e.to_string().contains("like the first"), "{e}");
}

#[test]
fn spread_rows_puts_rows_at_their_positions_and_picks_their_gradient() {
    use burn_sparse_gnn::{spread_rows, RowSpread};
    type B = Autodiff<NdArray>;
    let device = Default::default();
    let (kept, len, w) = (3usize, 7usize, 2usize);
    let positions = [5u32, 0, 3];
    let x = Tensor::<B, 2>::from_data(TensorData::new(values(kept * w, 4), [kept, w]), &device).require_grad();
    let r = Tensor::<B, 2>::from_data(TensorData::new(values(len * w, 5), [len, w]), &device);
    let spread = RowSpread::<B>::new(&positions, len, &device).expect("distinct positions");
    assert_eq!((spread.kept(), spread.len()), (kept, len));
    let out = spread_rows(x.clone(), &spread);
    let (o, xv): (Vec<f32>, Vec<f32>) = (
        out.clone().into_data().convert::<f32>().to_vec().unwrap(),
        x.clone().into_data().convert::<f32>().to_vec().unwrap(),
    );
    let rv: Vec<f32> = r.clone().into_data().convert::<f32>().to_vec().unwrap();
    for row in 0..len {
        let got = &o[row * w..(row + 1) * w];
        match positions.iter().position(|&p| p as usize == row) {
            Some(e) => assert_eq!(got, &xv[e * w..(e + 1) * w], "row {row}"),
            None => assert!(got.iter().all(|&v| v == 0.0), "row {row} is not kept: zeros"),
        }
    }
    let g: Vec<f32> = x.grad(&(out * r).sum().backward()).unwrap().into_data().convert::<f32>().to_vec().unwrap();
    for (e, &p) in positions.iter().enumerate() {
        assert_eq!(&g[e * w..(e + 1) * w], &rv[p as usize * w..(p as usize + 1) * w], "entry {e}");
    }
    assert!(RowSpread::<B>::new(&[1, 1], 4, &device).is_err(), "a position named twice");
    assert!(RowSpread::<B>::new(&[4], 4, &device).is_err(), "a position past the end");
}

/// The in-place scatter-add of the exchange's backward equals the CPU reference and the
/// composed ops exactly, in place and into a copy (leaving a shared base unchanged).
#[cfg(feature = "testing")]
fn check_add_rows<B: SparseGnnBackend>(device: &B::Device, dtypes: &[burn::tensor::FloatDType]) {
    let checks = burn_sparse_gnn::conformance::add_rows_checks::<B>(device, dtypes, &[1, 7, 64]);
    assert_eq!(checks.len(), dtypes.len() * 3 * 3);
    for (what, d) in &checks {
        if let Some(d) = d {
            assert_eq!(*d, 0.0, "{what}");
        }
    }
    assert!(checks.iter().any(|(_, d)| d.is_some()), "some dtype ran");
    // the exchange's rows gathered in the type they travel in, and f16 gradients added to f32
    let halves = [burn::tensor::FloatDType::F16];
    let mixed = burn_sparse_gnn::conformance::mixed_rows_checks::<B>(device, &halves, &[1, 7, 64]);
    assert_eq!(mixed.len(), 3 * 3 * 3);
    for (what, d) in &mixed {
        if let Some(d) = d {
            assert_eq!(*d, 0.0, "{what}");
        }
    }
    assert!(mixed.iter().filter(|(_, d)| d.is_some()).count() >= 9, "the f32 gathers ran");
    // the exchange's upload of received rows: the bytes' values, exactly
    let uploads = burn_sparse_gnn::conformance::from_host_checks::<B>(device, dtypes, &[1, 7, 64]);
    assert_eq!(uploads.len(), dtypes.len() * 3 * 4 * 2 + 4);
    for (what, d) in &uploads {
        if let Some(d) = d {
            assert_eq!(*d, 0.0, "{what}");
        }
    }
}

#[cfg(feature = "testing")]
#[test]
fn add_rows_equals_the_reference_on_the_cpu() {
    check_add_rows::<NdArray>(&Default::default(), &[burn::tensor::FloatDType::F32]);
}

#[cfg(all(feature = "wgpu", feature = "testing"))]
#[test]
fn add_rows_equals_the_reference_on_wgpu() {
    use burn::tensor::FloatDType;
    check_add_rows::<burn_sparse_gnn::Wgpu>(&Default::default(), &[FloatDType::F32, FloatDType::F16]);
}
