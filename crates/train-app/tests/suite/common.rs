//! Shared helpers of the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// Runs the `train-app` binary (plain epoch lines): exit code, stdout, stderr. Fails the test
/// when it panics.
pub fn app(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_train-app")).args(args).env("SGNN_PLAIN_LOG", "1").output().unwrap();
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr).to_string());
    assert!(!stderr.contains("panicked"), "must not panic:\n{stderr}");
    (out.status.code().unwrap_or(-1), stdout, stderr)
}

/// The output of a run that must succeed (fails the test with it otherwise).
pub fn ok(r: (i32, String, String)) -> String {
    assert_eq!(r.0, 0, "must succeed:\n{}{}", r.1, r.2);
    r.1 + &r.2
}

/// The output of a run that must fail with a message containing `needle`.
pub fn fails(r: (i32, String, String), needle: &str) -> String {
    let text = r.1 + &r.2;
    assert_ne!(r.0, 0, "must fail:\n{text}");
    assert!(text.contains(needle), "expected `{needle}` in:\n{text}");
    text
}

/// A path as a command-line argument.
pub fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `../shared/datasets` of the repository (override with `SGNN_DATASETS`). The tests that read
/// real datasets fail with this message when it is missing.
pub fn datasets() -> PathBuf {
    let p = std::env::var("SGNN_DATASETS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/datasets"));
    assert!(p.join("npy/cora/num_nodes.npy").exists(), "datasets not found at {} (set SGNN_DATASETS)", p.display());
    p
}

/// A fresh temporary directory for one test.
pub fn tmp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("sgnn-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

/// An `.npy` file from its header fields and raw payload (for crafted and broken inputs).
pub fn raw_npy(descr: &str, fortran: bool, shape_text: &str, payload: &[u8]) -> Vec<u8> {
    let mut text = format!(
        "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape_text}, }}",
        if fortran { "True" } else { "False" }
    );
    while (10 + text.len() + 1) % 64 != 0 {
        text.push(' ');
    }
    text.push('\n');
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend_from_slice(&(text.len() as u16).to_le_bytes());
    out.extend_from_slice(text.as_bytes());
    out.extend_from_slice(payload);
    out
}

/// Little-endian bytes of i64 values.
pub fn i64_bytes(v: &[i64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// One entry of a hand-made zip archive.
pub struct ZipEntry<'a> {
    pub name: &'a str,
    /// The entry's content before compression.
    pub data: &'a [u8],
    /// Deflate the content (else stored).
    pub deflate: bool,
    /// The uncompressed size the archive declares (the true one when `None`).
    pub declared_size: Option<u32>,
}

/// A zip archive (as `.npz` files are) written by hand, so that its declared sizes can lie.
pub fn zip(entries: &[ZipEntry]) -> Vec<u8> {
    use std::io::Write;
    let (mut out, mut central) = (Vec::new(), Vec::new());
    for e in entries {
        let body = if e.deflate {
            let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
            enc.write_all(e.data).unwrap();
            enc.finish().unwrap()
        } else {
            e.data.to_vec()
        };
        let mut crc = flate2::Crc::new();
        crc.update(e.data);
        let size = e.declared_size.unwrap_or(e.data.len() as u32);
        let method: u16 = if e.deflate { 8 } else { 0 };
        let offset = out.len() as u32;
        let common = |v: &mut Vec<u8>| {
            v.extend_from_slice(&20u16.to_le_bytes()); // version needed
            v.extend_from_slice(&0u16.to_le_bytes()); // flags
            v.extend_from_slice(&method.to_le_bytes());
            v.extend_from_slice(&[0, 0, 0x21, 0]); // time, date (1980-01-01)
            v.extend_from_slice(&crc.sum().to_le_bytes());
            v.extend_from_slice(&(body.len() as u32).to_le_bytes());
            v.extend_from_slice(&size.to_le_bytes());
            v.extend_from_slice(&(e.name.len() as u16).to_le_bytes());
            v.extend_from_slice(&0u16.to_le_bytes()); // extra length
        };
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        common(&mut out);
        out.extend_from_slice(e.name.as_bytes());
        out.extend_from_slice(&body);
        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        central.extend_from_slice(&20u16.to_le_bytes()); // version made by
        common(&mut central);
        central.extend_from_slice(&[0; 6]); // comment length, disk, internal attributes
        central.extend_from_slice(&0u32.to_le_bytes()); // external attributes
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(e.name.as_bytes());
    }
    let cd_offset = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0; 4]); // disk numbers
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&cd_offset.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

/// Gzips `text` into `path`.
pub fn gz(path: &std::path::Path, text: &[u8]) {
    use std::io::Write;
    let f = std::fs::File::create(path).unwrap();
    let mut e = flate2::write::GzEncoder::new(f, flate2::Compression::fast());
    e.write_all(text).unwrap();
    e.finish().unwrap();
}

/// A valid 6-node dataset: a path graph, 3 dense features (non-integer), labels 0/1 and a
/// 2 / 2 / 2 split; `sparse` stores the features as CSR.
pub fn tiny_data(sparse: bool) -> burn_sparse_gnn::GraphData {
    use burn_sparse_gnn::{BuildOptions, Csr, Features, GraphData, Split};
    let adj = Csr::from_edges(6, &[0, 1, 2, 3, 4], &[1, 2, 3, 4, 5], None, BuildOptions::undirected()).unwrap();
    let x = if sparse {
        let ip: Vec<i64> = (0..=6).collect();
        let ix: Vec<i64> = (0..6).map(|i| i % 3).collect();
        Features::sparse(6, 3, &ip, &ix, vec![0.5; 6]).unwrap()
    } else {
        Features::dense(6, 3, (0..18).map(|v| v as f32 / 10.0).collect()).unwrap()
    };
    let split = Split { train: vec![0, 1], valid: vec![2, 3], test: vec![4, 5] };
    GraphData::new("tiny", adj, x, vec![0, 1, 0, 1, 0, 1], 2, Some(split)).unwrap()
}

/// Makes a FIFO at `path` (Unix); false where `mkfifo` is not available.
pub fn mkfifo(path: &std::path::Path) -> bool {
    let _ = std::fs::remove_file(path);
    std::process::Command::new("mkfifo").arg(path).status().is_ok_and(|s| s.success())
}
