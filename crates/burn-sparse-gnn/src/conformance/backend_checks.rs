//! Backend methods against their default implementation (the composed tensor ops) on the same
//! device: half copies of rows, inverse degrees, row additions and uploads from host bytes.

use super::measure::exact_difference;
use crate::backend::SparseGnnBackend;
use crate::random::random_values;
use burn::tensor::{DType, FloatDType, Int, Tensor, TensorData};
use sparse_gnn_kernels::config::KernelConfig;

/// Mixed precision's half copies of the linear inputs: the backend's `rows_to_half` /
/// `rows_from_half` against the composed tensor ops (their default implementation) on the same
/// device, on random rows with a row of zeros, one beyond the f16 range (x 1e6) and one of tiny
/// values (x 1e-20), at each width of `widths`.
/// Returns `(case, largest difference)` per case, `None` where the device lacks the half type;
/// the arithmetic is the same, so every difference must be 0.
pub fn half_rows_checks<B: SparseGnnBackend>(
    device: &B::Device,
    halves: &[FloatDType],
    widths: &[usize],
    config: &KernelConfig,
) -> Vec<(String, Option<f64>)> {
    let mut out = Vec::new();
    for &half in halves {
        for &f in widths {
            let what = format!("half rows {half:?}, width {f}");
            if !B::supports_dtype(device, DType::from(half)) {
                out.push((what, None));
                continue;
            }
            let n = 1_031;
            let mut xv: Vec<f32> = random_values(n * f, 21 + f as u64).into_iter().map(|v| v as f32).collect();
            xv[..f].iter_mut().for_each(|v| *v = 0.0);
            xv[f..2 * f].iter_mut().for_each(|v| *v *= 1e6);
            xv[2 * f..3 * f].iter_mut().for_each(|v| *v *= 1e-20);
            let x = Tensor::<B, 2>::from_data(TensorData::new(xv, [n, f]), device).into_primitive().tensor();
            let (h1, s1) = B::rows_to_half(x.clone(), half, config);
            let (h0, s0) = crate::ops::rows::half_rows::<B>(x, half);
            let b1 = B::rows_from_half(h1.clone(), s1.clone(), FloatDType::F32);
            let b0 = crate::ops::rows::unscale_rows::<B>(h0.clone(), s0.clone(), FloatDType::F32);
            let diff = exact_difference::<B>;
            let d = diff(h1, h0).max(diff(s1, s0)).max(diff(b1, b0));
            out.push((what, Some(d)));
        }
    }
    out
}

/// The mean's gradient scaling
/// ([`RowOps::inv_degree_rows`](crate::ops::rows::RowOps::inv_degree_rows)) against its composed
/// ops (the default implementation) on the same device: `n` = 1,031 rows of random values with
/// degrees 0 (empty rows), 1, small, 3 and a hub of 100,000, and a row pointer past 2^31 (offsets
/// are u32 in i32 bits), into f32 and into each half type of `halves`, at each width of `widths`.
/// Returns `(case, largest difference)`, `None` where the device lacks the output dtype; the
/// arithmetic is the same, so every difference must be 0.
pub fn inv_degree_checks<B: SparseGnnBackend>(
    device: &B::Device,
    halves: &[FloatDType],
    widths: &[usize],
) -> Vec<(String, Option<f64>)> {
    let n = 1_031usize;
    let degree = |i: usize| -> i64 {
        match i % 7 {
            0 | 4 => 0,
            1 => 1,
            2 => 3,
            _ if i == 500 => 100_000,
            _ => (i % 13) as i64 + 2,
        }
    };
    let mut offsets = vec![0i64; n + 1];
    for i in 0..n {
        offsets[i + 1] = offsets[i] + degree(i);
    }
    let mut out = Vec::new();
    for (base, what_base) in [(0i64, ""), ((1i64 << 31) - 50_000, ", offsets past 2^31")] {
        // u32 offsets in the bits of an i32, as the graph uploads them
        let rp: Vec<i32> = offsets.iter().map(|&o| (o + base) as u32 as i32).collect();
        for dtype in std::iter::once(FloatDType::F32).chain(halves.iter().copied()) {
            for &f in widths {
                let what = format!("1 / degree rows into {dtype:?}, width {f}{what_base}");
                if !B::supports_dtype(device, DType::from(dtype)) {
                    out.push((what, None));
                    continue;
                }
                let xv: Vec<f32> = random_values(n * f, 31 + f as u64).into_iter().map(|v| v as f32 * 100.0).collect();
                let x = Tensor::<B, 2>::from_data(TensorData::new(xv, [n, f]), device).into_primitive().tensor();
                let row_ptr =
                    Tensor::<B, 1, Int>::from_data(TensorData::new(rp.clone(), [n + 1]), (device, DType::I32))
                        .into_primitive();
                let got = B::inv_degree_rows(row_ptr.clone(), x.clone(), dtype);
                let want = crate::ops::rows::inv_degree_rows_composed::<B>(row_ptr, x, dtype);
                out.push((what, Some(exact_difference::<B>(got, want))));
            }
        }
    }
    out
}

