//! Every dataset loader, on the shared datasets or on fixtures written here (OGB, GraphSAINT).

use crate::common::{datasets, tmp};
use burn_sparse_gnn::BuildOptions;
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
    let mut a =
        w.array::<i64>("node_labels", Default::default()).unwrap().default_dtype().shape(&[4]).begin_nd().unwrap();
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

// ---- splits, limits and memory bombs -------------------------------------------------------

use crate::common::{i64_bytes, raw_npy, tiny_data, zip, ZipEntry};
use burn_sparse_gnn::{Features, Split};
use train_app::datasets::npy::save;
use train_app::AppError;

fn load_dir(dir: &std::path::Path) -> train_app::Result<burn_sparse_gnn::GraphData> {
    load(dir.to_str().unwrap(), BuildOptions::default())
}

fn err_of(dir: &std::path::Path) -> String {
    load_dir(dir).map(|_| ()).unwrap_err().to_string()
}

/// A saved copy of the 6-node dataset in a fresh folder.
fn tiny_dir(name: &str, sparse: bool) -> std::path::PathBuf {
    let dir = tmp(name).join("tiny");
    save(&tiny_data(sparse), &dir).unwrap();
    dir
}

#[test]
fn every_real_dataset_loads_with_non_empty_disjoint_splits() {
    let root = datasets();
    let mut paths = Vec::new();
    for sub in ["npy", "gnn-benchmark", "heterophilous"] {
        let mut entries: Vec<_> = std::fs::read_dir(root.join(sub)).unwrap().map(|e| e.unwrap().path()).collect();
        entries.sort();
        paths.extend(entries.into_iter().filter(|p| p.is_dir() || p.extension().is_some_and(|e| e == "npz")));
    }
    assert_eq!(paths.len(), 4 + 4 + 15, "{paths:?}");
    for p in paths {
        let d = load(p.to_str().unwrap(), BuildOptions::default()).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        let n = d.num_nodes();
        for s in d.split().into_iter().chain(d.alternative_splits()) {
            assert_eq!(s.check(n), Ok(()), "{}", p.display());
        }
        // the splits the trainer generates are non-empty and disjoint too
        for spec in ["per-class:20,30", "random:0.6,0.2"] {
            let g = train_app::training::apply_split(d.clone(), Some(spec), 1)
                .unwrap_or_else(|e| panic!("{} {spec}: {e}", p.display()));
            assert_eq!(g.split().unwrap().check(n), Ok(()), "{} {spec}", p.display());
        }
        assert!(d.stats().to_string().lines().all(|l| l.len() < 600), "{}", p.display());
    }
}

#[test]
fn overlapping_or_empty_split_files_are_refused_naming_the_split_and_a_node() {
    let dir = tiny_dir("split-overlap", false);
    write(&dir.join("test_idx.npy"), &[2], &[0i64, 1]).unwrap();
    let e = err_of(&dir);
    assert!(e.contains("test_idx.npy: the train and test splits overlap: node 0 is in both (2 shared nodes)"), "{e}");
    write(&dir.join("test_idx.npy"), &[2], &[4i64, 5]).unwrap();
    write(&dir.join("val_idx.npy"), &[2], &[1i64, 2]).unwrap();
    let e = err_of(&dir);
    assert!(e.contains("the train and valid splits overlap: node 1"), "{e}");
    write(&dir.join("val_idx.npy"), &[0], &[0i64; 0]).unwrap();
    let e = err_of(&dir);
    assert!(e.contains("the valid split is empty"), "{e}");
    write(&dir.join("val_idx.npy"), &[2], &[2i64, 3]).unwrap();
    write(&dir.join("test_idx.npy"), &[0], &[0i64; 0]).unwrap();
    assert!(err_of(&dir).contains("the test split is empty"));
    write(&dir.join("test_idx.npy"), &[2], &[4i64, 5]).unwrap();
    assert!(load_dir(&dir).is_ok());
    // a missing third file is named
    std::fs::remove_file(dir.join("val_idx.npy")).unwrap();
    let e = err_of(&dir);
    assert!(e.contains("val_idx.npy: file not found"), "{e}");
}

