"""Shared helpers of the peer scripts: npy-folder loading, timing, result records."""
import json
import os

import numpy as np
import torch


def load_csr(folder):
    """Node count and CSR (row = destination: indptr, indices as int64) of an npy folder."""
    n = int(np.load(os.path.join(folder, "num_nodes.npy")))
    ip = os.path.join(folder, "adj_indptr.npy")
    if os.path.exists(ip):
        indptr = np.load(ip).astype(np.int64)
        indices = np.load(os.path.join(folder, "adj_indices.npy")).astype(np.int64)
    else:
        e = np.load(os.path.join(folder, "edges_sym.npy"))
        src, dst = e[0], e[1]
        order = np.lexsort((src, dst))
        dst, src = dst[order], src[order]
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.add.at(indptr, dst + 1, 1)
        indptr = np.cumsum(indptr)
        indices = src
    return n, indptr, indices


def load_npy_folder(folder):
    """Graph (CSR, row = destination), features (dense float32), labels, split of an npy folder."""
    n, indptr, indices = load_csr(folder)
    dense = os.path.join(folder, "feat_dense.npy")
    if os.path.exists(dense):
        x = np.load(dense).astype(np.float32)
    elif os.path.exists(os.path.join(folder, "feat_indptr.npy")):
        shape = np.load(os.path.join(folder, "feat_shape.npy"))
        fi = np.load(os.path.join(folder, "feat_indptr.npy")).astype(np.int64)
        fx = np.load(os.path.join(folder, "feat_indices.npy")).astype(np.int64)
        fd = np.load(os.path.join(folder, "feat_data.npy")).astype(np.float32)
        x = np.zeros((int(shape[0]), int(shape[1])), dtype=np.float32)
        rows = np.repeat(np.arange(int(shape[0])), np.diff(fi))
        np.add.at(x, (rows, fx), fd)
    else:
        x = None
    labels = np.load(os.path.join(folder, "labels.npy")).astype(np.int64) if os.path.exists(os.path.join(folder, "labels.npy")) else None
    split = {}
    for name in ["train", "val", "test"]:
        p = os.path.join(folder, f"{name}_idx.npy")
        if os.path.exists(p):
            split[name] = np.load(p).astype(np.int64)
    return n, indptr, indices, x, labels, split


def timed_cuda(fn, runs, warmup):
    """Median, min and 90th percentile of `fn` in ms, with CUDA events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    times.sort()
    return times[len(times) // 2], times[0], times[int(round((len(times) - 1) * 0.9))]


class Results:
    """Appends records in the project's results format (bench/README.md)."""

    def __init__(self, path, graph, nodes, edges, commit, device):
        self.f = open(path, "a")
        self.base = {"graph": graph, "nodes": nodes, "edges": edges, "k": None, "dtype": "f32", "model": None,
                     "nonlin": None, "peak_bytes": None, "commit": commit, "device": device}

    def emit(self, rec):
        r = dict(self.base)
        r.update(rec)
        line = json.dumps(r)
        print(line, flush=True)
        self.f.write(line + "\n")
        self.f.flush()