/// A tensor's values as f32 on the host (empty where it cannot be read).
fn host_f32<B: SparseGnnBackend>(t: Tensor<B, 2>) -> Vec<f32> {
    t.cast(FloatDType::F32).into_data().convert::<f32>().into_vec::<f32>().unwrap_or_default()
}

/// The largest difference of two value lists that must be equal: any nonzero difference counts
/// at least the smallest positive f64, lists of other lengths count infinity.
fn exact_diff(p: &[f32], q: &[f32]) -> f64 {
    if p.len() != q.len() {
        return f64::INFINITY;
    }
    p.iter()
        .zip(q)
        .map(|(a, b)| if a == b { 0.0 } else { f64::from((a - b).abs()).max(f64::MIN_POSITIVE) })
        .fold(0.0, f64::max)
}

/// The halo gradients' scatter-add ([`RowOps::add_rows`](crate::ops::rows::RowOps::add_rows))
/// against the CPU reference of the kernels crate and against the composed ops (its default
/// implementation) on the same device: random rows of `n` = 1,031 with `m` distinct target rows in
/// shuffled order (one, a third of the rows with the first and the last, all of them), each into a
/// base that other tensors share (added into a copy, which must leave the shared base unchanged)
/// and into one nothing else holds (added in place), in each of `dtypes` at each width of `widths`.
/// Returns `(case, largest difference)`, `None` where the device lacks the dtype. The values are
/// multiples of 1/64 in [-4, 4], so every sum is exact in each dtype and every difference must be
/// 0.
pub fn add_rows_checks<B: SparseGnnBackend>(
    device: &B::Device,
    dtypes: &[FloatDType],
    widths: &[usize],
) -> Vec<(String, Option<f64>)> {
    use burn::tensor::TensorPrimitive;
    let n = 1_031usize;
    let mut out = Vec::new();
    let host = host_f32::<B>;
    let diff = exact_diff;
    for &dtype in dtypes {
        for &f in widths {
            for m in [1usize, n / 3, n] {
                let what = format!("add rows {dtype:?}, width {f}, {m} of {n} rows");
                if !B::supports_dtype(device, DType::from(dtype)) {
                    out.push((what, None));
                    continue;
                }
                // distinct rows in a shuffled order: a stride coprime to n, with row 0 and row n - 1
                let mut rows: Vec<u32> = (0..n as u32).map(|i| (i * 389 + 17) % n as u32).take(m).collect();
                if m >= 2 && !rows.contains(&0) {
                    rows[0] = 0;
                }
                if m >= 3 && !rows.contains(&(n as u32 - 1)) {
                    rows[1] = n as u32 - 1;
                }
                let idx = match crate::ops::rows::RowIndex::<B>::new(&rows, n, device) {
                    Ok(i) => i,
                    Err(_) => {
                        out.push((what, Some(f64::INFINITY)));
                        continue;
                    }
                };
                let make = |len: usize, seed: u64| {
                    // multiples of 1/64 in [-4, 4]: every value and every sum is exact in f16 too
                    let v: Vec<f32> =
                        random_values(len * f, seed).into_iter().map(|v| (v * 256.0).round() as f32 / 64.0).collect();
                    Tensor::<B, 2>::from_data(TensorData::new(v, [len, f]), device).cast(dtype)
                };
                let base = make(n, 5 + f as u64);
                let values = make(m, 6 + f as u64);
                let (base_host, values_host) = (host(base.clone()), host(values.clone()));
                let mut expected = base_host.clone();
                let ids: Vec<i32> = rows.iter().map(|&r| r as i32).collect();
                sparse_gnn_kernels::rows::reference_add_rows(&mut expected, &ids, &values_host, f);
                let expected = host(Tensor::<B, 2>::from_data(TensorData::new(expected, [n, f]), device).cast(dtype));
                let prim = |t: Tensor<B, 2>| t.into_primitive().tensor();
                let (i, inv) = (idx.indices().into_primitive(), idx.inverse().into_primitive());
                let composed = crate::ops::rows::gather_back::<B>(prim(values.clone()), inv.clone());
                let composed =
                    host(Tensor::from_primitive(TensorPrimitive::Float(B::float_add(prim(base.clone()), composed))));
                // `base` is shared (the clone above): the sum goes to a copy
                let shared = B::add_rows(prim(base.clone()), prim(values.clone()), i.clone(), inv.clone());
                let shared = host(Tensor::from_primitive(TensorPrimitive::Float(shared)));
                let untouched = diff(&host(base), &base_host);
                // a base nothing else holds: added in place where the backend can
                let own = make(n, 5 + f as u64);
                let in_place =
                    host(Tensor::from_primitive(TensorPrimitive::Float(B::add_rows(prim(own), prim(values), i, inv))));
                let d = diff(&shared, &expected)
                    .max(diff(&in_place, &expected))
                    .max(diff(&composed, &expected))
                    .max(untouched);
                out.push((what, Some(d)));
            }
        }
    }
    out
}

