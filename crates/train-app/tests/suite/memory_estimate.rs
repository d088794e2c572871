//! The device memory estimate through the command line, on the CPU backend: `--dry-run` prints
//! it, a run whose estimate exceeds `--memory-budget` stops before training with the estimate,
//! the budget and what to change, and a spread run is estimated per device.

use crate::common::{app, s, tmp};
use std::path::Path;

/// The built-in dataset: a 3,000-node SBM graph.
const SBM: &str = "sbm";

/// `train` of a 4x64 model on the built-in dataset into `run`, with `extra` flags.
fn train(run: &Path, extra: &[&str]) -> (i32, String, String) {
    let mut args = vec!["train", "--backend", "cpu", "--dataset", SBM, "--out", s(run), "--hidden", "64"];
    args.extend_from_slice(extra);
    app(&args)
}

/// The `--dry-run` estimate's total bytes.
fn dry_run_total(run: &Path, extra: &[&str]) -> u64 {
    let (code, stdout, stderr) = train(run, &[&["--dry-run"], extra].concat());
    assert_eq!(code, 0, "{stdout}{stderr}");
    let est: serde_json::Value = serde_json::from_str(stdout.trim()).expect("the estimate as JSON");
    let parts = ["graph", "node_data", "parameters", "saved_activations", "working_set"];
    let sum: u64 = parts.iter().map(|k| est[k].as_u64().unwrap()).sum();
    assert_eq!(est["total"].as_u64().unwrap(), sum, "{est}");
    sum
}

#[test]
fn a_run_over_the_budget_stops_before_training_and_says_what_to_change() {
    let run = tmp("budget").join("run");
    let total = dry_run_total(&run, &[]);
    assert!(total > 1 << 20, "a 3,000-node 4x64 run needs more than 1 MiB: {total}");
    let (code, stdout, stderr) = train(&run, &["--memory-budget", "1MiB"]);
    let text = stdout + &stderr;
    assert_ne!(code, 0, "{text}");
    for needle in
        ["needs an estimated", "--memory-budget is 0.00 GiB", "to fit, try", "--precision mixedf16", "--hidden"]
    {
        assert!(text.contains(needle), "expected `{needle}` in:\n{text}");
    }
    assert!(!run.join("results.json").exists(), "nothing trained");
    // within the budget it trains
    let r = train(&run, &["--epochs", "1", "--memory-budget", "64GiB", "--log-every", "0"]);
    assert_eq!(r.0, 0, "{}{}", r.1, r.2);
}

#[test]
fn a_cpu_run_beyond_the_hosts_memory_stops_before_training() {
    if train_app::host_memory::host_available_bytes().is_none() {
        return;
    }
    // 8 layers of width 65,536: 16 GiB of weights alone, a terabyte with gradients, Adam's
    // moments and the checkpoints' copies, checked against the host's memory, not a device's
    let run = tmp("host-budget").join("run");
    let (code, stdout, stderr) = app(&[
        "train",
        "--backend",
        "cpu",
        "--dataset",
        SBM,
        "--out",
        s(&run),
        "--hidden",
        "65536",
        "--layers",
        "8",
        "--architecture",
        "linear-io",
        "--epochs",
        "1",
    ]);
    let text = stdout + &stderr;
    assert_ne!(code, 0, "{text}");
    for needle in [
        "training gcn 8x65536 on 3000 nodes of 64 features needs an estimated",
        "more host memory but the host's available memory is",
        "optimizer and checkpoint copies of the parameters",
        "to fit, try --checkpoints false",
        "a smaller --hidden (now 65536)",
    ] {
        assert!(text.contains(needle), "expected `{needle}` in:\n{text}");
    }
    assert!(!run.join("results.json").exists() && !run.join("model.mpk").exists(), "nothing trained");
}

#[test]
fn a_spread_run_is_estimated_per_device() {
    let run = tmp("spread-estimate").join("run");
    let whole = dry_run_total(&run, &[]);
    // two parts on one device hold the whole graph's rows (and their halos) there
    let one_device = dry_run_total(&run, &["--parts", "2"]);
    // the same parts on two devices: each holds one
    let two_devices = dry_run_total(&run, &["--parts", "2", "--devices", "0,1"]);
    assert!(two_devices < one_device, "two devices {two_devices} vs one {one_device}");
    assert!(one_device as f64 > 0.8 * whole as f64, "parts on one device {one_device} vs whole graph {whole}");
    // this graph's halo is most of the other part (homophily 0.8, ten edges per node): a
    // device of two holds its rows, their halo and the halo rows' gradients
    assert!(two_devices < whole, "a device of two {two_devices} vs whole graph {whole}");
}

#[test]
fn the_halo_layout_counts_in_the_estimate() {
    let run = tmp("layout-estimate").join("run");
    let sage = ["--model", "sage", "--parts", "2", "--devices", "0,1", "--halo-layout"];
    let split = dry_run_total(&run, &[&sage[..], &["split"]].concat());
    let joined = dry_run_total(&run, &[&sage[..], &["joined"]].concat());
    // the joined layout builds `[own; halo]` rows and their gradient where the split layout
    // keeps two sums over the own rows: two halo-sized tensors of the hidden width more
    assert!(joined > split, "joined {joined} vs split {split}");
    let hidden_row = 64 * 4;
    assert!((joined - split) % hidden_row == 0, "whole rows of the hidden width: {}", joined - split);
    let rows = (joined - split) / hidden_row;
    assert!(rows > 500, "two halos of a part of a 3,000-node graph: {rows} rows");
}

#[test]
fn a_bench_over_devices_records_the_estimate_of_the_device_that_needs_the_most() {
    let dir = tmp("bench-estimate");
    let out = dir.join("epochs.jsonl");
    let (code, stdout, stderr) = app(&[
        "bench-train",
        "--backend",
        "cpu",
        "--dataset",
        SBM,
        "--models",
        "sage",
        "--nonlins",
        "relu",
        "--hidden",
        "32",
        "--layers",
        "2",
        "--epochs",
        "1",
        "--warmup",
        "0",
        "--devices",
        "0,1",
        "--out",
        s(&out),
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let text = std::fs::read_to_string(&out).expect("the record");
    let rec: serde_json::Value = serde_json::from_str(text.lines().next().expect("one line")).expect("JSON");
    assert_eq!(rec["devices"], 2, "{rec}");
    let est = &rec["estimate"];
    let parts = ["graph", "node_data", "parameters", "saved_activations", "working_set"];
    let sum: u64 = parts.iter().map(|k| est[k].as_u64().unwrap_or_else(|| panic!("{k} in {rec}"))).sum();
    assert!(sum > 0, "{rec}");
    assert_eq!(est["total"].as_u64(), Some(sum), "{rec}");
    // the device estimate of `train --dry-run` with the same model, partition and devices
    let run = dir.join("run");
    let (code, stdout, stderr) = app(&[
        "train",
        "--backend",
        "cpu",
        "--dataset",
        SBM,
        "--out",
        s(&run),
        "--model",
        "sage",
        "--architecture",
        "linear-io",
        "--hidden",
        "32",
        "--layers",
        "2",
        "--devices",
        "0,1",
        "--dry-run",
    ]);
    assert_eq!(code, 0, "{stdout}{stderr}");
    let dry: serde_json::Value = serde_json::from_str(stdout.trim()).expect("the estimate as JSON");
    assert_eq!(dry["total"].as_u64(), Some(sum), "bench {rec}\ntrain {dry}");
}
