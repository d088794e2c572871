//! Crafted and corrupted inputs (npy, npz, OGB, GraphSAINT, CSV edge lists) through the library
//! loader and the CLI: every case ends in `Ok` or an error, within seconds, never in a panic,
//! a hang or an abort. Bounded and seeded: about 200 cases, a few seconds in all.

use crate::common::{gz, i64_bytes, mkfifo, raw_npy, tiny_data, tmp, zip, ZipEntry};
use burn_sparse_gnn::BuildOptions;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Longest a single case may take.
const CASE_LIMIT: Duration = Duration::from_secs(5);

/// One input: a dataset path and what was done to it.
struct Case {
    name: String,
    path: PathBuf,
}

/// How a case ended.
enum Outcome {
    Loaded,
    Refused(String),
    Panicked(String),
    Hung,
}

/// Runs the library loader on `path` in a thread of its own, catching panics and giving up
/// after twice the case limit (the thread is then left behind and the test fails).
fn run(path: &Path) -> (Outcome, Duration) {
    let (tx, rx) = mpsc::channel();
    let spec = path.to_str().expect("utf-8 path").to_string();
    let start = Instant::now();
    std::thread::spawn(move || {
        let r = std::panic::catch_unwind(|| {
            train_app::datasets::load(&spec, BuildOptions::default()).map(|_| ()).map_err(|e| e.to_string())
        });
        let _ = tx.send(r);
    });
    let outcome = match rx.recv_timeout(CASE_LIMIT * 2) {
        Ok(Ok(Ok(()))) => Outcome::Loaded,
        Ok(Ok(Err(e))) => Outcome::Refused(e),
        Ok(Err(p)) => Outcome::Panicked(
            p.downcast_ref::<String>().cloned().or(p.downcast_ref::<&str>().map(|s| s.to_string())).unwrap_or_default(),
        ),
        Err(_) => Outcome::Hung,
    };
    (outcome, start.elapsed())
}

/// Copies the files of folder `from` into a fresh folder `to`.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            copy_dir(&p, &to.join(p.file_name().unwrap()));
        } else {
            std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
        }
    }
}

/// Builds the cases under `root`.
struct Cases {
    root: PathBuf,
    list: Vec<Case>,
    rng: StdRng,
}

impl Cases {
    /// A new case folder copied from `base`, with `edit` applied; `file` names the dataset
    /// inside the folder when it is a file (an .npz).
    fn folder(&mut self, name: &str, base: &Path, file: Option<&str>, edit: impl FnOnce(&Path)) {
        let dir = self.root.join(format!("{:03}-{}", self.list.len(), name.replace(['/', ' '], "_")));
        copy_dir(base, &dir);
        edit(&dir);
        let path = file.map(|f| dir.join(f)).unwrap_or(dir);
        self.list.push(Case { name: name.into(), path });
    }

    /// `count` cases, each flipping 1 to 4 random bytes of one of `files` of `base`.
    fn flips(&mut self, label: &str, base: &Path, files: &[&str], file: Option<&str>, count: usize) {
        for i in 0..count {
            let f = files[self.rng.random_range(0..files.len())];
            let mut bytes = std::fs::read(base.join(f)).unwrap();
            // half the flips land in the last quarter, where an npy file keeps its data
            let from = if self.rng.random_bool(0.5) { bytes.len() * 3 / 4 } else { 0 };
            for _ in 0..self.rng.random_range(1..=4) {
                let at = self.rng.random_range(from..bytes.len());
                bytes[at] ^= self.rng.random_range(1..=255u8);
            }
            self.folder(&format!("{label} flip {i} of {f}"), base, file, |d| {
                std::fs::write(d.join(f), &bytes).unwrap()
            });
        }
    }
}

/// The payload (data after the header) of an npy version-1 file.
fn npy_payload(bytes: &[u8]) -> Vec<u8> {
    let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
    bytes[10 + len..].to_vec()
}

