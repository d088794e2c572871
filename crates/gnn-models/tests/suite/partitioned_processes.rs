//! A model trained by ranks (threads of this test standing in for processes, one part each,
//! the halo exchange over TCP on 127.0.0.1) equals the model on the whole graph: the ranks'
//! losses add up to the whole graph's loss, their logits are its rows, and the gradients
//! summed over the ranks are its gradients, with dropout, for GCN, GraphSAGE, GIN and GAT and
//! 1, 2 and 3 ranks. The other ranks start from other parameters: rank 0's reach them.

use crate::common::{graph, max_diff, whole, B, CLASSES, D_IN, N, RNG};
use burn::backend::NdArray;
use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::backend::Backend;
use burn::tensor::{Int, Tensor, TensorData};
use burn_sparse_gnn::collective::{Comm, TcpComm, TcpCommConfig};
use burn_sparse_gnn::partition::{partition, PartitionMethod, PartitionOptions, PartitionedGraph};
use burn_sparse_gnn::random::random_values;
use burn_sparse_gnn::{Csr, GraphOptions};
use gnn_models::activation::Nonlinearity;
use gnn_models::partitioned::devices::DistError;
use gnn_models::{
    broadcast_model, rank_loss, sum_gradients, ConvKind, GnnModel, GnnModelConfig, NormKind, RankGraph, SageAggr,
    StepSeeds,
};
use std::sync::Arc;
use std::time::Duration;

type Inner = NdArray<f64, i64>;

struct HostInputs {
    x: Vec<f64>,
    labels: Vec<i64>,
    weights: Vec<f64>,
}

fn host_inputs() -> HostInputs {
    let x = random_values(N * D_IN, 3);
    let labels = (0..N).map(|i| ((i * 7 + i / 3) % CLASSES) as i64).collect();
    let train: Vec<f64> = (0..N).map(|i| if i % 3 == 0 { 1.0 } else { 0.0 }).collect();
    let count: f64 = train.iter().sum();
    HostInputs { x, labels, weights: train.iter().map(|t| t / count).collect() }
}

impl HostInputs {
    /// The whole graph's features, labels and weights on `dev`.
    fn tensors(&self, dev: &burn::tensor::Device<B>) -> (Tensor<B, 2>, Tensor<B, 1, Int>, Tensor<B, 1>) {
        (
            Tensor::from_data(TensorData::new(self.x.clone(), [N, D_IN]), dev),
            Tensor::from_data(TensorData::new(self.labels.clone(), [N]), dev),
            Tensor::from_data(TensorData::new(self.weights.clone(), [N]), dev),
        )
    }
}

/// The gradients of `GradientsParams` in the model's parameter order.
struct Summed<'a> {
    grads: &'a GradientsParams,
    out: Vec<Vec<f64>>,
}

impl ModuleVisitor<B> for Summed<'_> {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let g = self.grads.get::<Inner, D>(param.id).map(|g| g.into_data().to_vec::<f64>().expect("f64"));
        self.out.push(g.unwrap_or_default());
    }
}

/// One rank's summed loss, its nodes' logits (by global id) and the summed gradients.
type RankResult = (f64, Vec<(u32, Vec<f64>)>, Vec<Vec<f64>>);

