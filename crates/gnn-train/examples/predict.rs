//! Saving a model, loading it back with a shape check, and predicting every node: class
//! probabilities, predicted classes and the last hidden layer's embeddings.
//!
//! The model here is freshly initialised (training is `train_custom_model`'s subject), so its
//! predictions are near chance; `train-app train --out RUN` saves a trained one the same way
//! (`RUN/model.mpk`), and `train-app predict RUN` does what this example does for a run folder.
//!
//! `cargo run --release -p gnn-train --example predict`

mod common;

use burn::module::Module;
use burn::record::{FullPrecisionSettings, NamedMpkFileRecorder};
use burn::tensor::{Tensor, TensorData};
use burn_sparse_gnn::{Cpu, Graph, GraphOptions};
use gnn_models::{ConvKind, GnnModelConfig};
use gnn_train::{embeddings, load_checked, predict, write_safetensors};

fn main() {
    let device = Default::default();
    let data = common::Sbm { nodes: 300, classes: 3, ..Default::default() }.generate();
    let d_in = data.features().width();
    let cfg = GnnModelConfig::new(ConvKind::Sage, d_in, 16, data.num_classes()).with_layers(2);
    let dir = std::env::temp_dir().join("gnn-train-predict-example");
    std::fs::create_dir_all(&dir).expect("temporary folder");
    // saved as Burn's named MessagePack (what train-app writes as model.mpk), and as
    // safetensors for Python (linear weights [in, out]: PyTorch's nn.Linear takes their transpose)
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
    // predict every node: the whole graph goes through the model at once
    let graph = Graph::<Cpu>::new(data.adjacency(), &device, GraphOptions::default());
    let x = Tensor::<Cpu, 2>::from_data(TensorData::new(data.features().to_dense(), [data.num_nodes(), d_in]), &device);
    let p = predict(&loaded, &graph, x.clone());
    println!("{} nodes, {} classes; first predictions {:?}", p.nodes, p.classes, &p.predictions[..10]);
    let emb = embeddings(&cfg, &loaded, &graph, x).expect("matching configuration").expect("a hidden layer");
    println!("embeddings (the last hidden layer's output): {:?}", emb.dims());
    println!("weights for Python: {}", dir.join("model.safetensors").display());
}
