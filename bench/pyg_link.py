#!/usr/bin/env python3
"""PyG link prediction on the edge split that `train-app train --task link` writes into its run
folder (`link-split/`: train_pos, valid_pos/neg, test_pos/neg as [m, 2] int64, meta.json), the
peer of ours. Encoder: `--layers` GCNConv (cached) or SAGEConv (mean) d_in -> hidden -> ... ->
embedding over the training edges (both directions when undirected), ReLU + dropout between
convolutions and dropout on the row-normalised input features; decoder z[src] . z[dst]; loss
BCE with logits over the training positives and as many negatives from `negative_sampling` per
epoch (`--negatives device`: uniform pairs drawn with `torch.randint` on the device, those that hit
a known edge or a node itself dropped, as ours drops them; PyG's `negative_sampling` runs on the
host without torch-sparse and does not return at the reddit scale); Adam. Every epoch evaluates valid and test; records the test ROC-AUC, average precision,
Hits@K (OGB) and MRR against the fixed negatives of the epoch with the best valid AUC (op
`accuracy`, task `link`). `--time` times one training step instead (op `train_epoch`, with
peak memory; `--amp` for mixed f16). `--selfcheck` tests the metrics with numpy alone."""
import argparse
import json
import os
import sys
import time

import numpy as np


def roc_auc(pos, neg):
    """Mann-Whitney AUC: mean over (p, n) of [s_p > s_n] + 0.5 [s_p == s_n]."""
    pos, neg = np.asarray(pos, np.float64), np.sort(np.asarray(neg, np.float64))
    if len(pos) == 0 or len(neg) == 0:
        return float("nan")
    lt, le = np.searchsorted(neg, pos, "left"), np.searchsorted(neg, pos, "right")
    return float(np.sum(lt + 0.5 * (le - lt)) / (len(pos) * len(neg)))


def average_precision(pos, neg):
    """scikit-learn's AP: one threshold per distinct score, sum of (R_k - R_{k-1}) P_k."""
    s = np.concatenate([np.asarray(pos, np.float64), np.asarray(neg, np.float64)])
    y = np.concatenate([np.ones(len(pos)), np.zeros(len(neg))])
    if len(pos) == 0:
        return float("nan")
    order = np.argsort(-s, kind="mergesort")
    s, y = s[order], y[order]
    last = np.r_[np.nonzero(np.diff(s))[0], len(s) - 1]  # last index of each score group
    tps = np.cumsum(y)[last]
    precision, recall = tps / (last + 1), tps / tps[-1]
    return float(np.sum(np.diff(np.r_[0.0, recall]) * precision))


def hits_at_k(pos, neg, k):
    """OGB's Hits@K: fraction of positives scoring strictly above the K-th largest negative."""
    pos, neg = np.asarray(pos, np.float64), np.asarray(neg, np.float64)
    if len(neg) < k:
        return 1.0
    kth = np.sort(neg)[-k]
    return float(np.mean(pos > kth))


def mrr(pos, neg):
    """Mean of 1 / rank, rank = 1 + 0.5 (#neg > s_p + #neg >= s_p) among the shared negatives."""
    pos, neg = np.asarray(pos, np.float64), np.sort(np.asarray(neg, np.float64))
    gt = len(neg) - np.searchsorted(neg, pos, "right")
    ge = len(neg) - np.searchsorted(neg, pos, "left")
    return float(np.mean(1.0 / (1.0 + 0.5 * (gt + ge))))


