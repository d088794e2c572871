#!/usr/bin/env python3
"""The largest graph PyG 2.8 trains a full-batch epoch of (GraphSAGE, `adj_t`, the model of
peers_train.py: lin_in -> [ReLU -> dropout -> SAGEConv] x 4 -> lin_out, hidden 256, Adam) on
one GPU, by bisection in one process (an out-of-memory epoch is caught, its memory released).

Two curves: edges growing at a fixed node count (--nodes, reddit-like: 602 features, 41
classes), and nodes growing at a fixed average degree (--degree, products-like: 100 features,
47 classes). Each graph is drawn on the GPU with exactly `degree` random columns per row (a
uniform random graph of the same node and edge counts as the R-MAT graphs: PyG's memory follows
the counts). One JSON line per trial (op "capacity") to --out, with `fits`, the peak allocated
bytes and the epoch time."""
import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

from peers_train import Net


def trial(n, degree, features, classes, dev):
    """One epoch on a random graph of n nodes and n * degree edges: (fits, peak bytes, ms,
    error)."""
    torch.manual_seed(0)
    net = opt = adj = x = y = idx = None
    try:
        e = n * degree
        crow = torch.arange(0, n + 1, device=dev, dtype=torch.int64) * degree
        col = torch.randint(0, n, (e,), device=dev, dtype=torch.int64)
        adj = torch.sparse_csr_tensor(crow, col, torch.ones(e, device=dev), size=(n, n))
        del crow, col
        x = torch.randn(n, features, device=dev)
        y = torch.randint(0, classes, (n,), device=dev)
        idx = torch.randperm(n, device=dev)[: n // 2]
        net = Net("sage", features, 256, classes, 4, 0).to(dev)
        opt = torch.optim.Adam(net.parameters(), lr=0.01)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        t0 = time.perf_counter()
        net.train()
        opt.zero_grad()
        loss = F.cross_entropy(net(x, adj)[idx], y[idx])
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        ms = (time.perf_counter() - t0) * 1e3
        return True, torch.cuda.max_memory_allocated(), ms, None
    except torch.OutOfMemoryError:
        return False, torch.cuda.max_memory_allocated(), None, "out of memory"
    except RuntimeError as err:  # cuSPARSE / cuBLAS report some failures this way
        return False, torch.cuda.max_memory_allocated(), None, str(err).split("\n")[0][:200]
    finally:
        net = opt = adj = x = y = idx = None
        torch.cuda.empty_cache()


def bisect(name, lo, hi, make, steps, out, commit, device):
    """Largest value in [lo, hi) for which `make(v)` trains (lo assumed to fit), in `steps`
    halvings."""
    best = None
    for _ in range(steps):
        if hi - lo <= max(1, lo // 100):
            break
        mid = (lo + hi) // 2
        n, degree, features, classes = make(mid)
        fits, peak, ms, error = trial(n, degree, features, classes, torch.device("cuda"))
        rec = {"op": "capacity", "impl": "pyg", "variant": f"sage 4x256 adj_t, {name}", "nodes": n,
               "edges": n * degree, "features": features, "classes": classes, "fits": fits,
               "peak_bytes": peak, "median_ms": ms, "error": error, "commit": commit, "device": device}
        print(json.dumps(rec), flush=True)
        out.write(json.dumps(rec) + "\n")
        out.flush()
        if fits:
            lo, best = mid, rec
        else:
            hi = mid
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--nodes", type=int, default=232_965, help="node count of the edge curve")
    ap.add_argument("--degree-range", default="500,9200", help="edges per node searched at --nodes")
    ap.add_argument("--degree", type=int, default=50, help="edges per node of the node curve")
    ap.add_argument("--node-range", default="2000000,40000000", help="nodes searched at --degree")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--commit", default=os.environ.get("SGNN_COMMIT", "unknown"))
    a = ap.parse_args()
    device = torch.cuda.get_device_name(0)
    with open(a.out, "a") as out:
        lo, hi = (int(v) for v in a.degree_range.split(","))
        best_e = bisect("edges at fixed nodes", lo, hi, lambda d: (a.nodes, d, 602, 41), a.steps, out, a.commit, device)
        lo, hi = (int(v) for v in a.node_range.split(","))
        best_n = bisect("nodes at fixed degree", lo, hi, lambda n: (n, a.degree, 100, 47), a.steps, out, a.commit, device)
    for what, b in [("edges", best_e), ("nodes", best_n)]:
        print(f"largest that trained ({what} curve):", None if b is None else (b["nodes"], b["edges"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
