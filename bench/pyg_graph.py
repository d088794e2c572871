#!/usr/bin/env python3
"""PyG graph classification on the graphs, features and folds that `train-app train --task graph`
writes into its run folder (`graph-data.json`: the feature encoding and the folds or split), the
peer of ours. Model as ours (`gnn_models::GraphModel`): `--layers` convolutions (GINConv with a
Linear-ReLU-Linear MLP and eps = 0, GCNConv, or SAGEConv mean) d_in -> hidden -> ... -> hidden,
each followed by BatchNorm1d and ReLU; the readouts (`--readout sum|mean|max`) of every state,
the input included, concatenated, dropout, one linear map. Adam with
`--lr`, StepLR (`--lr-step` epochs, `--lr-gamma`), PyG's DataLoader with shuffled batches of
`--batch-size`. Cross-validation: every fold trains `--epochs` epochs and scores its test fold
after each; the record holds the mean over the folds at the epoch best on average (the GIN
paper's protocol), as ours (`cross-validation.json`). `--time` times training epochs (one pass
over every graph) at each of `--batch-sizes` instead. `--selfcheck` tests the summary."""
import argparse
import json
import os
import sys
import time

import numpy as np


def summarise(curves):
    """Mean curve over folds, its first best epoch (1-based), mean and population std there."""
    e = min(len(c) for c in curves)
    m = np.array([c[:e] for c in curves], np.float64)
    mean_curve = m.mean(0)
    best = int(np.argmax(mean_curve))
    at = m[:, best]
    return {"best_epoch": best + 1, "mean_accuracy": float(at.mean()), "std_accuracy": float(at.std()),
            "fold_accuracy": [float(v) for v in at], "last_epoch_mean": float(mean_curve[-1]),
            "mean_curve": [float(v) for v in mean_curve], "epochs": e}


def _selfcheck():
    s = summarise([[0.5, 0.7, 0.6], [0.5, 0.9, 0.9]])
    assert s["best_epoch"] == 2 and abs(s["mean_accuracy"] - 0.8) < 1e-12, s
    assert abs(s["std_accuracy"] - 0.1) < 1e-12, s
    print("selfcheck ok")


def read_ints(path):
    with open(path) as f:
        return [int(l.split(",")[0]) for l in f.read().strip().split("\n")]


def load_tu(folder, enc):
    """The graphs of a TU folder encoded as `enc` (our `TuEncoding`): a list of (x, edge_index, y)."""
    name = os.path.basename(os.path.normpath(folder))
    p = lambda what: os.path.join(folder, f"{name}_{what}.txt")
    gi = np.array(read_ints(p("graph_indicator")), np.int64) - 1
    n = len(gi)
    with open(p("A")) as f:
        a = np.array([[int(v) for v in l.split(",")] for l in f.read().strip().split("\n")], np.int64) - 1
    a = np.unique(a, axis=0)  # duplicate lines merged, as ours
    w = len(enc["node_label_values"]) + enc["attributes"] + (enc["degree_max"] + 1 if enc["degree_max"] is not None else 0)
    x = np.zeros((n, w), np.float32)
    if enc["node_label_values"]:
        vals = {v: i for i, v in enumerate(enc["node_label_values"])}
        for i, l in enumerate(read_ints(p("node_labels"))):
            if l in vals:
                x[i, vals[l]] = 1.0
    if enc["attributes"]:
        off = len(enc["node_label_values"])
        with open(p("node_attributes")) as f:
            for i, l in enumerate(f.read().strip().split("\n")):
                x[i, off:off + enc["attributes"]] = [float(v) for v in l.split(",")]
    if enc["degree_max"] is not None:
        deg = np.bincount(a[:, 1], minlength=n)  # in-degree: rows of our CSR are destinations
        x[np.arange(n), np.minimum(deg, enc["degree_max"])] = 1.0
    cls = {v: i for i, v in enumerate(enc["class_values"])}
    y = [cls[v] for v in read_ints(p("graph_labels"))]
    ptr = np.r_[0, np.cumsum(np.bincount(gi))]
    order = np.argsort(gi[a[:, 0]], kind="stable")
    a = a[order]
    eptr = np.r_[0, np.cumsum(np.bincount(gi[a[:, 0]], minlength=len(y)))]
    out = []
    for g in range(len(y)):
        e = a[eptr[g]:eptr[g + 1]] - ptr[g]
        out.append((x[ptr[g]:ptr[g + 1]], e.T.copy(), y[g]))
    return name, out


