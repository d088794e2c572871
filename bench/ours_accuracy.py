#!/usr/bin/env python3
"""Turns a `train-app train` results.json into an accuracy record of the results format."""
import json
import sys

res, out, device = sys.argv[1], sys.argv[2], sys.argv[3]
r = json.load(open(res))
c = r["config"]
d = r["dataset"]
dtype = {"f32": "f32", "tf32": "tf32", "mixedf16": "f16", "mixedbf16": "bf16"}[c["precision"]]
rec = {"op": "accuracy", "impl": "ours", "graph": d["name"], "nodes": d["nodes"], "edges": d["edges"], "width": c["hidden"],
       "k": None, "dtype": dtype, "model": c["model"], "nonlin": c["nonlin"].replace(":", ""), "median_ms": None, "runs": 1,
       "peak_bytes": None, "commit": r["commit"], "device": device, "accuracy": r["final_accuracy"],
       "variant": f"{c['architecture']} {c['layers']}-layer, {c['epochs']} epochs" + (", best valid" if c.get("select") == "best-valid" else ""),
       "seconds": r["train_seconds"], "seed": c.get("seed"), "selected_epoch": r.get("selected_epoch")}
with open(out, "a") as f:
    f.write(json.dumps(rec) + "\n")
print(json.dumps(rec))