/// The halo exchange's row moves in mixed precision: the rows a part sends, gathered from an
/// f32 state and converted in one pass
/// ([`RowOps::ad_take_rows_as`](crate::ops::rows::RowOps::ad_take_rows_as), to f32 and to each
/// of `halves`), against the CPU reference; and the returned gradients in each of `halves`
/// added into f32 rows ([`RowOps::add_rows`](crate::ops::rows::RowOps::add_rows) converting
/// them) against the f32 reference. 1,031 rows, the shuffled row sets of [`add_rows_checks`],
/// values multiples of 1/64 in [-4, 4] (exact in every type): every difference must be 0.
/// Returns `(case, largest difference)`, `None` where the device lacks the half type.
pub fn mixed_rows_checks<B: SparseGnnBackend>(
    device: &B::Device,
    halves: &[FloatDType],
    widths: &[usize],
) -> Vec<(String, Option<f64>)> {
    use burn::tensor::TensorPrimitive;
    let n = 1_031usize;
    let mut out = Vec::new();
    let host = host_f32::<B>;
    let diff = exact_diff;
    let prim = |t: Tensor<B, 2>| t.into_primitive().tensor();
    let wrap = |t| Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(t));
    for &f in widths {
        for m in [1usize, n / 3, n] {
            let rows: Vec<u32> = (0..n as u32).map(|i| (i * 389 + 17) % n as u32).take(m).collect();
            let Ok(idx) = crate::ops::rows::RowIndex::<B>::new(&rows, n, device) else {
                out.push((format!("rows, width {f}, {m} of {n}"), Some(f64::INFINITY)));
                continue;
            };
            let ids: Vec<i32> = rows.iter().map(|&r| r as i32).collect();
            let make = |len: usize, seed: u64| {
                let v: Vec<f32> =
                    random_values(len * f, seed).into_iter().map(|v| (v * 256.0).round() as f32 / 64.0).collect();
                (Tensor::<B, 2>::from_data(TensorData::new(v.clone(), [len, f]), device), v)
            };
            let (state, state_host) = make(n, 11 + f as u64);
            let taken = sparse_gnn_kernels::rows::reference_take_rows(&state_host, &ids, f);
            let (i, inv) = (idx.indices().into_primitive(), idx.inverse().into_primitive());
            let got = B::ad_take_rows_as(prim(state.clone()), i.clone(), inv.clone(), None);
            out.push((format!("take rows f32, width {f}, {m} of {n}"), Some(diff(&host(wrap(got)), &taken))));
            for &half in halves {
                if !B::supports_dtype(device, DType::from(half)) {
                    out.push((format!("take rows as {half:?}, width {f}, {m} of {n}"), None));
                    out.push((format!("add {half:?} rows into f32, width {f}, {m} of {n}"), None));
                    continue;
                }
                let got = wrap(B::ad_take_rows_as(prim(state.clone()), i.clone(), inv.clone(), Some(half)));
                let d = if got.dtype() == DType::from(half) { diff(&host(got), &taken) } else { f64::INFINITY };
                out.push((format!("take rows as {half:?}, width {f}, {m} of {n}"), Some(d)));
                let (values, values_host) = make(m, 12 + f as u64);
                let mut expected = state_host.clone();
                sparse_gnn_kernels::rows::reference_add_rows(&mut expected, &ids, &values_host, f);
                let sum = B::add_rows(prim(state.clone()), prim(values.cast(half)), i.clone(), inv.clone());
                let sum = wrap(sum);
                let d = if sum.dtype() == DType::F32 { diff(&host(sum), &expected) } else { f64::INFINITY };
                out.push((format!("add {half:?} rows into f32, width {f}, {m} of {n}"), Some(d)));
            }
        }
    }
    out
}

