//! Every dataset loader, on the shared datasets or on fixtures written here (OGB, GraphSAINT).

mod common;

use burn_sparse_gnn::BuildOptions;
use common::{datasets, tmp};
use flate2::write::GzEncoder;
use std::io::Write;
use train_app::datasets::load;
use train_app::npyio::write;

#[test]
fn npy_folder_cora_with_its_standard_split() {
    let d = load(datasets().join("npy/cora").to_str().unwrap(), BuildOptions::default()).unwrap();
    let s = d.stats();
    assert_eq!((s.nodes, s.edges, s.features, s.classes), (2708, 10556, 1433, 7));
    assert_eq!(s.split_sizes, Some([140, 500, 1000]));
    assert!(s.symmetric && s.self_loops == 0);
}

#[test]
fn npy_folder_without_split_citeseer_keeps_unlabeled_nodes() {
    let d = load(datasets().join("npy/citeseer").to_str().unwrap(), BuildOptions::default()).unwrap();
    assert_eq!(d.num_nodes(), 3327);
    assert_eq!(d.labels().iter().filter(|&&l| l < 0).count(), 15);
    let d = load(datasets().join("npy/coauthor_cs").to_str().unwrap(), BuildOptions::default()).unwrap();
    assert!(d.split().is_none());
    let d = train_app::training::apply_split(d, Some("per-class:20,30"), 1).unwrap();
    assert_eq!(d.split().unwrap().train.len(), 20 * 15);
    assert_eq!(d.split().unwrap().valid.len(), 30 * 15);
}

#[test]
fn gnn_benchmark_npz_is_symmetrised() {
    let d = load(datasets().join("gnn-benchmark/cora_ml.npz").to_str().unwrap(), BuildOptions::default()).unwrap();
    let s = d.stats();
    assert_eq!((s.nodes, s.features, s.classes), (2995, 2879, 7));
    assert!(s.symmetric);
    // polblogs has no attributes: one-hot node features
    let p = load(datasets().join("gnn-benchmark/polblogs.npz").to_str().unwrap(), BuildOptions::default()).unwrap();
    assert_eq!(p.features().width(), p.num_nodes());
}

#[test]
fn heterophilous_npz_has_ten_splits() {
    let d = load(datasets().join("heterophilous/minesweeper.npz").to_str().unwrap(), BuildOptions::default()).unwrap();
    assert_eq!(d.num_nodes(), 10_000);
    assert_eq!(d.alternative_splits().len(), 10);
    let k3 = train_app::training::apply_split(d.clone(), Some("mask:3"), 0).unwrap();
    assert_eq!(k3.split(), Some(&d.alternative_splits()[3]));
    assert_ne!(d.alternative_splits()[0], d.alternative_splits()[3]);
    assert!(train_app::training::apply_split(d, Some("mask:10"), 0).is_err());
    let directed =
        load(datasets().join("heterophilous/chameleon_directed.npz").to_str().unwrap(), BuildOptions::default())
            .unwrap();
    assert!(!directed.stats().symmetric);
}

fn gz(path: &std::path::Path, text: &str) {
    let f = std::fs::File::create(path).unwrap();
    let mut e = GzEncoder::new(f, flate2::Compression::default());
    e.write_all(text.as_bytes()).unwrap();
    e.finish().unwrap();
}

fn ogb_fixture(dir: &std::path::Path) {
    std::fs::create_dir_all(dir.join("raw")).unwrap();
    std::fs::create_dir_all(dir.join("split/time")).unwrap();
    gz(&dir.join("raw/edge.csv.gz"), "0,1\n1,2\n2,3\n3,0\n4,0\n");
    gz(&dir.join("raw/node-feat.csv.gz"), "0.1,0.2\n0.3,0.4\n-1,2\n0,0\n5,6\n");
    gz(&dir.join("raw/node-label.csv.gz"), "0\n1\n2\n1\n0\n");
    gz(&dir.join("raw/num-node-list.csv.gz"), "5\n");
    gz(&dir.join("split/time/train.csv.gz"), "0\n1\n");
    gz(&dir.join("split/time/valid.csv.gz"), "2\n");
    gz(&dir.join("split/time/test.csv.gz"), "3\n4\n");
}

