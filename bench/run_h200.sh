#!/usr/bin/env bash
# The side-by-side comparison on a GPU machine, in one command (repository root):
#   bench/run_h200.sh <train-app binary> <out dir> [<data dir>] [parts]
# parts (comma-separated, default all): selftest, kernels, matmul (the dense products alone,
# also part of kernels), train, sage (the reddit-scale SAGE ReLU epochs in f32, mixed f16 and
# TF32 with PyG's, also part of train), profile, products, proteins, memory (mixed-precision SAGE as the
# first configuration of its process at the three scales: its own reserved / live figures),
# accuracy (ours against PyG), mixed (mixed precision and TF32 against f32).
# Our binary and the peer scripts (torch 2.11 / torch_geometric 2.8) run one after the other on
# the same generated graph files. Writes <out dir>/<date>-h200.jsonl (results format of
# bench/README.md), <date>-h200.md with charts/ (bench/report.py), selftest.log, profile-*.log
# and run.log. All parts take about 17 minutes on an H200; on a machine that allows 10 minutes a
# command, run `selftest,kernels,train,profile` and `products,accuracy,mixed` as two commands with the
# same <out dir>.
set -u
BIN=$(realpath "${1:-.carry/train-app}")
OUT=${2:-${OUT:-/tmp/sgnn-out}}
DATA=${3:-.carry/data}
PARTS=${4:-selftest,kernels,train,profile,products,proteins,accuracy,mixed}
G=/tmp/reddit-rmat-feat
P=/tmp/products-rmat
mkdir -p "$OUT"
DATE=$(date +%Y-%m-%d)
RES="$OUT/${DATE}-h200.jsonl"
LOG="$OUT/run.log"
export SGNN_COMMIT=$("$BIN" --version | awk '{print $3}')
DEV="NVIDIA H200"
SEEDS="1 2 3 4 5"
MP_SEEDS="1 2 3 4 5 6 7 8 9 10"
has() { [[ ",$PARTS," == *",$1,"* ]]; }
. "$(dirname "$0")/jobs.sh" # jobs_run: the queued trainings, 8 at a time
step() { echo "== $1 ($(date +%T))" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$LOG"
if has selftest; then
  step selftest
  ( time timeout 150 "$BIN" selftest --backend cuda ) > "$OUT/selftest.log" 2>&1
  grep -E "^== |checks|selftest|FAIL" "$OUT/selftest.log" | tail -n 20 | tee -a "$LOG"
fi
if has kernels || has matmul || has train || has sage || has profile; then
  [ -d "$G" ] || { step "gen reddit-scale"; timeout 120 "$BIN" gen rmat --features 602 --classes 41 --out "$G" >> "$LOG" 2>&1; }
fi
if has kernels; then
  step "peers kernels"
  PYTHONUNBUFFERED=1 timeout 60 python3 bench/peers.py --graph "$G" --out "$RES" >> "$LOG" 2>&1
  PYTHONUNBUFFERED=1 timeout 30 python3 bench/peers.py --graph "$G" --out "$RES" --matmul >> "$LOG" 2>&1
  step "ours kernels"
  timeout 200 "$BIN" bench --backend cuda --graph "$G" --ops all --dtypes f32,f16,bf16 --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
  timeout 40 "$BIN" bench --backend cuda --graph "$G" --ops matmul --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
fi
if has matmul && ! has kernels; then
  step "dense products"
  PYTHONUNBUFFERED=1 timeout 40 python3 bench/peers.py --graph "$G" --out "$RES" --matmul >> "$LOG" 2>&1
  timeout 40 "$BIN" bench --backend cuda --graph "$G" --ops matmul --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
fi
if has train; then
  step "ours train"
  timeout 150 "$BIN" bench-train --backend cuda --dataset "$G" --models sage,gcn --nonlins relu,maxk:32 --precisions f32,mixedf16 \
    --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
  timeout 60 "$BIN" bench-train --backend cuda --dataset "$G" --models sage --nonlins relu --precisions tf32 \
    --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
  timeout 60 "$BIN" bench-train --backend cuda --dataset "$G" --models sage,gcn --nonlins maxk:32 --precisions f32,mixedf16 --atomic \
    --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
  timeout 60 "$BIN" bench-train --backend cuda --dataset "$G" --models gin,gat --nonlins relu --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
  step "pyg train"
  PYTHONUNBUFFERED=1 timeout 150 python3 bench/peers_train.py --graph "$G" --out "$RES" --models sage,gcn,gin,gat >> "$LOG" 2>&1
fi
if has sage; then
  step "sage relu"
  timeout 90 "$BIN" bench-train --backend cuda --dataset "$G" --models sage --nonlins relu --precisions f32,mixedf16,tf32 \
    --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
  PYTHONUNBUFFERED=1 timeout 90 python3 bench/peers_train.py --graph "$G" --out "$RES" --models sage --nonlins relu --paths adj_t >> "$LOG" 2>&1
fi
if has profile; then
  step "profile"
  for cfg in "relu f32" "maxk:32 f32" "maxk:32 mixedf16"; do
    set -- $cfg
    name="profile-sage-${1/:/}-$2.log"
    mkdir -p /tmp/prof && ( cd /tmp/prof && printf '[profiling]\nlogger = { level = "basic", file = "%s" }\n' "$OUT/$name" > cubecl.toml && \
      timeout 50 "$BIN" bench-train --backend cuda --dataset "$G" --models sage --nonlins $1 --precisions $2 --epochs 1 --warmup 1 \
      --out /tmp/prof/ignored.jsonl --device-name "$DEV" ) >> "$LOG" 2>&1
    python3 bench/profile_summary.py "$OUT/$name" >> "$LOG" 2>&1
  done
fi
if has products; then
  step "gen products-scale"
  timeout 120 "$BIN" gen rmat --nodes 2449029 --edges 123718280 --features 100 --classes 47 --out "$P" >> "$LOG" 2>&1
  PYTHONUNBUFFERED=1 timeout 60 python3 bench/peers.py --graph "$P" --out "$RES" --widths 64,256 --ks 32 >> "$LOG" 2>&1
  timeout 60 "$BIN" bench --backend cuda --graph "$P" --ops spmm --widths 64,256 --dtypes f32,f16 --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
  timeout 80 "$BIN" bench-train --backend cuda --dataset "$P" --models sage --nonlins relu,maxk:32 --precisions f32,mixedf16 --epochs 5 --warmup 2 \
    --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
  PYTHONUNBUFFERED=1 timeout 60 python3 bench/peers_train.py --graph "$P" --out "$RES" --models sage --paths adj_t --epochs 5 --warmup 2 >> "$LOG" 2>&1
  rm -rf "$P"
fi
if has proteins; then
  # ogbn-proteins' size (132,534 nodes, 79.1M edges: the densest of the three scales)
  PR=/tmp/proteins-rmat
  step "gen proteins-scale"
  timeout 120 "$BIN" gen rmat --nodes 132534 --edges 79122504 --features 8 --classes 112 --out "$PR" >> "$LOG" 2>&1
  timeout 80 "$BIN" bench-train --backend cuda --dataset "$PR" --models sage --nonlins relu,maxk:32 --precisions f32,mixedf16 --epochs 5 --warmup 2 \
    --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
  PYTHONUNBUFFERED=1 timeout 60 python3 bench/peers_train.py --graph "$PR" --out "$RES" --models sage --paths adj_t --epochs 5 --warmup 2 >> "$LOG" 2>&1
  rm -rf "$PR"
fi
if has memory; then
  step "memory of mixed precision"
  for spec in "reddit 232965 129362596 602 41" "products 2449029 123718280 100 47" "proteins 132534 79122504 8 112"; do
    set -- $spec
    M=/tmp/$1-memory
    timeout 120 "$BIN" gen rmat --nodes $2 --edges $3 --features $4 --classes $5 --out "$M" >> "$LOG" 2>&1
    timeout 90 "$BIN" bench-train --backend cuda --dataset "$M" --models sage --nonlins relu --precisions mixedf16 --epochs 3 --warmup 1 \
      --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
    rm -rf "$M"
  done
fi
if has accuracy; then
  step "accuracy"
  GRAPHS=$(ls -d "$DATA"/*/ | tr '\n' ',' | sed 's/,$//')
  PYTHONUNBUFFERED=1 timeout 200 python3 bench/peers_accuracy.py --graphs "$GRAPHS" --seeds "${SEEDS// /,}" --out "$RES" >> "$LOG" 2>&1 &
  PEER=$!
  {
  for d in "$DATA"/*/; do
    for m in gcn sage; do
      for s in $SEEDS; do
        o=/tmp/acc-$(basename "$d")-$m-$s
        echo "timeout 90 $BIN train --backend cuda --dataset $d --model $m --hidden 64 --dropout 0.6 --input-dropout 0.6 --normalize-features --epochs 200 --seed $s --checkpoints false --log-every 0 --out $o && python3 bench/ours_accuracy.py $o/results.json $RES '$DEV'"
      done
    done
  done
  } | jobs_run
  wait $PEER
fi
if has mixed; then
  # mixed precision and TF32 against f32: GCN and SAGE, test accuracy at the best validation
  # epoch (the Planetoid protocol), 10 paired seeds
  step "precision accuracy"
  {
  for d in cora citeseer coauthor_cs; do
    for p in f32 mixedf16 tf32; do
      for s in $MP_SEEDS; do
        for m in gcn sage; do
          o=/tmp/mp-$d-$m-$p-$s
          echo "timeout 90 $BIN train --backend cuda --dataset $DATA/$d --model $m --hidden 64 --dropout 0.6 --input-dropout 0.6 --normalize-features --precision $p --epochs 200 --seed $s --select best-valid --checkpoints false --log-every 0 --out $o && python3 bench/ours_accuracy.py $o/results.json $RES '$DEV'"
        done
      done
    done
  done
  } | jobs_run
fi
step report
python3 bench/report.py "$RES" "$OUT/${DATE}-h200.md" "$OUT/charts" 2>&1 | tee -a "$LOG"
step done