/// Host data uploaded and read back. Rows from host bytes
/// ([`TransferOps::float_from_host`](crate::dist::transfer::TransferOps::float_from_host), the
/// multi-process exchange's upload) and the same rows through
/// [`DeviceOps::float_upload`](crate::ops::device::DeviceOps::float_upload): for each of
/// `dtypes` and each width of `widths`, 1,031 rows, then 1 row and 0 rows, then 2,063 rows (on
/// CUDA the larger ones go up in one transfer from the host, the smaller through Burn). Then i32
/// vectors of 0, 5, 3,000 and 70,000 entries through
/// [`DeviceOps::int_upload`](crate::ops::device::DeviceOps::int_upload). Returns `(case, bytes
/// that differ)`, `None` where the device lacks the dtype; a tensor of another shape or dtype
/// counts every byte. Every count must be 0.
pub fn from_host_checks<B: SparseGnnBackend>(
    device: &B::Device,
    dtypes: &[FloatDType],
    widths: &[usize],
) -> Vec<(String, Option<f64>)> {
    use burn::tensor::TensorPrimitive;
    // bytes of `back` (read from a tensor of `dims` and `dtype`) that differ from `want`
    let compare = |dims: Vec<usize>, dtype: DType, back: Option<TensorData>, want: &TensorData| -> f64 {
        if dims != want.shape.to_vec() || dtype != want.dtype {
            return want.as_bytes().len().max(1) as f64;
        }
        if want.as_bytes().is_empty() {
            return 0.0;
        }
        match back {
            Some(b) if b.as_bytes().len() == want.as_bytes().len() => {
                b.as_bytes().iter().zip(want.as_bytes()).filter(|(a, b)| a != b).count() as f64
            }
            _ => want.as_bytes().len().max(1) as f64,
        }
    };
    let mut out = Vec::new();
    for &dtype in dtypes {
        for &f in widths {
            for rows in [1_031usize, 1, 0, 2_063] {
                for path in ["rows from host bytes", "upload"] {
                    let what = format!("{path} {dtype:?}, {rows} x {f}");
                    if !B::supports_dtype(device, DType::from(dtype)) {
                        out.push((what, None));
                        continue;
                    }
                    let v: Vec<f32> =
                        random_values(rows * f, 11 + (rows * f) as u64).into_iter().map(|v| v as f32).collect();
                    // converted on the host: no device kernel on an empty tensor
                    let data = TensorData::new(v, [rows, f]).convert_dtype(DType::from(dtype));
                    let got = match path {
                        "upload" => B::float_upload(data.clone(), device),
                        _ => B::float_from_host(data.as_bytes(), [rows, f], data.dtype, device),
                    };
                    let got = Tensor::<B, 2>::from_primitive(TensorPrimitive::Float(got));
                    let (dims, dt) = (got.dims().to_vec(), got.dtype());
                    let back = if rows == 0 { None } else { got.try_into_data().ok() };
                    out.push((what, Some(compare(dims, dt, back, &data))));
                }
            }
        }
    }
    for len in [0usize, 5, 3_000, 70_000] {
        let v: Vec<i32> = (0..len).map(|i| (i as i32).wrapping_mul(2_654_435_761u32 as i32)).collect();
        let data = TensorData::new(v, [len]);
        let got = Tensor::<B, 1, Int>::from_primitive(B::int_upload(data.clone(), device));
        let (dims, dt) = (got.dims().to_vec(), got.dtype());
        let back = if len == 0 { None } else { got.try_into_data().ok() };
        out.push((format!("int upload, {len} entries"), Some(compare(dims, dt, back, &data))));
    }
    out
}

