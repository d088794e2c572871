#!/usr/bin/env python3
"""PyG's CPU wall time for the standard Cora GCN training (200 epochs).

The reference figure for the CPU training loop of train-app: PyG's examples/gcn.py
model and optimiser, trained on the CPU with torch's default thread count, with a
validation-accuracy evaluation (a no-grad forward) after every epoch, as our
training loop does.

Model (as PyG's examples/gcn.py): dropout 0.5 on the input -> GCNConv(F, 16, cached=True)
-> ReLU -> dropout 0.5 -> GCNConv(16, classes, cached=True). Features row-normalised by
their row sum (torch_geometric.transforms.NormalizeFeatures). Adam, lr 0.01, weight
decay 5e-4 on the first layer's parameters only, as in the example (`--wd-all` puts it on
all parameters; `--uncached` recomputes the GCN normalisation every forward).

Reads Cora from the .npy folder (default ../shared/datasets/npy/cora, layout in
shared/datasets/README.md): CSR features, labels, edges_sym (PyG-style edge_index, both
directions) and the standard Planetoid 140/500/1000 split.

Prints one JSON line:
  wall_s          seconds from this script's first statement (before the imports) to the
                  end of the final test evaluation
  process_wall_s  the same, but from the process's creation (adds the interpreter's start)
  import_s        seconds spent importing numpy / torch / torch_geometric
  load_s          reading the .npy files, building the Data object, normalising features
  train_s         the 200 epochs: each one training step (forward, loss, backward, Adam
                  step) plus the validation evaluation; excludes imports, loading, model
                  construction and the final test evaluation
  epoch_ms_median median over the 200 epochs of the training step alone
  eval_ms_median  median over the 200 epochs of the validation evaluation alone
  test_acc        test accuracy of the model after the last epoch
"""
import time

T_START = time.perf_counter()

import argparse
import json
import os
import statistics

import numpy as np
import torch
import torch.nn.functional as F
import torch_geometric
import torch_geometric.transforms as T
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv

T_IMPORTED = time.perf_counter()


def process_age_s() -> float:
    """Seconds since this process was created (from /proc, clock-tick resolution)."""
    with open("/proc/self/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    start_ticks = int(fields[19])  # field 22 (starttime), counted after "pid (comm)"
    with open("/proc/uptime") as f:
        uptime = float(f.read().split()[0])
    return uptime - start_ticks / os.sysconf("SC_CLK_TCK")


def load_cora(folder: str) -> Data:
    ld = lambda name: np.load(os.path.join(folder, name + ".npy"))
    n, f = (int(v) for v in ld("feat_shape"))
    x = torch.sparse_csr_tensor(
        torch.from_numpy(ld("feat_indptr")),
        torch.from_numpy(ld("feat_indices").astype(np.int64)),
        torch.from_numpy(ld("feat_data")),
        size=(n, f),
    ).to_dense()
    y = torch.from_numpy(ld("labels"))
    edge_index = torch.from_numpy(ld("edges_sym"))
    masks = {}
    for split in ("train", "val", "test"):
        m = torch.zeros(n, dtype=torch.bool)
        m[torch.from_numpy(ld(split + "_idx"))] = True
        masks[split + "_mask"] = m
    data = Data(x=x, y=y, edge_index=edge_index, **masks)
    return T.NormalizeFeatures()(data)


class GCN(torch.nn.Module):
    def __init__(self, d_in: int, hidden: int, classes: int, cached: bool):
        super().__init__()
        self.conv1 = GCNConv(d_in, hidden, cached=cached)
        self.conv2 = GCNConv(hidden, classes, cached=cached)

    def forward(self, x, edge_index):
        x = F.dropout(x, p=0.5, training=self.training)
        x = self.conv1(x, edge_index).relu()
        x = F.dropout(x, p=0.5, training=self.training)
        return self.conv2(x, edge_index)


def accuracy(model, data, mask) -> float:
    model.eval()
    with torch.no_grad():
        pred = model(data.x, data.edge_index).argmax(dim=-1)
    return float((pred[mask] == data.y[mask]).sum().item() / int(mask.sum()))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    p = argparse.ArgumentParser()
    p.add_argument("--data", default=os.path.join(here, "..", "..", "shared", "datasets", "npy", "cora"))
    p.add_argument("--epochs", type=int, default=200)
    p.add_argument("--hidden", type=int, default=16)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--wd-all", action="store_true", help="weight decay 5e-4 on all parameters")
    p.add_argument("--uncached", action="store_true", help="GCNConv(cached=False)")
    args = p.parse_args()

    torch.manual_seed(args.seed)
    t0 = time.perf_counter()
    data = load_cora(args.data)
    load_s = time.perf_counter() - t0

    classes = int(data.y.max()) + 1
    model = GCN(data.num_features, args.hidden, classes, cached=not args.uncached)
    if args.wd_all:
        opt = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)
    else:
        opt = torch.optim.Adam([
            dict(params=model.conv1.parameters(), weight_decay=5e-4),
            dict(params=model.conv2.parameters(), weight_decay=0),
        ], lr=0.01)

    epoch_ms, eval_ms = [], []
    val_acc = 0.0
    t_train = time.perf_counter()
    for _ in range(args.epochs):
        t1 = time.perf_counter()
        model.train()
        opt.zero_grad()
        out = model(data.x, data.edge_index)
        loss = F.cross_entropy(out[data.train_mask], data.y[data.train_mask])
        loss.backward()
        opt.step()
        loss_v = float(loss.item())
        t2 = time.perf_counter()
        val_acc = accuracy(model, data, data.val_mask)
        t3 = time.perf_counter()
        epoch_ms.append((t2 - t1) * 1e3)
        eval_ms.append((t3 - t2) * 1e3)
    train_s = time.perf_counter() - t_train

    test_acc = accuracy(model, data, data.test_mask)
    wall_s = time.perf_counter() - T_START
    print(json.dumps({
        "op": "train_run", "impl": "pyg", "graph": "cora", "model": "gcn",
        "epochs": args.epochs,
        "wall_s": round(wall_s, 4),
        "process_wall_s": round(process_age_s(), 3),
        "import_s": round(T_IMPORTED - T_START, 4),
        "load_s": round(load_s, 4),
        "train_s": round(train_s, 4),
        "epoch_ms_median": round(statistics.median(epoch_ms), 4),
        "eval_ms_median": round(statistics.median(eval_ms), 4),
        "first_epoch_ms": round(epoch_ms[0], 3),
        "final_loss": round(loss_v, 5),
        "val_acc": round(val_acc, 4),
        "test_acc": round(test_acc, 4),
        "threads": torch.get_num_threads(),
        "weight_decay": "all" if args.wd_all else "conv1",
        "cached": not args.uncached,
        "seed": args.seed,
        "torch": torch.__version__, "torch_geometric": torch_geometric.__version__,
    }), flush=True)


if __name__ == "__main__":
    main()