#[test]
fn split_files_saved_as_masks_are_read_as_the_nodes_they_set() {
    let dir = tiny_dir("split-masks", false);
    let want = tiny_data(false).split().cloned();
    let parts = [("train_idx.npy", [0, 1]), ("val_idx.npy", [2, 3]), ("test_idx.npy", [4, 5])];
    // PyG's masks saved as they are: numpy bools, one per node
    for (f, ids) in parts {
        write(&dir.join(f), &[6], &(0..6).map(|i| ids.contains(&i)).collect::<Vec<bool>>()).unwrap();
    }
    assert_eq!(load_dir(&dir).unwrap().split().cloned(), want);
    // the same masks as 0 / 1 integers (node 0 would be listed four times as an id)
    for (f, ids) in parts {
        write(&dir.join(f), &[6], &(0..6).map(|i| ids.contains(&i) as i64).collect::<Vec<i64>>()).unwrap();
    }
    assert_eq!(load_dir(&dir).unwrap().split().cloned(), want);
    // a bool mask of another length than the node count
    write(&dir.join("test_idx.npy"), &[5], &[false, false, false, false, true]).unwrap();
    let e = err_of(&dir);
    assert!(e.contains("test_idx.npy: a boolean mask of 5 entries, but the dataset has 6 nodes"), "{e}");
    // an edge-list folder's CSV masks too
    let dir = edgelist_dir(
        "edgelist-masks",
        &[
            ("edges.csv", PATH_EDGES),
            ("labels.csv", LABELS_CSV),
            ("train_idx.csv", "1\n1\n0\n0\n0\n0\n"),
            ("val_idx.csv", "0\n0\n1\n1\n0\n0\n"),
            ("test_idx.csv", "0\n0\n0\n0\n1\n1\n"),
        ],
    );
    assert_eq!(load_dir(&dir).unwrap().split().cloned(), want);
}

#[test]
fn a_generated_split_with_an_empty_part_is_refused() {
    let d = tiny_data(false);
    let e = train_app::training::apply_split(d.clone(), Some("random:0.5,0"), 1).unwrap_err().to_string();
    assert!(e.contains("VALID > 0") && e.contains("no split may be empty"), "{e}");
    let e = train_app::training::apply_split(d, Some("random:0.7,0.3"), 1).unwrap_err().to_string();
    assert!(e.contains("TRAIN + VALID < 1"), "{e}");
}

#[test]
fn a_declared_node_count_without_the_arrays_is_refused_before_allocating() {
    let dir = tiny_dir("num-nodes", false);
    write(&dir.join("num_nodes.npy"), &[], &[2_000_000_000i64]).unwrap();
    let e = load_dir(&dir).unwrap_err();
    assert!(matches!(e, AppError::Shape { .. }), "{e:?}");
    let e = e.to_string();
    assert!(
        e.contains("labels.npy: shape [6], expected [2000000000]: one label per node, as num_nodes.npy declares"),
        "{e}"
    );
    write(&dir.join("num_nodes.npy"), &[], &[3_000_000_000i64]).unwrap();
    let e = err_of(&dir);
    assert!(e.contains("num_nodes.npy: declares 3000000000 nodes, more than 2147483647"), "{e}");
}

/// A saved Cora-sized dataset (2,708 nodes, a path graph) with CSR features of width 3.
fn sparse_dir(name: &str) -> std::path::PathBuf {
    let n = 2708usize;
    let src: Vec<i64> = (0..n as i64 - 1).collect();
    let dst: Vec<i64> = (1..n as i64).collect();
    let adj = burn_sparse_gnn::Csr::from_edges(n, &src, &dst, None, BuildOptions::undirected()).unwrap();
    let ip: Vec<i64> = (0..=n as i64).collect();
    let ix: Vec<i64> = (0..n as i64).map(|i| i % 3).collect();
    let x = Features::sparse(n, 3, &ip, &ix, vec![0.5; n]).unwrap();
    let split = Split { train: vec![0, 1], valid: vec![2, 3], test: (4..n as u32).collect() };
    let labels = (0..n as i64).map(|i| i % 2).collect();
    let d = burn_sparse_gnn::GraphData::new("cora-sized", adj, x, labels, 2, Some(split)).unwrap();
    let dir = tmp(name).join("data");
    save(&d, &dir).unwrap();
    dir
}

