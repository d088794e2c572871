#!/usr/bin/env python3
"""The per-call cost of small ops in PyTorch on the GPU, the peer of `train-app bench --ops launch`
([32, 64] operands, a 32-node ring graph): each sample queues 200 calls between two
synchronisations; host vectors uploaded; one JSON line per op (bench/README.md format, "op": "launch", "impl": "torch").
Usage: launch_torch.py [--out FILE] [--runs N]"""
import argparse
import json
import statistics
import time

import torch


def timed(fn, runs, batch=200, warmup=3):
    for _ in range(warmup):
        for _ in range(batch):
            fn()
    torch.cuda.synchronize()
    samples = []
    for _ in range(runs):
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(batch):
            fn()
        torch.cuda.synchronize()
        samples.append((time.perf_counter() - t) * 1e3 / batch)
    samples.sort()
    return statistics.median(samples), samples[0], samples[int(round((len(samples) - 1) * 0.9))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--runs", type=int, default=20)
    a = ap.parse_args()
    dev = torch.device("cuda")
    g = torch.Generator(device="cpu").manual_seed(1)
    x = torch.rand(32, 64, generator=g).to(dev) * 2 - 1
    y = torch.rand(32, 64, generator=g).to(dev) * 2 - 1
    w = torch.rand(64, 64, generator=g).to(dev) * 2 - 1
    xa, ya, wa = x.clone().requires_grad_(), y.clone().requires_grad_(), w.clone().requires_grad_()
    n = 32
    src = torch.arange(n)
    dst = (src + 1) % n
    rows = torch.cat([dst, src])
    cols = torch.cat([src, dst])
    adj = torch.sparse_coo_tensor(torch.stack([rows, cols]), torch.ones(2 * n), (n, n)).coalesce().to_sparse_csr().to(dev)

    def linear_fwd_bwd():
        wa.grad = None
        (xa @ wa).sum().backward()
        return wa.grad

    ops = [
        ("scalar-add", lambda: x + 1.0),
        ("add", lambda: x + y),
        ("autodiff-add", lambda: xa + ya),
        ("spmm", lambda: adj @ x),
        ("dense-product", lambda: x @ w),
        ("linear-fwd-bwd", linear_fwd_bwd),
    ]
    for length in (256, 65536, 1 << 20):
        host = torch.arange(length, dtype=torch.float32).numpy()
        ops.append((f"upload-{length}", lambda h=host: torch.from_numpy(h).to(dev)))
    out = open(a.out, "a") if a.out else None
    for name, fn in ops:
        med, lo, p90 = timed(fn, a.runs)
        rec = {"op": "launch", "impl": "torch", "graph": "ring-32", "nodes": n, "edges": 2 * n, "width": 64,
               "dtype": "f32", "variant": name, "median_ms": med, "min_ms": lo, "p90_ms": p90, "runs": a.runs,
               "device": torch.cuda.get_device_name(), "torch": torch.__version__}
        line = json.dumps(rec)
        print(line)
        if out:
            out.write(line + "\n")


if __name__ == "__main__":
    main()
