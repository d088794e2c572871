//! Bad inputs through the command line: each is a clear error and a non-zero exit, never a panic.

use crate::common::tmp;
use burn_sparse_gnn::{BuildOptions, Csr, Features, GraphData, Split};
use std::path::{Path, PathBuf};
use std::process::Command;
use train_app::npyio::write;

pub(crate) fn app(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_train-app")).args(args).env("SGNN_PLAIN_LOG", "1").output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(!text.contains("panicked"), "a bad input must not panic:\n{text}");
    (out.status.code().unwrap_or(-1), text)
}

/// A valid 6-node npy dataset.
pub(crate) fn tiny(name: &str) -> PathBuf {
    let dir = tmp(name);
    let adj = Csr::from_edges(6, &[0, 1, 2, 3, 4], &[1, 2, 3, 4, 5], None, BuildOptions::undirected()).unwrap();
    let x = Features::dense(6, 3, (0..18).map(|v| v as f32 / 10.0).collect()).unwrap();
    let split = Split { train: vec![0, 1], valid: vec![2, 3], test: vec![4, 5] };
    let d = GraphData::new("tiny", adj, x, vec![0, 1, 0, 1, 0, 1], 2, Some(split)).unwrap();
    train_app::datasets::npy::save(&d, &dir).unwrap();
    dir
}

pub(crate) fn train_on(dir: &Path, extra: &[&str]) -> (i32, String) {
    let out = dir.join("run");
    let mut args = vec![
        "train",
        "--backend",
        "cpu",
        "--dataset",
        dir.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--log-every",
        "0",
    ];
    if !extra.contains(&"--epochs") {
        args.extend_from_slice(&["--epochs", "2"]);
    }
    args.extend_from_slice(extra);
    app(&args)
}

pub(crate) fn fails_with(r: (i32, String), needle: &str) {
    assert_ne!(r.0, 0, "must fail: {}", r.1);
    assert!(r.1.to_lowercase().contains(&needle.to_lowercase()), "expected `{needle}` in:\n{}", r.1);
}

#[test]
fn the_tiny_dataset_trains() {
    let dir = tiny("ok");
    let (code, text) = train_on(&dir, &[]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("accuracy"));
}

#[test]
fn missing_dataset() {
    fails_with(app(&["train", "--backend", "cpu", "--dataset", "/no/such/dataset"]), "not found");
}

#[test]
fn missing_file_in_a_dataset() {
    let dir = tiny("missing-labels");
    std::fs::remove_file(dir.join("labels.npy")).unwrap();
    fails_with(train_on(&dir, &[]), "labels.npy: file not found");
}

#[test]
fn not_an_npy_file() {
    let dir = tiny("garbage");
    std::fs::write(dir.join("labels.npy"), b"definitely not numpy").unwrap();
    fails_with(train_on(&dir, &[]), "not a valid .npy");
}

#[test]
fn wrong_dtype() {
    let dir = tiny("dtype-indices");
    write(&dir.join("adj_indices.npy"), &[10], &[1.5f32; 10]).unwrap();
    fails_with(train_on(&dir, &[]), "adj_indices.npy: dtype <f4 cannot be read as integers");
    let dir = tiny("dtype-labels");
    std::fs::write(dir.join("labels.npy"), npy_unicode()).unwrap();
    fails_with(train_on(&dir, &[]), "labels.npy: dtype");
}

/// A minimal `.npy` holding one unicode string (dtype `<U3`).
fn npy_unicode() -> Vec<u8> {
    let header = "{'descr': '<U3', 'fortran_order': False, 'shape': (1,), }";
    let mut h = header.to_string();
    while (10 + h.len() + 1) % 64 != 0 {
        h.push(' ');
    }
    h.push('\n');
    let mut v = b"\x93NUMPY\x01\x00".to_vec();
    v.extend_from_slice(&(h.len() as u16).to_le_bytes());
    v.extend_from_slice(h.as_bytes());
    v.extend_from_slice(&[b'a', 0, 0, 0, b'b', 0, 0, 0, b'c', 0, 0, 0]);
    v
}

#[test]
fn wrong_shape() {
    let dir = tiny("shape");
    write(&dir.join("labels.npy"), &[7], &[0i64; 7]).unwrap();
    fails_with(train_on(&dir, &[]), "labels.npy: shape [7]");
}

