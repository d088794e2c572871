#!/usr/bin/env bash
# GPU session G (Glorot GCN weights, Adam epsilon 1e-8, peak in-use memory): CUDA selftest of the
# final binary, one training configuration per process for clean peak-memory numbers, and the
# accuracy phase again (ours and PyG, seeds 1-5). Usage: bench/sessions/h200_g.sh <binary> <out> <data>
set -u
BIN=${1:-.carry/train-app}
OUT=${2:-/tmp/sgnn-out}
DATA=${3:-.carry/data}
G=/tmp/reddit-rmat-feat
mkdir -p "$OUT"
RES="$OUT/h200-g.jsonl"
LOG="$OUT/run-g.log"
export SGNN_COMMIT=$("$BIN" --version | awk '{print $3}')
DEV="NVIDIA H200"
step() { echo "== $1 ($(date +%T))" | tee -a "$LOG"; }
step selftest
( time timeout 90 "$BIN" selftest --backend cuda ) > "$OUT/selftest-g.log" 2>&1
grep -E "^== |checks|selftest|FAIL" "$OUT/selftest-g.log" | tail -n 20 | tee -a "$LOG"
step gen
timeout 60 "$BIN" gen rmat --features 602 --classes 41 --out "$G" >> "$LOG" 2>&1
step "memory, one configuration per process"
for cfg in "sage relu f32" "sage relu mixedf16"; do
  set -- $cfg
  timeout 40 "$BIN" bench-train --backend cuda --dataset "$G" --models $1 --nonlins $2 --precisions $3 ${4:-} --epochs 5 --warmup 2 \
    --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
done
rm -rf "$G"
bash bench/run_h200.sh "$BIN" "$OUT" "$DATA" accuracy >> "$LOG" 2>&1
cat "$OUT"/*-h200.jsonl >> "$RES" 2>/dev/null
step done
grep -c . "$RES" | tee -a "$LOG"
