#!/usr/bin/env python3
"""Peer baselines on the GPU machine, on the npy-folder graph that `train-app gen` wrote.

Times, with CUDA events (warm-up, then the median of --runs), on fresh random data:
  * cuSPARSE SpMM through torch.sparse.mm(csr, X), f32 and f16, at each width   (op "spmm")
  * torch.topk at hidden 256 -> k                                                 (op "maxk")
  * MaxK the way peers train it: topk + scatter mask + dense cuSPARSE SpMM       (op "maxk_aggregation")
  * with --matmul: cuBLAS products of linear layers over all nodes (op "matmul"; x w, dy w^T, x^T dy),
    each sample the mean of MATMUL_BATCH calls back to back (as `train-app bench --ops matmul`)
and appends one JSON object per line to --out in the project's results format (bench/README.md).
Every timed op is first checked against a float64 reference on a sample of rows.
"""
import argparse
import json
import os
import sys

import numpy as np
import torch

from common import load_csr, timed_cuda as timed

# products per timing sample of --matmul (train-app's MATMUL_BATCH)
MATMUL_BATCH = 10


def check_rows(indptr, count=200):
    n = len(indptr) - 1
    deg = np.diff(indptr)
    rows = set(int(i * n / count) for i in range(count))
    rows.add(int(np.argmax(deg)))
    return sorted(rows)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--graph", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--widths", default="32,64,128,256")
    ap.add_argument("--ks", default="8,16,32,64")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--matmul", action="store_true", help="only the dense linear-layer products")
    ap.add_argument("--commit", default=os.environ.get("SGNN_COMMIT", "unknown"))
    args = ap.parse_args()

    dev = torch.device("cuda")
    device_name = torch.cuda.get_device_name(0)
    name = os.path.basename(os.path.normpath(args.graph))
    n, indptr, indices = load_csr(args.graph)
    nnz = len(indices)
    crow = torch.from_numpy(indptr).to(dev)
    col = torch.from_numpy(indices).to(dev)
    rows = check_rows(indptr)
    out = open(args.out, "a")

    def emit(rec):
        base = {"impl": "cusparse", "graph": name, "nodes": n, "edges": nnz, "k": None, "dtype": "f32",
                "model": None, "nonlin": None, "runs": args.runs, "peak_bytes": None,
                "commit": args.commit, "device": device_name}
        base.update(rec)
        line = json.dumps(base)
        print(line, flush=True)
        out.write(line + "\n")
        out.flush()

    gen = torch.Generator(device=dev)
    gen.manual_seed(0)
    if args.matmul:
        def batched(fn):
            def run():
                for _ in range(MATMUL_BATCH):
                    fn()
            return run

        # f32 without TF32 (PyTorch's default), TF32, and f16 / bf16 inputs (f16 / bf16 output)
        for d_in, d_out in [(256, 256), (602, 256), (256, 41)]:
            x32 = torch.rand(n, d_in, device=dev, generator=gen)
            w32 = torch.rand(d_in, d_out, device=dev, generator=gen)
            dy32 = torch.rand(n, d_out, device=dev, generator=gen)
            flops = 2.0 * n * d_in * d_out
            for dtype, tf32, cast in [("f32", False, torch.float32), ("tf32", True, torch.float32),
                                      ("f16", False, torch.float16), ("bf16", False, torch.bfloat16)]:
                torch.backends.cuda.matmul.allow_tf32 = tf32
                x, w, dy = x32.to(cast), w32.to(cast), dy32.to(cast)
                for variant, fn in [("fwd", lambda: x @ w), ("dgrad", lambda: dy @ w.t()),
                                    ("wgrad", lambda: x.t() @ dy)]:
                    # per call, from MATMUL_BATCH calls back to back per sample (as ours)
                    med, mn, p90 = (v / MATMUL_BATCH for v in timed(batched(fn), args.runs, args.warmup))
                    emit({"op": "matmul", "impl": "cublas", "width": d_out, "k": d_in, "median_ms": med,
                          "min_ms": mn, "p90_ms": p90, "variant": variant, "dtype": dtype,
                          "gbps": flops / med / 1e9})
                del x, w, dy
            torch.backends.cuda.matmul.allow_tf32 = False
            del x32, w32, dy32
        out.close()
        return 0
    for dtype, dname in [(torch.float32, "f32"), (torch.float16, "f16")]:
        a = torch.sparse_csr_tensor(crow, col, torch.ones(nnz, device=dev, dtype=dtype), size=(n, n))
        for w in [int(v) for v in args.widths.split(",")]:
            x = (torch.rand(n, w, device=dev, generator=gen) * 2 - 1).to(dtype)
            y = torch.sparse.mm(a, x)
            xs = x.double().cpu().numpy()
            ys = y.double().cpu().numpy()
            err = 0.0
            scale = 1.0
            for i in rows:
                ref = xs[indices[indptr[i]:indptr[i + 1]]].sum(axis=0) if indptr[i + 1] > indptr[i] else np.zeros(w)
                err = max(err, float(np.abs(ys[i] - ref).max()))
                scale = max(scale, float(np.abs(ref).max()))
            med, mn, p90 = timed(lambda: torch.sparse.mm(a, x), args.runs, args.warmup)
            emit({"op": "spmm", "width": w, "dtype": dname, "median_ms": med, "min_ms": mn, "p90_ms": p90,
                  "check_error": err / scale})
            del x, y
        del a
        torch.cuda.empty_cache()

    # MaxK as peers train it (hidden 256): topk + scatter mask + dense cuSPARSE SpMM
    a = torch.sparse_csr_tensor(crow, col, torch.ones(nnz, device=dev), size=(n, n))
    h = torch.rand(n, 256, device=dev, generator=gen) * 2 - 1
    for k in [int(v) for v in args.ks.split(",")]:
        def topk():
            return torch.topk(h, k, dim=1)

        def aggregation():
            v, i = torch.topk(h, k, dim=1)
            dense = torch.zeros_like(h).scatter_(1, i, v)
            return torch.sparse.mm(a, dense)

        med, mn, p90 = timed(topk, args.runs, args.warmup)
        emit({"op": "maxk", "impl": "torch", "width": 256, "k": k, "median_ms": med, "min_ms": mn, "p90_ms": p90})
        med, mn, p90 = timed(aggregation, args.runs, args.warmup)
        emit({"op": "maxk_aggregation", "impl": "torch", "width": 256, "k": k, "median_ms": med, "min_ms": mn,
              "p90_ms": p90, "variant": "topk+scatter+cusparse"})
    out.close()


if __name__ == "__main__":
    sys.exit(main())
