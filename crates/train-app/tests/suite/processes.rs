//! Training over several processes through the command line: `train --processes N` trains the
//! model of `train --parts N` (the same losses and accuracies), writes a run folder `eval`
//! reads, and refuses what cannot run: ranks of another configuration, a rank whose peers never
//! come, device lists of the wrong length, CBSR (MaxK) states.

use crate::common::{app, fails, ok, s, tmp};
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
    let base_run = run.join("base");
    let base = ["train", "--backend", "cpu", "--dataset", s(&data), "--out", s(&base_run)];
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

/// The per-epoch `key` of a run's results.
fn series(run: &Path, key: &str) -> Vec<f64> {
    results(run)["epochs"].as_array().unwrap().iter().map(|e| e[key].as_f64().unwrap()).collect()
}

/// A run over parts or over processes keeps checkpoints as a whole-graph run does, and resumed
/// from one it trains the epochs after it as the uninterrupted run did (every epoch's dropout
/// comes from the seed and the epoch, Adam's state from the checkpoint).
#[test]
fn runs_over_parts_and_processes_resume_as_if_never_stopped() {
    let data = dataset("resume-spread-data");
    let root = tmp("resume-spread-runs");
    for spread in [["--parts", "2"], ["--processes", "2"]] {
        let common = ["train", "--backend", "cpu", "--dataset", s(&data), "--model", "sage", "--log-every", "0"];
        let name = spread[0].trim_start_matches("--");
        let whole = root.join(format!("{name}-whole"));
        ok(app(&[&common[..], &spread, &["--epochs", "6", "--out", s(&whole)]].concat()));
        let cut = root.join(format!("{name}-cut"));
        ok(app(&[&common[..], &spread, &["--epochs", "3", "--out", s(&cut)]].concat()));
        let ckpt = cut.join("checkpoint");
        for f in ["model-3.mpk", "optim-3.mpk", "scheduler-3.mpk", "model-2.mpk", "epochs.json"] {
            assert!(ckpt.join(f).is_file(), "{name}: {f} missing");
        }
        // an epoch the run does not keep, reported once before anything starts
        let text = fails(
            app(&[&["train", "--backend", "cpu", "--out", s(&cut), "--resume", "9", "--epochs", "12"][..], &spread]
                .concat()),
            "the run keeps those of epochs",
        );
        assert_eq!(text.matches("the run keeps those").count(), 1, "{text}");
        let text =
            ok(app(&[&["train", "--backend", "cpu", "--out", s(&cut), "--resume", "3", "--epochs", "6"][..], &spread]
                .concat()));
        assert!(text.contains("(resumed after epoch 3)"), "{text}");
        for key in ["train_loss", "valid_loss", "train_accuracy", "valid_accuracy", "test_accuracy"] {
            let (want, got) = (series(&whole, key), series(&cut, key));
            assert_eq!(want.len(), 6, "{name} {key}");
            assert_eq!(got.len(), 6, "{name} {key}: the whole history");
            for (e, (a, b)) in want.iter().zip(&got).enumerate() {
                // equal but for the last digit JSON keeps
                assert!((a - b).abs() <= 1e-12 * a.abs().max(1.0), "{name}: epoch {} {key} {b} vs {a}", e + 1);
            }
        }
        let r = results(&cut);
        assert_eq!(r["resumed_from"].as_u64(), Some(3), "{r}");
        assert_eq!(r["selected_epoch"].as_u64(), Some(6), "{r}");
        assert_eq!(r["final_accuracy"], results(&whole)["final_accuracy"]);
        let history: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(cut.join("history.json")).unwrap()).unwrap();
        assert_eq!(history.as_array().unwrap().len(), 6, "{history}");
        // the last two checkpoints and the best by validation accuracy stay
        let best = (1..=6).max_by(|&a, &b| {
            let v = series(&cut, "valid_accuracy");
            v[a - 1].total_cmp(&v[b - 1]).then(b.cmp(&a))
        });
        for e in 1..=6 {
            let kept = e >= 5 || Some(e) == best;
            assert_eq!(ckpt.join(format!("model-{e}.mpk")).is_file(), kept, "{name}: checkpoint of epoch {e}");
        }
    }
    // a checkpoint holds the whole model: the run goes on over another number of parts, over
    // processes, and on the whole graph, its history whole
    let cut = root.join("parts-cut");
    let more: [(&str, &[&str]); 3] = [("7", &["--parts", "3"]), ("8", &["--processes", "2"]), ("9", &[])];
    for (i, (epochs, spread)) in more.iter().enumerate() {
        let from = (6 + i).to_string();
        let text = ok(app(&[
            &["train", "--backend", "cpu", "--out", s(&cut), "--resume", &from, "--epochs", epochs][..],
            spread,
        ]
        .concat()));
        assert!(text.contains(&format!("(resumed after epoch {from})")), "{text}");
        let r = results(&cut);
        let got: Vec<u64> = r["epochs"].as_array().unwrap().iter().map(|e| e["epoch"].as_u64().unwrap()).collect();
        assert_eq!(got, (1..=epochs.parse::<u64>().unwrap()).collect::<Vec<_>>(), "{spread:?}: {r}");
    }
    // a whole-graph run's checkpoints are resumed on the whole graph
    let single = root.join("single");
    ok(app(&["train", "--backend", "cpu", "--dataset", s(&data), "--epochs", "2", "--out", s(&single)]));
    fails(
        app(&["train", "--backend", "cpu", "--out", s(&single), "--resume", "2", "--epochs", "4", "--parts", "2"]),
        "trained on the whole graph",
    );
}

