//! `bench` of the sparse kernels: each checked against the CPU reference, then timed.

use crate::error::Result;
use burn::tensor::Tensor;
use burn_sparse_gnn::kernels::maxk::reference as maxk_ref;
use burn_sparse_gnn::kernels::sample::reference as sample_ref;
use burn_sparse_gnn::{
    ops, Graph, GraphOptions, KernelPolicy, PoolLayout, PoolSpec, Reduce, SampleSpec, Sampling, SparseGnnBackend,
    SspmmStrategy,
};
use std::time::Instant;

use super::timing::host;
use super::timing::{check_rows, random_matrix, rel_err, time};
use super::{pools_name, tuning_string, vector_elems, Bench, Record, Shape};

impl Bench {
    pub(super) fn run_inner<B: SparseGnnBackend>(
        &self,
        device: &B::Device,
        backend: &str,
        emit: &mut dyn FnMut(Record) -> Result<()>,
    ) -> Result<()> {
        let dev_name = self.device_name.clone().unwrap_or_else(|| backend.to_string());
        let csr = self.adj.as_ref();
        let (n, m, nnz) = (self.adj.n_rows(), self.adj.n_cols(), self.adj.nnz());
        let setup = Instant::now();
        let g = Graph::<B>::new(&self.adj, device, self.options);
        let graph_shape = g.shape();
        let base_shape = Shape {
            graph: Some(graph_shape.into()),
            kernels: self.options.kernels,
            spmm_tile_features: None,
            hot_split: None,
            pools: pools_name(),
        };
        let mut emit = |mut r: Record| {
            if r.shape.is_none() {
                r.shape = Some(base_shape.clone());
            }
            r.tuning = tuning_string(r.shape.as_ref().expect("set above"));
            emit(r)
        };
        eprintln!(
            "graph {}: {n} nodes, {nnz} edges, device setup {:.2} s",
            self.graph_name,
            setup.elapsed().as_secs_f64()
        );
        if let Some(h) = &g.prim().csr.hot {
            eprintln!(
                "hot-column split: {} columns receive {} edges ({:.1} %)",
                h.len,
                h.nnz,
                100.0 * h.nnz as f64 / nnz.max(1) as f64
            );
        }
        let hot_stats =
            burn_sparse_gnn::kernels::csr::HotStats::new(&csr, burn_sparse_gnn::kernels::heuristics::HOT_COLS);
        eprintln!(
            "top {} columns: {} edges ({:.1} %), {:.1} per row with any",
            hot_stats.hot_cols,
            hot_stats.hot_edges,
            100.0 * hot_stats.share(),
            hot_stats.hot_per_row()
        );
        let rows = check_rows(&self.adj, 200);
        let csr_bytes = (n as u64 + 1) * 4 + nnz as u64 * 4;
        let mut full_ms = std::collections::HashMap::new();

        for &w in &self.widths {
            let (x, xh) = random_matrix::<B>(m, w, 11 + w as u64, device);
            if self.wants("spmm") {
                for dname in &self.dtypes {
                    let dt = match dname.as_str() {
                        "f16" => Some(burn::tensor::FloatDType::F16),
                        "bf16" => Some(burn::tensor::FloatDType::BF16),
                        _ => None,
                    };
                    if let Some(d) = dt {
                        if !B::supports_dtype(device, d.into()) {
                            eprintln!("skipped: spmm {dname}: not supported by this device");
                            continue;
                        }
                    }
                    let elem = if dt.is_some() { 2u64 } else { 4 };
                    let xd = match dt {
                        Some(d) => x.clone().cast(d),
                        None => x.clone(),
                    };
                    // the reference reads the stored (rounded) values
                    let xs = host(xd.clone().cast(burn::tensor::FloatDType::F32));
                    let out = host(ops::spmm(&g, xd.clone(), Reduce::Sum).cast(burn::tensor::FloatDType::F32));
                    let mut got = Vec::new();
                    let mut want = Vec::new();
                    for &i in &rows {
                        let mut acc = vec![0.0f64; w];
                        for e in csr.row(i) {
                            let j = csr.col_idx[e] as usize;
                            for c in 0..w {
                                acc[c] += xs[j * w + c];
                            }
                        }
                        want.extend(acc);
                        got.extend_from_slice(&out[i * w..(i + 1) * w]);
                    }
                    let err = rel_err(&got, &want);
                    let hot_before = burn_sparse_gnn::kernels::spmm::hot::hot_launches();
                    let s = time::<B, _>(device, self.warmup, self.runs, || ops::spmm(&g, xd.clone(), Reduce::Sum));
                    let split_ran = burn_sparse_gnn::kernels::spmm::hot::hot_launches() > hot_before;
                    if dt.is_none() {
                        full_ms.insert(w, s.median);
                    }
                    let bytes = csr_bytes + (nnz as u64 + n as u64) * w as u64 * elem;
                    let mut r = self.record("spmm", w, None, &s, &dev_name);
                    r.dtype = dname.clone();
                    r.variant = Some(if split_ran { "sum, hot split" } else { "sum" }.into());
                    r.hot_stats = Some(hot_stats);
                    let tile = (!split_ran).then(|| {
                        let elem = elem as usize;
                        self.options.kernels.spmm.tile_features.resolve(|| {
                            burn_sparse_gnn::kernels::heuristics::spmm_tile_features(m, w, elem, vector_elems(w, elem))
                        })
                    });
                    r.shape =
                        Some(Shape { spmm_tile_features: tile, hot_split: Some(split_ran), ..base_shape.clone() });
                    r.bytes = Some(bytes);
                    r.gbps = Some(bytes as f64 / s.median / 1e6);
                    r.check_error = Some(err);
                    emit(r)?;
                }
            }
            if self.wants("sddmm") {
                let (a, _) = random_matrix::<B>(n, w, 5 + w as u64, device);
                let s = time::<B, _>(device, self.warmup, self.runs, || ops::sddmm(&g, a.clone(), x.clone()));
                let bytes = csr_bytes + nnz as u64 * (w as u64 * 4 + 4) + n as u64 * w as u64 * 4;
                let mut r = self.record("sddmm", w, None, &s, &dev_name);
                r.bytes = Some(bytes);
                r.gbps = Some(bytes as f64 / s.median / 1e6);
                emit(r)?;
            }
            if self.wants("sampled") {
                for &sw in &self.samples {
                    for mode in [Sampling::Bucket, Sampling::FastRand] {
                        let spec = SampleSpec { width: sw, mode, seed: 0 };
                        let out = host(ops::sampled_spmm(&g, x.clone(), spec, Reduce::Sum));
                        let scale = sample_ref::edge_scale(&csr, &spec, Reduce::Sum);
                        let kept: f64 = scale.iter().filter(|&&v| v > 0.0).count() as f64;
                        let mut got = Vec::new();
                        let mut want = Vec::new();
                        for &i in &rows {
                            let mut acc = vec![0.0f64; w];
                            for e in csr.row(i) {
                                if scale[e] > 0.0 {
                                    let j = csr.col_idx[e] as usize;
                                    for c in 0..w {
                                        acc[c] += xh[j * w + c] as f64;
                                    }
                                }
                            }
                            want.extend(acc);
                            got.extend_from_slice(&out[i * w..(i + 1) * w]);
                        }
                        let s = time::<B, _>(device, self.warmup, self.runs, || {
                            ops::sampled_spmm(&g, x.clone(), spec, Reduce::Sum)
                        });
                        let mut r = self.record("spmm_sampled", w, None, &s, &dev_name);
                        r.variant = Some(format!("{:?}-S{sw}", mode).to_lowercase());
                        r.check_error = Some(rel_err(&got, &want));
                        r.kept_fraction = Some(kept / nnz.max(1) as f64);
                        let bytes = csr_bytes + (kept as u64 + n as u64) * w as u64 * 4;
                        r.bytes = Some(bytes);
                        r.gbps = Some(bytes as f64 / s.median / 1e6);
                        emit(r)?;
                    }
                }
            }
        }
        if let Some(ms) = full_ms.values().next() {
            eprintln!("(spmm full reference time {ms:.3} ms)");
        }

        let dim = 256usize;
        let needs_cbsr = ["maxk", "cbsr_spgemm", "cbsr_sspmm", "maxpool"].iter().any(|o| self.wants(o));
        if needs_cbsr {
            let (h, hh) = random_matrix::<B>(m.max(n), dim, 99, device);
            let h = h.slice([0..m, 0..dim]);
            for &k in &self.ks {
                if self.wants("maxk") {
                    let c = ops::maxk(h.clone(), k);
                    let idx: Vec<f64> = host(c.indices().float());
                    let mut err = 0.0f64;
                    for &i in rows.iter().filter(|&&i| i < m) {
                        let row: Vec<f64> = hh[i * dim..(i + 1) * dim].iter().map(|&v| v as f64).collect();
                        let (_, want) = maxk_ref::maxk(&row, 1, dim, k);
                        let got: Vec<u32> = idx[i * k..(i + 1) * k].iter().map(|&v| v as u32).collect();
                        if got != want {
                            err = 1.0;
                        }
                    }
                    let s = time::<B, _>(device, self.warmup, self.runs, || ops::maxk(h.clone(), k));
                    let mut r = self.record("maxk", dim, Some(k), &s, &dev_name);
                    let bytes = m as u64 * (dim as u64 * 4 + k as u64 * 5);
                    r.bytes = Some(bytes);
                    r.gbps = Some(bytes as f64 / s.median / 1e6);
                    r.check_error = Some(err);
                    emit(r)?;
                }
                let c = ops::maxk(h.clone(), k);
                if self.wants("cbsr_spgemm") {
                    let out = host(ops::cbsr_spgemm(&g, &c));
                    let vals = host(c.values());
                    let idx: Vec<u32> = host(c.indices().float()).into_iter().map(|v| v as u32).collect();
                    let mut got = Vec::new();
                    let mut want = Vec::new();
                    for &i in &rows {
                        let mut acc = vec![0.0f64; dim];
                        for e in csr.row(i) {
                            let j = csr.col_idx[e] as usize;
                            for t in 0..k {
                                acc[idx[j * k + t] as usize] += vals[j * k + t];
                            }
                        }
                        want.extend(acc);
                        got.extend_from_slice(&out[i * dim..(i + 1) * dim]);
                    }
                    let s = time::<B, _>(device, self.warmup, self.runs, || ops::cbsr_spgemm(&g, &c));
                    let mut r = self.record("cbsr_spgemm", dim, Some(k), &s, &dev_name);
                    let bytes = csr_bytes + nnz as u64 * k as u64 * 5 + n as u64 * dim as u64 * 4;
                    r.bytes = Some(bytes);
                    r.gbps = Some(bytes as f64 / s.median / 1e6);
                    r.check_error = Some(rel_err(&got, &want));
                    emit(r)?;
                }
                if self.wants("cbsr_sspmm") {
                    let (dy, dyh) = random_matrix::<B>(n, dim, 123, device);
                    let idx: Vec<u32> = host(c.indices().float()).into_iter().map(|v| v as u32).collect();
                    // reference of a few columns
                    let cols: Vec<usize> = rows.iter().copied().filter(|&j| j < m).collect();
                    let t = burn_sparse_gnn::kernels::csr::transpose(&csr);
                    let mut want = Vec::new();
                    for &j in &cols {
                        let mut acc = vec![0.0f64; k];
                        for q in t.row_ptr[j]..t.row_ptr[j + 1] {
                            let i = t.col_idx[q] as usize;
                            for tt in 0..k {
                                acc[tt] += dyh[i * dim + idx[j * k + tt] as usize] as f64;
                            }
                        }
                        want.extend(acc);
                    }
                    for strategy in [SspmmStrategy::Gather, SspmmStrategy::OuterAtomic] {
                        let opts = GraphOptions {
                            policy: KernelPolicy { sspmm: strategy, spgemm_atomic: false },
                            ..self.options
                        };
                        let gs = Graph::<B>::new(&self.adj, device, opts);
                        let run = |gs: &Graph<B>| {
                            B::cbsr_sspmm(gs.prim(), None, dy.clone().into_primitive().tensor(), c.prim())
                        };
                        let out = host(Tensor::<B, 2>::from_primitive(burn::tensor::TensorPrimitive::Float(run(&gs))));
                        let got: Vec<f64> = cols.iter().flat_map(|&j| out[j * k..(j + 1) * k].to_vec()).collect();
                        let s = time::<B, _>(device, self.warmup, self.runs, || run(&gs));
                        let mut r = self.record("cbsr_sspmm", dim, Some(k), &s, &dev_name);
                        r.variant = Some(match strategy {
                            SspmmStrategy::Gather => "gather".into(),
                            SspmmStrategy::OuterAtomic => "outer-atomic".into(),
                        });
                        let bytes = csr_bytes + nnz as u64 * k as u64 * 5 + n as u64 * dim as u64 * 4;
                        r.bytes = Some(bytes);
                        r.gbps = Some(bytes as f64 / s.median / 1e6);
                        r.check_error = Some(rel_err(&got, &want));
                        emit(r)?;
                    }
                }
            }
            if self.wants("maxpool") {
                for (layout, windows) in [(PoolLayout::OneD, 64usize), (PoolLayout::TwoD, 64)] {
                    let spec = PoolSpec { windows, layout, channels: 1 };
                    let s = time::<B, _>(device, self.warmup, self.runs, || ops::maxpool(h.clone(), spec));
                    let mut r = self.record("maxpool", dim, Some(windows), &s, &dev_name);
                    r.variant = Some(format!("{layout:?}").to_lowercase());
                    emit(r)?;
                }
            }
        }
        Ok(())
    }
}