/// One training step's loss, logits and summed gradients on `world` ranks: rank 0 holds
/// `model`, the others `other` (replaced by rank 0's parameters), the dropout seeds `seeds`
/// on rank 0 (the others draw none: rank 0's reach them).
fn ranks(
    model: &GnnModel<B>,
    other: &GnnModel<B>,
    adj: Arc<Csr>,
    pg: Arc<PartitionedGraph>,
    h: Arc<HostInputs>,
    seeds: StepSeeds<B>,
) -> Result<Vec<RankResult>, DistError> {
    let world = pg.parts.len();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let addr = listener.local_addr().expect("address").to_string();
    let mut listener = Some(listener);
    let handles: Vec<_> = (0..world)
        .map(|rank| {
            let (adj, pg, h) = (adj.clone(), pg.clone(), h.clone());
            let model = if rank == 0 { model.clone() } else { other.clone() };
            let seeds = if rank == 0 { Some(seeds.clone()) } else { None };
            let mut cfg = TcpCommConfig::new(rank, world, addr.clone());
            cfg.connect_timeout = Duration::from_secs(30);
            let listener = if rank == 0 { listener.take() } else { None };
            std::thread::spawn(move || -> Result<_, DistError> {
                let comm = Comm::new(
                    match listener {
                        Some(l) => TcpComm::host(l, &cfg),
                        None => TcpComm::connect(&cfg),
                    }
                    .map_err(DistError::Comm)?,
                );
                let dev = Default::default();
                let model = broadcast_model(model, &comm, &dev)?;
                let rg = RankGraph::<B>::new(&adj, &pg, comm.clone(), &dev, GraphOptions::default())?;
                let owned = rg.owned_ids().len();
                let x = Tensor::<B, 2>::from_data(TensorData::new(rg.own_rows(&h.x, D_IN), [owned, D_IN]), &dev);
                let y = Tensor::<B, 1, Int>::from_data(TensorData::new(rg.own_rows(&h.labels, 1), [owned]), &dev);
                let w = Tensor::<B, 1>::from_data(TensorData::new(rg.own_rows(&h.weights, 1), [owned]), &dev);
                let seeds = seeds.unwrap_or_else(|| StepSeeds::none(&model)).broadcast(&comm, &dev)?;
                let x = model.rank_input(&rg, x)?;
                let logits = model.forward_rank(&rg, &x, &seeds)?;
                let loss = rank_loss(&rg, logits.clone(), y, w)?;
                let local = loss.clone().into_scalar();
                let grads = GradientsParams::from_grads(loss.backward(), &model);
                let grads = sum_gradients(&model, grads, &comm).map_err(DistError::Comm)?;
                let total = comm.all_reduce_sum(&[local]).map_err(DistError::Comm)?[0];
                let mut v = Summed { grads: &grads, out: Vec::new() };
                model.visit(&mut v);
                let rows: Vec<f64> = logits.into_data().to_vec::<f64>().expect("f64");
                let per_node = rg
                    .owned_ids()
                    .iter()
                    .enumerate()
                    .map(|(i, &g)| (g, rows[i * CLASSES..(i + 1) * CLASSES].to_vec()))
                    .collect();
                Ok((total, per_node, v.out))
            })
        })
        .collect();
    handles.into_iter().map(|t| t.join().expect("a rank panicked")).collect()
}

fn configs() -> Vec<(&'static str, GnnModelConfig)> {
    let base = |conv| GnnModelConfig::new(conv, D_IN, 8, CLASSES).with_layers(3).with_dropout(0.4);
    vec![
        ("gcn classic", base(ConvKind::Gcn).with_linear_io(false).with_input_dropout(0.3)),
        ("sage mean relu", base(ConvKind::Sage).with_norm(NormKind::LayerNorm)),
        ("sage classic", base(ConvKind::Sage).with_linear_io(false).with_input_dropout(0.5)),
        ("sage sum", base(ConvKind::Sage).with_sage_aggr(SageAggr::Sum).with_input_dropout(0.2)),
        ("gin", base(ConvKind::Gin)),
        ("sage maxk", base(ConvKind::Sage).with_nonlin(Nonlinearity::Maxk { k: 3 })),
        (
            "gcn max-pool classic",
            base(ConvKind::Gcn)
                .with_nonlin(Nonlinearity::Maxpool { windows: 2, channels: 2, two_d: false })
                .with_linear_io(false),
        ),
        ("gat", base(ConvKind::Gat).with_gat_heads(2)),
    ]
}

