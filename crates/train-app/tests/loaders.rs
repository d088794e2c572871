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

/// Writes `data` (listed in C order) as a Fortran-order `.npy` of `shape` (2-D).
fn write_fortran_i64(path: &std::path::Path, shape: [usize; 2], data: &[i64]) {
    use npyz::WriterBuilder;
    let (r, c) = (shape[0], shape[1]);
    let col_major: Vec<i64> = (0..c).flat_map(|j| (0..r).map(move |i| data[i * c + j])).collect();
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&[r as u64, c as u64])
        .order(npyz::Order::Fortran)
        .writer(std::fs::File::create(path).unwrap())
        .begin_nd()
        .unwrap();
    w.extend(col_major).unwrap();
    w.finish().unwrap();
}

#[test]
fn npy_folder_with_fortran_order_edges_is_the_same_graph() {
    let src = datasets().join("npy/cora");
    let dir = tmp("fortran-npy").join("cora");
    std::fs::create_dir_all(&dir).unwrap();
    for f in std::fs::read_dir(&src).unwrap() {
        let f = f.unwrap().path();
        std::fs::copy(&f, dir.join(f.file_name().unwrap())).unwrap();
    }
    let edges = train_app::npyio::read_ints(&src.join("edges_sym.npy")).unwrap();
    write_fortran_i64(&dir.join("edges_sym.npy"), [2, edges.shape[1]], &edges.data);
    let header = std::fs::read(dir.join("edges_sym.npy")).unwrap();
    assert!(String::from_utf8_lossy(&header[..128]).contains("'fortran_order': True"));
    let c = load(src.to_str().unwrap(), BuildOptions::default()).unwrap();
    let f = load(dir.to_str().unwrap(), BuildOptions::default()).unwrap();
    assert_eq!(f.adjacency(), c.adjacency());
    assert!(f.stats().symmetric);
}

#[test]
fn heterophilous_masks_in_fortran_order_give_the_official_splits() {
    // texas.npz stores its [10, 183] masks in Fortran order; the official split 0 (numpy's
    // reading) has 87 / 59 / 37 nodes, train starting 0, 2, 4, 8, 11
    let path = datasets().join("heterophilous/texas.npz");
    let d = load(path.to_str().unwrap(), BuildOptions::default()).unwrap();
    let s0 = &d.alternative_splits()[0];
    assert_eq!((s0.train.len(), s0.valid.len(), s0.test.len()), (87, 59, 37));
    assert_eq!(&s0.train[..5], &[0, 2, 4, 8, 11]);
    // every split against the masks read through npyz's own strides
    let mut a = npyz::npz::NpzArchive::open(&path).unwrap();
    for (name, pick) in [("train_masks", 0), ("val_masks", 1), ("test_masks", 2)] {
        let npy = a.by_name(name).unwrap().unwrap();
        let strides: Vec<usize> = npy.strides().iter().map(|&s| s as usize).collect();
        assert_eq!(npy.order(), npyz::Order::Fortran);
        let flat = npy.into_vec::<bool>().unwrap();
        for (k, split) in d.alternative_splits().iter().enumerate() {
            let want: Vec<u32> =
                (0..183).filter(|&i| flat[k * strides[0] + i * strides[1]]).map(|i| i as u32).collect();
            let got = [&split.train, &split.valid, &split.test][pick];
            assert_eq!(got, &want, "{name} split {k}");
        }
    }
    // the splits are disjoint
    for s in d.alternative_splits() {
        assert!(s.train.iter().all(|i| !s.valid.contains(i) && !s.test.contains(i)));
    }
}

#[test]
fn fortran_order_npz_features_and_edges_are_read_in_c_order() {
    use npyz::WriterBuilder;
    // a heterophilous-layout archive whose every 2-D array is in Fortran order
    let dir = tmp("fortran-npz");
    let path = dir.join("tiny_undirected.npz");
    let mut w = npyz::npz::NpzWriter::create(&path).unwrap();
    let n = 4usize;
    let feats: Vec<f32> = (0..n * 3).map(|v| v as f32).collect();
    let fcol: Vec<f32> = (0..3).flat_map(|j| (0..n).map(move |i| (i * 3 + j) as f32)).collect();
    let mut a = w
        .array::<f32>("node_features", Default::default())
        .unwrap()
        .default_dtype()
        .shape(&[n as u64, 3])
        .order(npyz::Order::Fortran)
        .begin_nd()
        .unwrap();
    a.extend(fcol).unwrap();
    a.finish().unwrap();
    let mut a = w.array::<i64>("node_labels", Default::default()).unwrap().default_dtype().shape(&[4]).begin_nd().unwrap();
    a.extend([0i64, 1, 0, 1]).unwrap();
    a.finish().unwrap();
    // edges 0-1, 1-2, 2-3 as [E, 2], column-major
    let edges = [[0i64, 1], [1, 2], [2, 3]];
    let ecol: Vec<i64> = (0..2).flat_map(|j| edges.iter().map(move |e| e[j])).collect();
    let mut a = w
        .array::<i64>("edges", Default::default())
        .unwrap()
        .default_dtype()
        .shape(&[3, 2])
        .order(npyz::Order::Fortran)
        .begin_nd()
        .unwrap();
    a.extend(ecol).unwrap();
    a.finish().unwrap();
    for (name, m) in [("train_masks", [1u8, 1, 0, 0]), ("val_masks", [0, 0, 1, 0]), ("test_masks", [0, 0, 0, 1])] {
        let mut a =
            w.array::<bool>(name, Default::default()).unwrap().default_dtype().shape(&[1, 4]).begin_nd().unwrap();
        a.extend(m.iter().map(|&b| b != 0)).unwrap();
        a.finish().unwrap();
    }
    drop(w);
    let d = load(path.to_str().unwrap(), BuildOptions::default()).unwrap();
    assert_eq!(d.features().to_dense(), feats);
    // "undirected" in the name: symmetrised, 6 directed edges
    assert_eq!(d.stats().edges, 6);
    assert!(d.stats().symmetric);
    assert_eq!(d.split().unwrap().train, vec![0, 1]);
}
