#!/usr/bin/env python3
"""PyG 2.8 full-batch training epochs on an npy-folder graph, as MaxK-GNN trains: lin_in ->
[act -> dropout -> conv] x L -> lin_out, hidden 256, Adam; act = ReLU or MaxK the way peers
do it (torch.topk + scatter mask). Aggregation through `adj_t` (torch.sparse CSR = cuSPARSE)
or `edge_index` (scatter). One epoch = forward + backward + step, timed with CUDA events
(median of --epochs after --warmup); peak = torch.cuda.max_memory_allocated of the epochs."""
import argparse
import os
import sys

import torch
import torch.nn.functional as F
from torch_geometric.nn import GATConv, GCNConv, GINConv, SAGEConv

from common import Results, load_npy_folder, timed_cuda


def maxk(h, k):
    v, i = torch.topk(h, k, dim=1)
    return torch.zeros_like(h).scatter(1, i, v)


class Net(torch.nn.Module):
    def __init__(self, conv, d_in, hidden, classes, layers, k):
        super().__init__()
        self.k = k
        self.lin_in = torch.nn.Linear(d_in, hidden)
        self.lin_out = torch.nn.Linear(hidden, classes)
        self.convs = torch.nn.ModuleList()
        for _ in range(layers):
            if conv == "sage":
                c = SAGEConv(hidden, hidden, aggr="mean")
            elif conv == "gcn":
                c = GCNConv(hidden, hidden, cached=True)
            elif conv == "gin":
                c = GINConv(torch.nn.Sequential(torch.nn.Linear(hidden, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, hidden)), train_eps=True)
            else:
                c = GATConv(hidden, hidden // 4, heads=4)
            self.convs.append(c)

    def forward(self, x, adj):
        h = self.lin_in(x)
        for c in self.convs:
            h = maxk(h, self.k) if self.k else F.relu(h)
            h = F.dropout(h, 0.5, self.training)
            h = c(h, adj)
        return self.lin_out(h)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--graph", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="sage,gcn")
    ap.add_argument("--nonlins", default="relu,maxk32")
    ap.add_argument("--paths", default="adj_t,edge_index")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--commit", default=os.environ.get("SGNN_COMMIT", "unknown"))
    a = ap.parse_args()
    dev = torch.device("cuda")
    n, indptr, indices, x, labels, split = load_npy_folder(a.graph)
    name = os.path.basename(os.path.normpath(a.graph))
    res = Results(a.out, name, n, len(indices), a.commit, torch.cuda.get_device_name(0))
    xt = torch.from_numpy(x).to(dev)
    y = torch.from_numpy(labels).clamp(min=0).to(dev)
    train_idx = torch.from_numpy(split["train"]).to(dev)
    crow = torch.from_numpy(indptr).to(dev)
    col = torch.from_numpy(indices).to(dev)
    adj_t = torch.sparse_csr_tensor(crow, col, torch.ones(len(indices), device=dev), size=(n, n))
    rows = torch.repeat_interleave(torch.arange(n, device=dev), crow[1:] - crow[:-1])
    edge_index = torch.stack([col, rows])  # source -> target
    classes = int(y.max()) + 1
    for model in a.models.split(","):
        for nl in a.nonlins.split(","):
            k = int(nl[4:]) if nl.startswith("maxk") else 0
            for path in a.paths.split(","):
                rec = {"op": "train_epoch", "impl": "pyg", "width": a.hidden, "model": model, "nonlin": nl,
                       "variant": f"{path}, {a.layers} layers", "runs": a.epochs}
                torch.manual_seed(0)
                net = opt = None
                try:
                    net = Net(model, xt.shape[1], a.hidden, classes, a.layers, k).to(dev)
                    opt = torch.optim.Adam(net.parameters(), lr=0.01)
                    adj = adj_t if path == "adj_t" else edge_index

                    def epoch():
                        net.train()
                        opt.zero_grad()
                        out = net(xt, adj)
                        loss = F.cross_entropy(out[train_idx], y[train_idx])
                        loss.backward()
                        opt.step()

                    epoch()  # first call builds caches
                    torch.cuda.synchronize()
                    torch.cuda.reset_peak_memory_stats()
                    med, mn, p90 = timed_cuda(epoch, a.epochs, a.warmup)
                    rec.update({"median_ms": med, "min_ms": mn, "p90_ms": p90, "peak_bytes": torch.cuda.max_memory_allocated()})
                except torch.OutOfMemoryError as e:
                    rec.update({"median_ms": None, "error": "out of memory: " + str(e).split("\n")[0][:200]})
                except Exception as e:  # noqa: BLE001 - record what the peer cannot do
                    rec.update({"median_ms": None, "error": f"{type(e).__name__}: {str(e)[:200]}"})
                res.emit(rec)
                net = opt = None
                torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main())