#[test]
fn a_huge_declared_feature_width_is_refused_naming_the_file() {
    let dir = sparse_dir("feat-shape");
    assert!(dir.join("feat_shape.npy").exists() && !dir.join("feat_dense.npy").exists());
    write(&dir.join("feat_shape.npy"), &[2], &[2708i64, 2_000_000_000]).unwrap();
    let e = load_dir(&dir).unwrap_err();
    assert!(matches!(e, AppError::TooLarge { .. }), "{e:?}");
    let e = e.to_string();
    assert!(e.contains("feat_shape.npy: features of shape [2708, 2000000000] (the stored columns use only 3)"), "{e}");
    assert!(e.contains("needs 20176.17 GiB but the host's available memory is"), "{e}");
    write(&dir.join("feat_shape.npy"), &[2], &[2708i64, -4]).unwrap();
    assert!(err_of(&dir).contains("feat_shape.npy: declares features of shape [2708, -4]"));
    // a wider declared width that fits is fine (trailing unused features)
    write(&dir.join("feat_shape.npy"), &[2], &[2708i64, 10]).unwrap();
    assert_eq!(load_dir(&dir).unwrap().features().width(), 10);
}

#[test]
fn a_label_of_a_billion_is_refused_naming_the_node() {
    let dir = tiny_dir("label-1e9", false);
    write(&dir.join("labels.npy"), &[6], &[0i64, 1, 0, 1_000_000_000, 0, 1]).unwrap();
    let e = err_of(&dir);
    assert!(e.contains("labels.npy: node 3 has label 1000000000: class ids must be below 1000"), "{e}");
    write(&dir.join("labels.npy"), &[6], &[0i64, 1, 0, 999, 0, 1]).unwrap();
    assert_eq!(load_dir(&dir).unwrap().num_classes(), 1000);
}

/// An npz of the given `(name, npy bytes)` entries written with honest sizes.
fn npz_bytes(arrays: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let names: Vec<String> = arrays.iter().map(|(n, _)| format!("{n}.npy")).collect();
    let entries: Vec<ZipEntry> = arrays
        .iter()
        .zip(&names)
        .map(|((_, data), name)| ZipEntry { name, data, deflate: true, declared_size: None })
        .collect();
    zip(&entries)
}

#[test]
fn gnn_benchmark_without_attributes_keeps_one_hot_features_sparse() {
    let n = 200_000i64;
    let indptr: Vec<i64> = (0..=n).collect();
    let indices: Vec<i64> = (0..n).map(|i| (i + 1) % n).collect();
    let labels: Vec<i64> = (0..n).map(|i| i % 2).collect();
    let bytes = npz_bytes(&[
        ("adj_shape", raw_npy("<i8", false, "(2,)", &i64_bytes(&[n, n]))),
        ("adj_indptr", raw_npy("<i8", false, &format!("({},)", n + 1), &i64_bytes(&indptr))),
        ("adj_indices", raw_npy("<i8", false, &format!("({n},)"), &i64_bytes(&indices))),
        ("adj_data", raw_npy("<f4", false, &format!("({n},)"), &vec![0u8; 4 * n as usize])),
        ("labels", raw_npy("<i8", false, &format!("({n},)"), &i64_bytes(&labels))),
    ]);
    let path = tmp("one-hot").join("ring.npz");
    std::fs::write(&path, bytes).unwrap();
    let d = load(path.to_str().unwrap(), BuildOptions::default()).unwrap();
    assert!(matches!(d.features(), Features::Sparse { .. }));
    assert_eq!(d.features().width(), 200_000);
    assert_eq!(d.features().dense_bytes(), 160_000_000_000);
}

#[test]
fn an_npz_entry_that_inflates_beyond_its_declared_size_is_refused() {
    // the array declares 25M floats (100 MB), the archive says the entry holds 1,000 bytes: the
    // header is refused against the declared size and nothing is inflated
    let big = raw_npy("<f4", false, "(25000000,)", &vec![0u8; 100_000_000]);
    let bytes = zip(&[ZipEntry { name: "node_features.npy", data: &big, deflate: true, declared_size: Some(1_000) }]);
    assert!(bytes.len() < 1_000_000, "{}", bytes.len());
    let path = tmp("zip-bomb").join("bomb.npz");
    std::fs::write(&path, bytes).unwrap();
    let start = std::time::Instant::now();
    let e = load(path.to_str().unwrap(), BuildOptions::default()).map(|_| ()).unwrap_err().to_string();
    assert!(e.contains("bomb.npz/node_features") && e.contains("truncated or corrupt"), "{e}");
    assert!(start.elapsed().as_secs() < 5);
}

#[test]
fn a_line_of_more_than_64_mib_in_an_ogb_file_is_refused_naming_file_and_line() {
    let dir = tmp("ogb-long-line").join("ogbn_fixture");
    ogb_fixture(&dir);
    let mut text = b"0.1,0.2\n".to_vec();
    text.extend(vec![b'7'; (64 << 20) + 10]);
    text.push(b'\n');
    crate::common::gz(&dir.join("raw/node-feat.csv.gz"), &text);
    let e = err_of(&dir);
    assert!(e.contains("node-feat.csv.gz: line 2 is longer than 67108864 bytes"), "{e}");
}