def build(torch, pyg, kind, d_in, hidden, classes, layers, readout, dropout):
    nn = torch.nn
    from torch_geometric.nn import GCNConv, GINConv, SAGEConv, global_add_pool, global_max_pool, global_mean_pool
    pool = {"sum": global_add_pool, "mean": global_mean_pool, "max": global_max_pool}[readout]

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.convs, self.bns = nn.ModuleList(), nn.ModuleList()
            for l in range(layers):
                d = d_in if l == 0 else hidden
                if kind == "gin":
                    mlp = nn.Sequential(nn.Linear(d, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
                    self.convs.append(GINConv(mlp, train_eps=False))
                elif kind == "gcn":
                    self.convs.append(GCNConv(d, hidden))
                else:
                    self.convs.append(SAGEConv(d, hidden, aggr="mean"))
                self.bns.append(nn.BatchNorm1d(hidden))
            self.head = nn.Linear(d_in + layers * hidden, classes)

        def forward(self, x, ei, batch, size):
            states, h = [x], x
            for conv, bn in zip(self.convs, self.bns):
                h = torch.relu(bn(conv(h, ei)))
                states.append(h)
            z = torch.cat([pool(s, batch, size) for s in states], 1)
            return self.head(torch.nn.functional.dropout(z, dropout, self.training))

    return Net()


def to_data(torch, graphs):
    from torch_geometric.data import Data
    return [Data(x=torch.from_numpy(x), edge_index=torch.from_numpy(e), y=torch.tensor([y])) for x, e, y in graphs]


def train_epoch(torch, model, opt, loader, dev):
    model.train()
    for b in loader:
        b = b.to(dev, non_blocking=True)
        opt.zero_grad()
        out = model(b.x, b.edge_index, b.batch, b.num_graphs)
        loss = torch.nn.functional.cross_entropy(out, b.y)
        loss.backward()
        opt.step()


def accuracy(torch, model, loader, dev):
    model.eval()
    correct = total = 0
    with torch.no_grad():
        for b in loader:
            b = b.to(dev)
            pred = model(b.x, b.edge_index, b.batch, b.num_graphs).argmax(1)
            correct += int((pred == b.y).sum())
            total += b.num_graphs
    return correct / max(total, 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--run", help="our run folder (graph-data.json)")
    ap.add_argument("--dataset", help="the TU folder")
    ap.add_argument("--model", default="gin", choices=["gin", "gcn", "sage"])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--readout", default="sum", choices=["sum", "mean", "max"])
    ap.add_argument("--dropout", type=float, default=0.5)
    ap.add_argument("--epochs", type=int, default=350)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--lr-step", type=int, default=50)
    ap.add_argument("--lr-gamma", type=float, default=0.5)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only-folds", help="comma-separated 1-based folds to run (default: all)")
    ap.add_argument("--time", action="store_true")
    ap.add_argument("--batch-sizes", default="32,128,1024")
    ap.add_argument("--time-epochs", type=int, default=5)
    ap.add_argument("--out", help="results jsonl (appended)")
    ap.add_argument("--device-name", default=None)
    ap.add_argument("--selfcheck", action="store_true")
    a = ap.parse_args()
    if a.selfcheck:
        return _selfcheck()
    import torch
    import torch_geometric as pyg
    from torch_geometric.loader import DataLoader
    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    with open(os.path.join(a.run, "graph-data.json")) as f:
        run = json.load(f)
    name, graphs = load_tu(a.dataset, run["encoding"])
    assert len(graphs) == run["graphs"], "the run was trained on another dataset"
    data = to_data(torch, graphs)
    d_in, classes = data[0].x.shape[1], len(run["encoding"]["class_values"])
    device_name = a.device_name or (torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu")
    base = {"impl": "pyg", "task": "graph", "graph": name, "model": a.model, "layers": a.layers, "width": a.hidden,
            "readout": a.readout, "dtype": "f32", "device": device_name, "torch": torch.__version__,
            "pyg": pyg.__version__}
    records = []
    if a.time:
        nodes = sum(int(d.num_nodes) for d in data)
        for bs in [int(b) for b in a.batch_sizes.split(",")]:
            torch.manual_seed(a.seed)
            model = build(torch, pyg, a.model, d_in, a.hidden, classes, a.layers, a.readout, a.dropout).to(dev)
            opt = torch.optim.Adam(model.parameters(), lr=a.lr)
            loader = DataLoader(data, batch_size=bs, shuffle=True)
            torch.cuda.reset_peak_memory_stats() if dev.type == "cuda" else None
            times = []
            for e in range(2 + a.time_epochs):
                torch.cuda.synchronize() if dev.type == "cuda" else None
                t = time.perf_counter()
                train_epoch(torch, model, opt, loader, dev)
                torch.cuda.synchronize() if dev.type == "cuda" else None
                if e >= 2:
                    times.append((time.perf_counter() - t) * 1e3)
            med = float(np.median(times))
            peak = int(torch.cuda.max_memory_allocated()) if dev.type == "cuda" else None
            rec = dict(base, op="train_epoch", batch_size=bs, median_ms=med, min_ms=float(min(times)),
                       runs=len(times), graphs=len(data), nodes=nodes, graphs_per_s=len(data) / (med / 1e3),
                       peak_bytes=peak, variant=f"{a.layers} layers, {a.readout} readout, {len(data)} graphs per epoch, batch {bs}")
            print(json.dumps(rec), flush=True)
            records.append(rec)
    else:
        folds = run.get("folds")
        if folds is None:
            s = run["split"]
            folds_run = [(s["train"], s["test"])]
        else:
            folds_run = [([g for j, f in enumerate(folds) if j != i for g in f], folds[i]) for i in range(len(folds))]
        only = [int(f) - 1 for f in a.only_folds.split(",")] if a.only_folds else range(len(folds_run))
        started = time.perf_counter()
        curves, finals = [], []
        for i in only:
            train_ids, test_ids = folds_run[i]
            torch.manual_seed(a.seed + i)
            model = build(torch, pyg, a.model, d_in, a.hidden, classes, a.layers, a.readout, a.dropout).to(dev)
            opt = torch.optim.Adam(model.parameters(), lr=a.lr)
            sched = torch.optim.lr_scheduler.StepLR(opt, step_size=a.lr_step, gamma=a.lr_gamma)
            tl = DataLoader([data[g] for g in train_ids], batch_size=a.batch_size, shuffle=True)
            vl = DataLoader([data[g] for g in test_ids], batch_size=a.batch_size)
            curve = []
            for e in range(a.epochs):
                train_epoch(torch, model, opt, tl, dev)
                sched.step()
                curve.append(accuracy(torch, model, vl, dev))
            curves.append(curve)
            finals.append(curve[-1])
            print(f"fold {i + 1}: test acc {curve[-1]:.4f} (best {max(curve):.4f})", file=sys.stderr, flush=True)
        rec = dict(base, op="accuracy", folds=len(curves), fold_ids=[i + 1 for i in only], batch_size=a.batch_size,
                   lr=a.lr, lr_step=a.lr_step, seconds=time.perf_counter() - started, curves=curves,
                   **summarise(curves))
        print(json.dumps({k: v for k, v in rec.items() if k not in ("curves", "mean_curve")}), flush=True)
        records.append(rec)
    if a.out:
        with open(a.out, "a") as f:
            for r in records:
                f.write(json.dumps(r) + "\n")


if __name__ == "__main__":
    main()
