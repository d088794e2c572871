//! A run folder through the command line: resume keeps the run (its config, its whole
//! history), refuses contradicting flags and survives a checkpoint cut mid-write; an unwritable
//! checkpoint folder fails the run; `eval` / `predict` refuse a model or a dataset that does not
//! fit; `predict` writes probabilities, predictions and embeddings that agree with `eval`; a new
//! run into a run folder replaces that run.

use crate::common::{app, fails, ok, s, tiny_data, tmp};
use std::path::{Path, PathBuf};

/// The 6-node dataset saved as an npy folder.
fn dataset(name: &str) -> PathBuf {
    let dir = tmp(name);
    train_app::datasets::npy::save(&tiny_data(false), &dir).unwrap();
    dir
}

fn train(data: &Path, run: &Path, extra: &[&str]) -> String {
    let mut args = vec!["train", "--backend", "cpu", "--dataset", s(data), "--out", s(run), "--log-every", "0"];
    args.extend_from_slice(extra);
    ok(app(&args))
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn epochs_of(run: &Path) -> Vec<u64> {
    json(&run.join("results.json"))["epochs"].as_array().unwrap().iter().map(|e| e["epoch"].as_u64().unwrap()).collect()
}

#[test]
fn resume_reads_the_run_and_keeps_its_whole_history() {
    let data = dataset("resume-data");
    let run = tmp("resume-run").join("run");
    train(&data, &run, &["--epochs", "3", "--hidden", "8"]);
    assert_eq!(epochs_of(&run), [1, 2, 3]);
    // no --dataset, no --hidden: the run's own config.json gives them
    let text =
        ok(app(&["train", "--backend", "cpu", "--out", s(&run), "--resume", "3", "--epochs", "5", "--log-every", "0"]));
    assert!(text.contains("resumed after epoch 3"), "{text}");
    assert_eq!(epochs_of(&run), [1, 2, 3, 4, 5]);
    let cfg = json(&run.join("config.json"));
    assert_eq!(cfg["dataset"], s(&data));
    assert_eq!((cfg["hidden"].as_u64(), cfg["epochs"].as_u64()), (Some(8), Some(5)));
    // flags that contradict the run name the flag and both values; the files stay as they were
    let before = (std::fs::read(run.join("config.json")).unwrap(), std::fs::read(run.join("results.json")).unwrap());
    let resume = |extra: &[&str]| {
        let mut args = vec!["train", "--backend", "cpu", "--out", s(&run), "--resume", "5"];
        args.extend_from_slice(extra);
        app(&args)
    };
    fails(resume(&["--hidden", "16", "--epochs", "6"]), "--hidden 16 contradicts the resumed run's hidden = 8");
    fails(resume(&["--model", "sage", "--epochs", "6"]), "--model sage contradicts the resumed run's model = gcn");
    fails(resume(&["--epochs", "4"]), "--epochs 4 contradicts the resumed run's epochs = 5");
    fails(resume(&[]), "the run already trained 5 epochs");
    // a flag equal to the run's value is fine
    ok(resume(&["--hidden", "8", "--epochs", "6", "--log-every", "0"]));
    assert_eq!(epochs_of(&run), [1, 2, 3, 4, 5, 6]);
    assert_ne!(before.1, std::fs::read(run.join("results.json")).unwrap());
    // resuming a folder that holds no run
    fails(
        app(&["train", "--backend", "cpu", "--out", s(&tmp("resume-none")), "--resume", "2"]),
        "the configuration of the run to resume",
    );
}

#[test]
fn a_checkpoint_cut_mid_write_falls_back_to_the_previous_one() {
    let data = dataset("cut-data");
    let run = tmp("cut-run").join("run");
    train(&data, &run, &["--epochs", "2"]);
    let ckpt = run.join("checkpoint");
    // what a process killed while writing model-2.mpk in place would have left
    let full = std::fs::read(ckpt.join("model-2.mpk")).unwrap();
    std::fs::write(ckpt.join("model-2.mpk"), &full[..full.len() / 2]).unwrap();
    let text =
        ok(app(&["train", "--backend", "cpu", "--out", s(&run), "--resume", "2", "--epochs", "3", "--log-every", "0"]));
    assert!(text.contains("the checkpoint of epoch 2 is incomplete"), "{text}");
    assert!(text.contains("resuming from epoch 1"), "{text}");
    assert_eq!(epochs_of(&run), [1, 2, 3]);
    assert_eq!(json(&run.join("results.json"))["resumed_from"], 1);
    // checkpoints are written through a temporary file and a rename: none is left behind
    let names: Vec<String> =
        std::fs::read_dir(&ckpt).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().to_string()).collect();
    assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");
    // no complete checkpoint at all: an error, not a panic
    for e in [1, 2, 3] {
        let p = ckpt.join(format!("optim-{e}.mpk"));
        if p.exists() {
            std::fs::write(&p, b"cut").unwrap();
        }
    }
    fails(
        app(&["train", "--backend", "cpu", "--out", s(&run), "--resume", "3", "--epochs", "4"]),
        "no earlier checkpoint is complete",
    );
}

