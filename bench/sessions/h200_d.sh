#!/usr/bin/env bash
# GPU session D: selftest (atomic CBSR fix), the dense products of linear layers (ours plain and
# split over row chunks, cuBLAS), training epochs with and without the chunked weight gradient,
# a per-kernel profile of one training configuration, PyG (adj_t) in the same run, and the
# `train` command with per-epoch memory. Usage: bench/h200_d.sh <binary> <out dir>
set -u
BIN=${1:-.carry/train-app}
OUT=${2:-/tmp/sgnn-out}
G=/tmp/reddit-rmat-feat
mkdir -p "$OUT"
RES="$OUT/h200-d.jsonl"
LOG="$OUT/run-d.log"
export SGNN_COMMIT=$("$BIN" --version | awk '{print $3}')
DEV="NVIDIA H200"
step() { echo "== $1 ($(date +%T))" | tee -a "$LOG"; }
step selftest
( time timeout 120 "$BIN" selftest --backend cuda ) > "$OUT/selftest-d.log" 2>&1
grep -E "^== |checks|selftest|FAIL" "$OUT/selftest-d.log" | tail -n 20 | tee -a "$LOG"
step gen
timeout 120 "$BIN" gen rmat --features 602 --classes 41 --out "$G" >> "$LOG" 2>&1
step "matmul"
PYTHONUNBUFFERED=1 timeout 60 python3 bench/peers.py --graph "$G" --out "$RES" --matmul >> "$LOG" 2>&1
timeout 60 "$BIN" bench --backend cuda --graph "$G" --ops matmul --runs 10 --warmup 2 --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
step "ours train"
SGNN_LINEAR_CHUNK=0 timeout 45 "$BIN" bench-train --backend cuda --dataset "$G" --models sage --nonlins relu \
  --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
timeout 150 "$BIN" bench-train --backend cuda --dataset "$G" --models sage,gcn --nonlins relu,maxk:32 --precisions f32,mixedf16 \
  --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
step "profile"
mkdir -p /tmp/prof
( cd /tmp/prof && printf '[profiling]\nlogger = { level = "basic", file = "%s" }\n' "$OUT/profile-sage-relu.log" > cubecl.toml && \
  timeout 60 "$BIN" bench-train --backend cuda --dataset "$G" --models sage --nonlins relu --epochs 2 --warmup 1 \
  --out /tmp/prof/ignored.jsonl --device-name "$DEV" ) >> "$LOG" 2>&1
step "pyg train"
PYTHONUNBUFFERED=1 timeout 90 python3 bench/peers_train.py --graph "$G" --out "$RES" --models sage,gcn --paths adj_t >> "$LOG" 2>&1
step "train command"
for nl in relu maxk:32; do
  SGNN_PLAIN_LOG=1 timeout 45 "$BIN" train --backend cuda --dataset "$G" --model sage --layers 4 --hidden 256 --nonlin $nl \
    --epochs 5 --no-checkpoints --out /tmp/train-$nl > "$OUT/train-d-${nl/:/}.log" 2>&1
  tail -n 7 "$OUT/train-d-${nl/:/}.log" | tee -a "$LOG"
done
step done
