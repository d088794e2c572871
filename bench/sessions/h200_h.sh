#!/usr/bin/env bash
# GPU session H (MaxK early-exit bisection, lean ReLU / dropout masks, half-saved activations in
# mixed precision, live-tensor peak sampled at every sparse kernel). Phase `a`: CUDA selftest
# (with the SAGE + MaxK layer check), SpMM / MaxK against cuSPARSE / torch.topk, an SpMM shape
# sweep at width 256, training epochs and memory (one configuration per process) against PyG.
# Phase `b`: mixed precision against f32 accuracy (bench/run_h200.sh's `mixed` phase).
# Phase `c` (after the fixes that phases a and b led to: the layer check's CPU side in f64, half
# copies scaled per row): selftest, the training configurations again, and phase b's accuracy.
# Usage: bench/sessions/h200_h.sh <binary> <out dir> <data dir> <a|b|c>
set -u
BIN=${1:-.carry/train-app}
OUT=${2:-/tmp/sgnn-out}
DATA=${3:-.carry/data}
PHASE=${4:-a}
G=/tmp/reddit-rmat-feat
mkdir -p "$OUT"
RES="$OUT/h200-h.jsonl"
LOG="$OUT/run-h-$PHASE.log"
export SGNN_COMMIT=$("$BIN" --version | awk '{print $3}')
DEV="NVIDIA H200"
step() { echo "== $1 ($(date +%T))" | tee -a "$LOG"; }
if [ "$PHASE" = c ]; then
  step selftest
  ( time timeout 120 "$BIN" selftest --backend cuda ) > "$OUT/selftest-h-c.log" 2>&1
  grep -E "^== |checks|selftest|SAGE|FAIL|panicked" "$OUT/selftest-h-c.log" | tail -n 24 | tee -a "$LOG"
  step gen
  timeout 60 "$BIN" gen rmat --features 602 --classes 41 --out "$G" >> "$LOG" 2>&1
  step "memory and epochs, one configuration per process"
  for cfg in "sage relu f32" "sage relu mixedf16" "sage maxk:32 f32 --atomic" "sage maxk:32 mixedf16 --atomic" "gcn relu mixedf16"; do
    set -- $cfg
    timeout 45 "$BIN" bench-train --backend cuda --dataset "$G" --models $1 --nonlins $2 --precisions $3 ${4:-} \
      --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
  done
  rm -rf "$G"
  PHASE=b
  LOG="$OUT/run-h-c.log"
fi
if [ "$PHASE" = b ]; then
  bash bench/run_h200.sh "$BIN" "$OUT" "$DATA" mixed >> "$LOG" 2>&1
  cat "$OUT"/*-h200.jsonl >> "$RES" 2>/dev/null
  rm -f "$OUT"/*-h200.jsonl
  step done
  exit 0
fi
step selftest
( time timeout 120 "$BIN" selftest --backend cuda ) > "$OUT/selftest-h.log" 2>&1
grep -E "^== |checks|selftest|layer|FAIL" "$OUT/selftest-h.log" | tail -n 20 | tee -a "$LOG"
step gen
timeout 60 "$BIN" gen rmat --features 602 --classes 41 --out "$G" >> "$LOG" 2>&1
step "peers kernels"
PYTHONUNBUFFERED=1 timeout 60 python3 bench/peers.py --graph "$G" --out "$RES" --ks 32 >> "$LOG" 2>&1
step "ours kernels"
timeout 90 "$BIN" bench --backend cuda --graph "$G" --ops spmm,maxk --dtypes f32,f16 --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
step "spmm sweep, width 256"
for cfg in "SGNN_SPMM_TILE=16" "SGNN_SPMM_TILE=64" "SGNN_SPMM_UNROLL=2" "SGNN_SPMM_UNROLL=6" "SGNN_SPMM_THREADS=512" \
           "SGNN_SPMM_THREADS=128" "GW=1024" "GW=2048" "GW=1024 SGNN_SPMM_TILE=16"; do
  gw=256
  envs=()
  for kv in $cfg; do
    case $kv in GW=*) gw=${kv#GW=} ;; *) envs+=("$kv") ;; esac
  done
  env "${envs[@]}" timeout 40 "$BIN" bench --backend cuda --graph "$G" --ops spmm --widths 256 --group-width "$gw" \
    --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
done
step "memory and epochs, one configuration per process"
for cfg in "sage relu f32" "sage relu mixedf16" "gcn relu f32" "gcn relu mixedf16" "sage maxk:32 f32 --atomic" "sage maxk:32 mixedf16 --atomic"; do
  set -- $cfg
  timeout 45 "$BIN" bench-train --backend cuda --dataset "$G" --models $1 --nonlins $2 --precisions $3 ${4:-} \
    --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
done
step "pyg train"
PYTHONUNBUFFERED=1 timeout 100 python3 bench/peers_train.py --graph "$G" --out "$RES" --models sage,gcn --paths adj_t >> "$LOG" 2>&1
rm -rf "$G"
python3 bench/report.py "$RES" "$OUT/h200-h.md" "$OUT/charts" >> "$LOG" 2>&1
step done
