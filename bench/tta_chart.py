"""Time to accuracy of mini-batch against full-graph training as an SVG chart (no plotting
library needed): validation accuracy against cumulative wall seconds, one line per run.

    python3 bench/tta_chart.py RESULTS.jsonl OUT.svg

Reads the `valid_curve` records (ours: one per `train` run, per-epoch seconds and validation
accuracy) and the peer's `valid_accuracy` records (one per epoch, cumulative seconds) of a
results file, and draws the line of 98 % of the best full-graph validation accuracy.
"""
import json
import sys

COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]


def series(path):
    out, peer = [], []
    for line in open(path):
        r = json.loads(line)
        if r.get("op") == "valid_curve":
            t, pts = 0.0, []
            for e in r["epochs"]:
                t += e["seconds"]
                pts.append((t, e["valid_accuracy"]))
            kind = {"full": "full-graph", "minibatch": "mini-batch"}.get(r["training"], r["training"])
            name = f"ours {kind}, lr {r['lr']}"
            out.append((name, pts))
        elif r.get("op") == "valid_accuracy" and r.get("impl") == "torch":
            peer.append((r["seconds"], r["valid_accuracy"]))
    if peer:
        out.append(("torch mini-batch, lr 0.01", sorted(peer)))
    return out


def main():
    src, dst = sys.argv[1], sys.argv[2]
    lines = series(src)
    full = [max(a for _, a in pts) for name, pts in lines if "full-graph" in name]
    target = 0.98 * max(full) if full else None
    w, h, left, bottom, top, right = 720, 420, 60, 50, 20, 230
    tmax = max(t for _, pts in lines for t, _ in pts) * 1.05
    x = lambda t: left + (w - left - right) * t / tmax
    y = lambda a: top + (h - top - bottom) * (1 - a)
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">',
           f'<rect width="{w}" height="{h}" fill="white"/>']
    for i in range(6):
        a = i / 5
        svg.append(f'<line x1="{left}" x2="{w - right}" y1="{y(a):.1f}" y2="{y(a):.1f}" stroke="#ddd"/>')
        svg.append(f'<text x="{left - 8}" y="{y(a) + 4:.1f}" text-anchor="end">{a:.1f}</text>')
    step = 10 if tmax > 40 else 5
    t = 0
    while t <= tmax:
        svg.append(f'<text x="{x(t):.1f}" y="{h - bottom + 18}" text-anchor="middle">{t:g}</text>')
        t += step
    svg.append(f'<text x="{(left + w - right) / 2}" y="{h - 10}" text-anchor="middle">wall seconds (training and validation, cumulative)</text>')
    svg.append(f'<text x="15" y="{(top + h - bottom) / 2}" transform="rotate(-90 15 {(top + h - bottom) / 2})" text-anchor="middle">validation accuracy</text>')
    if target:
        svg.append(f'<line x1="{left}" x2="{w - right}" y1="{y(target):.1f}" y2="{y(target):.1f}" stroke="#444" stroke-dasharray="4 3"/>')
        svg.append(f'<text x="{w - right + 6}" y="{y(target) + 4:.1f}">98 % of full-graph best</text>')
    for i, (name, pts) in enumerate(lines):
        c = COLORS[i % len(COLORS)]
        path = " ".join(f"{x(t):.1f},{y(a):.1f}" for t, a in pts)
        svg.append(f'<polyline points="{path}" fill="none" stroke="{c}" stroke-width="2"/>')
        for t, a in pts:
            svg.append(f'<circle cx="{x(t):.1f}" cy="{y(a):.1f}" r="2.5" fill="{c}"/>')
        svg.append(f'<line x1="{w - right + 6}" x2="{w - right + 26}" y1="{40 + 18 * i}" y2="{40 + 18 * i}" stroke="{c}" stroke-width="2"/>')
        svg.append(f'<text x="{w - right + 30}" y="{44 + 18 * i}">{name}</text>')
    svg.append("</svg>")
    open(dst, "w").write("\n".join(svg) + "\n")


if __name__ == "__main__":
    main()
