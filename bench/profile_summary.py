#!/usr/bin/env python3
"""Summarises a CubeCL profiling log (cubecl.toml `[profiling] logger.level = "basic"`, written by
bench/run_h200.sh around `train-app bench-train`): kernel time per kernel family in the last
profiled epoch (the log prints one table per device sync). Kernels are timed one by one, so the
total is above the unprofiled epoch time; the shares are what it is for.
Usage: profile_summary.py <log> [--markdown]"""
import collections
import re
import sys

UNITS = {"s": 1e3, "ms": 1.0, "µs": 1e-3, "us": 1e-3, "ns": 1e-6}


def tables(path):
    """Per-sync lists of (ms, kernel family), in order."""
    out, cur = [], []
    for line in open(path, encoding="utf-8", errors="replace"):
        cells = [c.strip() for c in line.split("|")]
        if len(cells) < 4:
            continue
        m = re.match(r"^([\d.]+)(s|ms|µs|us|ns)$", cells[1])
        if m:
            name = cells[2]
            if name.startswith("Kernel") or name in ("SelectAssignKernel",):
                name = " ".join(cells[2:4])
            cur.append((float(m.group(1)) * UNITS[m.group(2)], "Matmul" if name == "MatmulEntry" else name))
        elif cells[1] == "Total" and cur:
            out.append(cur)
            cur = []
    return out


def main():
    path = sys.argv[1]
    ts = tables(path)
    if not ts:
        print(f"no profile tables in {path}")
        return 1
    # the largest tables are whole epochs (forward + backward + step); the last of them is the
    # timed epoch (the first ones include the warm-up's first allocations and compilations)
    most = max(len(t) for t in ts)
    epoch = [t for t in ts if len(t) == most][-1]
    agg = collections.defaultdict(lambda: [0.0, 0])
    for ms, name in epoch:
        agg[name][0] += ms
        agg[name][1] += 1
    total = sum(v[0] for v in agg.values())
    md = "--markdown" in sys.argv
    if md:
        print("| kernel | launches | ms | share |\n|---|---|---|---|")
    for name, (ms, n) in sorted(agg.items(), key=lambda kv: -kv[1][0]):
        if ms < 0.005 * total:
            continue
        print(f"| {name} | {n} | {ms:.2f} | {100 * ms / total:.1f} % |" if md else f"{ms:9.2f} ms {n:5d}  {name}")
    print(f"| total (profiled) | {len(epoch)} | {total:.2f} | 100 % |" if md else f"{total:9.2f} ms total")
    return 0


if __name__ == "__main__":
    sys.exit(main())