def _selfcheck():
    close = lambda a, b: abs(a - b) < 1e-12  # noqa: E731
    assert close(roc_auc([3, 2], [1, 2]), 3.5 / 4)
    assert close(roc_auc([1, 1], [1, 1]), 0.5) and close(roc_auc([2], [1]), 1.0) and close(roc_auc([0], [1]), 0.0)
    assert close(average_precision([0.35, 0.8], [0.1, 0.4]), 5 / 6)  # scikit-learn's doc example
    assert close(average_precision([0.5, 0.5], [0.5, 0.5]), 0.5)  # one tied threshold
    assert close(average_precision([0.9, 0.5], [0.5, 0.1]), 0.5 * 1 + 0.5 * 2 / 3)
    assert close(hits_at_k([5, 4, 3, 2], [4, 3, 1], 2), 0.5)  # kth = 3; the tied 3 is no hit
    assert close(hits_at_k([5, 4, 3, 2], [4, 3, 1], 3), 1.0) and close(hits_at_k([0], [4, 3, 1], 4), 1.0)
    assert close(hits_at_k([4, 4], [4, 4], 1), 0.0)
    assert close(mrr([2, 4, 0], [1, 2, 2, 3]), (1 / 3 + 1 + 1 / 5) / 3)
    rng = np.random.default_rng(0)
    for _ in range(200):  # brute-force references on small integer scores, many ties
        p, n = rng.integers(0, 6, rng.integers(1, 12)), rng.integers(0, 6, rng.integers(1, 12))
        cmp = (p[:, None] > n[None, :]) + 0.5 * (p[:, None] == n[None, :])
        assert close(roc_auc(p, n), cmp.mean())
        rank = 1 + 0.5 * ((n[None, :] > p[:, None]).sum(1) + (n[None, :] >= p[:, None]).sum(1))
        assert close(mrr(p, n), np.mean(1 / rank))
        ap, prev = 0.0, 0.0
        for t in np.unique(np.r_[p, n])[::-1]:
            tp, fp = (p >= t).sum(), (n >= t).sum()
            ap += (tp / len(p) - prev) * tp / (tp + fp)
            prev = tp / len(p)
        assert close(average_precision(p, n), ap)
        k = int(rng.integers(1, 8))
        ref = 1.0 if len(n) < k else np.mean(p > sorted(n, reverse=True)[k - 1])
        assert close(hits_at_k(p, n, k), ref)
    print("selfcheck ok: roc_auc, average_precision, hits_at_k, mrr (hand examples + 200 brute-force cases)")
    return 0


def load_split(run):
    d = os.path.join(run, "link-split")
    with open(os.path.join(d, "meta.json")) as f:
        meta = json.load(f)
    arrs = {}
    for s in ["train_pos", "valid_pos", "valid_neg", "test_pos", "test_neg"]:
        a = np.load(os.path.join(d, f"{s}.npy")).astype(np.int64)
        if a.ndim != 2 or a.shape[1] != 2 or (a.size and (a.min() < 0 or a.max() >= meta["num_nodes"])):
            raise SystemExit(f"{d}/{s}.npy: expected [m, 2] node ids below {meta['num_nodes']}, got shape {a.shape}")
        arrs[s] = a
    return meta, arrs


def make_encoder(kind, d_in, hidden, emb, layers):
    import torch
    from torch_geometric.nn import GCNConv, SAGEConv
    if kind not in ("gcn", "sage"):
        raise ValueError(f"unknown model {kind}")
    dims = [d_in] + [hidden] * (layers - 1) + [emb]
    conv = (lambda i, o: GCNConv(i, o, cached=True)) if kind == "gcn" else (lambda i, o: SAGEConv(i, o, aggr="mean"))
    return torch.nn.ModuleList([conv(dims[i], dims[i + 1]) for i in range(layers)])


def encode(convs, x, ei, p):
    import torch.nn.functional as F
    x = F.dropout(x, p, convs.training)
    for i, c in enumerate(convs):
        x = c(x, ei)
        if i < len(convs) - 1:
            x = F.dropout(F.relu(x), p, convs.training)
    return x


def dot(z, pairs):
    return (z[pairs[0]] * z[pairs[1]]).sum(-1)


class DeviceNegatives:
    """Uniform ordered pairs drawn on the device; a pair that is a known edge (of `ei`) or a
    node with itself is dropped, not redrawn."""

    def __init__(self, ei, n):
        import torch
        self.n = n
        self.known = torch.unique(ei[0].to(torch.int64) * n + ei[1].to(torch.int64))  # sorted

    def __call__(self, m):
        import torch
        pairs = torch.randint(0, self.n, (2, m), device=self.known.device)
        keys = pairs[0] * self.n + pairs[1]
        at = torch.searchsorted(self.known, keys).clamp_(max=self.known.numel() - 1)
        keep = (self.known[at] != keys) & (pairs[0] != pairs[1])
        return pairs[:, keep]


def pyg_negatives(ei, n):
    from torch_geometric.utils import negative_sampling
    return lambda m: negative_sampling(ei, num_nodes=n, num_neg_samples=m)


