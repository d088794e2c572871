#!/usr/bin/env bash
# GPU session I. Phase `a` (binary 23a93d2, since reverted): the hot-column SpMM (the most-read
# columns' feature tile in shared memory): CUDA selftest (with the hot-column configurations),
# SpMM against cuSPARSE with the kernel on (default) and off (SGNN_SPMM_HUB=0), a sweep at 256.
# Phase `b1` (the reverted tree): selftest, cuSPARSE, SpMM group-width sweep, ncu kernel times.
# Phase `b2`: per-call overhead (SpMM on Cora, where the kernels take microseconds), training
# epochs at group widths 256 and 512 against PyG.
# Phase `b3`: the other users of the edge groups (SDDMM, GAT) at group widths 256 and 512.
# Phase `c`: one-pass half copies (kernels::rows): selftest, mixed-precision epochs against f32.
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
if [ "$PHASE" = b1 ]; then
  step selftest
  ( time timeout 150 "$BIN" selftest --backend cuda ) > "$OUT/selftest-i-b.log" 2>&1
  grep -E "^== |checks|selftest|FAIL|panicked" "$OUT/selftest-i-b.log" | tail -n 12 | tee -a "$LOG"
  step gen
  timeout 60 "$BIN" gen rmat --features 602 --classes 41 --out "$G" >> "$LOG" 2>&1
  step "peers spmm"
  PYTHONUNBUFFERED=1 timeout 90 python3 bench/peers.py --graph "$G" --out "$RES" --ks 32 >> "$LOG" 2>&1
  step "ours spmm, group widths"
  for gw in 256 512 768 1024; do
    ours --ops spmm --dtypes f32 --widths 64,128,256 --group-width $gw
  done
  step "ncu kernel times, width 256"
  for gw in 256 1024; do
    timeout 90 ncu --clock-control none --kernel-name regex:spmm --launch-skip 6 --launch-count 2 \
      --metrics gpu__time_duration.sum "$BIN" bench --backend cuda --graph "$G" --ops spmm --widths 256 \
      --dtypes f32 --group-width $gw --out /tmp/ncu.jsonl > "$OUT/ncu-i-gw$gw.txt" 2>&1
    grep -E "spmm_|duration" "$OUT/ncu-i-gw$gw.txt" | tee -a "$LOG"
  done
  step done
fi
if [ "$PHASE" = b2 ]; then
  step "per-call overhead: spmm on cora"
  timeout 60 "$BIN" bench --backend cuda --graph .carry/data/cora --ops spmm --dtypes f32 --widths 32,256 \
    --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
  step gen
  timeout 60 "$BIN" gen rmat --features 602 --classes 41 --out "$G" >> "$LOG" 2>&1
  step "epochs, one configuration per process"
  for cfg in "sage relu f32 256" "sage relu f32 512" "gcn relu f32 256" "gcn relu f32 512" "sage relu mixedf16 512"; do
    set -- $cfg
    timeout 45 "$BIN" bench-train --backend cuda --dataset "$G" --models $1 --nonlins $2 --precisions $3 \
      --group-width $4 --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
  done
  step "pyg train"
  PYTHONUNBUFFERED=1 timeout 100 python3 bench/peers_train.py --graph "$G" --out "$RES" --models sage,gcn --paths adj_t >> "$LOG" 2>&1
  step done
fi
if [ "$PHASE" = b3 ]; then
  step gen
  timeout 60 "$BIN" gen rmat --features 602 --classes 41 --out "$G" >> "$LOG" 2>&1
  step "sddmm, group widths"
  for gw in 256 512; do
    ours --ops sddmm --dtypes f32 --widths 64,256 --group-width $gw
  done
  step "gat and gin epochs"
  for cfg in "gat relu f32 256" "gat relu f32 512" "gin relu f32 256" "gin relu f32 512"; do
    set -- $cfg
    timeout 60 "$BIN" bench-train --backend cuda --dataset "$G" --models $1 --nonlins $2 --precisions $3 \
      --group-width $4 --epochs 5 --warmup 2 --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
  done
  step done
fi
if [ "$PHASE" = c ]; then
  step selftest
  ( time timeout 150 "$BIN" selftest --backend cuda ) > "$OUT/selftest-i-c.log" 2>&1
  grep -E "^== |checks|selftest|FAIL|panicked|half rows" "$OUT/selftest-i-c.log" | tail -n 24 | tee -a "$LOG"
  step gen
  timeout 60 "$BIN" gen rmat --features 602 --classes 41 --out "$G" >> "$LOG" 2>&1
  step "epochs, one configuration per process"
  for cfg in "sage relu mixedf16" "gcn relu mixedf16" "sage maxk:32 mixedf16 --atomic" "sage relu f32"; do
    set -- $cfg
    timeout 45 "$BIN" bench-train --backend cuda --dataset "$G" --models $1 --nonlins $2 --precisions $3 ${4:-} \
      --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
  done
  step "pyg train"
  PYTHONUNBUFFERED=1 timeout 100 python3 bench/peers_train.py --graph "$G" --out "$RES" --models sage,gcn --paths adj_t >> "$LOG" 2>&1
  step done
fi
if [ "$PHASE" != a ]; then
  grep -h '"op":"\(spmm\|train_epoch\)"' "$RES" | python3 -c "
import sys, json
for l in sys.stdin:
    r = json.loads(l)
    print(r['impl'], r['op'], r.get('model'), r['dtype'], r['width'], round(r['median_ms'], 3), r.get('tuning'))
" | tee -a "$LOG"
fi
