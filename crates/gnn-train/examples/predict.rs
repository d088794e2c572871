//! Saving a trained model, loading it back with a shape check, and predicting every node.
//!
//! `train-app train --out RUN` writes `RUN/model.mpk` the same way; `train-app predict RUN`
//! does what this example does for a run folder.
//!
//! `cargo run --release -p gnn-train --example predict`

mod common;

use burn::module::Module;
use burn::record::{FullPrecisionSettings, NamedMpkFileRecorder};
use burn::tensor::{Tensor, TensorData};
use burn_sparse_gnn::{Cpu, Graph, GraphOptions};
use gnn_models::{ConvKind, GnnModelConfig};
use gnn_train::{load_checked, predict, write_safetensors};

fn main() {
    let device = Default::default();
    let data = common::toy_graph(300, 3);
    let cfg = GnnModelConfig::new(ConvKind::Sage, 3, 16, 3).with_layers(2);
    let dir = std::env::temp_dir().join("gnn-train-predict-example");
    std::fs::create_dir_all(&dir).expect("temporary folder");
    // a model as training would leave it (untrained here), saved as Burn's named MessagePack
    let model = cfg.init::<Cpu>(&device).expect("valid configuration");
    let recorder = NamedMpkFileRecorder::<FullPrecisionSettings>::new();
    model.clone().save_file(dir.join("model"), &recorder).expect("model saved");
    write_safetensors(&model, &dir.join("model.safetensors")).expect("safetensors written");
    // load into a fresh model of the same configuration; a record of another shape is an error
    let fresh = cfg.init::<Cpu>(&device).expect("valid configuration");
    let loaded = load_checked(fresh, &dir.join("model"), &device).expect("matching record");
    let mut wrong = cfg.clone();
    wrong.hidden = 8;
    let refused = load_checked(wrong.init::<Cpu>(&device).expect("valid configuration"), &dir.join("model"), &device);
    println!("a record of another width is refused: {}", refused.expect_err("shapes differ"));
    // predict every node
    let graph = Graph::<Cpu>::new(data.adjacency(), &device, GraphOptions::default());
    let x = Tensor::<Cpu, 2>::from_data(TensorData::new(data.features().to_dense(), [data.num_nodes(), 3]), &device);
    let p = predict(&loaded, &graph, x);
    println!("{} nodes, {} classes; first predictions {:?}", p.nodes, p.classes, &p.predictions[..10]);
    println!("weights for Python: {}", dir.join("model.safetensors").display());
}
