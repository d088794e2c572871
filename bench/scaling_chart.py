"""Strong and weak scaling of partitioned training as an SVG chart (no plotting library needed).

    python3 bench/scaling_chart.py RESULTS.jsonl OUT.svg [--links nccl-group]

Reads the `train_epoch` records of bench/multi_gpu.sh's `strong` and `weak` stages: left, the
products-scale graph's speedup over one GPU against the GPU count (f32 and mixed f16, with the
ideal line); right, the weak-scaling epoch (a graph that grows with the GPU count) relative to
the one-GPU epoch. Multi-GPU records are those whose `exchange_path` is `--links`.
"""
import json
import sys

COLORS = {"f32": "#1f77b4", "f16": "#d62728"}
LABELS = {"f32": "f32", "f16": "mixed f16"}


def load(path, links):
    strong, weak = {}, {}
    for line in open(path):
        r = json.loads(line)
        if r.get("op") != "train_epoch":
            continue
        p = r.get("partition") or {}
        d = r.get("devices", 1)
        if d > 1 and p.get("exchange_path") != links:
            continue
        g = r["graph"]
        if g == "products-rmat":
            strong.setdefault(r["dtype"], {})[d] = r["median_ms"]
            weak.setdefault(r["dtype"], {}).setdefault(1, r["median_ms"])
        elif g.startswith("rmat-weak-"):
            weak.setdefault(r["dtype"], {})[d] = r["median_ms"]
    return strong, weak


def panel(x0, title, ylabel, counts, ymax, series, ideal=None):
    w, h, left, top = 330, 260, 50, 30
    out = [f'<g transform="translate({x0},0)">', f'<text x="{left + w / 2}" y="18" text-anchor="middle" font-size="13">{title}</text>']
    xs = {c: left + w * i / max(1, len(counts) - 1) for i, c in enumerate(counts)}

    def y(v):
        return top + h - h * v / ymax

    out.append(f'<line x1="{left}" y1="{top + h}" x2="{left + w}" y2="{top + h}" stroke="black"/>')
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + h}" stroke="black"/>')
    for c, x in xs.items():
        out.append(f'<text x="{x}" y="{top + h + 16}" text-anchor="middle" font-size="11">{c}</text>')
    out.append(f'<text x="{left + w / 2}" y="{top + h + 32}" text-anchor="middle" font-size="11">GPUs</text>')
    step = 0.5 if ymax <= 3 else 1
    v = 0.0
    while v <= ymax + 1e-9:
        out.append(f'<text x="{left - 6}" y="{y(v) + 4}" text-anchor="end" font-size="10">{v:g}</text>')
        out.append(f'<line x1="{left}" y1="{y(v)}" x2="{left + w}" y2="{y(v)}" stroke="#ddd"/>')
        v += step
    out.append(f'<text transform="translate(14,{top + h / 2}) rotate(-90)" text-anchor="middle" font-size="11">{ylabel}</text>')
    if ideal:
        pts = " ".join(f"{xs[c]},{y(ideal(c))}" for c in counts)
        out.append(f'<polyline points="{pts}" fill="none" stroke="#888" stroke-dasharray="4 3"/>')
    for i, (name, color, pts) in enumerate(series):
        poly = " ".join(f"{xs[c]},{y(v)}" for c, v in pts)
        out.append(f'<polyline points="{poly}" fill="none" stroke="{color}" stroke-width="2"/>')
        for c, v in pts:
            out.append(f'<circle cx="{xs[c]}" cy="{y(v)}" r="3" fill="{color}"/>')
            out.append(f'<text x="{xs[c] + 5}" y="{y(v) - 5}" font-size="10" fill="{color}">{v:.2f}</text>')
        out.append(f'<text x="{left + 8}" y="{top + 14 + 14 * i}" font-size="11" fill="{color}">{name}</text>')
    out.append("</g>")
    return out


def main():
    args = sys.argv[1:]
    links = "nccl-group"
    if "--links" in args:
        i = args.index("--links")
        links = args[i + 1]
        del args[i : i + 2]
    src, dst = args
    strong, weak = load(src, links)
    counts = sorted({c for s in strong.values() for c in s} | {c for s in weak.values() for c in s})
    sp = [(LABELS[k], COLORS[k], [(c, v[1] / v[c]) for c in sorted(v)]) for k, v in sorted(strong.items()) if 1 in v]
    wk = [(LABELS[k], COLORS[k], [(c, v[c] / v[1]) for c in sorted(v)]) for k, v in sorted(weak.items()) if 1 in v]
    smax = max([c for c in counts] + [1])
    wmax = max([v for _, _, pts in wk for _, v in pts] + [2.0])
    body = ['<svg xmlns="http://www.w3.org/2000/svg" width="800" height="330" font-family="sans-serif">',
            '<rect width="800" height="330" fill="white"/>']
    body += panel(0, "Strong scaling: products-scale SAGE 4x256", "speedup over one GPU", counts, smax, sp, ideal=float)
    body += panel(400, "Weak scaling: R-MAT growing with the GPUs", "epoch / one-GPU epoch", counts,
                  (int(wmax * 2) + 1) / 2, wk, ideal=lambda c: 1.0)
    body.append("</svg>")
    open(dst, "w").write("\n".join(body) + "\n")


if __name__ == "__main__":
    main()