#[test]
fn ogb_labels_with_several_columns_or_bad_splits_are_refused() {
    let dir = tmp("ogb-multi").join("ogbn_fixture");
    ogb_fixture(&dir);
    gz(&dir.join("split/time/test.csv.gz"), "1\n4\n");
    let e = err_of(&dir);
    assert!(e.contains("the train and test splits overlap: node 1 is in both"), "{e}");
    gz(&dir.join("split/time/test.csv.gz"), "3\n4\n");
    gz(&dir.join("raw/node-label.csv.gz"), "0,1\n1,0\n2,0\n1,1\n0,0\n");
    let e = err_of(&dir);
    assert!(e.contains("node-label.csv.gz: line 1: 2 values, expected one per line"), "{e}");
}

#[test]
fn saint_splits_and_labels_are_checked() {
    let dir = tmp("saint-checks").join("saint_fixture");
    saint_fixture(&dir);
    std::fs::write(dir.join("role.json"), r#"{"tr": [0, 1], "va": [], "te": [3]}"#).unwrap();
    let e = err_of(&dir);
    assert!(e.contains("role.json: tr / va / te: the valid split is empty"), "{e}");
    std::fs::write(dir.join("role.json"), r#"{"tr": [0, 1], "va": [2], "te": [3]}"#).unwrap();
    std::fs::write(dir.join("class_map.json"), r#"{"0": 0, "1": 1, "2": 1, "3": 1000000000}"#).unwrap();
    let e = err_of(&dir);
    assert!(e.contains("class_map.json: node 3 has label 1000000000"), "{e}");
}

// ---- save: one layout per folder -----------------------------------------------------------

#[test]
fn saving_over_a_dataset_leaves_exactly_one_layout() {
    let dir = tmp("save-layouts").join("out");
    // dense features and a split first, then CSR features and no split
    save(&tiny_data(false), &dir).unwrap();
    assert!(dir.join("feat_dense.npy").exists() && dir.join("train_idx.npy").exists());
    std::fs::write(dir.join("notes.txt"), "mine").unwrap();
    let sparse = tiny_data(true);
    let no_split = burn_sparse_gnn::GraphData::new(
        "tiny",
        sparse.adjacency().clone(),
        sparse.features().clone(),
        sparse.labels().to_vec(),
        2,
        None,
    )
    .unwrap();
    save(&no_split, &dir).unwrap();
    let mut names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().to_string()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "adj_indices.npy",
            "adj_indptr.npy",
            "feat_data.npy",
            "feat_indices.npy",
            "feat_indptr.npy",
            "feat_shape.npy",
            "labels.npy",
            "notes.txt",
            "num_nodes.npy"
        ]
    );
    let back = load_dir(&dir).unwrap();
    assert_eq!(back.features(), no_split.features());
    assert!(back.split().is_none());
    // and back to dense: the CSR files go
    save(&tiny_data(false), &dir).unwrap();
    assert!(!dir.join("feat_shape.npy").exists() && dir.join("feat_dense.npy").exists());
    assert_eq!(load_dir(&dir).unwrap().features(), tiny_data(false).features());
}

#[test]
fn a_folder_with_two_feature_or_adjacency_layouts_is_refused() {
    let dir = tiny_dir("two-layouts", true);
    write(&dir.join("feat_dense.npy"), &[6, 3], &[0.0f32; 18]).unwrap();
    let e = err_of(&dir);
    assert!(e.contains("holds two feature layouts (feat_dense.npy and feat_shape.npy"), "{e}");
    std::fs::remove_file(dir.join("feat_dense.npy")).unwrap();
    write(&dir.join("edges_sym.npy"), &[2, 1], &[0i64, 1]).unwrap();
    let e = err_of(&dir);
    assert!(e.contains("holds two adjacency layouts (adj_indptr.npy + adj_indices.npy and edges_sym.npy)"), "{e}");
}

#[test]
fn structure_only_save_removes_an_older_dataset() {
    let dir = tiny_dir("structure-only", false);
    let adj = burn_sparse_gnn::Csr::from_edges(3, &[0], &[1], None, BuildOptions::undirected()).unwrap();
    write(&dir.join("num_nodes.npy"), &[], &[3i64]).unwrap();
    train_app::datasets::npy::save_adjacency(&adj, &dir).unwrap();
    let mut names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().to_string()).collect();
    names.sort();
    assert_eq!(names, ["adj_indices.npy", "adj_indptr.npy", "num_nodes.npy"]);
    let n = train_app::datasets::npy::read_num_nodes(&dir).unwrap();
    assert_eq!(train_app::datasets::npy::read_adjacency(&dir, n, BuildOptions::default()).unwrap(), adj);
}

