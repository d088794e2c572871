#!/usr/bin/env python3
"""Markdown summary of a results file (JSON lines): ours against the peer measured in the
same run, with ratios (peer median / our median, > 1 means we are faster)."""
import json
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def pick(recs, **kw):
    for r in recs:
        if all(r.get(k) == v for k, v in kw.items()):
            return r
    return None


def fmt(v):
    return "-" if v is None else f"{v:.3f}"


def main(path):
    recs = load(path)
    graphs = sorted({r["graph"] for r in recs})
    for g in graphs:
        rs = [r for r in recs if r["graph"] == g]
        first = rs[0]
        commits = sorted({r["commit"] for r in rs})
        print(f"## {g}: {first['nodes']:,} nodes, {first['edges']:,} edges ({first['device']}, commits {', '.join(commits)})\n")
        print("| op | width | k | variant | ours ms | peer | peer ms | speedup | ours GB/s | check |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in rs:
            if r["impl"] != "ours":
                continue
            op, w, k = r["op"], r["width"], r.get("k")
            peer = None
            if op == "spmm":
                peer = pick(rs, op="spmm", impl="cusparse", width=w, dtype="f32")
            elif op in ("cbsr_spgemm", "cbsr_sspmm"):
                peer = pick(rs, op="spmm", impl="cusparse", width=256, dtype="f32")
            elif op == "maxk":
                peer = pick(rs, op="maxk", impl="torch", k=k)
            elif op == "spmm_sampled":
                peer = pick(rs, op="spmm", impl="ours", width=w)
            pm = peer["median_ms"] if peer else None
            pname = f"{peer['impl']} {peer['op']}" if peer else "-"
            sp = f"{pm / r['median_ms']:.2f}x" if pm else "-"
            var = r.get("variant") or ""
            if r.get("kept_fraction") is not None:
                var += f" (kept {r['kept_fraction']:.3f})"
            chk = r.get("check_error")
            print(f"| {op} | {w} | {k if k is not None else ''} | {var} | {fmt(r['median_ms'])} | {pname} | {fmt(pm)} | {sp} | {fmt(r.get('gbps'))} | {'' if chk is None else f'{chk:.1e}'} |")
        print()
        print("Peers alone:\n")
        print("| op | impl | width | k | dtype | median ms |")
        print("|---|---|---|---|---|---|")
        for r in rs:
            if r["impl"] != "ours":
                print(f"| {r['op']} | {r['impl']} | {r['width']} | {r.get('k') or ''} | {r['dtype']} | {fmt(r['median_ms'])} |")
        print()


if __name__ == "__main__":
    main(sys.argv[1])
