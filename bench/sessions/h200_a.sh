#!/usr/bin/env bash
# GPU session A: selftest on CUDA (f32, f16, bf16, split rows, atomic variants, shared-memory
# fallbacks); kernels against cuSPARSE / torch on the reddit-scale R-MAT graph; accuracy against
# PyG on exported datasets; mixed-precision accuracy. Usage: bench/h200_a.sh <binary> <out dir> <data dir>
set -u
BIN=${1:-.carry/train-app}
OUT=${2:-/tmp/sgnn-out}
DATA=${3:-.carry/data}
G=/tmp/reddit-rmat
mkdir -p "$OUT"
RES="$OUT/h200-a.jsonl"
LOG="$OUT/run-a.log"
export SGNN_COMMIT=$("$BIN" --version | awk '{print $3}')
DEV="NVIDIA H200"
step() { echo "== $1 ($(date +%T))" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$LOG"
step selftest
( time timeout 200 "$BIN" selftest --backend cuda ) > "$OUT/selftest.log" 2>&1
grep -E "^== |checks|selftest" "$OUT/selftest.log" | tail -n 16 | tee -a "$LOG"
step gen
timeout 90 "$BIN" gen rmat --features 0 --out "$G" >> "$LOG" 2>&1
step "peers kernels"
PYTHONUNBUFFERED=1 timeout 120 python3 bench/peers.py --graph "$G" --out "$RES" >> "$LOG" 2>&1
step "ours kernels"
timeout 200 "$BIN" bench --backend cuda --graph "$G" --ops all --dtypes f32,f16,bf16 --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
rm -rf "$G"
step "accuracy: pyg"
GRAPHS=$(ls -d "$DATA"/*/ | tr '\n' ',' | sed 's/,$//')
PYTHONUNBUFFERED=1 timeout 120 python3 bench/peers_accuracy.py --graphs "$GRAPHS" --out "$RES" >> "$LOG" 2>&1
step "accuracy: ours"
for d in "$DATA"/*/; do
  for m in gcn sage; do
    o=/tmp/acc-$(basename "$d")-$m
    timeout 60 "$BIN" train --backend cuda --dataset "$d" --model $m --classic --hidden 64 --dropout 0.6 --input-dropout 0.6 \
      --normalize-features --epochs 200 --no-checkpoints --log-every 0 --out "$o" >> "$LOG" 2>&1 \
      && python3 bench/ours_accuracy.py "$o/results.json" "$RES" "$DEV" >> "$LOG"
  done
done
step "accuracy: mixed precision"
for d in cora citeseer coauthor_cs; do
  for p in f32 mixedf16; do
    o=/tmp/mp-$d-gcn-$p
    timeout 60 "$BIN" train --backend cuda --dataset "$DATA/$d" --model gcn --classic --hidden 64 --dropout 0.6 --input-dropout 0.6 \
      --normalize-features --precision $p --epochs 200 --no-checkpoints --log-every 0 --out "$o" >> "$LOG" 2>&1 \
      && python3 bench/ours_accuracy.py "$o/results.json" "$RES" "$DEV" >> "$LOG"
    o=/tmp/mp-$d-gin-$p
    timeout 60 "$BIN" train --backend cuda --dataset "$DATA/$d" --model gin --classic --hidden 64 --dropout 0.5 --input-dropout 0.5 \
      --normalize-features --lr 0.005 --weight-decay 0.001 --precision $p --epochs 200 --no-checkpoints --log-every 0 --out "$o" >> "$LOG" 2>&1 \
      && python3 bench/ours_accuracy.py "$o/results.json" "$RES" "$DEV" >> "$LOG"
  done
done
step done
grep -c . "$RES" | tee -a "$LOG"
