#!/usr/bin/env python3
"""Cross-validation records from the per-fold runs of `graph_h200.sh accuracy`: ours' fold run
folders (`<ds>-<model>-ours-<f>/folds/fold-NN/results.json`, or every fold of a
`--fold-jobs` run in `<ds>-<model>-ours/folds/`: the test fold's accuracy per epoch
as `valid_accuracy`) and PyG's per-fold records (`<ds>-<model>-pyg-<f>.jsonl`, `curves`), one
`accuracy` record per dataset, model and implementation: the mean over the folds at the epoch
whose mean is highest (the GIN paper's protocol), as `cross-validation.json` reports it.
    bench/graph_collect.py RUNS > records.jsonl"""
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pyg_graph import summarise  # noqa: E402


def main():
    runs = sys.argv[1]
    groups = {}
    for d in sorted(glob.glob(os.path.join(runs, "*-ours*"))):
        # one fold's run (`-ours-F`) or a whole `--fold-jobs` run (`-ours`)
        m = re.match(r"(.+)-(gin|gcn|sage)-ours(-\d+)?$", os.path.basename(d))
        if not m:
            continue
        res = sorted(glob.glob(os.path.join(d, "folds", "fold-*", "results.json")))
        if not res:
            print(f"missing: {d}", file=sys.stderr)
            continue
        for path in res:
            with open(path) as f:
                r = json.load(f)
            fold = int(re.search(r"fold-(\d+)", path)[1])
            epochs = r["epochs"]
            g = groups.setdefault((m[1], m[2], "ours"), {"curves": {}, "seconds": 0.0, "device": r.get("backend"),
                                                         "commit": r.get("commit")})
            g["curves"][fold] = [e["valid_accuracy"] for e in sorted(epochs, key=lambda e: e["epoch"])]
            g["seconds"] += r.get("train_seconds", 0.0)
    for p in sorted(glob.glob(os.path.join(runs, "*-pyg-*.jsonl"))):
        m = re.match(r"(.+)-(gin|gcn|sage)-pyg-(\d+)\.jsonl$", os.path.basename(p))
        if not m:
            continue
        with open(p) as f:
            rec = [json.loads(l) for l in f if l.strip()][-1]
        g = groups.setdefault((m[1], m[2], "pyg"), {"curves": {}, "seconds": 0.0, "device": rec.get("device"),
                                                    "commit": None})
        g["curves"][int(m[3])] = rec["curves"][0]
        g["seconds"] += rec.get("seconds", 0.0)
    for (ds, model, impl), g in sorted(groups.items()):
        curves = [g["curves"][f] for f in sorted(g["curves"])]
        s = summarise(curves)
        out = {"op": "accuracy", "impl": impl, "task": "graph", "graph": ds, "model": model, "folds": len(curves),
               "fold_ids": sorted(g["curves"]), "fold_seconds_sum": g["seconds"], "device": g["device"],
               "commit": g["commit"], **{k: v for k, v in s.items() if k != "mean_curve"}}
        print(json.dumps(out))


if __name__ == "__main__":
    main()