#[test]
fn ogb_raw_folder_fixture() {
    let dir = tmp("ogb").join("ogbn_fixture");
    ogb_fixture(&dir);
    let d = load(dir.to_str().unwrap(), BuildOptions::default()).unwrap();
    let s = d.stats();
    assert_eq!((s.nodes, s.edges, s.features, s.classes), (5, 10, 2, 3));
    assert!(s.symmetric);
    assert_eq!(d.split().unwrap().test, vec![3, 4]);
    // a malformed row names the file and the line
    gz(&dir.join("raw/node-feat.csv.gz"), "0.1,0.2\n0.3\n-1,2\n0,0\n5,6\n");
    let err = load(dir.to_str().unwrap(), BuildOptions::default()).unwrap_err().to_string();
    assert!(err.contains("node-feat.csv.gz") && err.contains("line 2"), "{err}");
}

fn saint_fixture(dir: &std::path::Path) {
    std::fs::create_dir_all(dir).unwrap();
    use npyz::WriterBuilder;
    let mut w = npyz::npz::NpzWriter::create(dir.join("adj_full.npz")).unwrap();
    // symmetric 4-node path 0-1-2-3
    for (name, v) in [("indptr", vec![0i64, 1, 3, 5, 6]), ("indices", vec![1, 0, 2, 1, 3, 2]), ("shape", vec![4, 4])] {
        let mut a = w
            .array::<i64>(name, Default::default())
            .unwrap()
            .default_dtype()
            .shape(&[v.len() as u64])
            .begin_nd()
            .unwrap();
        a.extend(v.iter().copied()).unwrap();
        a.finish().unwrap();
    }
    let mut a = w.array::<f32>("data", Default::default()).unwrap().default_dtype().shape(&[6]).begin_nd().unwrap();
    a.extend([1.0f32; 6]).unwrap();
    a.finish().unwrap();
    write(&dir.join("feats.npy"), &[4, 3], &[0.5f32; 12]).unwrap();
    std::fs::write(dir.join("class_map.json"), r#"{"0": 0, "1": 1, "2": 1, "3": 0}"#).unwrap();
    std::fs::write(dir.join("role.json"), r#"{"tr": [0, 1], "va": [2], "te": [3]}"#).unwrap();
}

#[test]
fn graphsaint_folder_fixture() {
    let dir = tmp("saint").join("saint_fixture");
    saint_fixture(&dir);
    let d = load(dir.to_str().unwrap(), BuildOptions::default()).unwrap();
    let s = d.stats();
    assert_eq!((s.nodes, s.edges, s.features, s.classes), (4, 6, 3, 2));
    assert_eq!(s.split_sizes, Some([2, 1, 1]));
    std::fs::write(dir.join("class_map.json"), r#"{"0": [1, 0], "1": [0, 1], "2": [0, 1], "3": [1, 0]}"#).unwrap();
    let err = load(dir.to_str().unwrap(), BuildOptions::default()).unwrap_err().to_string();
    assert!(err.contains("multi-label"), "{err}");
}

#[test]
fn built_in_sbm_and_npy_round_trip() {
    let d = load("sbm", BuildOptions::default()).unwrap();
    let dir = tmp("sbm-roundtrip");
    train_app::datasets::npy::save(&d, &dir).unwrap();
    let back = load(dir.to_str().unwrap(), BuildOptions::default()).unwrap();
    assert_eq!(back.adjacency(), d.adjacency());
    assert_eq!(back.labels(), d.labels());
    assert_eq!(back.features().to_dense(), d.features().to_dense());
    assert_eq!(back.split(), d.split());
}
