"""The mini-batch training peer: neighbour sampling written in torch on the GPU and PyG 2.8's
SAGEConv on the sampled bipartite blocks, the model and batches of `train-app bench-train
--training minibatch` (lin_in, SAGE mean convolutions, lin_out; ReLU and dropout 0.5 before each
convolution; Adam), for graphs where PyG's own `NeighborLoader` cannot run (it needs pyg-lib or
torch-sparse, which the GPU machine's Python lacks).

The sampler takes, for each destination, all of its in-neighbours where the degree is at most
the fan-out, else `fanout` of them uniformly without replacement (a random key per candidate
edge, a sort by (row, key), the first `fanout` of every row), and relabels the block's sources
with the destinations first, as ours does; the fan-outs list hop 1 (the seeds' neighbours)
first, as PyG's `num_neighbors`.

    python3 bench/torch_minibatch.py --data DIR --fanouts 15,10,5 --batch 1024 --epochs 3 \
        --out results.jsonl [--time-to-acc 0.9 --max-epochs 20] [--selfcheck]

`--data` is an npy folder with its split (`train-app export`). Records: `"op": "sample"` (one
batch's blocks, median ms), `"op": "train_epoch"` (one pass over the training nodes) with
`"impl": "torch"` and `"training": "minibatch"`; with `--time-to-acc` one record per epoch of
validation accuracy (full-neighbour inference, layer by layer) and cumulative seconds.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import load_npy_folder  # noqa: E402


class Sampler:
    def __init__(self, indptr, indices, n, device):
        self.indptr = torch.as_tensor(indptr, device=device)
        self.indices = torch.as_tensor(indices, device=device)
        self.n = n
        self.mark = torch.full((n,), -1, dtype=torch.int64, device=device)
        self.device = device

    def hop(self, dst, fanout, gen):
        """One block: (row_ptr-free edge list (row, col local), sources' global ids)."""
        start = self.indptr[dst]
        deg = self.indptr[dst + 1] - start
        take = torch.clamp(deg, max=fanout)
        total = int(deg.sum())
        rows = torch.repeat_interleave(torch.arange(dst.numel(), device=self.device), deg)
        offs = torch.arange(total, device=self.device) - torch.repeat_interleave(torch.cumsum(deg, 0) - deg, deg)
        cand = self.indices[start[rows] + offs]
        key = torch.rand(total, generator=gen, device=self.device)
        order = torch.argsort(rows.to(torch.float64) + key.to(torch.float64))
        rows, cand = rows[order], cand[order]
        rank = torch.arange(total, device=self.device) - torch.repeat_interleave(torch.cumsum(deg, 0) - deg, deg)
        keep = rank < take[rows]
        rows, cand = rows[keep], cand[keep]
        # relabel: destinations first, then the other sampled nodes
        self.mark[dst] = torch.arange(dst.numel(), device=self.device)
        new = torch.unique(cand[self.mark[cand] < 0])
        self.mark[new] = torch.arange(dst.numel(), dst.numel() + new.numel(), device=self.device)
        cols = self.mark[cand]
        src = torch.cat([dst, new])
        self.mark[src] = -1
        return torch.stack([cols, rows]), src

    def sample(self, seeds, fanouts, gen):
        blocks, dst = [], seeds
        for f in fanouts:
            ei, src = self.hop(dst, f, gen)
            blocks.append((ei, src.numel(), dst.numel()))
            dst = src
        return blocks[::-1], dst


class Model(torch.nn.Module):
    def __init__(self, d_in, hidden, classes, layers, dropout):
        super().__init__()
        from torch_geometric.nn import SAGEConv
        self.lin_in = torch.nn.Linear(d_in, hidden)
        self.convs = torch.nn.ModuleList([SAGEConv(hidden, hidden) for _ in range(layers)])
        self.lin_out = torch.nn.Linear(hidden, classes)
        self.dropout = dropout

    def layer(self, i, h, ei, n_dst):
        h = F.dropout(F.relu(h), self.dropout, self.training)
        return self.convs[i]((h, h[:n_dst]), ei, size=(h.shape[0], n_dst))

    def forward(self, x, blocks):
        h = self.lin_in(x)
        for i, (ei, _, n_dst) in enumerate(blocks):
            h = self.layer(i, h, ei, n_dst)
        return self.lin_out(h)

    @torch.no_grad()
    def infer(self, x, indptr, indices, chunk=65536):
        """Every node's logits, layer by layer with every neighbour."""
        n = x.shape[0]
        dev = x.device
        h = self.lin_in(x)
        rows = torch.repeat_interleave(torch.arange(n, device=dev), indptr[1:] - indptr[:-1])
        ei_all = torch.stack([indices, rows])
        for i in range(len(self.convs)):
            a = F.relu(h)
            outs = []
            for s in range(0, n, chunk):
                e = min(n, s + chunk)
                lo, hi = int(indptr[s]), int(indptr[e])
                ei = ei_all[:, lo:hi].clone()
                ei[1] -= s
                outs.append(self.convs[i]((a, a[s:e]), ei, size=(n, e - s)))
            h = torch.cat(outs)
        return self.lin_out(h)


def selfcheck(sampler, indptr, indices, fanouts, gen, dev):
    """Every sampled edge is an edge of the graph, no neighbour twice in a row, each row keeps
    min(fan-out, degree), the destinations come first among the sources and are distinct."""
    dst = torch.arange(min(sampler.n, 64), device=dev)
    for f in fanouts:
        ei, src = sampler.hop(dst, f, gen)
        e, s, d = ei.cpu().numpy(), src.cpu().numpy(), dst.cpu().numpy()
        assert (s[:d.size] == d).all() and np.unique(s).size == s.size, "destinations first, sources distinct"
        deg = indptr[d + 1] - indptr[d]
        assert (np.bincount(e[1], minlength=d.size) == np.minimum(deg, f)).all(), "min(fan-out, degree) per row"
        pairs = set()
        for c, r in zip(e[0], e[1]):
            u, v = int(s[c]), int(d[r])
            assert u in set(indices[indptr[v]:indptr[v + 1]].tolist()), "an edge of the graph"
            assert (u, v) not in pairs, "no repeats"
            pairs.add((u, v))
        dst = src
    print("selfcheck ok")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--fanouts", default="15,10,5")
    ap.add_argument("--batch", type=int, default=1024)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--commit", default="")
    ap.add_argument("--device-name", default="")
    ap.add_argument("--time-to-acc", type=float, default=None)
    ap.add_argument("--max-epochs", type=int, default=20)
    ap.add_argument("--selfcheck", action="store_true")
    ap.add_argument("--tf32", action="store_true", help="dense products in TF32 (recorded as dtype tf32)")
    a = ap.parse_args()

    def sync():
        if torch.cuda.is_available():
            torch.cuda.synchronize()

    dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    torch.backends.cuda.matmul.allow_tf32 = a.tf32
    torch.manual_seed(a.seed)
    n, indptr, indices, x, labels, split = load_npy_folder(a.data)
    fanouts = [int(f) for f in a.fanouts.split(",")]
    sampler = Sampler(indptr, indices, n, dev)
    gen = torch.Generator(device=dev)
    gen.manual_seed(a.seed)
    if a.selfcheck:
        selfcheck(sampler, indptr, indices, fanouts, gen, dev)
        return
    x = torch.as_tensor(x, device=dev)
    y = torch.as_tensor(labels, device=dev)
    train = torch.as_tensor(split["train"], device=dev)
    valid = torch.as_tensor(split["val"], device=dev)
    classes = int(labels.max()) + 1
    model = Model(x.shape[1], a.hidden, classes, len(fanouts), 0.5).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    name = os.path.basename(os.path.normpath(a.data))
    base = {"impl": "torch", "graph": name, "nodes": n, "edges": int(indptr[-1]), "width": a.hidden, "k": None,
            "dtype": "tf32" if a.tf32 else "f32", "model": "sage", "nonlin": "relu", "commit": a.commit, "device": a.device_name,
            "training": "minibatch", "batch_size": a.batch, "fanouts": fanouts}
    out = open(a.out, "a") if a.out else None

    def emit(rec):
        r = dict(base)
        r.update(rec)
        line = json.dumps(r)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()

    def stats(times):
        times = sorted(times)
        return {"median_ms": times[len(times) // 2], "min_ms": times[0],
                "p90_ms": times[int(round((len(times) - 1) * 0.9))], "runs": len(times)}

    # one batch's blocks
    times = []
    for i in range(3 + 30):
        seeds = train[torch.randperm(train.numel(), generator=gen, device=dev)[:a.batch]]
        sync()
        t = time.perf_counter()
        sampler.sample(seeds, fanouts, gen)
        sync()
        if i >= 3:
            times.append((time.perf_counter() - t) * 1e3)
    emit({"op": "sample", **stats(times)})

    def epoch():
        model.train()
        perm = train[torch.randperm(train.numel(), generator=gen, device=dev)]
        steps, total = 0, torch.zeros((), device=dev)
        for s in range(0, perm.numel(), a.batch):
            seeds = perm[s:s + a.batch]
            blocks, inputs = sampler.sample(seeds, fanouts, gen)
            opt.zero_grad()
            loss = F.cross_entropy(model(x[inputs], blocks), y[seeds])
            loss.backward()
            opt.step()
            total += loss.detach()
            steps += 1
        return steps, float(total) / max(steps, 1)

    if a.time_to_acc is None:
        times = []
        for e in range(a.warmup + a.epochs):
            sync()
            t = time.perf_counter()
            steps, mean_loss = epoch()
            sync()
            ms = (time.perf_counter() - t) * 1e3
            print(f"epoch {e + 1}: {ms:.1f} ms, {steps} batches, mean batch loss {mean_loss:.4f}", file=sys.stderr,
                  flush=True)
            if e >= a.warmup:
                times.append(ms)
        emit({"op": "train_epoch", **stats(times), "variant": f"{len(fanouts)} layers, {steps} batches of {a.batch} seeds"})
        return
    ip, ix = torch.as_tensor(indptr, device=dev), torch.as_tensor(indices, device=dev)
    total = 0.0
    for e in range(a.max_epochs):
        sync()
        t = time.perf_counter()
        epoch()
        model.eval()
        pred = model.infer(x, ip, ix).argmax(1)
        acc = float((pred[valid] == y[valid]).float().mean())
        sync()
        total += time.perf_counter() - t
        emit({"op": "valid_accuracy", "epoch": e + 1, "valid_accuracy": acc, "seconds": total, "median_ms": None})
        if acc >= a.time_to_acc:
            break


if __name__ == "__main__":
    main()
