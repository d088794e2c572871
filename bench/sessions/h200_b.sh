#!/usr/bin/env bash
# GPU session B: training epochs on the reddit-scale R-MAT graph (602 features, 41 classes),
# ours (f32, mixed f16, MaxK with the atomic SSpMM) against PyG (adj_t and edge_index), and the
# `train` command printing per-epoch times and memory. Usage: bench/h200_b.sh <binary> <out dir>
set -u
BIN=${1:-.carry/train-app}
OUT=${2:-/tmp/sgnn-out}
G=/tmp/reddit-rmat-feat
mkdir -p "$OUT"
RES="$OUT/h200-b.jsonl"
LOG="$OUT/run-b.log"
export SGNN_COMMIT=$("$BIN" --version | awk '{print $3}')
DEV="NVIDIA H200"
step() { echo "== $1 ($(date +%T))" | tee -a "$LOG"; }
step gen
timeout 120 "$BIN" gen rmat --features 602 --classes 41 --out "$G" >> "$LOG" 2>&1
step "ours train"
timeout 200 "$BIN" bench-train --backend cuda --dataset "$G" --models sage,gcn --nonlins relu,maxk:32 --precisions f32,mixedf16 \
  --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
timeout 80 "$BIN" bench-train --backend cuda --dataset "$G" --models sage,gcn --nonlins maxk:32 --atomic \
  --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
timeout 90 "$BIN" bench-train --backend cuda --dataset "$G" --models gin,gat --nonlins relu \
  --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
step "pyg train"
PYTHONUNBUFFERED=1 timeout 150 python3 bench/peers_train.py --graph "$G" --out "$RES" --models sage,gcn,gin,gat >> "$LOG" 2>&1
step "train command"
for nl in relu maxk:32; do
  SGNN_PLAIN_LOG=1 timeout 60 "$BIN" train --backend cuda --dataset "$G" --model sage --layers 4 --hidden 256 --nonlin $nl \
    --epochs 5 --no-checkpoints --out /tmp/train-$nl > "$OUT/train-${nl/:/}.log" 2>&1
  tail -n 8 "$OUT/train-${nl/:/}.log" | tee -a "$LOG"
done
step done
