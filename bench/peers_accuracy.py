#!/usr/bin/env python3
"""PyG accuracy on exported npy folders (identical data and split as ours): the classic
two-layer GCN and GraphSAGE (hidden 64, dropout 0.6 on the input and hidden features,
row-normalised features, Adam lr 0.01, weight decay 5e-4, 200 epochs, seed 42); test accuracy
of the final model."""
import argparse
import os
import sys

import torch
import torch.nn.functional as F
from torch_geometric.nn import GCNConv, SAGEConv

from common import Results, load_npy_folder


class Net(torch.nn.Module):
    def __init__(self, kind, d_in, hidden, classes):
        super().__init__()
        if kind == "gcn":
            self.c1, self.c2 = GCNConv(d_in, hidden, cached=True), GCNConv(hidden, classes, cached=True)
        else:
            self.c1, self.c2 = SAGEConv(d_in, hidden), SAGEConv(hidden, classes)

    def forward(self, x, ei):
        x = F.dropout(x, 0.6, self.training)
        x = F.relu(self.c1(x, ei))
        x = F.dropout(x, 0.6, self.training)
        return self.c2(x, ei)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--graphs", required=True, help="comma-separated npy folders")
    ap.add_argument("--models", default="gcn,sage")
    ap.add_argument("--out", required=True)
    ap.add_argument("--epochs", type=int, default=200)
    ap.add_argument("--seeds", default="42", help="comma-separated seeds, one record per seed")
    ap.add_argument("--commit", default=os.environ.get("SGNN_COMMIT", "unknown"))
    a = ap.parse_args()
    dev = torch.device("cuda")
    for g in a.graphs.split(","):
        n, indptr, indices, x, labels, split = load_npy_folder(g)
        name = os.path.basename(os.path.normpath(g))
        res = Results(a.out, name, n, len(indices), a.commit, torch.cuda.get_device_name(0))
        x = torch.from_numpy(x)
        x = x / x.sum(dim=1, keepdim=True).clamp(min=1.0)
        x = x.to(dev)
        y = torch.from_numpy(labels).to(dev)
        crow = torch.from_numpy(indptr)
        col = torch.from_numpy(indices)
        rows = torch.repeat_interleave(torch.arange(n), crow[1:] - crow[:-1])
        ei = torch.stack([col, rows]).to(dev)
        tr, va, te = (torch.from_numpy(split[s]).to(dev) for s in ["train", "val", "test"])
        classes = int(y.max()) + 1
        for kind, seed in [(k, int(s)) for k in a.models.split(",") for s in a.seeds.split(",")]:
            try:
                acc = train_one(kind, x, ei, y, tr, va, te, classes, a.epochs, dev, seed)
            except Exception as e:  # noqa: BLE001 - record what failed and go on
                res.emit({"op": "accuracy", "impl": "pyg", "width": 64, "model": kind, "median_ms": None, "runs": 1,
                          "error": f"{type(e).__name__}: {str(e)[:200]}"})
                continue
            res.emit({"op": "accuracy", "impl": "pyg", "width": 64, "model": kind, "nonlin": "relu", "median_ms": None,
                      "runs": 1, "accuracy": acc, "variant": "classic 2-layer, 200 epochs", "seed": seed})


def train_one(kind, x, ei, y, tr, va, te, classes, epochs, dev, seed):
    torch.manual_seed(seed)
    net = Net(kind, x.shape[1], 64, classes).to(dev)
    opt = torch.optim.Adam(net.parameters(), lr=0.01, weight_decay=5e-4)
    for _ in range(epochs):
        net.train()
        opt.zero_grad()
        F.cross_entropy(net(x, ei)[tr], y[tr]).backward()
        opt.step()
    net.eval()
    with torch.no_grad():
        pred = net(x, ei).argmax(1)
    return {s: float((pred[i] == y[i]).float().mean()) for s, i in [("train", tr), ("valid", va), ("test", te)]}

if __name__ == "__main__":
    sys.exit(main())