def _negatives_selfcheck():
    import torch
    ei = torch.tensor([[0, 1, 2, 3], [1, 2, 3, 0]])
    neg = DeviceNegatives(ei, 4)(10000)
    known = {(0, 1), (1, 2), (2, 3), (3, 0)}
    got = set(zip(neg[0].tolist(), neg[1].tolist()))
    assert not (got & known) and all(a != b for a, b in got), got
    assert len(got) == 16 - 4 - 4, got  # every other ordered pair drawn
    print("device negatives ok")


def train_step(convs, opt, scaler, x, ei, pos, negatives, p, amp):
    """One step: encoder, dot decoder on the positives and fresh negatives, BCE, backward, Adam."""
    import torch
    import torch.nn.functional as F
    convs.train()
    opt.zero_grad(set_to_none=True)
    neg = negatives(pos.shape[1])
    with torch.autocast(device_type=x.device.type, dtype=torch.float16, enabled=amp):
        z = encode(convs, x, ei, p)
        logits = torch.cat([dot(z, pos), dot(z, neg)]).float()
        y = torch.cat([torch.ones(pos.shape[1], device=x.device), torch.zeros(neg.shape[1], device=x.device)])
        loss = F.binary_cross_entropy_with_logits(logits, y)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    return loss


def evaluate(convs, x, ei, pairs, k):
    import torch
    convs.eval()
    with torch.no_grad():
        z = encode(convs, x, ei, 0.0)
        s = {name: dot(z, t).double().cpu().numpy() for name, t in pairs.items()}
    m = {}
    for sp in ["valid", "test"]:
        P, N = s[f"{sp}_pos"], s[f"{sp}_neg"]
        m[sp] = {"auc": roc_auc(P, N), "ap": average_precision(P, N), "hits": hits_at_k(P, N, k), "mrr": mrr(P, N)}
    return m


