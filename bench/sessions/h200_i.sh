#!/usr/bin/env bash
# GPU session I (hot-column SpMM: the most-read columns' feature tile in shared memory).
# Phase `a`: CUDA selftest (with the hot-column configurations), SpMM against cuSPARSE with the
# hot-column kernel on (default) and off (SGNN_SPMM_HUB=0), and a shape sweep at width 256.
# Usage: bench/sessions/h200_i.sh <binary> <out dir> <phase>
set -u
BIN=${1:-.carry/train-app}
OUT=${2:-/tmp/sgnn-out}
PHASE=${3:-a}
G=/tmp/reddit-rmat-feat
mkdir -p "$OUT"
RES="$OUT/h200-i.jsonl"
LOG="$OUT/run-i-$PHASE.log"
export SGNN_COMMIT=$("$BIN" --version | awk '{print $3}')
DEV="NVIDIA H200"
step() { echo "== $1 ($(date +%T))" | tee -a "$LOG"; }
ours() { timeout 60 "$BIN" bench --backend cuda --graph "$G" --out "$RES" --device-name "$DEV" "$@" >> "$LOG" 2>&1; }
if [ "$PHASE" = a ]; then
  step selftest
  ( time timeout 150 "$BIN" selftest --backend cuda ) > "$OUT/selftest-i.log" 2>&1
  grep -E "^== |checks|selftest|FAIL|panicked" "$OUT/selftest-i.log" | tail -n 30 | tee -a "$LOG"
  step gen
  timeout 60 "$BIN" gen rmat --features 602 --classes 41 --out "$G" >> "$LOG" 2>&1
  step "peers spmm"
  PYTHONUNBUFFERED=1 timeout 90 python3 bench/peers.py --graph "$G" --out "$RES" --ks 32 >> "$LOG" 2>&1
  step "ours spmm, hot columns on (default) and off"
  ours --ops spmm --dtypes f32,f16
  SGNN_SPMM_HUB=0 ours --ops spmm --dtypes f32 --widths 64,256
  step "sweep, width 256"
  for cfg in "SGNN_SPMM_HUB=512" "SGNN_SPMM_HUB=256" "SGNN_HUB_THREADS=512" "SGNN_HUB_GROUPS_PER_SLOT=4" \
             "SGNN_HUB_GROUPS_PER_SLOT=64" "SGNN_SPMM_UNROLL=8" "GW=1024" "SGNN_SPMM_HUB=1280"; do
    gw=256
    envs=()
    for kv in $cfg; do
      case $kv in GW=*) gw=${kv#GW=} ;; *) envs+=("$kv") ;; esac
    done
    env "${envs[@]}" timeout 30 "$BIN" bench --backend cuda --graph "$G" --ops spmm --widths 256 --group-width "$gw" \
      --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
  done
  grep -h '"op":"spmm"' "$RES" | python3 -c "
import sys, json
for l in sys.stdin:
    r = json.loads(l)
    print(r['impl'], r['dtype'], r['width'], round(r['median_ms'], 3), r.get('tuning'), r.get('check_error'))
" | tee -a "$LOG"
  step done
fi
