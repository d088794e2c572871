#!/usr/bin/env python3
"""Summarises a CubeCL profiling log (cubecl.toml `[profiling] logger.level = "basic"`, written by
bench/run_h200.sh around `train-app bench-train`): kernel time per kernel family in the last
profiled epoch (the log prints one table per device sync). Kernels are timed one by one, so the
total is above the unprofiled epoch time; the shares are what it is for.
With --devices N (a run over N GPUs, each device's server writing its own summary table at each
synchronisation): the last N summary tables of at least 20 launches (the last epoch's, one per
device in synchronisation order: the partitioned bench synchronises device 0 first), kernel time
per family side by side.
Usage: profile_summary.py <log> [--markdown] [--devices N]"""
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


DURATION = re.compile(r"^([\d.]+)(s|ms|µs|us|ns)$")


def summaries(path):
    """CubeCL's summary tables (one per device and synchronisation): lists of (family, ms, launches)."""
    out, cur = [], None
    for line in open(path, encoding="utf-8", errors="replace"):
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 4:
            continue
        if cells[0] == "Name" and "Duration" in cells:
            cur = []
            continue
        if cur is None:
            continue
        if cells[0] == "Total":
            out.append(cur)
            cur = None
            continue
        # "| family | ... | runtime | duration | launches | ratio |"
        m = DURATION.match(cells[-3])
        if m and cells[-2].isdigit():
            parts = [c for c in cells[:-3] if not c.endswith("Runtime")]
            name = " ".join(parts[:2]) if parts[0].startswith("Kernel") else parts[0]
            cur.append(("Matmul" if name == "MatmulEntry" else name, float(m.group(1)) * UNITS[m.group(2)], int(cells[-2])))
    return out


def per_device(path, devices, md):
    tabs = summaries(path)
    if not tabs:
        print(f"no summary tables in {path}")
        return 1
    # the epochs' tables: many launches (the exchange timed alone afterwards launches a few)
    epochs = [t for t in tabs if sum(n for _, _, n in t) >= 20]
    last = epochs[-devices:]
    fams = collections.defaultdict(lambda: [[0.0, 0] for _ in last])
    for d, t in enumerate(last):
        for name, ms, n in t:
            fams[name][d][0] += ms
            fams[name][d][1] += n
    tot = [sum(v[d][0] for v in fams.values()) for d in range(len(last))]
    head = " | ".join(f"GPU {d} ms (launches)" for d in range(len(last)))
    if md:
        print(f"| kernel family | {head} |\n|---|" + "---|" * len(last))
    for name, per in sorted(fams.items(), key=lambda kv: -sum(x[0] for x in kv[1])):
        if sum(x[0] for x in per) < 0.005 * sum(tot):
            continue
        cells = " | ".join(f"{ms:.2f} ({n})" for ms, n in per)
        print(f"| {name} | {cells} |" if md else f"{name:40s} {cells}")
    cells = " | ".join(f"{t:.2f}" for t in tot)
    print(f"| total (profiled) | {cells} |" if md else f"{'total':40s} {cells}")
    return 0


def main():
    path = sys.argv[1]
    if "--devices" in sys.argv:
        return per_device(path, int(sys.argv[sys.argv.index("--devices") + 1]), "--markdown" in sys.argv)
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
