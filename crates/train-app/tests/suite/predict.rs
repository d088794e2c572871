//! `predict` through the command line: datasets without labels, the listed nodes, embeddings,
//! and the errors of ids or datasets that do not fit the run.

use crate::cli::{app, fails_with, tiny, train_on};
use crate::common::tmp;
use burn_sparse_gnn::{BuildOptions, Csr, Features, GraphData};
use std::path::{Path, PathBuf};
use train_app::npyio::write;

/// The tiny dataset with `features` features per node and every label -1 (no split).
fn unlabeled(name: &str, features: usize) -> PathBuf {
    let dir = tmp(name);
    let adj = Csr::from_edges(6, &[0, 1, 2, 3, 4], &[1, 2, 3, 4, 5], None, BuildOptions::undirected()).unwrap();
    let x = Features::dense(6, features, (0..6 * features).map(|v| (v % 18) as f32 / 10.0).collect()).unwrap();
    let d = GraphData::new("unlabeled", adj, x, vec![-1; 6], 0, None).unwrap();
    train_app::datasets::npy::save(&d, &dir).unwrap();
    dir
}

/// `predict RUN --out OUT` with `extra`: (exit code, output).
fn predict(run: &Path, out: &Path, extra: &[&str]) -> (i32, String) {
    let mut args = vec!["predict", "--backend", "cpu", run.to_str().unwrap(), "--out", out.to_str().unwrap()];
    args.extend_from_slice(extra);
    app(&args)
}

fn floats(path: &Path) -> (Vec<usize>, Vec<f32>) {
    let a = train_app::npyio::read_floats(path).unwrap();
    (a.shape, a.data)
}

/// The rows `ids` of a row-major matrix `width` wide.
fn rows(m: &(Vec<usize>, Vec<f32>), width: usize, ids: &[usize]) -> Vec<f32> {
    ids.iter().flat_map(|&i| m.1[i * width..(i + 1) * width].to_vec()).collect()
}

#[test]
fn predict_needs_no_labels_and_writes_the_listed_nodes() {
    let dir = tiny("predict-unlabeled");
    let (code, text) = train_on(&dir, &["--model", "sage", "--checkpoints", "false"]);
    assert_eq!(code, 0, "{text}");
    let run = dir.join("run");
    let (all, none) = (tmp("predict-unlabeled-all"), tmp("predict-unlabeled-none"));
    let (code, text) = predict(&run, &all, &[]);
    assert_eq!(code, 0, "{text}");
    // every label -1, no split: predictions for every node, the same as on the labeled graph
    let data = unlabeled("predict-unlabeled-data", 3);
    let (code, text) = predict(&run, &none, &["--dataset", data.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("6 nodes, 2 classes, embeddings 16 wide"), "{text}");
    for file in ["probabilities.npy", "embeddings.npy"] {
        assert_eq!(floats(&all.join(file)), floats(&none.join(file)), "{file}");
    }
    let (p, e) = (floats(&none.join("probabilities.npy")), floats(&none.join("embeddings.npy")));
    assert_eq!((p.0.as_slice(), e.0.as_slice()), (&[6, 2][..], &[6, 16][..]));
    let y = train_app::npyio::read_ints(&none.join("predictions.npy")).unwrap();
    assert_eq!(y.shape, [6]);
    // eval and train need labels
    fails_with(
        app(&["eval", "--backend", "cpu", run.to_str().unwrap(), "--dataset", data.to_str().unwrap()]),
        "has no labeled nodes",
    );
    // --nodes: those rows only, in the file's order (int64 or int32)
    let ids = dir.join("ids.npy");
    write(&ids, &[3], &[4i64, 0, 2]).unwrap();
    let some = tmp("predict-unlabeled-some");
    let (code, text) = predict(&run, &some, &["--dataset", data.to_str().unwrap(), "--nodes", ids.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("3 nodes of 6, 2 classes"), "{text}");
    let (sp, se) = (floats(&some.join("probabilities.npy")), floats(&some.join("embeddings.npy")));
    assert_eq!((sp.0.as_slice(), se.0.as_slice()), (&[3, 2][..], &[3, 16][..]));
    assert_eq!(sp.1, rows(&p, 2, &[4, 0, 2]));
    assert_eq!(se.1, rows(&e, 16, &[4, 0, 2]));
    let sy = train_app::npyio::read_ints(&some.join("predictions.npy")).unwrap();
    assert_eq!(sy.data, [y.data[4], y.data[0], y.data[2]]);
    let ids32 = dir.join("ids32.npy");
    write(&ids32, &[1], &[5i32]).unwrap();
    let (code, text) = predict(&run, &some, &["--nodes", ids32.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert_eq!(floats(&some.join("probabilities.npy")).1, rows(&p, 2, &[5]));
    // bad ids: the file and the id named
    for (name, values, needle) in [
        ("past.npy", vec![1i64, 6], "entry 1 is node id 6, outside 0..6"),
        ("negative.npy", vec![-1], "entry 0 is node id -1, outside 0..6"),
        ("twice.npy", vec![2, 3, 2], "node id 2 is listed twice (entries 0 and 2)"),
        ("empty.npy", vec![], "holds no node ids"),
    ] {
        let f = dir.join(name);
        write(&f, &[values.len()], &values).unwrap();
        let r = predict(&run, &tmp("predict-bad"), &["--nodes", f.to_str().unwrap()]);
        fails_with(r.clone(), needle);
        assert!(r.1.contains(f.to_str().unwrap()), "{}", r.1);
    }
    let f = dir.join("floats.npy");
    write(&f, &[2], &[1.0f32, 2.0]).unwrap();
    fails_with(predict(&run, &tmp("predict-bad"), &["--nodes", f.to_str().unwrap()]), "cannot be read as integers");
    // a graph of another feature width: both widths named
    let wide = unlabeled("predict-unlabeled-wide", 4);
    let r = predict(&run, &tmp("predict-bad"), &["--dataset", wide.to_str().unwrap()]);
    fails_with(r.clone(), "was trained on 3 features and 2 classes");
    assert!(r.1.contains("has 4 features and no labels: predict needs 3 features per node"), "{}", r.1);
}

#[test]
fn a_two_layer_gat_predicts_embeddings() {
    let dir = tiny("predict-gat");
    let (code, text) = train_on(&dir, &["--model", "gat", "--layers", "2", "--heads", "2", "--checkpoints", "false"]);
    assert_eq!(code, 0, "{text}");
    let run = dir.join("run");
    let out = tmp("predict-gat-out");
    let (code, text) = predict(&run, &out, &["--dataset", unlabeled("predict-gat-data", 3).to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("embeddings 16 wide"), "{text}");
    let (shape, e) = floats(&out.join("embeddings.npy"));
    assert_eq!(shape, [6, 16]);
    assert!(e.iter().all(|v| v.is_finite()));
    // the graph prepared as training prepared it (self-loops, normalised features): the test
    // nodes 4 and 5 (labels 0, 1) are predicted as eval scores them
    let (code, eval) = app(&["eval", "--backend", "cpu", run.to_str().unwrap()]);
    assert_eq!(code, 0, "{eval}");
    let test_acc: f64 = eval.split("test ").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    let y = train_app::npyio::read_ints(&out.join("predictions.npy")).unwrap();
    let correct = (y.data[4] == 0) as usize + (y.data[5] == 1) as usize;
    assert_eq!(correct as f64 / 2.0, test_acc, "{eval}");
}