// ---- edge-list folders and edge_index.npy --------------------------------------------------

/// An edge-list folder of the 6-node path with the given files (name, content).
fn edgelist_dir(name: &str, files: &[(&str, &str)]) -> std::path::PathBuf {
    let dir = tmp(name).join("graph");
    std::fs::create_dir_all(&dir).unwrap();
    for (f, text) in files {
        std::fs::write(dir.join(f), text).unwrap();
    }
    dir
}

const PATH_EDGES: &str =
    "# the path 0-1-2-3-4-5, both directions\nsource,target\n0,1\n1,0\n1,2\n2,1\n2,3\n3,2\n3,4\n4,3\n4,5\n5,4\n";
const LABELS_CSV: &str = "label\n0\n1\n0\n1\n0\n1\n";

#[test]
fn an_edge_list_csv_folder_is_the_same_graph_as_the_npy_folder() {
    let feats: String = (0..6).map(|i| format!("{},{},{}\n", i * 3, i * 3 + 1, i * 3 + 2)).collect();
    let feats: String = feats
        .lines()
        .map(|l| l.split(',').map(|v| format!("{}", v.parse::<f32>().unwrap() / 10.0)).collect::<Vec<_>>().join(","))
        .map(|l| l + "\n")
        .collect();
    let dir = edgelist_dir(
        "edgelist-csv",
        &[
            ("edges.csv", PATH_EDGES),
            ("labels.csv", LABELS_CSV),
            ("features.csv", &format!("f0,f1,f2\n{feats}")),
            ("train_idx.csv", "0\n1\n"),
            ("val_idx.csv", "2\n3\n"),
            ("test_idx.csv", "node\n4\n5\n"),
        ],
    );
    let d = load_dir(&dir).unwrap();
    let want = tiny_data(false);
    assert_eq!(d.adjacency(), want.adjacency());
    assert_eq!(d.features(), want.features());
    assert_eq!(d.labels(), want.labels());
    assert_eq!(d.split(), want.split());
    assert_eq!(d.name, "graph");
    // TSV with weights, no header, npy labels and split, no features (one-hot ids)
    let dir = edgelist_dir("edgelist-tsv", &[("edges.tsv", "0\t1\t0.5\n1\t2\t2\n")]);
    write(&dir.join("labels.npy"), &[3], &[0i64, 1, -1]).unwrap();
    for (f, ids) in [("train_idx.npy", 0i64), ("val_idx.npy", 1), ("test_idx.npy", 0)] {
        write(&dir.join(f), &[1], &[ids]).unwrap();
    }
    let e = err_of(&dir);
    assert!(e.contains("the train and test splits overlap: node 0"), "{e}");
    std::fs::remove_file(dir.join("train_idx.npy")).unwrap();
    std::fs::remove_file(dir.join("val_idx.npy")).unwrap();
    std::fs::remove_file(dir.join("test_idx.npy")).unwrap();
    let d = load_dir(&dir).unwrap();
    assert_eq!(d.adjacency().weights(), Some(&[0.5f32, 2.0][..]));
    assert!(!d.adjacency().is_symmetric());
    assert!(matches!(d.features(), Features::Sparse { n: 3, f: 3, .. }));
    assert_eq!(d.num_classes(), 2);
    // symmetrised when asked
    let s = load(dir.to_str().unwrap(), BuildOptions::undirected()).unwrap();
    assert!(s.adjacency().is_symmetric());
}