#[test]
fn a_checkpoint_folder_that_cannot_be_written_fails_the_run() {
    let data = dataset("unwritable-data");
    let run = tmp("unwritable-run");
    // a run folder with a file where the checkpoint folder should be
    std::fs::write(run.join(".train-app-run"), b"a run folder of train-app\n").unwrap();
    std::fs::write(run.join("checkpoint"), b"not a folder").unwrap();
    let text = fails(
        app(&[
            "train",
            "--backend",
            "cpu",
            "--dataset",
            s(&data),
            "--out",
            s(&run),
            "--epochs",
            "3",
            "--log-every",
            "0",
        ]),
        "cannot write checkpoints to",
    );
    assert!(!text.contains("accuracy train"), "{text}");
    // without checkpoints the same folder trains
    train(&data, &run, &["--epochs", "2", "--checkpoints", "false"]);
}

#[test]
fn eval_and_predict_refuse_a_model_or_dataset_that_does_not_fit() {
    let data = dataset("fit-data");
    let (a, b) = (tmp("fit-a").join("run"), tmp("fit-b").join("run"));
    train(&data, &a, &["--epochs", "2", "--hidden", "8", "--checkpoints", "false"]);
    train(&data, &b, &["--epochs", "2", "--hidden", "16", "--checkpoints", "false"]);
    // a dataset of 4 features for a model trained on 3
    let wide = tmp("fit-wide");
    let d = tiny_data(false);
    let x = burn_sparse_gnn::Features::dense(6, 4, (0..24).map(|v| v as f32 / 10.0).collect()).unwrap();
    let d =
        burn_sparse_gnn::GraphData::new("wide", d.adjacency().clone(), x, d.labels().to_vec(), 2, d.split().cloned())
            .unwrap();
    train_app::datasets::npy::save(&d, &wide).unwrap();
    for cmd in
        [vec!["eval", "--backend", "cpu", s(&a)], vec!["predict", "--backend", "cpu", s(&a), "--out", s(&tmp("fit-p"))]]
    {
        let mut args = cmd.clone();
        args.extend_from_slice(&["--dataset", s(&wide)]);
        let text = fails(app(&args), "was trained on 3 features and 2 classes");
        assert!(text.contains("has 4 features and 2 classes"), "{text}");
        assert!(text.contains("model and data do not match"), "{text}");
    }
    // a model.mpk of another width under the run's config.json
    std::fs::copy(b.join("model.mpk"), a.join("model.mpk")).unwrap();
    fails(app(&["eval", "--backend", "cpu", s(&a)]), "has shape [3, 16], the model needs [3, 8]");
}