/// [`Graph::new_packed`](crate::Graph::new_packed) against [`Graph::new`](crate::Graph::new) on
/// the same device: every index array and float vector of the device graph read back, and a
/// sum aggregation over each, on a square graph with a hub of 700 edges, empty rows and self-loops
/// (unweighted and with edge weights, the hot-column split forced), a rectangular one, and a
/// graph of one edge. Returns `(case, entries that differ)`: the packed arrays are views of one
/// upload, so every value must be equal.
pub fn packed_graph_checks<B: SparseGnnBackend>(device: &B::Device) -> Vec<(String, Option<f64>)> {
    use crate::random::{random_csr, RandomGraphSpec};
    use crate::Choice;
    use crate::{Graph, GraphOptions, Reduce};
    let square = RandomGraphSpec { n_rows: 301, n_cols: 301, hub_degree: 700, seed: 5, ..Default::default() };
    let rect = RandomGraphSpec { n_rows: 97, n_cols: 211, hub_degree: 150, self_loops: false, seed: 6, ..square };
    let sq = random_csr(&square);
    let weights: Vec<f32> = random_values(sq.nnz(), 7).into_iter().map(|v| v as f32).collect();
    let weighted = sq.clone().with_weights(Some(weights)).expect("one weight per edge");
    let one = crate::Csr::from_columns(3, 2, &[0, 0, 1, 1], vec![1], None).expect("a valid one-edge graph");
    let hot = GraphOptions { hot_cols: Choice::Forced(8), ..GraphOptions::default() };
    let cases = [
        ("square 301 + hub 700", sq, GraphOptions::default()),
        ("square, edge weights, hot columns forced", weighted, hot),
        ("rectangular 97 x 211", random_csr(&rect), GraphOptions::default()),
        ("one edge, 3 x 2", one, GraphOptions::default()),
    ];
    let ints = |g: &Graph<B>| {
        let mut out = Vec::new();
        let _ = g.prim().clone().map(|t| out.push(crate::ops::host_io::read_index::<B>(t)));
        out
    };
    let floats = |g: &Graph<B>| {
        let n = g.norms();
        let mut v = vec![&n.in_degree, &n.out_degree, &n.in_inv, &n.in_inv_sqrt, &n.out_inv, &n.out_inv_sqrt];
        v.extend(g.weights());
        if let Some(s) = g.weight_sums() {
            v.extend([&s.rows, &s.cols]);
        }
        v.into_iter()
            .map(|t| t.clone().into_data().convert::<f64>().to_vec::<f64>().unwrap_or_default())
            .collect::<Vec<_>>()
    };
    let differ = |a: &[Vec<f64>], b: &[Vec<f64>]| -> f64 {
        if a.len() != b.len() {
            return f64::INFINITY;
        }
        a.iter()
            .zip(b)
            .map(|(p, q)| {
                if p.len() != q.len() {
                    f64::INFINITY
                } else {
                    p.iter().zip(q).filter(|(x, y)| x != y).count() as f64
                }
            })
            .sum()
    };
    let mut out = Vec::new();
    for (name, adj, opts) in cases {
        let g0 = Graph::<B>::new(&adj, device, opts);
        let g1 = Graph::<B>::new_packed(&adj, device, opts);
        let as_f64 = |v: Vec<Vec<usize>>| {
            v.into_iter().map(|a| a.into_iter().map(|x| x as f64).collect()).collect::<Vec<Vec<f64>>>()
        };
        out.push((format!("packed graph, {name}: index arrays"), Some(differ(&as_f64(ints(&g0)), &as_f64(ints(&g1))))));
        out.push((
            format!("packed graph, {name}: degrees, norms and weights"),
            Some(differ(&floats(&g0), &floats(&g1))),
        ));
        let f = 7;
        let xv: Vec<f32> = random_values(adj.n_cols() * f, 8).into_iter().map(|v| v as f32).collect();
        let x = Tensor::<B, 2>::from_data(TensorData::new(xv, [adj.n_cols(), f]), device);
        let host = |t: Tensor<B, 2>| vec![t.into_data().convert::<f64>().to_vec::<f64>().unwrap_or_default()];
        let agg = |g: &Graph<B>| match g.weights() {
            Some(w) => crate::ops::spmm_weighted(g, w.clone(), x.clone(), Reduce::Sum),
            None => crate::ops::spmm(g, x.clone(), Reduce::Sum),
        };
        out.push((format!("packed graph, {name}: sum aggregation"), Some(differ(&host(agg(&g0)), &host(agg(&g1))))));
    }
    out
}
