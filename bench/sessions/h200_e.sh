#!/usr/bin/env bash
# GPU session E (linear layers with chunked split-K weight gradients, bias through the ones
# product, masked cross-entropy): every kernel against cuSPARSE / torch, training epochs of every
# model against PyG (adj_t) in the same run, per-kernel profiles of two training configurations,
# and the `train` command with per-epoch memory. Usage: bench/h200_e.sh <binary> <out dir>
set -u
BIN=${1:-.carry/train-app}
OUT=${2:-/tmp/sgnn-out}
G=/tmp/reddit-rmat-feat
mkdir -p "$OUT"
RES="$OUT/h200-e.jsonl"
LOG="$OUT/run-e.log"
export SGNN_COMMIT=$("$BIN" --version | awk '{print $3}')
DEV="NVIDIA H200"
step() { echo "== $1 ($(date +%T))" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$LOG"
step gen
timeout 120 "$BIN" gen rmat --features 602 --classes 41 --out "$G" >> "$LOG" 2>&1
step "peers kernels"
PYTHONUNBUFFERED=1 timeout 60 python3 bench/peers.py --graph "$G" --out "$RES" >> "$LOG" 2>&1
PYTHONUNBUFFERED=1 timeout 30 python3 bench/peers.py --graph "$G" --out "$RES" --matmul >> "$LOG" 2>&1
step "ours kernels"
timeout 200 "$BIN" bench --backend cuda --graph "$G" --ops all --dtypes f32,f16,bf16 --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
timeout 40 "$BIN" bench --backend cuda --graph "$G" --ops matmul --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
step "ours train"
timeout 150 "$BIN" bench-train --backend cuda --dataset "$G" --models sage,gcn --nonlins relu,maxk:32 --precisions f32,mixedf16 \
  --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
timeout 60 "$BIN" bench-train --backend cuda --dataset "$G" --models sage,gcn --nonlins maxk:32 --precisions f32,mixedf16 --atomic \
  --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
timeout 60 "$BIN" bench-train --backend cuda --dataset "$G" --models gin,gat --nonlins relu \
  --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
step "pyg train"
PYTHONUNBUFFERED=1 timeout 100 python3 bench/peers_train.py --graph "$G" --out "$RES" --models sage,gcn,gin --paths adj_t >> "$LOG" 2>&1
step "profile"
for cfg in "relu f32" "maxk:32 f32" "maxk:32 mixedf16"; do
  set -- $cfg
  name="profile-sage-${1/:/}-$2.log"
  mkdir -p /tmp/prof && ( cd /tmp/prof && printf '[profiling]\nlogger = { level = "basic", file = "%s" }\n' "$OUT/$name" > cubecl.toml && \
    timeout 50 "$BIN" bench-train --backend cuda --dataset "$G" --models sage --nonlins $1 --precisions $2 --epochs 1 --warmup 1 \
    --out /tmp/prof/ignored.jsonl --device-name "$DEV" ) >> "$LOG" 2>&1
done
step "train command"
for nl in relu maxk:32; do
  SGNN_PLAIN_LOG=1 timeout 45 "$BIN" train --backend cuda --dataset "$G" --model sage --layers 4 --hidden 256 --nonlin $nl \
    --epochs 5 --no-checkpoints --out /tmp/train-$nl > "$OUT/train-e-${nl/:/}.log" 2>&1
  tail -n 7 "$OUT/train-e-${nl/:/}.log" | tee -a "$LOG"
done
step done