def run_one(a, kind, seed, x, ei, pos, pairs, negatives, dev):
    """Accuracy mode: test metrics at the epoch (1-based) with the best valid AUC, first on ties."""
    import torch
    torch.manual_seed(seed)
    convs = make_encoder(kind, x.shape[1], a.hidden, a.embedding, a.layers).to(dev)
    opt = torch.optim.Adam(convs.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    scaler = torch.amp.GradScaler(dev.type, enabled=False)
    best = None
    for epoch in range(1, a.epochs + 1):
        train_step(convs, opt, scaler, x, ei, pos, negatives, a.dropout, False)
        m = evaluate(convs, x, ei, pairs, a.hits_k)
        if best is None or m["valid"]["auc"] > best["valid_auc"]:
            t = m["test"]
            best = {"valid_auc": m["valid"]["auc"], "test_auc": t["auc"], "test_ap": t["ap"], "test_hits": t["hits"],
                    "hits_k": a.hits_k, "test_mrr": t["mrr"], "best_epoch": epoch}
    return best


def time_one(a, kind, seed, x, ei, pos, negatives, dev):
    """Timing mode: median / min / p90 ms of one training step and the allocator's peak bytes."""
    import torch
    torch.manual_seed(seed)
    convs = make_encoder(kind, x.shape[1], a.hidden, a.embedding, a.layers).to(dev)
    opt = torch.optim.Adam(convs.parameters(), lr=a.lr, weight_decay=a.weight_decay)
    scaler = torch.amp.GradScaler(dev.type, enabled=a.amp)
    def fn():
        t0 = time.perf_counter()
        train_step(convs, opt, scaler, x, ei, pos, negatives, a.dropout, a.amp)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        print(f"{kind} step: {(time.perf_counter() - t0) * 1e3:.1f} ms", file=sys.stderr, flush=True)
    if dev.type != "cuda":
        for _ in range(a.warmup):
            fn()
        ts = []
        for _ in range(a.runs):
            t0 = time.perf_counter()
            fn()
            ts.append((time.perf_counter() - t0) * 1e3)
        ts.sort()
        return (ts[len(ts) // 2], ts[0], ts[int(round((len(ts) - 1) * 0.9))]), None
    from common import timed_cuda
    torch.cuda.reset_peak_memory_stats()
    t = timed_cuda(fn, a.runs, a.warmup)
    return t, torch.cuda.max_memory_allocated()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graph", help="npy folder (node count, features)")
    ap.add_argument("--split", help="our run folder holding link-split/")
    ap.add_argument("--out", help="results jsonl (appended)")
    ap.add_argument("--models", default="gcn,sage")
    ap.add_argument("--seeds", default="42,1,2,3,4", help="comma-separated seeds, one record per seed")
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--embedding", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--weight-decay", type=float, default=0.0)
    ap.add_argument("--hits-k", type=int, default=50)
    ap.add_argument("--time", action="store_true", help="time one training step (first seed) instead")
    ap.add_argument("--amp", action="store_true", help="with --time: autocast f16 + GradScaler")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--negatives", default="pyg", choices=["pyg", "device"],
                    help="training negatives: PyG's negative_sampling (host) or uniform pairs drawn on the device")
    ap.add_argument("--commit", default=os.environ.get("SGNN_COMMIT", "unknown"))
    ap.add_argument("--selfcheck", action="store_true", help="test the numpy metrics and exit")
    a = ap.parse_args()
    if a.selfcheck:
        _selfcheck()
        try:
            import torch  # noqa: F401
        except ImportError:
            return 0
        return _negatives_selfcheck()
    if not (a.graph and a.split and a.out):
        ap.error("--graph, --split and --out are required")
    if a.layers < 1:
        ap.error("--layers must be at least 1")
    if a.amp and not (a.time and a.device == "cuda"):
        ap.error("--amp needs --time and --device cuda")
    import torch
    from common import Results, load_npy_folder
    dev = torch.device(a.device)
    t0 = time.perf_counter()
    n, indptr, indices, x, labels, split = load_npy_folder(a.graph)
    meta, arrs = load_split(a.split)
    print(f"graph and split read in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
    if int(meta["num_nodes"]) != n:
        raise SystemExit(f"link-split has {meta['num_nodes']} nodes, {a.graph} has {n}")
    name = os.path.basename(os.path.normpath(a.graph))
    res = Results(a.out, name, n, len(indices), a.commit, torch.cuda.get_device_name(0) if dev.type == "cuda" else "cpu")
    x = torch.from_numpy(x) if x is not None else torch.ones(n, 1)
    x = (x / x.sum(dim=1, keepdim=True).clamp(min=1.0)).to(dev)
    pos = torch.from_numpy(arrs["train_pos"]).t().contiguous().to(dev)
    ei = torch.cat([pos, pos.flip(0)], dim=1) if meta.get("undirected") else pos
    pairs = {s: torch.from_numpy(arrs[s]).t().contiguous().to(dev) for s in arrs if s != "train_pos"}
    negatives = DeviceNegatives(ei, n) if a.negatives == "device" else pyg_negatives(ei, n)
    extra = {"task": "link", "impl": "pyg", "width": a.hidden, "nonlin": "relu", "message_edges": int(ei.shape[1]),
             "negatives": a.negatives}
    seeds = [int(s) for s in a.seeds.split(",")]
    for kind, seed in [(k, s) for k in a.models.split(",") for s in (seeds[:1] if a.time else seeds)]:
        if a.time:
            rec = dict(extra, op="train_epoch", model=kind, dtype="f16-mixed" if a.amp else "f32", runs=a.runs,
                       variant=f"{a.layers} layers, 1 negative per positive")
        else:
            rec = dict(extra, op="accuracy", model=kind, median_ms=None, runs=1, seed=seed,
                       variant=f"{a.layers}-layer, {a.epochs} epochs, dot decoder")
        try:
            if a.time:
                (med, lo, p90), peak = time_one(a, kind, seed, x, ei, pos, negatives, dev)
                rec.update(median_ms=med, min_ms=lo, p90_ms=p90, peak_bytes=peak)
            else:
                rec["accuracy"] = run_one(a, kind, seed, x, ei, pos, pairs, negatives, dev)
        except Exception as e:  # noqa: BLE001 - out of memory and others: record what failed and go on
            if dev.type == "cuda":
                torch.cuda.empty_cache()
            rec.update(median_ms=None, error=f"{type(e).__name__}: {str(e)[:200]}")
        res.emit(rec)
    return 0


if __name__ == "__main__":
    sys.exit(main())