#[test]
fn predict_writes_outputs_that_agree_with_eval() {
    let data = dataset("predict-data");
    let run = tmp("predict-run").join("run");
    train(&data, &run, &["--epochs", "3", "--checkpoints", "false"]);
    let eval = ok(app(&["eval", "--backend", "cpu", s(&run)]));
    let test_acc: f64 = eval.split("test ").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    let out = tmp("predict-out");
    let text = ok(app(&["predict", "--backend", "cpu", s(&run), "--out", s(&out)]));
    assert!(text.contains("6 nodes, 2 classes, embeddings 16 wide"), "{text}");
    let p = train_app::npyio::read_floats(&out.join("probabilities.npy")).unwrap();
    let y = train_app::npyio::read_ints(&out.join("predictions.npy")).unwrap();
    let e = train_app::npyio::read_floats(&out.join("embeddings.npy")).unwrap();
    assert_eq!((p.shape.as_slice(), y.shape.as_slice(), e.shape.as_slice()), (&[6, 2][..], &[6][..], &[6, 16][..]));
    for (i, row) in p.data.chunks(2).enumerate() {
        assert!((row.iter().sum::<f32>() - 1.0).abs() < 1e-5, "row {i}: {row:?}");
        let argmax = if row[1] > row[0] { 1 } else { 0 };
        assert_eq!(y.data[i], argmax, "node {i}: {row:?}");
    }
    assert!(e.data.iter().all(|v| v.is_finite()));
    // the test split of the tiny dataset is nodes 4 and 5 (labels 0, 1)
    let d = tiny_data(false);
    let test = &d.split().unwrap().test;
    let correct = test.iter().filter(|&&i| y.data[i as usize] == d.labels()[i as usize]).count();
    assert_eq!(correct as f64 / test.len() as f64, test_acc, "{eval}");
    // the weights as safetensors, named by their module paths
    let bytes = std::fs::read(run.join("model.safetensors")).unwrap();
    let st = safetensors::SafeTensors::deserialize(&bytes).unwrap();
    let w0 = st.tensor("convs.0.linear.weight").unwrap();
    assert_eq!(w0.shape(), &[3, 16]);
    assert_eq!(st.tensor("convs.1.linear.weight").unwrap().shape(), &[16, 2]);
    assert_eq!(w0.dtype(), safetensors::Dtype::F32);
}

#[test]
fn train_help_shows_every_default() {
    let (code, text, _) = app(&["train", "--help"]);
    assert_eq!(code, 0);
    for needle in [
        "--model <MODEL>",
        "[default: gcn]",
        "[possible values: gcn, sage, gin, gat]",
        "--hidden <HIDDEN>",
        "[default: 16]",
        "--weight-decay",
        "[default: 0.0005]",
        "--architecture",
        "[default: classic]",
        "--out <OUT>",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from train --help:\n{text}");
    }
    // a config file uses the same keys as the flags
    let data = dataset("config-keys");
    let cfg = data.join("run.toml");
    std::fs::write(
        &cfg,
        format!(
            "dataset = \"{}\"\nmodel = \"sage\"\nhidden = 8\nepochs = 2\nout = \"{}\"\n",
            s(&data),
            s(&data.join("run"))
        ),
    )
    .unwrap();
    let text = ok(app(&["train", "--backend", "cpu", "--config", s(&cfg), "--log-every", "0"]));
    assert!(text.contains("sage relu on sgnn-test-"), "{text}");
    let saved = json(&data.join("run").join("config.json"));
    assert_eq!((saved["model"].as_str(), saved["hidden"].as_u64()), (Some("sage"), Some(8)));
}

