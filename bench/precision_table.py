#!/usr/bin/env python3
"""Paired accuracy table of mixed f16 against f32 from `accuracy` records (precision_accuracy.sh).

usage: precision_table.py <records.jsonl>

Pairs the runs of one dataset, model and architecture by seed; prints, per setting, the mean
test accuracy (%) of each precision, the mean paired difference and its standard error, and
the number of pairs. Exits 1 if a setting lacks a pair."""
import json
import statistics
import sys
from collections import defaultdict

runs = defaultdict(dict)
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("op") != "accuracy":
        continue
    arch = r["variant"].split()[0]
    runs[(r["graph"], r["model"], arch)].setdefault(r["dtype"], {})[r["seed"]] = 100 * r["accuracy"]["test"]

print("| dataset | model | architecture | f32 | mixed f16 | difference (s.e.) | pairs |")
print("|---|---|---|---|---|---|---|")
worst = 0.0
missing = False
for (graph, model, arch), by in sorted(runs.items()):
    f32, f16 = by.get("f32", {}), by.get("f16", {})
    seeds = sorted(set(f32) & set(f16))
    if not seeds:
        missing = True
        print(f"| {graph} | {model} | {arch} | - | - | no pair | 0 |")
        continue
    diffs = [f16[s] - f32[s] for s in seeds]
    se = statistics.stdev(diffs) / len(diffs) ** 0.5 if len(diffs) > 1 else float("nan")
    mean = statistics.mean(diffs)
    worst = max(worst, abs(mean))
    print(f"| {graph} | {model} | {arch} | {statistics.mean(f32[s] for s in seeds):.2f} "
          f"| {statistics.mean(f16[s] for s in seeds):.2f} | {mean:+.2f} ({se:.2f}) | {len(seeds)} |")
print(f"\nlargest mean difference: {worst:.2f} points")
sys.exit(1 if missing else 0)