/// `--select best-valid` saves the best epoch's model (and, with `--checkpoints false`, removes
/// the checkpoints it needed), `--patience` stops the run, over parts and over processes.
#[test]
fn runs_over_parts_and_processes_select_and_stop_as_whole_graph_runs() {
    let data = dataset("select-spread-data");
    let root = tmp("select-spread-runs");
    for spread in [["--parts", "2"], ["--processes", "2"]] {
        let name = spread[0].trim_start_matches("--");
        let common = ["train", "--backend", "cpu", "--dataset", s(&data), "--log-every", "0"];
        let run = root.join(format!("{name}-best"));
        let text = ok(app(&[
            &common[..],
            &spread,
            &["--epochs", "8", "--select", "best-valid", "--checkpoints", "false", "--out", s(&run)],
        ]
        .concat()));
        let valid = series(&run, "valid_accuracy");
        let best = (1..=valid.len()).rev().max_by(|&a, &b| valid[a - 1].total_cmp(&valid[b - 1])).unwrap();
        let r = results(&run);
        assert_eq!(r["selected_epoch"].as_u64(), Some(best as u64), "{name}: {r}");
        assert!(text.contains(&format!("of epoch {best} (best valid)")), "{text}");
        assert_eq!(r["final_accuracy"]["valid"].as_f64(), Some(valid[best - 1]), "{r}");
        assert!(!run.join("checkpoint").exists(), "{name}: the checkpoints it needed are removed");
        let eval = ok(app(&["eval", "--backend", "cpu", s(&run)]));
        let test: f64 = eval.split("test ").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
        assert!((test - r["final_accuracy"]["test"].as_f64().unwrap()).abs() < 1e-3, "{name}: the saved model\n{eval}");

        let run = root.join(format!("{name}-patience"));
        let text = ok(app(&[
            &common[..],
            &spread,
            &["--epochs", "200", "--lr", "0.05", "--patience", "2"],
            &["--out", s(&run)],
        ]
        .concat()));
        let loss = series(&run, "valid_loss");
        assert!(loss.len() < 200, "{name}: ran all {} epochs", loss.len());
        assert!(text.contains("stopped early"), "{text}");
        // the run stopped two epochs after its lowest validation loss, not before
        let lowest = (0..loss.len()).fold(0, |b, i| if loss[i] < loss[b] { i } else { b });
        assert_eq!(lowest + 2, loss.len() - 1, "{name}: valid losses {loss:?}");
    }
}
