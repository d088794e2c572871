#!/usr/bin/env bash
# GPU session C (after enabling Burn's matmul autotune and per-kernel group widths): selftest,
# SpMM / MaxK / CBSR kernels against cuSPARSE / torch, an SpMM unroll sweep, training epochs of
# ours against PyG (adj_t), and the `train` command with per-epoch memory.
# Usage: bench/h200_c.sh <binary> <out dir>
set -u
BIN=${1:-.carry/train-app}
OUT=${2:-/tmp/sgnn-out}
G=/tmp/reddit-rmat-feat
mkdir -p "$OUT"
RES="$OUT/h200-c.jsonl"
LOG="$OUT/run-c.log"
export SGNN_COMMIT=$("$BIN" --version | awk '{print $3}')
DEV="NVIDIA H200"
step() { echo "== $1 ($(date +%T))" | tee -a "$LOG"; }
step selftest
( time timeout 150 "$BIN" selftest --backend cuda ) > "$OUT/selftest-c.log" 2>&1
grep -E "^== |checks|selftest" "$OUT/selftest-c.log" | tail -n 16 | tee -a "$LOG"
step gen
timeout 120 "$BIN" gen rmat --features 602 --classes 41 --out "$G" >> "$LOG" 2>&1
step "peers kernels"
PYTHONUNBUFFERED=1 timeout 90 python3 bench/peers.py --graph "$G" --out "$RES" >> "$LOG" 2>&1
step "ours kernels"
timeout 150 "$BIN" bench --backend cuda --graph "$G" --ops spmm,maxk,cbsr_spgemm,cbsr_sspmm --dtypes f32,f16 --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
SGNN_SPMM_UNROLL=8 timeout 40 "$BIN" bench --backend cuda --graph "$G" --ops spmm --widths 64,256 --dtypes f32,f16 --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
step "ours train"
timeout 200 "$BIN" bench-train --backend cuda --dataset "$G" --models sage,gcn --nonlins relu,maxk:32 --precisions f32,mixedf16 \
  --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
timeout 60 "$BIN" bench-train --backend cuda --dataset "$G" --models sage,gcn --nonlins maxk:32 --atomic --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
timeout 60 "$BIN" bench-train --backend cuda --dataset "$G" --models gin --nonlins relu --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
step "pyg train"
PYTHONUNBUFFERED=1 timeout 100 python3 bench/peers_train.py --graph "$G" --out "$RES" --models sage,gcn,gin --paths adj_t >> "$LOG" 2>&1
step "train command"
for nl in relu maxk:32; do
  SGNN_PLAIN_LOG=1 timeout 45 "$BIN" train --backend cuda --dataset "$G" --model sage --layers 4 --hidden 256 --nonlin $nl \
    --epochs 5 --no-checkpoints --out /tmp/train-$nl > "$OUT/train-c-${nl/:/}.log" 2>&1
  tail -n 7 "$OUT/train-c-${nl/:/}.log" | tee -a "$LOG"
done
step done