#[test]
fn column_out_of_range() {
    let dir = tiny("range");
    write(&dir.join("adj_indices.npy"), &[10], &[1i32, 0, 2, 1, 3, 2, 4, 3, 99, 4]).unwrap();
    fails_with(train_on(&dir, &[]), "column 99");
}

#[test]
fn label_out_of_range() {
    let dir = tiny("label");
    write(&dir.join("labels.npy"), &[6], &[0i64, 1, -5, 1, 0, 1]).unwrap();
    fails_with(train_on(&dir, &[]), "label -5");
}

#[test]
fn non_finite_feature() {
    let dir = tiny("nan");
    let mut x = vec![0.5f32; 18];
    x[7] = f32::NAN;
    write(&dir.join("feat_dense.npy"), &[6, 3], &x).unwrap();
    fails_with(train_on(&dir, &[]), "feature (2, 1) is not finite");
}

#[test]
fn k_larger_than_hidden() {
    let dir = tiny("k");
    fails_with(train_on(&dir, &["--hidden", "16", "--nonlin", "maxk:32"]), "MaxK k = 32 must be in 1..=16");
}

#[test]
fn bench_train_fails_when_a_configuration_cannot_run() {
    let dir = tiny("bench-k");
    let (code, text) = app(&[
        "bench-train",
        "--backend",
        "cpu",
        "--dataset",
        dir.to_str().unwrap(),
        "--models",
        "gcn",
        "--nonlins",
        "relu,maxk:32",
        "--hidden",
        "16",
        "--epochs",
        "1",
        "--warmup",
        "0",
    ]);
    assert_ne!(code, 0, "{text}");
    assert!(text.contains("1 configuration(s) could not run") && text.contains("maxk:32"), "{text}");
    // the configuration that can run still writes its record
    assert_eq!(text.lines().filter(|l| l.starts_with('{') && l.contains("\"relu\"")).count(), 1, "{text}");
}

#[test]
fn bad_nonlinearity_split_and_model() {
    let dir = tiny("strings");
    fails_with(train_on(&dir, &["--nonlin", "tanh"]), "--nonlin `tanh`");
    fails_with(train_on(&dir, &["--split", "per-class:x"]), "split `per-class:x`");
    fails_with(train_on(&dir, &["--model", "transformer"]), "[possible values: gcn, sage, gin, gat]");
    fails_with(train_on(&dir, &["--epochs", "0"]), "epochs must be >= 1");
}

#[test]
fn unknown_backend_is_rejected_by_the_parser() {
    let (code, text) = app(&["train", "--backend", "tpu"]);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("invalid value 'tpu'"), "{text}");
}

#[test]
fn cuda_without_a_gpu_is_a_clear_error() {
    let (code, text) = app(&["selftest", "--backend", "cuda", "--quick"]);
    if code == 0 {
        println!("skipped: a CUDA device answered on this machine");
        return;
    }
    assert!(text.contains("backend cuda: no CUDA device answered"), "{text}");
}