#[test]
fn every_rank_run_equals_the_whole_graph() {
    let _turn = RNG.lock().unwrap_or_else(|e| e.into_inner());
    let plain = Arc::new(graph(1));
    // and with edge weights (some negative): the ranks' graphs keep the whole graph's weighted
    // degrees
    let w: Vec<f32> = random_values(plain.nnz(), 17).iter().map(|v| (v + 0.6) as f32).collect();
    let weighted = Arc::new(graph(1).with_weights(Some(w)).expect("one weight per edge"));
    let h = Arc::new(host_inputs());
    let dev = Default::default();
    for (world, method, adj) in [
        (1, PartitionMethod::Contiguous, &plain),
        (2, PartitionMethod::Metis, &plain),
        (3, PartitionMethod::Greedy, &plain),
        (3, PartitionMethod::Greedy, &weighted),
    ] {
        let part = partition(&adj, &PartitionOptions { parts: world, method, seed: 7 }).expect("partition");
        let pg = Arc::new(PartitionedGraph::build(&adj, &part).expect("parts"));
        assert!(world == 1 || pg.parts.iter().any(|l| !l.halo.is_empty()), "{world} ranks exchange nothing");
        for (name, cfg) in configs() {
            B::seed(&dev, 11);
            let model: GnnModel<B> = cfg.init(&dev).expect("valid model");
            model.initialise_parameters();
            B::seed(&dev, 12);
            let other: GnnModel<B> = cfg.init(&dev).expect("valid model");
            other.initialise_parameters();
            let want = whole(&model, &adj, h.tensors(&dev), 5);
            B::seed(&dev, 5);
            let seeds = StepSeeds::draw(&model, &dev);
            let got = ranks(&model, &other, adj.clone(), pg.clone(), h.clone(), seeds).expect("the ranks ran");
            let weights = if adj.weights().is_some() { ", weighted" } else { "" };
            let label = format!("{name}, {world} ranks ({method:?}){weights}");
            let mut seen = 0;
            for (r, (loss, rows, grads)) in got.iter().enumerate() {
                assert!(
                    (loss - want.loss).abs() < 1e-9 * want.loss.abs().max(1.0),
                    "{label}: rank {r} loss {loss} vs {}",
                    want.loss
                );
                for (g, z) in rows {
                    let g = *g as usize;
                    let d = max_diff(z, &want.logits[g * CLASSES..(g + 1) * CLASSES]);
                    assert!(d < 1e-9, "{label}: logits of node {g} differ by {d}");
                    seen += 1;
                }
                assert_eq!(grads.len(), want.grads.len());
                for (k, (a, b)) in want.grads.iter().zip(grads).enumerate() {
                    assert!(!a.is_empty(), "{label}: parameter {k} has no gradient");
                    let d = max_diff(a, b);
                    assert!(d < 1e-9, "{label}: rank {r}: gradient of parameter {k} differs by {d}");
                }
            }
            assert_eq!(seen, N, "{label}: every node's logits once");
        }
    }
}

#[test]
fn mismatched_partitions_are_refused() {
    let _turn = RNG.lock().unwrap_or_else(|e| e.into_inner());
    let adj = Arc::new(graph(2));
    let dev = Default::default();
    // three parts for two ranks: every rank says so before any exchange
    let part = partition(&adj, &PartitionOptions { parts: 3, method: PartitionMethod::Greedy, seed: 1 }).expect("p");
    let pg = PartitionedGraph::build(&adj, &part).expect("parts");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a free port");
    let addr = listener.local_addr().expect("address").to_string();
    let other = std::thread::spawn(move || TcpComm::connect(&TcpCommConfig::new(1, 2, addr)).map(Comm::new));
    let comm = Comm::new(TcpComm::host(listener, &TcpCommConfig::new(0, 2, "")).expect("rank 0"));
    let _peer = other.join().expect("rank 1").expect("rank 1 joined");
    let err = RankGraph::<B>::new(&adj, &pg, comm, &dev, GraphOptions::default()).expect_err("3 parts for 2 ranks");
    assert!(err.to_string().contains("3 parts for 2 ranks"), "{err}");
}