/// A run on a partitioned graph saves what a whole-graph run does: the configuration, the
/// per-epoch history, the results and a model that `eval` reads and scores as the run did.
#[test]
fn a_partitioned_run_saves_a_model_eval_reads() {
    let data = dataset("parts-data");
    let run = tmp("parts-run").join("run");
    let text = ok(app(&[
        "train",
        "--backend",
        "cpu",
        "--dataset",
        s(&data),
        "--out",
        s(&run),
        "--epochs",
        "3",
        "--model",
        "sage",
        "--parts",
        "2",
        "--log-every",
        "1",
    ]));
    assert!(text.contains("epoch    3/3"), "one line per epoch with --log-every 1:\n{text}");
    // the partition is computed once, shown, and reported as computed (not read from the cache
    // that the run wrote for its memory estimate)
    assert!(text.contains("partitioned into 2 parts in"), "{text}");
    assert_eq!(json(&run.join("results.json"))["partition"]["cached"], false);
    for f in ["config.json", "history.json", "results.json", "model.mpk", "model.safetensors"] {
        assert!(run.join(f).is_file(), "{f} missing in {}", run.display());
    }
    let history = json(&run.join("history.json"));
    assert_eq!(history.as_array().unwrap().len(), 3, "{history}");
    let results = json(&run.join("results.json"));
    assert_eq!(results["partition"]["halo_layout"], "split", "f32 SAGE picks the split layout: {results}");
    let test_acc = results["final_accuracy"]["test"].as_f64().unwrap();
    let eval = ok(app(&["eval", "--backend", "cpu", s(&run)]));
    let got: f64 = eval.split("test ").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    assert!((got - test_acc).abs() < 1e-3, "eval's test accuracy {got} against the run's {test_acc}:\n{eval}");
}

#[test]
fn a_new_run_replaces_the_run_in_its_folder() {
    let data = dataset("replace-data");
    let run = tmp("replace-run");
    train(&data, &run, &["--epochs", "3"]);
    assert!(run.join("checkpoint").join("model-3.mpk").is_file());
    std::fs::write(run.join("partition-2-metis.part"), b"kept").unwrap();
    // a new run refused for its input loses nothing of the run there
    fails(
        app(&["train", "--backend", "cpu", "--dataset", "/no/such/dataset", "--out", s(&run), "--epochs", "2"]),
        "file not found",
    );
    fails(app(&["train", "--backend", "cpu", "--dataset", s(&data), "--out", s(&run), "--hidden", "0"]), "--hidden");
    assert!(run.join("checkpoint").join("model-3.mpk").is_file() && run.join("results.json").is_file());
    let text = train(&data, &run, &["--epochs", "2"]);
    assert!(text.contains(&format!("replacing the run in {}", run.display())), "{text}");
    // none of the old run's checkpoints is left for a resume to pick up
    assert!(!run.join("checkpoint").join("model-3.mpk").exists());
    fails(
        app(&["train", "--backend", "cpu", "--out", s(&run), "--resume", "3", "--epochs", "4"]),
        "the run keeps those of epochs 1, 2",
    );
    assert_eq!(json(&run.join("history.json")).as_array().unwrap().len(), 2);
    assert_eq!(std::fs::read(run.join("partition-2-metis.part")).unwrap(), b"kept", "partition caches stay");
}

#[test]
fn a_run_never_replaces_a_folder_of_other_files() {
    let data = dataset("foreign-data");
    // a project whose folders have the names a run writes
    let proj = tmp("foreign-proj");
    std::fs::create_dir_all(proj.join("train")).unwrap();
    std::fs::create_dir_all(proj.join("valid")).unwrap();
    std::fs::write(proj.join("train").join("x.txt"), b"mine").unwrap();
    let err = fails(
        app(&["train", "--backend", "cpu", "--dataset", s(&data), "--out", s(&proj), "--epochs", "2"]),
        "holds files that train-app did not write (train, valid)",
    );
    assert!(err.contains("choose another --out"), "{err}");
    assert_eq!(std::fs::read(proj.join("train").join("x.txt")).unwrap(), b"mine");
    assert!(!proj.join(".train-app-run").exists(), "nothing is written into the folder");
    // a web project's config.json and train/ folder
    let web = tmp("foreign-web");
    std::fs::write(web.join("config.json"), b"{\"port\": 80}").unwrap();
    std::fs::create_dir_all(web.join("train")).unwrap();
    fails(app(&["train", "--backend", "cpu", "--dataset", s(&data), "--out", s(&web)]), "config.json, train");
    assert_eq!(std::fs::read(web.join("config.json")).unwrap(), b"{\"port\": 80}");
    // an empty folder, or one with only a partition cache, is free; the run marks it
    let empty = tmp("foreign-empty");
    std::fs::write(empty.join("partition-2-metis.part"), b"cache").unwrap();
    train(&data, &empty, &["--epochs", "2"]);
    assert!(empty.join(".train-app-run").is_file() && empty.join("results.json").is_file());
    // the run writes no folder per epoch and split (metrics live in history.json)
    assert!(!empty.join("train").exists() && !empty.join("valid").exists());
    assert!(!empty.join(".train-app-lock").exists(), "the lock file goes with the run");
    // files a user put into a run folder stay when a new run replaces the run
    std::fs::write(empty.join("notes.txt"), b"keep").unwrap();
    train(&data, &empty, &["--epochs", "2"]);
    assert_eq!(std::fs::read(empty.join("notes.txt")).unwrap(), b"keep");
}

