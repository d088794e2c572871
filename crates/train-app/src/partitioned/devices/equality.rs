//! The model on the parts against the model on the whole graph (the `selftest` partition
//! checks).

use crate::error::{AppError, Result};
use burn::tensor::{Int, Tensor, TensorData};
use burn_sparse_gnn::partition::{partition, PartitionMethod, PartitionOptions, PartitionedGraph};
use burn_sparse_gnn::SparseGnnAutodiffBackend;
use gnn_models::partitioned::devices::{partitioned_loss, DistGraph, HaloLayout};
use gnn_models::Nonlinearity;

use crate::partitioned::scalar;

/// Normwise differences between a model on the whole graph (first device) and the same
/// model on `parts` parts spread over `devices`: loss, logits and all parameter gradients,
/// for each convolution, MaxK and mixed precision: `(what, difference)`. On one device the
/// parts share it (the exchange is a copy); on several, the exchange crosses devices.
pub fn equality_checks<B: SparseGnnAutodiffBackend>(devices: &[B::Device], parts: usize) -> Result<Vec<(String, f64)>> {
    use burn::module::{Module, ModuleVisitor, Param};
    use burn_sparse_gnn::random::{random_csr, random_values, RandomGraphSpec};
    use burn_sparse_gnn::{BuildOptions, Csr, Graph, GraphOptions};
    use gnn_models::{ConvKind, GnnModelConfig, Precision};

    struct Grads<'a, B: burn::tensor::backend::AutodiffBackend> {
        grads: &'a B::Gradients,
        out: Vec<f64>,
    }
    impl<B: burn::tensor::backend::AutodiffBackend> ModuleVisitor<B> for Grads<'_, B> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            if let Some(g) = param.val().grad(self.grads) {
                self.out.extend(g.into_data().convert::<f64>().to_vec::<f64>().unwrap_or_default());
            }
        }
    }
    struct ParamGrads<'a> {
        grads: &'a burn::optim::GradientsParams,
        out: Vec<f64>,
    }
    impl<B: burn::tensor::backend::AutodiffBackend> ModuleVisitor<B> for ParamGrads<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
            if let Some(g) = self.grads.get::<B::InnerBackend, D>(param.id) {
                self.out.extend(g.into_data().convert::<f64>().to_vec::<f64>().unwrap_or_default());
            }
        }
    }
    fn normwise(a: &[f64], b: &[f64]) -> f64 {
        if a.len() != b.len() {
            return f64::INFINITY;
        }
        let num: f64 = a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum();
        let den: f64 = b.iter().map(|y| y * y).sum();
        (num / den.max(1e-30)).sqrt()
    }

    let leader = devices.first().ok_or_else(|| AppError::Config("no device".into()))?.clone();
    let (n, d_in, classes) = (3_001usize, 24usize, 5usize);
    let r = random_csr(&RandomGraphSpec {
        n_rows: n,
        n_cols: n,
        avg_degree: 8,
        hub_degree: 1_500,
        empty_fraction: 0.05,
        self_loops: true,
        duplicates: false,
        seed: 3,
    });
    let (mut src, mut dst) = (Vec::new(), Vec::new());
    for i in 0..n {
        for &j in &r.col_idx()[r.row_ptr()[i]..r.row_ptr()[i + 1]] {
            src.push(j as i64);
            dst.push(i as i64);
        }
    }
    let adj = Csr::from_edges(n, &src, &dst, None, BuildOptions::undirected())
        .map_err(|e| AppError::Config(format!("equality graph: {e}")))?;
    let part = partition(&adj, &PartitionOptions { parts, method: PartitionMethod::Metis, seed: 1 })
        .or_else(|_| partition(&adj, &PartitionOptions { parts, method: PartitionMethod::Greedy, seed: 1 }))
        .map_err(|e| AppError::Config(format!("partition: {e}")))?;
    let pg = PartitionedGraph::build(&adj, &part).map_err(|e| AppError::Config(format!("partition: {e}")))?;
    let dg = DistGraph::<B>::new(&adj, &pg, devices, GraphOptions::default())
        .map_err(|e| AppError::Config(e.to_string()))?;
    let dg_split = DistGraph::<B>::with_layout(&adj, &pg, devices, GraphOptions::default(), HaloLayout::Split)
        .map_err(|e| AppError::Config(e.to_string()))?;
    let g = Graph::<B>::new(&adj, &leader, GraphOptions::default());
    let xv: Vec<f32> = random_values(n * d_in, 5).into_iter().map(|v| v as f32).collect();
    let x = Tensor::<B, 2>::from_data(TensorData::new(xv, [n, d_in]), &leader);
    let y: Vec<i64> = (0..n).map(|i| ((i * 13 + i / 7) % classes) as i64).collect();
    let y = Tensor::<B, 1, Int>::from_data(TensorData::new(y, [n]), &leader);
    let train = n.div_ceil(2);
    let w: Vec<f32> = (0..n).map(|i| if i % 2 == 0 { 1.0 / train as f32 } else { 0.0 }).collect();
    let w = Tensor::<B, 1>::from_data(TensorData::new(w, [n]), &leader);
    let half_ok = B::supports_dtype(&leader, burn::tensor::DType::F16);
    let base = |conv| GnnModelConfig::new(conv, d_in, 32, classes).with_layers(3).with_dropout(0.3);
    let mut models = vec![
        ("sage relu", base(ConvKind::Sage)),
        ("sage maxk:8", base(ConvKind::Sage).with_nonlin(Nonlinearity::Maxk { k: 8 })),
        ("gcn classic", base(ConvKind::Gcn).with_linear_io(false).with_input_dropout(0.2)),
        ("gin", base(ConvKind::Gin)),
        ("gat 4 heads", base(ConvKind::Gat).with_gat_heads(4)),
    ];
    if half_ok {
        models.push(("sage relu, mixed f16", base(ConvKind::Sage).with_precision(Precision::MixedF16)));
        models.push((
            "sage maxk:8, mixed f16",
            base(ConvKind::Sage).with_nonlin(Nonlinearity::Maxk { k: 8 }).with_precision(Precision::MixedF16),
        ));
    }
    let (xs, ys, ws) = (dg.scatter(x.clone()), dg.scatter(y.clone()), dg.scatter(w.clone()));
    let mut out = Vec::new();
    for (name, cfg) in models {
        B::seed(&leader, 17);
        let model = cfg.init::<B>(&leader).map_err(|e| AppError::Config(e.to_string()))?;
        // parameters initialise lazily: draw them before the dropout draws of both passes
        model.initialise_parameters();
        // whole graph
        B::seed(&leader, 23);
        let logits = model.forward(&g, x.clone());
        // the loss the parts use (the fused weighted cross-entropy, checked against f64 on its
        // own), so the difference is the partitioning's alone
        let loss = burn_sparse_gnn::loss::sum_terms(
            burn_sparse_gnn::loss::cross_entropy_rows(logits.clone(), y.clone(), w.clone(), g.kernel_config())
                .map_err(|e| AppError::Config(e.to_string()))?,
        );
        let grads = loss.backward();
        let mut gw = Grads::<B> { grads: &grads, out: Vec::new() };
        model.visit(&mut gw);
        let want_logits: Vec<f64> = logits.into_data().convert::<f64>().to_vec().unwrap_or_default();
        let want_loss = scalar(loss);
        // parts, in every halo layout the model runs on
        let layouts: &[(&DistGraph<B>, &str)] =
            if model.splits_halo() { &[(&dg, ""), (&dg_split, ", split halo")] } else { &[(&dg, "")] };
        for &(dg, tag) in layouts {
            B::seed(&leader, 23);
            let plogits = model.forward_partitioned(dg, xs.clone()).map_err(|e| AppError::Config(e.to_string()))?;
            let ploss = partitioned_loss(dg, &plogits, &ys, &ws);
            let pgrads = ploss.backward();
            let mut gp = Grads::<B> { grads: &pgrads, out: Vec::new() };
            model.visit(&mut gp);
            let got_logits: Vec<f64> = dg.gather(plogits).into_data().convert::<f64>().to_vec().unwrap_or_default();
            let got_loss = scalar(ploss);
            out.push((format!("{name}{tag}: loss"), (got_loss - want_loss).abs() / want_loss.abs().max(1e-12)));
            out.push((format!("{name}{tag}: logits"), normwise(&got_logits, &want_logits)));
            out.push((format!("{name}{tag}: gradients"), normwise(&gp.out, &gw.out)));
            // the training step's copies of the model on the other devices
            B::seed(&leader, 23);
            let (rlogits, replicas) = model
                .forward_partitioned_replicas(dg, xs.clone(), None)
                .map_err(|e| AppError::Config(e.to_string()))?;
            let rgrads = replicas.gradients(&model, partitioned_loss(dg, &rlogits, &ys, &ws).backward());
            let mut gr = ParamGrads { grads: &rgrads, out: Vec::new() };
            model.visit(&mut gr);
            out.push((format!("{name}{tag}: gradients, {} model copies", replicas.len()), normwise(&gr.out, &gw.out)));
        }
    }
    Ok(out)
}
