//! Training over several processes through the command line: `train --processes N` trains the
//! model of `train --parts N` (the same losses and accuracies), writes a run folder `eval`
//! reads, and refuses what cannot run: ranks of another configuration, a rank whose peers never
//! come, device lists of the wrong length, CBSR (MaxK) states.

mod common;

use common::{app, fails, ok, s, tmp};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A 600-node R-MAT dataset with a split.
fn dataset(name: &str) -> PathBuf {
    let dir = tmp(name).join("g");
    ok(app(&[
        "gen",
        "rmat",
        "--nodes",
        "600",
        "--edges",
        "6000",
        "--features",
        "12",
        "--classes",
        "4",
        "--out",
        s(&dir),
    ]));
    dir
}

fn results(run: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(run.join("results.json")).unwrap()).unwrap()
}

fn losses(run: &Path) -> Vec<f64> {
    results(run)["epochs"].as_array().unwrap().iter().map(|e| e["train_loss"].as_f64().unwrap()).collect()
}

#[test]
fn processes_train_the_model_of_parts_in_one_process() {
    let data = dataset("procs-data");
    let root = tmp("procs-runs");
    // the collectives of an epoch: the seeds, the second layer's exchange forward (values, and
    // column ids for MaxK's CBSR rows) and back, the gradients, the evaluation's exchange and
    // the counts (the input's halo rows moved once, before)
    for (model, n, nonlin, collectives) in
        [("sage", "2", "relu", 6), ("gcn", "3", "relu", 6), ("sage", "2", "maxk:4", 8)]
    {
        let common =
            ["train", "--backend", "cpu", "--dataset", s(&data), "--model", model, "--nonlin", nonlin, "--epochs", "4"];
        let name = format!("{model}-{}", nonlin.replace(':', ""));
        let parts = root.join(format!("{name}-parts"));
        ok(app(&[&common[..], &["--parts", n, "--halo-layout", "joined", "--out", s(&parts)]].concat()));
        let procs = root.join(format!("{name}-procs"));
        let text = ok(app(&[&common[..], &["--processes", n, "--out", s(&procs), "--log-every", "1"]].concat()));
        assert!(text.contains(&format!("on {n} processes")), "{text}");
        assert!(text.contains("epoch    4/4"), "rank 0 logs every epoch:\n{text}");
        let (want, got) = (losses(&parts), losses(&procs));
        assert_eq!(want.len(), 4);
        for (e, (a, b)) in want.iter().zip(&got).enumerate() {
            assert!((a - b).abs() < 1e-5 * a.abs().max(1.0), "{name}: epoch {} loss {b} vs {a} in one process", e + 1);
        }
        let r = results(&procs);
        assert_eq!(r["partition"]["processes"].as_u64(), Some(n.parse().unwrap()), "{r}");
        // the CPU backend has no GPU: `auto` moves the rows through the host
        assert_eq!(r["partition"]["transport"].as_str(), Some("host"), "{r}");
        assert!(text.contains("halo rows move through the host"), "{text}");
        assert!(r["partition"]["exchanged_bytes_per_epoch"].as_u64().unwrap() > 0, "{r}");
        // every epoch records what rank 0 moved, measured; the progress shows it
        assert!(text.contains("MB exchanged in"), "{text}");
        for e in r["epochs"].as_array().unwrap() {
            let x = &e["exchange"];
            assert!(x["bytes_sent"].as_u64().unwrap() > 0 && x["bytes_received"].as_u64().unwrap() > 0, "{e}");
            assert_eq!(x["collectives"].as_u64(), Some(collectives), "{e}");
            assert!(x["transport_seconds"].as_f64().unwrap() > 0.0, "{e}");
        }
        let whole = results(&parts);
        for split in ["train", "valid", "test"] {
            let (a, b) = (&whole["final_accuracy"][split], &r["final_accuracy"][split]);
            assert!((a.as_f64().unwrap() - b.as_f64().unwrap()).abs() < 0.02, "{split} accuracies {a} vs {b}");
        }
        // rank 0's model is the run's model: eval scores it as the run did
        let eval = ok(app(&["eval", "--backend", "cpu", s(&procs)]));
        let test: f64 = eval.split("test ").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
        assert!((test - r["final_accuracy"]["test"].as_f64().unwrap()).abs() < 1e-3, "{eval}");
    }
}

#[test]
fn ranks_that_do_not_belong_together_are_refused() {
    let data = dataset("procs-bad");
    let run = tmp("procs-bad-run");
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let addr = format!("127.0.0.1:{port}");
    // two ranks of one run with another --hidden each
    let rank = |r: &str, hidden: &str| {
        Command::new(env!("CARGO_BIN_EXE_train-app"))
            .args(["train", "--backend", "cpu", "--dataset", s(&data), "--epochs", "2", "--hidden", hidden])
            .args(["--rank", r, "--world", "2", "--rendezvous", &addr, "--rendezvous-timeout", "60"])
            .args(["--out", s(&run.join(r))])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let (a, b) = (rank("0", "16"), rank("1", "32"));
    for c in [a, b] {
        let out = c.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(!out.status.success(), "{text}");
        assert!(text.contains("another configuration"), "{text}");
    }
    // a rank whose rank 0 never comes
    let lone = ["train", "--backend", "cpu", "--dataset", s(&data), "--rank", "1", "--world", "2"];
    let text = fails(
        app(&[&lone[..], &["--rendezvous", &addr, "--rendezvous-timeout", "1", "--out", s(&run.join("lone"))]].concat()),
        "did not answer",
    );
    assert!(text.contains("rank 1 of 2"), "{text}");
    // wrong numbers, caught before anything starts
    let base = ["train", "--backend", "cpu", "--dataset", s(&data), "--out", s(&run)];
    fails(app(&[&base[..], &["--processes", "2", "--devices", "0"]].concat()), "needs 2 --devices");
    fails(app(&[&base[..], &["--rank", "2", "--world", "2", "--rendezvous", &addr]].concat()), "ranks are 0..world");
    fails(app(&[&base[..], &["--rank", "0", "--world", "2", "--rendezvous", "nowhere"]].concat()), "HOST:PORT");
    fails(app(&[&base[..], &["--processes", "2", "--parts", "2"]].concat()), "cannot be used with");
    // NCCL asked for where no rank has a GPU: every rank stops with the reason, and the
    // launcher reports the failed ranks
    let text = fails(
        app(&[&base[..], &["--processes", "2", "--rank-transport", "nccl", "--epochs", "1"]].concat()),
        "cannot use NCCL",
    );
    assert!(text.contains("rank 0 (") && text.contains("not on a CUDA device"), "{text}");
}