#[test]
fn a_second_run_into_a_folder_being_written_fails_at_once_naming_the_writer() {
    let data = dataset("lock-data");
    let run = tmp("lock-run");
    train(&data, &run, &["--epochs", "2"]);
    let before = std::fs::read(run.join("results.json")).unwrap();
    // another process holds the run folder's lock
    let mut lock =
        std::fs::File::options().create(true).truncate(false).write(true).open(run.join(".train-app-lock")).unwrap();
    lock.try_lock().unwrap();
    use std::io::Write;
    lock.write_all(b"4242\n").unwrap();
    let started = std::time::Instant::now();
    fails(
        app(&["train", "--backend", "cpu", "--dataset", s(&data), "--out", s(&run), "--epochs", "3"]),
        "process 4242 is writing a run in this folder",
    );
    assert!(started.elapsed().as_secs() < 30);
    assert_eq!(std::fs::read(run.join("results.json")).unwrap(), before, "the run there is untouched");
    fails(app(&["train", "--backend", "cpu", "--out", s(&run), "--resume", "2", "--epochs", "3"]), "process 4242");
    drop(lock);
    // once the holder is gone (its lock with it) the folder is free again
    train(&data, &run, &["--epochs", "2"]);
}

#[test]
fn a_run_whose_training_loss_grows_past_twice_its_first_stops_with_a_divergence_error() {
    let data = dataset("diverge-data");
    let run = tmp("diverge-run");
    let err = fails(
        app(&[
            "train",
            "--backend",
            "cpu",
            "--dataset",
            s(&data),
            "--out",
            s(&run),
            "--epochs",
            "60",
            "--lr",
            "50",
            "--hidden",
            "64",
            "--dropout",
            "0",
            "--input-dropout",
            "0",
            "--weight-decay",
            "0",
            "--log-every",
            "0",
        ]),
        "training diverged",
    );
    assert!(err.contains("in f32") && err.contains("--lr"), "{err}");
    // it stopped at the epoch that passed the bound, and its history says so
    let epochs = json(&run.join("results.json"))["epochs"].as_array().unwrap().clone();
    assert!(epochs.len() < 60, "stopped early: {} epochs", epochs.len());
    let first = epochs[0]["train_loss"].as_f64().unwrap();
    // a loss that is not finite is written as null
    let last = epochs.last().unwrap()["train_loss"].as_f64().unwrap_or(f64::INFINITY);
    assert!(last > 2.0 * first, "first {first}, last {last}");
}

#[test]
fn resume_last_continues_from_the_latest_checkpoint() {
    let data = dataset("resume-last-data");
    let run = tmp("resume-last-run");
    train(&data, &run, &["--epochs", "3"]);
    let text = ok(app(&["train", "--backend", "cpu", "--out", s(&run), "--resume", "last", "--epochs", "4"]));
    assert!(text.contains("resumed after epoch 3"), "{text}");
    assert_eq!(epochs_of(&run), [1, 2, 3, 4]);
    fails(
        app(&["train", "--backend", "cpu", "--out", s(&run), "--resume", "latest"]),
        "neither an epoch number nor `last`",
    );
    let none = tmp("resume-last-none");
    train(&data, &none, &["--epochs", "2", "--checkpoints", "false"]);
    fails(app(&["train", "--backend", "cpu", "--out", s(&none), "--resume", "last"]), "the run has none");
}
