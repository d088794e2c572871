#!/usr/bin/env python3
"""PyG 2.8 full-graph training losses of the product's classic stack, for comparing how a model
trains (not how fast): conv(d_in -> hidden) -> [ReLU -> dropout -> conv(hidden -> hidden)] x
(L - 2) -> ReLU -> dropout -> conv(hidden -> classes), input dropout, row-normalised features
(`NormalizeFeatures`), Adam (lr 0.01, weight decay 5e-4), cross-entropy on the training nodes:
`train-app train`'s defaults. GIN's MLP is Linear -> ReLU -> Linear with a learned eps, as ours.
Aggregation through `adj_t` (torch.sparse CSR). One JSON line ("op": "train_run", "impl":
"pyg") with the per-epoch training losses, in the fields of bench/mixed_precision.sh."""
import argparse
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch_geometric.nn import GCNConv, GINConv, SAGEConv

from common import load_npy_folder


def conv(model, d_in, d_out):
    if model == "gcn":
        return GCNConv(d_in, d_out, cached=True)
    if model == "sage":
        return SAGEConv(d_in, d_out, aggr="mean")
    if model == "gin":
        mlp = torch.nn.Sequential(torch.nn.Linear(d_in, d_out), torch.nn.ReLU(), torch.nn.Linear(d_out, d_out))
        return GINConv(mlp, train_eps=True)
    raise SystemExit(f"unknown model {model}")


class Classic(torch.nn.Module):
    def __init__(self, model, d_in, hidden, classes, layers, dropout, input_dropout):
        super().__init__()
        widths = [d_in] + [hidden] * (layers - 1) + [classes]
        self.convs = torch.nn.ModuleList(conv(model, a, b) for a, b in zip(widths[:-1], widths[1:]))
        self.dropout = dropout
        self.input_dropout = input_dropout

    def forward(self, x, adj):
        x = F.dropout(x, self.input_dropout, self.training)
        for i, c in enumerate(self.convs):
            if i > 0:
                x = F.dropout(F.relu(x), self.dropout, self.training)
            x = c(x, adj)
        return x


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--graph", required=True)
    ap.add_argument("--model", default="gin")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=5)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    torch.manual_seed(a.seed)
    dev = torch.device("cuda")
    n, indptr, indices, x, labels, split = load_npy_folder(a.graph)
    x = x / np.clip(x.sum(axis=1, keepdims=True), 1.0, None)
    x = torch.from_numpy(x).to(dev)
    y = torch.from_numpy(labels).to(dev)
    train = torch.from_numpy(split["train"]).to(dev) if "train" in split else torch.arange(n, device=dev)
    adj = torch.sparse_csr_tensor(torch.from_numpy(indptr), torch.from_numpy(indices),
                                  torch.ones(len(indices)), size=(n, n)).to(dev)
    classes = int(labels.max()) + 1
    m = Classic(a.model, x.shape[1], a.hidden, classes, a.layers, 0.5, 0.5).to(dev)
    opt = torch.optim.Adam(m.parameters(), lr=0.01, weight_decay=5e-4)
    losses = []
    for _ in range(a.epochs):
        m.train()
        opt.zero_grad()
        loss = F.cross_entropy(m(x, adj)[train], y[train])
        loss.backward()
        opt.step()
        losses.append(float(loss))
        print(f"epoch {len(losses)} train loss {losses[-1]:.6g}", file=sys.stderr, flush=True)
    finite = [v for v in losses if np.isfinite(v)]
    rec = {"op": "train_run", "impl": "pyg", "graph": os.path.basename(a.graph.rstrip("/")), "model": a.model,
           "architecture": "classic", "dtype": "f32", "layers": a.layers, "width": a.hidden, "epochs": len(losses),
           "loss_first": losses[0], "loss_last": losses[-1], "loss_max": max(finite) if finite else None,
           "losses": losses, "device": torch.cuda.get_device_name(), "torch": torch.__version__}
    with open(a.out, "a") as f:
        f.write(json.dumps(rec) + "\n")
    print(json.dumps(rec))


if __name__ == "__main__":
    main()
