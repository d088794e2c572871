#!/usr/bin/env python3
"""Report of a results file (JSON lines, format in bench/README.md): markdown tables of ours
against the peer measured in the same run (speedup = peer median / our median, > 1 means we are
faster), accuracy means over seeds, and PNG charts (matplotlib; skipped with a message when it
is not installed).

Usage: report.py <results.jsonl> <out.md> [<chart dir>]"""
import collections
import json
import os
import statistics
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def pick(recs, **kw):
    for r in recs:
        if all(r.get(k) == v for k, v in kw.items()):
            return r
    return None


def ms(v):
    return "-" if v is None else f"{v:.2f}"


def speedup(peer, ours):
    return f"{peer / ours:.2f}x" if peer and ours else "-"


def gib(b):
    return "-" if not b else f"{b / 2**30:.1f}"


def peer_of(rs, r):
    op, w, k, dt = r["op"], r["width"], r.get("k"), r["dtype"]
    if op == "spmm":
        return pick(rs, op="spmm", impl="cusparse", width=w, dtype=dt)
    if op in ("cbsr_spgemm", "cbsr_sspmm"):
        return pick(rs, op="spmm", impl="cusparse", width=256, dtype="f32")
    if op == "maxk":
        return pick(rs, op="maxk", impl="torch", k=k)
    if op == "spmm_sampled":
        return pick(rs, op="spmm", impl="ours", width=w, dtype="f32")
    if op == "matmul":
        v = (r.get("variant") or "").split("-")[0]
        return pick(rs, op="matmul", impl="cublas", width=w, k=k, variant=v)
    return None