#[test]
fn edge_index_npy_is_read_in_an_edge_list_folder_and_in_an_npy_folder() {
    let want = tiny_data(false);
    let src: Vec<i64> = vec![0, 1, 1, 2, 2, 3, 3, 4, 4, 5];
    let dst: Vec<i64> = vec![1, 0, 2, 1, 3, 2, 4, 3, 5, 4];
    let ei: Vec<i64> = src.iter().chain(&dst).copied().collect();
    // an npy folder with edge_index.npy in place of the CSR files
    let dir = tiny_dir("edge-index-npy", false);
    std::fs::remove_file(dir.join("adj_indptr.npy")).unwrap();
    std::fs::remove_file(dir.join("adj_indices.npy")).unwrap();
    write(&dir.join("edge_index.npy"), &[2, 10], &ei).unwrap();
    assert_eq!(load_dir(&dir).unwrap().adjacency(), want.adjacency());
    // [E, 2] is refused with a hint
    let t: Vec<i64> = (0..10).flat_map(|e| [src[e], dst[e]]).collect();
    write(&dir.join("edge_index.npy"), &[10, 2], &t).unwrap();
    let e = err_of(&dir);
    assert!(e.contains("edge_index.npy: shape [10, 2], expected [2, E]") && e.contains("edge_index.T"), "{e}");
    // an edge-list folder of PyG arrays
    let dir = edgelist_dir("edge-index-pyg", &[]);
    write(&dir.join("edge_index.npy"), &[2, 10], &ei).unwrap();
    write(&dir.join("labels.npy"), &[6], want.labels()).unwrap();
    write(&dir.join("features.npy"), &[6, 3], &want.features().to_dense()).unwrap();
    let d = load_dir(&dir).unwrap();
    assert_eq!((d.adjacency(), d.features()), (want.adjacency(), want.features()));
    assert!(d.split().is_none());
}

#[test]
fn malformed_edge_list_files_are_errors_naming_file_and_line() {
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "edges.csv",
            "0,1\n1,2,3,4\n",
            "edges.csv: line 2: 4 fields, expected source, target and an optional weight",
            "columns",
        ),
        ("edges.csv", "0,1\n1,x\n", "edges.csv: line 2: node id `x` is not an integer", "non-numeric"),
        (
            "edges.csv",
            "0,1\n-1,2\n",
            "edges.csv: line 2: node -1 is outside 0..6 (labels.csv lists 6 nodes)",
            "negative",
        ),
        ("edges.csv", "0,1\n\n1,6\n", "edges.csv: line 3: node 6 is outside 0..6", "out of range"),
        ("edges.csv", "0,1\n1,2,0.5\n", "edges.csv: line 2: 3 fields, earlier lines have 2", "mixed weights"),
        ("edges.csv", "0,1,nan\n", "edges.csv: line 1: weight NaN is not finite", "nan weight"),
        ("edges.csv", "0,1.5\n", "edges.csv: line 1: node id `1.5` is not an integer", "float id"),
        (
            "labels.csv",
            "0\n1\n0\n1\n0\n1,1\n",
            "labels.csv: line 6: 2 fields, expected one label per line",
            "label columns",
        ),
        ("labels.csv", "0\n1\n\n0\n1\n0\n1\n", "labels.csv: line 3 is blank", "blank label"),
        ("labels.csv", "0\n1\n0\n1\n0\n-7\n", "labels.csv: node 5 has label -7", "bad label"),
        ("features.csv", "1,2\n3,4\n5\n", "features.csv: line 3: 1 features, earlier lines have 2", "ragged"),
        ("features.csv", "1,2\n3,4\n", "features.csv: shape [2, 2], expected [6, F]", "too few rows"),
        ("features.csv", "1,2\n3,y\n", "features.csv: line 2: feature `y` is not a number", "bad feature"),
        ("train_idx.csv", "0\n9\n", "train split: node 9 outside 0..6", "split range"),
    ];
    for (file, text, want, what) in cases {
        let mut files = vec![("edges.csv", "0,1\n"), ("labels.csv", "0\n1\n0\n1\n0\n1\n")];
        files.retain(|(f, _)| f != file);
        files.push((file, text));
        if file.ends_with("idx.csv") {
            files.extend([("val_idx.csv", "2\n"), ("test_idx.csv", "3\n")]);
        }
        let dir = edgelist_dir(&format!("edgelist-bad-{}", what.replace(' ', "-")), &files);
        let e = err_of(&dir);
        assert!(e.contains(want), "{what}: {e}");
    }
    // two edge files, or no label file
    let dir =
        edgelist_dir("edgelist-two", &[("edges.csv", "0,1\n"), ("edges.tsv", "0\t1\n"), ("labels.csv", "0\n1\n")]);
    assert!(err_of(&dir).contains("holds edges.csv and edges.tsv for the edges"));
    let dir = edgelist_dir("edgelist-nolabels", &[("edges.csv", "0,1\n")]);
    assert!(err_of(&dir).contains("unrecognised dataset"));
}