#[test]
fn the_self_test_passes_on_the_cpu_backend() {
    let (code, text) = app(&["selftest", "--backend", "cpu", "--quick"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("selftest cpu: all") && text.contains("checks passed"), "{text}");
    // the partitioned models are compared with the whole-graph model
    assert!(text.contains("== cpu: 2 parts on 1 device(s) against the whole graph"), "{text}");
    assert!(text.contains("ok   gat 4 heads: gradients"), "{text}");
}

#[test]
fn resume_without_checkpoint_and_bad_config_file() {
    let dir = tiny("resume");
    let (code, text) = train_on(&dir, &[]);
    assert_eq!(code, 0, "{text}");
    fails_with(train_on(&dir, &["--resume", "7", "--epochs", "9"]), "checkpoint to resume from");
    // the error names the checkpoints the run keeps
    fails_with(train_on(&dir, &["--resume", "7", "--epochs", "9"]), "the run keeps those of epochs");
    let cfg = dir.join("bad.toml");
    std::fs::write(&cfg, "epochs = 3\nlearning_rate = 0.1\n").unwrap();
    fails_with(train_on(&dir, &["--config", cfg.to_str().unwrap()]), "`learning_rate` is not a training option");
}

#[test]
fn config_keys_are_the_flag_names_with_dashes_or_underscores() {
    let dir = tiny("config-keys");
    let file = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.to_str().unwrap().to_string()
    };
    // the flag's spelling and the field's spelling are the same key
    let dashed = file("dashed.toml", "weight-decay = 0.001\nlog-every = 0\nepochs = 1\n");
    let (code, text) = train_on(&dir, &["--config", &dashed]);
    assert_eq!(code, 0, "{text}");
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run/config.json")).unwrap()).unwrap();
    assert_eq!(written["weight_decay"], serde_json::json!(0.001), "{written}");
    // two keys for one option (an older run's `conv` beside `model`) and unknown keys are errors
    let both = file("both.toml", "conv = \"sage\"\nmodel = \"gcn\"\n");
    fails_with(train_on(&dir, &["--config", &both]), "`conv` and `model` both set the option `model`");
    let twice = file("twice.json", r#"{"weight-decay": 0.1, "weight_decay": 0.2}"#);
    fails_with(train_on(&dir, &["--config", &twice]), "both set the option `weight_decay`");
    let unknown = file("unknown.toml", "weight-decy = 0.1\n");
    fails_with(train_on(&dir, &["--config", &unknown]), "`weight-decy` is not a training option");
    let flag_only = file("flag-only.toml", "backend = \"cpu\"\n");
    fails_with(train_on(&dir, &["--config", &flag_only]), "give --backend on the command line");
}

/// An npy dataset of a path of `labels.len()` nodes, one feature, no split of its own.
fn unsplit(name: &str, labels: Vec<i64>) -> PathBuf {
    let dir = tmp(name);
    let n = labels.len();
    let (src, dst): (Vec<i64>, Vec<i64>) = (0..n as i64 - 1).map(|i| (i, i + 1)).unzip();
    let adj = Csr::from_edges(n, &src, &dst, None, BuildOptions::undirected()).unwrap();
    let x = Features::dense(n, 1, (0..n).map(|i| i as f32).collect()).unwrap();
    let classes = (*labels.iter().max().unwrap() + 1) as usize;
    let d = GraphData::new(name, adj, x, labels, classes, None).unwrap();
    train_app::datasets::npy::save(&d, &dir).unwrap();
    dir
}

#[test]
fn an_empty_default_split_names_a_split_that_fits() {
    // 2 classes of 12 nodes: the default per-class:20,30 takes every node for training
    let dir = unsplit("small-unsplit", (0..24).map(|i| i % 2).collect());
    let r = train_on(&dir, &[]);
    fails_with(r.clone(), "the default split per-class:20,30 of dataset sgnn-test-");
    fails_with(r.clone(), "small-unsplit: the valid split is empty");
    fails_with(r, "--split per-class:7,2 (the largest class has 12 labelled nodes) or --split random:0.6,0.2");
    let (code, text) = train_on(&dir, &["--split", "per-class:7,2"]);
    assert_eq!(code, 0, "{text}");
}

#[test]
fn labelled_nodes_of_one_class_are_warned_about() {
    let dir = unsplit("one-class", vec![0; 12]);
    let (code, text) = train_on(&dir, &["--split", "random:0.5,0.25"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("warning: every labelled node of dataset sgnn-test-"), "{text}");
    assert!(text.contains("one-class (12 of them) has class 0"), "{text}");
    // a class missing from some parts of the split is fine: class 1's one node is in train
    let dir = unsplit("a-part-lacks-a-class", [vec![0; 11], vec![1]].concat());
    let (code, text) = train_on(&dir, &["--split", "per-class:3,2", "--epochs", "1"]);
    assert_eq!(code, 0, "{text}");
    assert!(!text.contains("warning"), "{text}");
}

#[test]
fn probing_the_backends_prints_nothing_without_a_desktop_session() {
    // Mesa's Vulkan device-selection layer (where mesa-vulkan-drivers is installed) made
    // libwayland print `error: XDG_RUNTIME_DIR is invalid or not set` on every wgpu probe
    let run = tmp("probe-quiet").join("run");
    let out = Command::new(env!("CARGO_BIN_EXE_train-app"))
        .args(["train", "--backend", "auto", "--epochs", "1", "--log-every", "0", "--out", run.to_str().unwrap()])
        .env("SGNN_PLAIN_LOG", "1")
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("NODEVICE_SELECT")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(!text.contains("XDG_RUNTIME_DIR"), "{text}");
}

#[test]
fn info_prints_the_statistics_as_text_and_json() {
    let dir = tiny("info");
    let (code, text) = app(&["info", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("nodes        6 (6 labeled, 0 isolated)"), "{text}");
    assert!(text.contains("split        train 2  valid 2  test 2"), "{text}");
    let (code, text) = app(&["info", dir.to_str().unwrap(), "--json"]);
    assert_eq!(code, 0, "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["nodes"], 6);
    assert_eq!(v["edges"], 10);
    assert_eq!(v["classes"], 2);
    let (code, text) = app(&["info", "/nonexistent/dataset"]);
    assert_ne!(code, 0);
    assert!(text.to_lowercase().contains("not found") || text.contains("No such file"), "{text}");
}

#[test]
fn half_precision_on_the_cpu_backend_is_a_clear_error() {
    let dir = tiny("half-cpu");
    fails_with(
        train_on(&dir, &["--precision", "mixedf16"]),
        "needs F16 storage, which the cpu backend does not support",
    );
    fails_with(train_on(&dir, &["--precision", "mixedbf16"]), "needs BF16 storage");
    // and the best-valid selection trains and says which epoch it kept
    let (code, text) = train_on(&dir, &["--select", "best-valid", "--epochs", "3"]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("(best valid)"), "{text}");
    fails_with(train_on(&dir, &["--select", "best"]), "[possible values: last, best-valid]");
}

#[test]
fn gin_lambda_selects_the_half_safe_aggregation() {
    let dir = tiny("gin-lambda");
    let (code, text) = train_on(&dir, &["--model", "gin", "--gin-lambda", "0.1"]);
    assert_eq!(code, 0, "{text}");
    let res: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run").join("results.json")).unwrap()).unwrap();
    assert_eq!(res["config"]["gin_lambda"], serde_json::json!(0.1), "{res}");
    fails_with(train_on(&dir, &["--model", "gin", "--gin-lambda", "x"]), "invalid value");
}

#[test]
fn bad_numbers_and_lists_name_the_option() {
    let dir = tiny("numbers");
    fails_with(train_on(&dir, &["--weight-decay", "nan"]), "--weight-decay must be a number >= 0, got NaN");
    fails_with(train_on(&dir, &["--layers", "100000"]), "--layers must be in 1..=64, got 100000");
    fails_with(train_on(&dir, &["--hidden", "100000000"]), "--hidden must be in 1..=65536, got 100000000");
    fails_with(train_on(&dir, &["--dropout", "1.5"]), "--dropout must be in [0, 1), got 1.5");
    fails_with(train_on(&dir, &["--patience", "0"]), "--patience must be >= 1");
    fails_with(train_on(&dir, &["--parts", "0"]), "--parts must be >= 1");
    let g = dir.to_str().unwrap();
    let bench = |extra: &[&str]| {
        let mut args = vec!["bench", "--backend", "cpu", "--graph", g, "--runs", "1", "--warmup", "0"];
        args.extend_from_slice(extra);
        app(&args)
    };
    fails_with(bench(&["--ops", "foo"]), "invalid value 'foo' for '--ops");
    fails_with(bench(&["--dtypes", "f64"]), "[possible values: f32, f16, bf16]");
    fails_with(bench(&["--ks", "0"]), "invalid value '0' for '--ks");
    fails_with(bench(&["--ks", "100000"]), "100000 is not in 1..=256");
    fails_with(bench(&["--samples", "0"]), "invalid value '0' for '--samples");
    fails_with(bench(&["--widths", "1000000000"]), "1000000000 is not in 1..=1048576");
    let bench_train = |extra: &[&str]| {
        let mut args = vec!["bench-train", "--backend", "cpu", "--dataset", g, "--models", "gcn", "--nonlins", "relu"];
        args.extend_from_slice(extra);
        app(&args)
    };
    fails_with(bench_train(&["--precisions", "mixedf16"]), "--precision mixedf16 needs f16 storage");
    fails_with(bench_train(&["--epochs", "0"]), "invalid value '0' for '--epochs");
    fails_with(bench_train(&["--models", "mlp"]), "[possible values: gcn, sage, gin, gat]");
}

#[test]
fn errors_use_the_names_users_type() {
    let dir = tiny("names");
    let (code, text) = train_on(&dir, &["--precision", "mixedf16"]);
    assert_ne!(code, 0);
    assert!(!text.contains("MixedF16") && !text.contains("Some("), "{text}");
    let (code, text) =
        app(&["export", "--dataset", dir.to_str().unwrap(), "--out", dir.join("exported").to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("split train 2, valid 2, test 2"), "{text}");
}

#[test]
fn boundary_sampling_needs_parts_a_rate_and_a_dense_model() {
    let dir = tiny("bns");
    fails_with(train_on(&dir, &["--boundary-sampling", "0.5"]), "add --devices or --parts");
    fails_with(train_on(&dir, &["--parts", "2", "--boundary-sampling", "1.5"]), "must be in (0, 1]");
    fails_with(train_on(&dir, &["--parts", "2", "--boundary-sampling", "0"]), "must be in (0, 1]");
    fails_with(
        train_on(&dir, &["--parts", "2", "--boundary-sampling", "0.5", "--model", "gat"]),
        "--boundary-sampling needs a ReLU GCN, GraphSAGE (mean or sum) or GIN",
    );
    fails_with(
        train_on(&dir, &["--parts", "2", "--boundary-sampling", "0.5", "--model", "sage", "--sage-aggr", "maxpool"]),
        "max-pool aggregation",
    );
    // a sampled run trains and records its rate and the expected bytes
    let (code, text) = train_on(&dir, &["--parts", "2", "--boundary-sampling", "0.5", "--model", "sage"]);
    assert_eq!(code, 0, "{text}");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("run/results.json")).unwrap()).unwrap();
    let partition = &results["partition"];
    assert_eq!(partition["boundary_sampling"], serde_json::json!(0.5), "{results}");
    // f32 GraphSAGE samples on the split layout
    assert_eq!(partition["halo_layout"], "split", "{results}");
}

#[test]
fn negative_numbers_reach_the_options_own_checks() {
    let dir = tiny("negative");
    // not "unexpected argument '-1'": the value is read and refused by its option
    fails_with(train_on(&dir, &["--epochs", "-1"]), "invalid value '-1' for '--epochs");
    fails_with(train_on(&dir, &["--lr", "-0.01"]), "--lr must be a positive number");
}

#[test]
fn an_out_that_cannot_be_a_folder_names_the_flag() {
    let dir = tiny("out-file");
    let file = dir.join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let (code, text) =
        app(&["train", "--backend", "cpu", "--dataset", dir.to_str().unwrap(), "--out", file.to_str().unwrap()]);
    assert_ne!(code, 0, "{text}");
    assert!(text.contains(&format!("--out {}: cannot make the folder", file.display())), "{text}");
    assert_eq!(std::fs::read(&file).unwrap(), b"x", "the file is left as it was");
    // several processes: refused before any rank starts, once
    let (code, text) = app(&[
        "train",
        "--backend",
        "cpu",
        "--dataset",
        dir.to_str().unwrap(),
        "--processes",
        "2",
        "--out",
        file.join("run").to_str().unwrap(),
    ]);
    assert_ne!(code, 0, "{text}");
    assert_eq!(text.matches("cannot make the folder").count(), 1, "{text}");
    assert!(!text.contains("starting 2 processes"), "{text}");
    let (code, text) = app(&[
        "train",
        "--backend",
        "cpu",
        "--dataset",
        "/no/such/dataset",
        "--processes",
        "2",
        "--out",
        dir.join("p").to_str().unwrap(),
    ]);
    assert_ne!(code, 0, "{text}");
    assert_eq!(text.matches("file not found").count(), 1, "{text}");
}

#[test]
fn a_relative_dataset_path_is_stored_absolute() {
    let dir = tiny("relative");
    let parent = dir.parent().unwrap();
    let name = dir.file_name().unwrap().to_str().unwrap();
    let run = dir.join("run");
    let out = Command::new(env!("CARGO_BIN_EXE_train-app"))
        .args(["train", "--backend", "cpu", "--epochs", "2", "--log-every", "0", "--dataset", name])
        .args(["--out", run.to_str().unwrap()])
        .current_dir(parent)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let cfg: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("config.json")).unwrap()).unwrap();
    let stored = std::path::PathBuf::from(cfg["dataset"].as_str().unwrap());
    assert!(stored.is_absolute(), "{cfg}");
    assert_eq!(std::fs::canonicalize(&stored).unwrap(), std::fs::canonicalize(&dir).unwrap());
    // eval finds the dataset from another directory
    let (code, text) = app(&["eval", "--backend", "cpu", run.to_str().unwrap()]);
    assert_eq!(code, 0, "{text}");
}