def kernel_tables(recs, out):
    for g in sorted({r["graph"] for r in recs}):
        rs = [r for r in recs if r["graph"] == g and r["op"] not in ("train_epoch", "accuracy")]
        if not rs:
            continue
        first = rs[0]
        commits = sorted({r["commit"] for r in rs})
        out.append(f"### Kernels on {g}: {first['nodes']:,} nodes, {first['edges']:,} edges "
                   f"({first['device']}, commit {', '.join(commits)})\n")
        out.append("| op | width | k | dtype | variant | ours ms | peer | peer ms | speedup | ours GB/s (TFLOP/s for matmul) | check |")
        out.append("|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rs:
            if r["impl"] != "ours":
                continue
            p = peer_of(rs, r)
            pm = p["median_ms"] if p else None
            pname = f"{p['impl']} {p['op']} {p['dtype']}" if p else "-"
            sp = f"{pm / r['median_ms']:.2f}x" if pm else "-"
            var = r.get("variant") or ""
            if r.get("kept_fraction") is not None:
                var += f" (kept {100 * r['kept_fraction']:.1f} %)"
            chk = r.get("check_error")
            rate = r.get("gbps")
            out.append(f"| {r['op']} | {r['width']} | {r.get('k') if r.get('k') is not None else ''} | {r['dtype']} | {var} | "
                       f"{ms(r['median_ms'])} | {pname} | {ms(pm)} | {sp} | {'' if rate is None else f'{rate:.0f}' if rate > 100 else f'{rate:.1f}'} | "
                       f"{'' if chk is None else f'{chk:.1e}'} |")
        peers = [r for r in rs if r["impl"] != "ours" and r["op"] not in ("spmm", "matmul")]
        if peers:
            out.append("\nOther peer timings:\n")
            out.append("| op | impl | width | k | variant | median ms |")
            out.append("|---|---|---|---|---|---|")
            for r in peers:
                out.append(f"| {r['op']} | {r['impl']} | {r['width']} | {r.get('k') or ''} | {r.get('variant') or ''} | {ms(r['median_ms'])} |")
        out.append("")


def train_tables(recs, out):
    for g in sorted({r["graph"] for r in recs if r["op"] == "train_epoch"}):
        rs = [r for r in recs if r["graph"] == g and r["op"] == "train_epoch"]
        first = rs[0]
        out.append(f"### Training epochs on {g}: {first['nodes']:,} nodes, {first['edges']:,} edges, "
                   f"4 layers, hidden 256 (commit {', '.join(sorted({r['commit'] for r in rs}))})\n")
        out.append("| model | nonlin | ours dtype | ours variant | ours ms | PyG (adj_t, f32) ms | speedup | ours peak GiB (reserved) | ours GiB in use (sampled) | PyG peak GiB (allocated) |")
        out.append("|---|---|---|---|---|---|---|---|---|---|")
        for r in rs:
            if r["impl"] != "ours":
                continue
            p = pick(rs, impl="pyg", model=r["model"], nonlin=r["nonlin"], variant="adj_t, 4 layers")
            pm = p["median_ms"] if p else None
            out.append(f"| {r['model']} | {r['nonlin']} | {r['dtype']} | {r.get('variant') or ''} | {ms(r['median_ms'])} | "
                       f"{ms(pm)} | {speedup(pm, r['median_ms'])} | "
                       f"{gib(r.get('peak_bytes'))} | {gib(r.get('peak_in_use_bytes'))} | {gib(p.get('peak_bytes')) if p else '-'} |")
        errs = [r for r in rs if r["impl"] == "pyg" and r.get("error")]
        for r in errs:
            out.append(f"\nPyG {r['model']} {r['nonlin']} {r.get('variant')}: {r['error']}")
        out.append("")


def accuracy_tables(recs, out):
    acc = collections.defaultdict(list)
    meta = {}
    for r in recs:
        if r["op"] == "accuracy" and isinstance(r.get("accuracy"), dict) and "best valid" not in (r.get("variant") or ""):
            key = (r["graph"], r["model"], r["impl"], r["dtype"])
            acc[key].append(100 * r["accuracy"]["test"])
            meta[r["graph"]] = r
    if not acc:
        mixed_precision_table(recs, out)
        return
    out.append("### Accuracy (test %, mean ± sd over seeds; classic 2-layer, hidden 64, 200 epochs, same split)\n")
    out.append("| dataset | model | ours f32 | PyG | ours - PyG | ours mixed f16 | f16 - f32 |")
    out.append("|---|---|---|---|---|---|---|")

    def cell(v):
        return "-" if not v else f"{statistics.mean(v):.2f} ± {statistics.pstdev(v):.2f} ({len(v)})"

    for g in sorted({k[0] for k in acc}):
        for m in sorted({k[1] for k in acc if k[0] == g}):
            o = acc.get((g, m, "ours", "f32"), [])
            p = acc.get((g, m, "pyg", "f32"), [])
            h = acc.get((g, m, "ours", "f16"), [])
            d = f"{statistics.mean(o) - statistics.mean(p):+.2f}" if o and p else "-"
            dh = f"{statistics.mean(h) - statistics.mean(o):+.2f}" if o and h else "-"
            out.append(f"| {g} | {m} | {cell(o)} | {cell(p)} | {d} | {cell(h)} | {dh} |")
    out.append("")
    mixed_precision_table(recs, out)
    return acc


def mixed_precision_table(recs, out):
    """Ours, mixed f16 and TF32 against f32, test accuracy at the best validation epoch, paired
    by seed."""
    runs = collections.defaultdict(dict)
    for r in recs:
        if r["op"] == "accuracy" and r["impl"] == "ours" and "best valid" in (r.get("variant") or ""):
            runs[(r["graph"], r["model"], r["dtype"])][r.get("seed")] = 100 * r["accuracy"]["test"]
    keys = sorted({(g, m) for g, m, _ in runs})
    if not keys:
        return
    out.append("### Reduced precision against f32 (ours, test % at the best validation epoch, paired seeds)\n")
    out.append("| dataset | model | precision | seeds | f32 | precision | difference | sd of the paired difference | standard error |")
    out.append("|---|---|---|---|---|---|---|---|---|")
    for g, m in keys:
        a = runs.get((g, m, "f32"), {})
        for p in ("f16", "bf16", "tf32"):
            b = runs.get((g, m, p), {})
            seeds = sorted(set(a) & set(b), key=str)
            if not seeds:
                continue
            d = [b[s] - a[s] for s in seeds]
            sd = statistics.stdev(d) if len(d) > 1 else 0.0
            fa = statistics.mean(a[s] for s in seeds)
            fb = statistics.mean(b[s] for s in seeds)
            out.append(f"| {g} | {m} | {p} | {len(seeds)} | {fa:.2f} | {fb:.2f} | {statistics.mean(d):+.2f} | {sd:.2f} | {sd / len(d) ** 0.5:.2f} |")
    out.append("")


def charts(recs, acc, outdir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no charts", file=sys.stderr)
        return []
    os.makedirs(outdir, exist_ok=True)
    made = []
    # SpMM per graph: ours vs cuSPARSE, f32 and f16
    graphs = sorted({r["graph"] for r in recs if r["op"] == "spmm"})
    if graphs:
        fig, axes = plt.subplots(1, len(graphs), figsize=(6 * len(graphs), 4), squeeze=False)
        for ax, g in zip(axes[0], graphs):
            rs = [r for r in recs if r["graph"] == g and r["op"] == "spmm"]
            widths = sorted({r["width"] for r in rs})
            series = [("ours", "f32"), ("cusparse", "f32"), ("ours", "f16"), ("cusparse", "f16")]
            bw = 0.8 / len(series)
            for i, (impl, dt) in enumerate(series):
                ys = [(pick(rs, impl=impl, dtype=dt, width=w) or {}).get("median_ms") or 0 for w in widths]
                ax.bar([j + i * bw for j in range(len(widths))], ys, bw, label=f"{impl} {dt}")
            ax.set_xticks([j + 0.4 - bw / 2 for j in range(len(widths))], [str(w) for w in widths])
            ax.set_xlabel("feature width")
            ax.set_ylabel("ms (median)")
            ax.set_title(f"SpMM sum, {g}")
            ax.legend()
        fig.tight_layout()
        p = os.path.join(outdir, "spmm.png")
        fig.savefig(p, dpi=110)
        made.append(p)
    # MaxK kernels against dense cuSPARSE at 256
    rs = [r for r in recs if r["op"] in ("cbsr_spgemm", "cbsr_sspmm")]
    if rs:
        g = rs[0]["graph"]
        rs = [r for r in recs if r["graph"] == g]
        ks = sorted({r["k"] for r in rs if r["op"] == "cbsr_spgemm"})
        fig, ax = plt.subplots(figsize=(7, 4))
        for op, var, lab in [("cbsr_spgemm", None, "CBSR SpGEMM (forward)"), ("cbsr_sspmm", "gather", "SSpMM gather (backward)"),
                             ("cbsr_sspmm", "outer-atomic", "SSpMM outer-atomic (backward)")]:
            kw = {"variant": var} if var else {}
            ax.plot(ks, [(pick(rs, op=op, impl="ours", k=k, **kw) or {}).get("median_ms") for k in ks], marker="o", label=lab)
        d = pick(rs, op="spmm", impl="cusparse", width=256, dtype="f32")
        if d:
            ax.axhline(d["median_ms"], color="k", ls="--", label="dense cuSPARSE SpMM, 256")
        ax.set_xscale("log", base=2)
        ax.set_xticks(ks, [str(k) for k in ks])
        ax.set_xlabel("k (of 256)")
        ax.set_ylabel("ms (median)")
        ax.set_title(f"MaxK kernels, {g}")
        ax.legend()
        fig.tight_layout()
        p = os.path.join(outdir, "maxk.png")
        fig.savefig(p, dpi=110)
        made.append(p)
    # training epochs
    for g in sorted({r["graph"] for r in recs if r["op"] == "train_epoch"}):
        rs = [r for r in recs if r["graph"] == g and r["op"] == "train_epoch" and r.get("median_ms")]
        labels, ys, colors = [], [], []
        for r in rs:
            lab = f"{r['impl']} {r['model']} {r['nonlin']} {r['dtype']}" + (" atomic" if "atomic" in (r.get("variant") or "") else "")
            labels.append(lab)
            ys.append(r["median_ms"])
            colors.append("tab:blue" if r["impl"] == "ours" else "tab:orange")
        fig, ax = plt.subplots(figsize=(8, 0.3 * len(labels) + 1.5))
        ax.barh(range(len(labels)), ys, color=colors)
        ax.set_yticks(range(len(labels)), labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("ms per epoch (median)")
        ax.set_title(f"Full-batch training epoch, {g} (blue: ours, orange: PyG adj_t)")
        fig.tight_layout()
        p = os.path.join(outdir, f"train-{g}.png")
        fig.savefig(p, dpi=110)
        made.append(p)
    if acc:
        keys = sorted({(k[0], k[1]) for k in acc if k[3] == "f32"})
        fig, ax = plt.subplots(figsize=(9, 4))
        bw = 0.4
        for i, impl in enumerate(["ours", "pyg"]):
            ys = [statistics.mean(acc.get((g, m, impl, "f32"), [0])) for g, m in keys]
            es = [statistics.pstdev(acc.get((g, m, impl, "f32"), [0])) for g, m in keys]
            ax.bar([j + i * bw for j in range(len(keys))], ys, bw, yerr=es, label=impl)
        ax.set_xticks([j + bw / 2 for j in range(len(keys))], [f"{g}\n{m}" for g, m in keys], fontsize=7)
        ax.set_ylabel("test accuracy %")
        ax.set_ylim(50, 100)
        ax.set_title("Accuracy, same split and hyper-parameters (mean ± sd over seeds)")
        ax.legend()
        fig.tight_layout()
        p = os.path.join(outdir, "accuracy.png")
        fig.savefig(p, dpi=110)
        made.append(p)
    plt.close("all")
    return made


def capacity_chart(cap, recs, outdir):
    """The largest-graph bisection (capacity_pyg.py's "capacity" records) with ours at the same
    curves: device memory against the graph size, PyG's trials (trained / out of memory) and our
    runs (reserved), one panel per curve."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no capacity chart", file=sys.stderr)
        return []
    curves = sorted({r["variant"] for r in cap})
    if not curves:
        return []
    os.makedirs(outdir, exist_ok=True)
    gib = float(1 << 30)
    fig, axes = plt.subplots(1, len(curves), figsize=(6.5 * len(curves), 4.5), squeeze=False)
    for ax, curve in zip(axes[0], curves):
        by_edges = "edges" in curve
        size = (lambda r: r["edges"] / 1e9) if by_edges else (lambda r: r["nodes"] / 1e6)
        trials = [r for r in cap if r["variant"] == curve]
        fits = sorted((size(r), r["peak_bytes"] / gib) for r in trials if r["fits"])
        fails = sorted((size(r), r["peak_bytes"] / gib) for r in trials if not r["fits"])
        if fits:
            ax.plot(*zip(*fits), "o-", color="tab:orange", label="PyG f32 adj_t: trained (allocated peak)")
        if fails:
            ax.plot(*zip(*fails), "x", color="tab:red", ms=9, label="PyG f32 adj_t: out of memory (at failure)")
        # ours on the same curve: the same node count (edges curve) or the same degree (nodes curve)
        ref = trials[0]
        ours = [r for r in recs if r.get("op") == "train_epoch" and r.get("impl") == "ours" and r.get("peak_bytes")
                and (r["nodes"] == ref["nodes"] if by_edges else round(r["edges"] / r["nodes"]) == round(ref["edges"] / ref["nodes"]))]
        for dt, mark in [("f32", "s"), ("f16", "D")]:
            pts = sorted((size(r), r["peak_bytes"] / gib) for r in ours if r["dtype"] == dt)
            if pts:
                name = "f32" if dt == "f32" else "mixed f16"
                ax.plot(*zip(*pts), mark, color="tab:blue", ms=8, label=f"ours {name}: trained (reserved)")
        dev = max((r["peak_bytes"] for r in trials), default=0) / gib
        ax.axhline(140.4, color="k", ls="--", lw=0.8, label="H200 memory (140.4 GiB)")
        if by_edges:
            ax.axvline((2**32 - 1) / 1e9, color="tab:gray", ls=":", label="largest edge count (unsigned 32-bit edge offsets)")
        ax.set_xlabel("edges (billions) at 232,965 nodes" if by_edges else "nodes (millions) at average degree 50")
        ax.set_ylabel("device memory GiB")
        ax.set_ylim(0, max(150, dev * 1.05))
        ax.set_title("largest trainable graph, SAGE 4x256: " + ("edges" if by_edges else "nodes"))
        ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    p = os.path.join(outdir, "capacity.png")
    fig.savefig(p, dpi=110)
    plt.close("all")
    return [p]


def main():
    src, dst = sys.argv[1], sys.argv[2]
    chart_dir = sys.argv[3] if len(sys.argv) > 3 else os.path.join(os.path.dirname(dst) or ".", "charts")
    recs = load(src)
    cap = [r for r in recs if r.get("op") == "capacity"]
    recs = [r for r in recs if r.get("op") != "capacity"]
    out = [f"# Results: {os.path.basename(src)}\n",
           "Speedup = peer median / our median from the same run (> 1: we are faster). Generated by bench/report.py.\n"]
    kernel_tables(recs, out)
    train_tables(recs, out)
    acc = accuracy_tables(recs, out) or {}
    made = charts(recs, acc, chart_dir) + capacity_chart(cap, recs, chart_dir)
    if made:
        out.append("### Charts\n")
        for p in made:
            out.append(f"![{os.path.basename(p)}]({os.path.relpath(p, os.path.dirname(dst) or '.')})")
    with open(dst, "w") as f:
        f.write("\n".join(out) + "\n")
    print(f"wrote {dst} and {len(made)} charts")


if __name__ == "__main__":
    main()
