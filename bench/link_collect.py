#!/usr/bin/env python3
"""Turns the results.json of `train-app train --task link` runs (the folders under ROOT whose
name starts with PREFIX) into result records on standard output: an `accuracy` record per run,
and for runs of 3 epochs or more a `train_epoch` record (median epoch seconds of the epochs after
the first; an epoch holds the training step and the forward pass over the valid pairs)."""
import json
import os
import statistics
import sys

root = sys.argv[1]
prefix = sys.argv[2] if len(sys.argv) > 2 else ""
for name in sorted(os.listdir(root)):
    path = os.path.join(root, name, "results.json")
    if not name.startswith(prefix) or not os.path.exists(path):
        continue
    r = json.load(open(path))
    c, link = r["config"], r.get("link") or {}
    base = {"graph": r["dataset"]["name"], "nodes": r["dataset"]["nodes"], "edges": r["dataset"]["edges"],
            "task": "link", "impl": "ours", "model": c["model"], "width": c["hidden"], "seed": c["seed"],
            "dtype": {"f32": "f32", "mixedf16": "f16-mixed"}.get(c["precision"], c["precision"]),
            "commit": r["commit"], "variant": f"{c['layers']}-layer, {c['epochs']} epochs, {c['decoder']} decoder"}
    test, valid = link.get("test") or {}, link.get("valid") or {}
    print(json.dumps({**base, "op": "accuracy", "median_ms": None, "runs": 1, "accuracy": {
        "valid_auc": valid.get("auc"), "test_auc": test.get("auc"), "test_ap": test.get("ap"),
        "test_hits": test.get("hits"), "hits_k": test.get("hits_k"), "test_mrr": test.get("mrr"),
        "best_epoch": r.get("selected_epoch")}}))
    secs = [e["seconds"] * 1000 for e in r["epochs"][1:]]
    if len(secs) >= 2:
        mem = max((e.get("device_bytes_reserved") or 0) for e in r["epochs"])
        print(json.dumps({**base, "op": "train_epoch", "median_ms": statistics.median(secs), "min_ms": min(secs),
                          "runs": len(secs), "peak_bytes": mem or None,
                          "variant": base["variant"] + ", epoch = train step + valid forward"}))
