#!/usr/bin/env bash
# Mixed f16 against f32 at the reddit scale, on one CUDA GPU (repository root):
#   bench/mixed_precision.sh <train-app binary> <out dir> [<graph dir>] [models] [architectures] [precisions]
# For every model (default gcn,sage,gin,gat), architecture (classic,linear-io) and precision
# (f32,mixedf16; `mixedf16-noscale` is mixed f16 with --loss-scale off), a 30-epoch `train` of a
# 4x256 model on the reddit-scale R-MAT graph (generated into <graph dir> if absent); one JSON
# line per run in <out dir>/train_runs.jsonl: "op": "train_run", graph, model, architecture,
# dtype, epochs, loss_first, loss_last, loss_max, exit (the run's exit code: a diverging run
# stops with an error), loss_scale (results.json's), epoch_ms (median). Logs in train_runs.log.
# TRAIN_EXTRA (e.g. "--norm layernorm") is added to every `train` and recorded as "extra".
set -u
BIN=$(realpath "$1")
OUT=$2
G=${3:-/tmp/reddit-rmat-feat}
MODELS=${4:-gcn,sage,gin,gat}
ARCHS=${5:-classic,linear-io}
PRECS=${6:-f32,mixedf16}
mkdir -p "$OUT"
[ -d "$G" ] || timeout 120 "$BIN" gen rmat --features 602 --classes 41 --out "$G" >> "$OUT/train_runs.log" 2>&1
for m in ${MODELS//,/ }; do
  for a in ${ARCHS//,/ }; do
    for p in ${PRECS//,/ }; do
      prec=$p; extra=""
      if [ "$p" = mixedf16-noscale ]; then prec=mixedf16; extra="--loss-scale off"; fi
      o=/tmp/mp-run-$m-$a-$p
      echo "== $m $a $p" >> "$OUT/train_runs.log"
      timeout 150 "$BIN" train --backend cuda --dataset "$G" --model $m --architecture $a --layers 4 --hidden 256 \
        --precision $prec $extra ${TRAIN_EXTRA:-} --epochs 30 --log-every 10 --checkpoints false --out "$o" >> "$OUT/train_runs.log" 2>&1
      code=$?
      python3 - "$o/results.json" "$OUT/train_runs.jsonl" "$G" $m $a $p $code "${TRAIN_EXTRA:-}" <<'PY'
import json, statistics, sys
res, out, graph, model, arch, dtype, code, extra = sys.argv[1:9]
try:
    r = json.load(open(res))
except OSError:
    r = {"epochs": []}
losses = [e["train_loss"] for e in r["epochs"] if e.get("train_loss") is not None]
secs = [e["seconds"] for e in r["epochs"] if e.get("seconds")]
rec = {"op": "train_run", "graph": graph.rstrip("/").split("/")[-1], "model": model, "architecture": arch,
       "dtype": dtype, "epochs": len(losses), "loss_first": losses[0] if losses else None,
       "loss_last": losses[-1] if losses else None, "loss_max": max(losses) if losses else None,
       "exit": int(code), "loss_scale": r.get("loss_scale"), "commit": r.get("commit"),
       "epoch_ms": statistics.median(secs) * 1e3 if secs else None}
if extra:
    rec["extra"] = extra
open(out, "a").write(json.dumps(rec) + "\n")
print(json.dumps(rec))
PY
      rm -rf "$o"
    done
  done
done