/// Header edits: (name, descr, fortran, shape text); `None` keeps the original.
type HeaderEdit = (&'static str, Option<&'static str>, bool, Option<&'static str>);

const HEADER_EDITS: &[HeaderEdit] = &[
    ("huge 1-d shape", None, false, Some("(2000000000,)")),
    ("huge 2-d shape", None, false, Some("(2708, 2000000000)")),
    ("overflowing shape", None, false, Some("(4294967296, 4294967296, 4294967296)")),
    ("negative dim", None, false, Some("(-1,)")),
    ("negative 2-d dims", None, false, Some("(-5, 3)")),
    ("unicode dtype", Some("<U3"), false, None),
    ("object dtype", Some("|O"), false, None),
    ("big-endian dtype", Some(">i8"), false, None),
    ("complex dtype", Some("<c8"), false, None),
    ("half dtype", Some("<f2"), false, None),
    ("bool dtype", Some("|b1"), false, None),
    ("fortran flag", None, true, None),
];

/// The descr and shape text of the tiny dataset's files (as `save` writes them).
fn tiny_header(file: &str) -> (&'static str, &'static str) {
    match file {
        "num_nodes.npy" => ("<i8", "()"),
        "adj_indptr.npy" => ("<i8", "(7,)"),
        "adj_indices.npy" => ("<i4", "(10,)"),
        "feat_dense.npy" => ("<f4", "(6, 3)"),
        "labels.npy" => ("<i8", "(6,)"),
        _ => ("<i8", "(2,)"),
    }
}

fn npy_cases(c: &mut Cases, base: &Path) {
    let files = ["num_nodes.npy", "adj_indptr.npy", "adj_indices.npy", "feat_dense.npy", "labels.npy", "train_idx.npy"];
    for f in files {
        let bytes = std::fs::read(base.join(f)).unwrap();
        let payload = npy_payload(&bytes);
        let (descr, shape) = tiny_header(f);
        let mut bad = bytes.clone();
        bad[0] = b'x';
        c.folder(&format!("{f} bad magic"), base, None, |d| std::fs::write(d.join(f), &bad).unwrap());
        for cut in [0, 9, bytes.len() - payload.len() - 3, bytes.len() - 1] {
            let part = bytes[..cut].to_vec();
            c.folder(&format!("{f} truncated at {cut}"), base, None, |d| std::fs::write(d.join(f), &part).unwrap());
        }
        for (edit, d_new, fortran, s_new) in HEADER_EDITS {
            let text = raw_npy(d_new.unwrap_or(descr), *fortran, s_new.unwrap_or(shape), &payload);
            c.folder(&format!("{f} {edit}"), base, None, |d| std::fs::write(d.join(f), &text).unwrap());
        }
    }
    // a folder and a FIFO where a file belongs
    c.folder("labels.npy is a folder", base, None, |d| {
        std::fs::remove_file(d.join("labels.npy")).unwrap();
        std::fs::create_dir(d.join("labels.npy")).unwrap();
    });
    let mut fifo = false;
    c.folder("labels.npy is a FIFO", base, None, |d| fifo = mkfifo(&d.join("labels.npy")));
    if !fifo {
        c.list.pop();
    }
    c.flips("npy", base, &files, None, 40);
}

fn sparse_npy_cases(c: &mut Cases, base: &Path) {
    for (name, shape) in [("huge width", [6i64, 2_000_000_000]), ("negative width", [6, -3]), ("rows", [7, 3])] {
        c.folder(&format!("feat_shape {name}"), base, None, |d| {
            std::fs::write(d.join("feat_shape.npy"), raw_npy("<i8", false, "(2,)", &i64_bytes(&shape))).unwrap()
        });
    }
    let files = ["feat_shape.npy", "feat_indptr.npy", "feat_indices.npy", "feat_data.npy"];
    c.flips("sparse npy", base, &files, None, 20);
}

/// A heterophilous-layout archive of the 6-node path with one split.
fn hetero_npz(path: &Path) {
    let f32s = |v: &[f32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
    let x: Vec<f32> = (0..12).map(|v| v as f32).collect();
    let arrays = [
        ("node_features", raw_npy("<f4", false, "(6, 2)", &f32s(&x))),
        ("node_labels", raw_npy("<i8", false, "(6,)", &i64_bytes(&[0, 1, 0, 1, 0, 1]))),
        ("edges", raw_npy("<i8", false, "(5, 2)", &i64_bytes(&[0, 1, 1, 2, 2, 3, 3, 4, 4, 5]))),
        ("train_masks", raw_npy("|b1", false, "(1, 6)", &[1, 1, 0, 0, 0, 0])),
        ("val_masks", raw_npy("|b1", false, "(1, 6)", &[0, 0, 1, 1, 0, 0])),
        ("test_masks", raw_npy("|b1", false, "(1, 6)", &[0, 0, 0, 0, 1, 1])),
    ];
    let names: Vec<String> = arrays.iter().map(|(n, _)| format!("{n}.npy")).collect();
    let entries: Vec<ZipEntry> = arrays
        .iter()
        .zip(&names)
        .map(|((_, data), name)| ZipEntry { name, data, deflate: true, declared_size: None })
        .collect();
    std::fs::write(path, zip(&entries)).unwrap();
}

fn npz_cases(c: &mut Cases, base: &Path) {
    let good = std::fs::read(base.join("g.npz")).unwrap();
    for cut in [0, 4, 30, good.len() / 2, good.len() - 10, good.len() - 1] {
        let part = good[..cut].to_vec();
        c.folder(&format!("npz truncated at {cut}"), base, Some("g.npz"), |d| {
            std::fs::write(d.join("g.npz"), &part).unwrap()
        });
    }
    c.folder("npz is not a zip", base, Some("g.npz"), |d| std::fs::write(d.join("g.npz"), b"PK\x03\x04 nope").unwrap());
    // declared sizes that lie, both ways, and a bomb
    let labels = raw_npy("<i8", false, "(6,)", &i64_bytes(&[0, 1, 0, 1, 0, 1]));
    let big = raw_npy("<f4", false, "(25000000,)", &vec![0u8; 100_000_000]);
    for (name, data, size) in
        [("smaller", &labels, Some(20u32)), ("larger", &labels, Some(1 << 30)), ("bomb", &big, Some(1_000))]
    {
        let bytes = zip(&[
            ZipEntry { name: "node_features.npy", data, deflate: true, declared_size: size },
            ZipEntry { name: "node_labels.npy", data: &labels, deflate: false, declared_size: size },
        ]);
        c.folder(&format!("npz declared size {name}"), base, Some("g.npz"), |d| {
            std::fs::write(d.join("g.npz"), &bytes).unwrap()
        });
    }
    c.folder("npz unknown layout", base, Some("g.npz"), |d| {
        std::fs::write(
            d.join("g.npz"),
            zip(&[ZipEntry { name: "x.npy", data: &labels, deflate: false, declared_size: None }]),
        )
        .unwrap()
    });
    c.flips("npz", base, &["g.npz"], Some("g.npz"), 25);
}

/// The text of the OGB fixture's files.
const OGB_FILES: &[(&str, &str)] = &[
    ("raw/edge.csv.gz", "0,1\n1,2\n2,3\n3,0\n4,0\n"),
    ("raw/node-feat.csv.gz", "0.1,0.2\n0.3,0.4\n-1,2\n0,0\n5,6\n"),
    ("raw/node-label.csv.gz", "0\n1\n2\n1\n0\n"),
    ("raw/num-node-list.csv.gz", "5\n"),
    ("split/time/train.csv.gz", "0\n1\n"),
    ("split/time/valid.csv.gz", "2\n"),
    ("split/time/test.csv.gz", "3\n4\n"),
];

fn ogb_base(dir: &Path) {
    std::fs::create_dir_all(dir.join("raw")).unwrap();
    std::fs::create_dir_all(dir.join("split/time")).unwrap();
    for (f, text) in OGB_FILES {
        gz(&dir.join(f), text.as_bytes());
    }
}

fn ogb_cases(c: &mut Cases, base: &Path) {
    let files: Vec<&str> = OGB_FILES.iter().map(|(f, _)| *f).collect();
    // corrupt compressed bytes, and flipped text gzipped again
    c.flips("ogb gz", base, &files, None, 10);
    for i in 0..15 {
        let (f, text) = OGB_FILES[c.rng.random_range(0..OGB_FILES.len())];
        let mut bytes = text.as_bytes().to_vec();
        let at = c.rng.random_range(0..bytes.len());
        let junk = b"-x9,\n .e\xff";
        bytes[at] = junk[c.rng.random_range(0..junk.len())];
        c.folder(&format!("ogb text flip {i} of {f}"), base, None, |d| gz(&d.join(f), &bytes));
    }
    let crafted: &[(&str, &str, &[u8])] = &[
        ("label of a billion", "raw/node-label.csv.gz", b"0\n1\n1000000000\n1\n0\n"),
        ("huge node id", "raw/edge.csv.gz", b"0,1\n1,99999999999\n"),
        ("ids beyond i64", "raw/edge.csv.gz", b"0,1\n1,99999999999999999999999\n"),
        ("three columns", "raw/edge.csv.gz", b"0,1,2\n"),
        ("nan feature", "raw/node-feat.csv.gz", b"nan,1\n1,1\n1,1\n1,1\n1,1\n"),
        ("empty split", "split/time/valid.csv.gz", b""),
        ("overlapping split", "split/time/test.csv.gz", b"0\n4\n"),
        ("wrong node count", "raw/num-node-list.csv.gz", b"2000000000\n"),
    ];
    for (name, f, text) in crafted {
        c.folder(&format!("ogb {name}"), base, None, |d| gz(&d.join(f), text));
    }
    c.folder("ogb truncated gz", base, None, |d| {
        let b = std::fs::read(d.join("raw/edge.csv.gz")).unwrap();
        std::fs::write(d.join("raw/edge.csv.gz"), &b[..b.len() / 2]).unwrap()
    });
    c.folder("ogb plain text instead of gz", base, None, |d| {
        std::fs::write(d.join("raw/node-feat.csv.gz"), "1,2\n").unwrap()
    });
    let mut fifo = false;
    c.folder("ogb node-feat is a FIFO", base, None, |d| fifo = mkfifo(&d.join("raw/node-feat.csv.gz")));
    if !fifo {
        c.list.pop();
    }
}

fn saint_base(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let arrays = [
        ("indptr", raw_npy("<i8", false, "(5,)", &i64_bytes(&[0, 1, 3, 5, 6]))),
        ("indices", raw_npy("<i8", false, "(6,)", &i64_bytes(&[1, 0, 2, 1, 3, 2]))),
        ("shape", raw_npy("<i8", false, "(2,)", &i64_bytes(&[4, 4]))),
    ];
    let names: Vec<String> = arrays.iter().map(|(n, _)| format!("{n}.npy")).collect();
    let entries: Vec<ZipEntry> = arrays
        .iter()
        .zip(&names)
        .map(|((_, data), name)| ZipEntry { name, data, deflate: false, declared_size: None })
        .collect();
    std::fs::write(dir.join("adj_full.npz"), zip(&entries)).unwrap();
    train_app::npyio::write(&dir.join("feats.npy"), &[4, 3], &[0.5f32; 12]).unwrap();
    std::fs::write(dir.join("class_map.json"), r#"{"0": 0, "1": 1, "2": 1, "3": 0}"#).unwrap();
    std::fs::write(dir.join("role.json"), r#"{"tr": [0, 1], "va": [2], "te": [3]}"#).unwrap();
}

fn saint_cases(c: &mut Cases, base: &Path) {
    let crafted: &[(&str, &str, &str)] = &[
        ("truncated json", "class_map.json", r#"{"0": 0, "1""#),
        ("negative node", "class_map.json", r#"{"-1": 0}"#),
        ("float label", "class_map.json", r#"{"0": 0.5}"#),
        ("overlapping roles", "role.json", r#"{"tr": [0, 1], "va": [1], "te": [3]}"#),
        ("role out of range", "role.json", r#"{"tr": [0, 1], "va": [2], "te": [99]}"#),
        ("role not a list", "role.json", r#"{"tr": 0, "va": [2], "te": [3]}"#),
    ];
    for (name, f, text) in crafted {
        c.folder(&format!("saint {name}"), base, None, |d| std::fs::write(d.join(f), text).unwrap());
    }
    let mut fifo = false;
    c.folder("saint class_map is a FIFO", base, None, |d| fifo = mkfifo(&d.join("class_map.json")));
    if !fifo {
        c.list.pop();
    }
    c.flips("saint", base, &["adj_full.npz", "feats.npy", "role.json"], None, 8);
}

fn edgelist_base(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("edges.csv"), "source,target,weight\n0,1,1\n1,2,0.5\n2,3,2\n3,4,1\n4,5,1\n").unwrap();
    std::fs::write(dir.join("labels.csv"), "0\n1\n0\n1\n0\n1\n").unwrap();
    std::fs::write(dir.join("features.csv"), "1,2\n3,4\n5,6\n7,8\n9,10\n11,12\n").unwrap();
    std::fs::write(dir.join("train_idx.csv"), "0\n1\n").unwrap();
    std::fs::write(dir.join("val_idx.csv"), "2\n3\n").unwrap();
    std::fs::write(dir.join("test_idx.csv"), "4\n5\n").unwrap();
}

fn edgelist_cases(c: &mut Cases, base: &Path) {
    let files = ["edges.csv", "labels.csv", "features.csv", "train_idx.csv", "val_idx.csv", "test_idx.csv"];
    c.flips("csv", base, &files, None, 20);
    let crafted: &[(&str, &str, &str)] = &[
        ("id beyond i64", "edges.csv", "0,1\n1,18446744073709551616\n"),
        ("infinite weight", "edges.csv", "0,1,inf\n"),
        ("one column", "edges.csv", "0\n1\n"),
        ("label of a billion", "labels.csv", "0\n1\n0\n1\n0\n1000000000\n"),
        ("no labels", "labels.csv", ""),
        ("header only", "features.csv", "a,b\n"),
    ];
    for (name, f, text) in crafted {
        c.folder(&format!("csv {name}"), base, None, |d| std::fs::write(d.join(f), text).unwrap());
    }
    let mut fifo = false;
    c.folder("csv edges is a FIFO", base, None, |d| fifo = mkfifo(&d.join("edges.csv")));
    if !fifo {
        c.list.pop();
    }
}

#[test]
fn crafted_and_corrupted_inputs_never_panic_or_hang() {
    let root = tmp("inputs");
    let bases = root.join("bases");
    let dense = bases.join("dense");
    train_app::datasets::npy::save(&tiny_data(false), &dense).unwrap();
    let sparse = bases.join("sparse");
    train_app::datasets::npy::save(&tiny_data(true), &sparse).unwrap();
    let npz = bases.join("npz");
    std::fs::create_dir_all(&npz).unwrap();
    hetero_npz(&npz.join("g.npz"));
    let (ogb, saint, csv) = (bases.join("ogb"), bases.join("saint"), bases.join("csv"));
    ogb_base(&ogb);
    saint_base(&saint);
    edgelist_base(&csv);
    // the bases themselves load
    for p in [&dense, &sparse, &npz.join("g.npz"), &ogb, &saint, &csv] {
        assert!(matches!(run(p).0, Outcome::Loaded), "{}", p.display());
    }

    let mut c = Cases { root: root.join("cases"), list: Vec::new(), rng: StdRng::seed_from_u64(20240607) };
    npy_cases(&mut c, &dense);
    sparse_npy_cases(&mut c, &sparse);
    npz_cases(&mut c, &npz);
    ogb_cases(&mut c, &ogb);
    saint_cases(&mut c, &saint);
    edgelist_cases(&mut c, &csv);
    assert!(c.list.len() >= 150, "{} cases", c.list.len());

    // SGNN_SHOW_CASES=1 prints every case's outcome (with --nocapture)
    let show = std::env::var("SGNN_SHOW_CASES").is_ok();
    let start = Instant::now();
    let (mut failures, mut refused) = (Vec::new(), 0usize);
    for case in &c.list {
        let (outcome, took) = run(&case.path);
        match outcome {
            Outcome::Panicked(msg) => failures.push(format!("{}: panicked: {msg}", case.name)),
            Outcome::Hung => failures.push(format!("{}: no answer within {:?}", case.name, CASE_LIMIT * 2)),
            Outcome::Refused(e) if e.contains("panicked") => failures.push(format!("{}: {e}", case.name)),
            Outcome::Refused(e) => {
                refused += 1;
                if show {
                    println!("{}: {e}", case.name);
                }
            }
            Outcome::Loaded if show => println!("{}: loaded", case.name),
            Outcome::Loaded => {}
        }
        if took > CASE_LIMIT {
            failures.push(format!("{}: took {took:?}", case.name));
        }
    }
    println!("{} cases, {refused} refused, {:?}", c.list.len(), start.elapsed());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // most cases are errors (byte flips that land in feature values leave a valid dataset)
    assert!(refused * 10 >= c.list.len() * 6, "{refused} of {} refused", c.list.len());
    assert!(start.elapsed() < Duration::from_secs(50), "{:?}", start.elapsed());
}

/// Runs `train-app info <path>`: exit code and output.
fn info(path: &Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_train-app"))
        .args(["info", path.to_str().unwrap()])
        .env("SGNN_PLAIN_LOG", "1")
        .output()
        .unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn the_cli_refuses_bad_inputs_with_the_file_name_and_no_panic() {
    let root = tmp("inputs-cli");
    let base = root.join("base");
    train_app::datasets::npy::save(&tiny_data(false), &base).unwrap();
    let mut cases: Vec<(PathBuf, &str)> = Vec::new();
    let case = |name: &str, edit: &dyn Fn(&Path)| {
        let d = root.join(name);
        copy_dir(&base, &d);
        edit(&d);
        d
    };
    cases.push((case("magic", &|d| std::fs::write(d.join("labels.npy"), b"\x93NUMPX garbage").unwrap()), "labels.npy"));
    cases.push((
        case("num-nodes", &|d| train_app::npyio::write(&d.join("num_nodes.npy"), &[], &[2_000_000_000i64]).unwrap()),
        "labels.npy",
    ));
    cases.push((
        case("label", &|d| {
            train_app::npyio::write(&d.join("labels.npy"), &[6], &[0i64, 1, 0, 1_000_000_000, 0, 1]).unwrap()
        }),
        "labels.npy",
    ));
    cases.push((
        case("overlap", &|d| std::fs::copy(d.join("train_idx.npy"), d.join("test_idx.npy")).map(|_| ()).unwrap()),
        "test_idx.npy",
    ));
    let fifo = root.join("fifo");
    copy_dir(&base, &fifo);
    if mkfifo(&fifo.join("feat_dense.npy")) {
        cases.push((fifo, "feat_dense.npy"));
    }
    let bomb = root.join("bomb.npz");
    let big = raw_npy("<f4", false, "(25000000,)", &vec![0u8; 100_000_000]);
    std::fs::write(
        &bomb,
        zip(&[ZipEntry { name: "node_features.npy", data: &big, deflate: true, declared_size: Some(1_000) }]),
    )
    .unwrap();
    cases.push((bomb, "bomb.npz"));
    let csv = root.join("csv");
    std::fs::create_dir_all(&csv).unwrap();
    std::fs::write(csv.join("edges.csv"), "0,1\n1,two\n").unwrap();
    std::fs::write(csv.join("labels.csv"), "0\n1\n0\n").unwrap();
    cases.push((csv, "edges.csv"));
    for (path, file) in cases {
        let (code, text) = info(&path);
        assert_ne!(code, 0, "{}: {text}", path.display());
        assert!(!text.contains("panicked"), "{}: {text}", path.display());
        assert!(text.contains(file), "{}: expected `{file}` in {text}", path.display());
    }
    // and the good one prints its statistics
    let (code, text) = info(&base);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("classes      2  counts [3, 3]"), "{text}");
}
