#!/usr/bin/env bash
# GPU session J: the hot-column split of the SpMM sum / mean (kernels/src/spmm/hot.rs).
# Phase `a`: CUDA selftest (with the hot-column configurations), cuSPARSE, our SpMM with the
# split (default 1,536 columns), with 1,024 columns and without (SGNN_SPMM_HOT=0), a sweep of
# the hot pass's shape at width 256, and ncu kernel times of both passes.
# Phase `b`: the hot pass with a plane per row (batched rank loads, butterfly of the slot sums):
# selftest of the SpMM cases, SpMM with the split (1,536 and 1,024 columns) and without, a
# thread-count sweep and ncu of the hot pass.
# Phase `c`: the plane's batch interleaved over its slots (short rows end early): selftest of the
# SpMM cases, cuSPARSE, SpMM with the split at cold group widths 256 / 1024 and 1,536 / 1,792
# hot columns, and without the split, and ncu of the passes.
# Phase `d1` (defaults now 1,792 hot columns, cold group width 1,024, ranks pre-scaled): full
# selftest, cuSPARSE, SpMM f32 / f16 with the split and f32 without, ncu of the passes.
# Phase `d2`: training epochs with and without the split, PyG in the same run.
# Phase `d3` (the split only for f32 in 16-byte vectors, after d2 measured f16 SpMM and the SAGE
# epochs slower with it): full selftest, cuSPARSE, SpMM f32 / f16 with and without the split,
# training epochs with and without it.
# Phase `e` (review commit: host-side bindings only): full selftest, cuSPARSE and SpMM f32.
# Usage: bench/sessions/h200_j.sh <binary> <out dir> <phase>
set -u
BIN=${1:-.carry/train-app}
OUT=${2:-/tmp/sgnn-out}
PHASE=${3:-a}
G=/tmp/reddit-rmat-feat
mkdir -p "$OUT"
RES="$OUT/h200-j.jsonl"
LOG="$OUT/run-j-$PHASE.log"
export SGNN_COMMIT=$("$BIN" --version | awk '{print $3}')
DEV="NVIDIA H200"
step() { echo "== $1 ($(date +%T))" | tee -a "$LOG"; }
ours() { timeout 90 "$BIN" bench --backend cuda --graph "$G" --out "$RES" --device-name "$DEV" "$@" >> "$LOG" 2>&1; }
summary() {
  grep -h '"op":"spmm"' "$RES" | python3 -c "
import sys, json
for l in sys.stdin:
    r = json.loads(l)
    print(r['impl'], r['dtype'], r['width'], round(r['median_ms'], 3), r.get('tuning'), r.get('check_error'))
" | tee -a "$LOG"
}
if [ "$PHASE" = a ]; then
  step selftest
  ( time timeout 240 "$BIN" selftest --backend cuda ) > "$OUT/selftest-j-a.log" 2>&1
  grep -E "^== |checks|selftest|FAIL|panicked" "$OUT/selftest-j-a.log" | tail -n 40 | tee -a "$LOG"
  step gen
  [ -d "$G" ] || timeout 60 "$BIN" gen rmat --features 602 --classes 41 --out "$G" >> "$LOG" 2>&1
  step "peers spmm"
  PYTHONUNBUFFERED=1 timeout 120 python3 bench/peers.py --graph "$G" --out "$RES" --ks 32 >> "$LOG" 2>&1
  step "ours spmm: split (default), 1024 columns, off"
  ours --ops spmm --dtypes f32,f16
  SGNN_SPMM_HOT=1024 ours --ops spmm --dtypes f32 --widths 64,256
  SGNN_SPMM_HOT=0 ours --ops spmm --dtypes f32 --widths 64,256
  step "sweep, width 256"
  for cfg in SGNN_HOT_THREADS=256 SGNN_HOT_THREADS=1024 SGNN_HOT_UNROLL=8 SGNN_HOT_BLOCKS=132 SGNN_HOT_BLOCKS=528 \
             SGNN_SPMM_HOT=1792 SGNN_NO_PLANE=1; do
    env "$cfg" timeout 60 "$BIN" bench --backend cuda --graph "$G" --ops spmm --widths 256 --dtypes f32 \
      --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
  done
  summary
  step "ncu kernel times, width 256"
  timeout 120 ncu --clock-control none --kernel-name regex:spmm --launch-skip 9 --launch-count 3 \
    "$BIN" bench --backend cuda --graph "$G" --ops spmm --widths 256 --dtypes f32 --out /tmp/ncu.jsonl \
    > "$OUT/ncu-j-a.txt" 2>&1
  grep -E "spmm_|Duration|L1/TEX Hit|L2 Hit|Achieved Occupancy|Throughput" "$OUT/ncu-j-a.txt" | head -60 | tee -a "$LOG"
  step done
fi
if [ "$PHASE" = b ]; then
  step "selftest spmm"
  ( time timeout 240 "$BIN" selftest --backend cuda --filter spmm ) > "$OUT/selftest-j-b.log" 2>&1
  grep -E "^== |checks|selftest|FAIL|panicked" "$OUT/selftest-j-b.log" | tail -n 40 | tee -a "$LOG"
  step gen
  [ -d "$G" ] || timeout 60 "$BIN" gen rmat --features 602 --classes 41 --out "$G" >> "$LOG" 2>&1
  step "ours spmm: split (default), 1024 columns, off"
  ours --ops spmm --dtypes f32 --widths 64,256
  SGNN_SPMM_HOT=1024 ours --ops spmm --dtypes f32 --widths 64,256
  SGNN_SPMM_HOT=0 ours --ops spmm --dtypes f32 --widths 64,256
  for cfg in SGNN_HOT_THREADS=512 SGNN_SPMM_HOT=1792 SGNN_NO_PLANE=1; do
    env "$cfg" timeout 60 "$BIN" bench --backend cuda --graph "$G" --ops spmm --widths 256 --dtypes f32 \
      --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
  done
  summary
  step "ncu kernel times, width 256"
  timeout 120 ncu --clock-control none --kernel-name regex:spmm_hot --launch-skip 3 --launch-count 1 --set full \
    "$BIN" bench --backend cuda --graph "$G" --ops spmm --widths 256 --dtypes f32 --out /tmp/ncu.jsonl \
    > "$OUT/ncu-j-b.txt" 2>&1
  grep -E "spmm_|Duration|Hit Rate|Achieved Occupancy|Throughput|Stall|stall" "$OUT/ncu-j-b.txt" | head -60 | tee -a "$LOG"
  step done
fi
if [ "$PHASE" = c ]; then
  step "selftest spmm"
  ( time timeout 240 "$BIN" selftest --backend cuda --filter spmm ) > "$OUT/selftest-j-c.log" 2>&1
  grep -E "^== |checks|selftest|FAIL|panicked" "$OUT/selftest-j-c.log" | tail -n 40 | tee -a "$LOG"
  step gen
  [ -d "$G" ] || timeout 60 "$BIN" gen rmat --features 602 --classes 41 --out "$G" >> "$LOG" 2>&1
  step "peers spmm"
  PYTHONUNBUFFERED=1 timeout 120 python3 bench/peers.py --graph "$G" --out "$RES" --ks 32 >> "$LOG" 2>&1
  step "ours spmm"
  ours --ops spmm --dtypes f32 --widths 32,64,128,256
  SGNN_COLD_GW=1024 ours --ops spmm --dtypes f32 --widths 64,256
  SGNN_SPMM_HOT=1792 ours --ops spmm --dtypes f32 --widths 64,256
  SGNN_SPMM_HOT=1792 SGNN_COLD_GW=1024 ours --ops spmm --dtypes f32 --widths 64,256
  SGNN_SPMM_HOT=0 ours --ops spmm --dtypes f32 --widths 64,256
  SGNN_SPMM_HOT=0 ours --ops spmm --dtypes f32 --widths 256 --group-width 1024
  summary
  grep -h '"impl":"cusparse"' "$RES" | python3 -c "
import sys, json
for l in sys.stdin:
    r = json.loads(l)
    if r['op'] == 'spmm': print(r['impl'], r['dtype'], r['width'], round(r['median_ms'], 3))
" | tee -a "$LOG"
  step "ncu kernel times, width 256"
  timeout 120 ncu --clock-control none --kernel-name regex:spmm --launch-skip 9 --launch-count 3 \
    "$BIN" bench --backend cuda --graph "$G" --ops spmm --widths 256 --dtypes f32 --out /tmp/ncu.jsonl \
    > "$OUT/ncu-j-c.txt" 2>&1
  grep -E "spmm_|Duration|Hit Rate|Achieved Occupancy|Throughput" "$OUT/ncu-j-c.txt" | head -60 | tee -a "$LOG"
  step done
fi
if [ "$PHASE" = d1 ]; then
  step selftest
  ( time timeout 240 "$BIN" selftest --backend cuda ) > "$OUT/selftest-j-d.log" 2>&1
  grep -E "^== |checks|selftest|FAIL|panicked" "$OUT/selftest-j-d.log" | tail -n 40 | tee -a "$LOG"
  step gen
  [ -d "$G" ] || timeout 60 "$BIN" gen rmat --features 602 --classes 41 --out "$G" >> "$LOG" 2>&1
  step "peers spmm"
  PYTHONUNBUFFERED=1 timeout 120 python3 bench/peers.py --graph "$G" --out "$RES" --ks 32 >> "$LOG" 2>&1
  step "ours spmm"
  ours --ops spmm --dtypes f32,f16
  SGNN_SPMM_HOT=0 ours --ops spmm --dtypes f32 --widths 32,64,128,256
  summary
  grep -h '"impl": "cusparse"' "$RES" | python3 -c "
import sys, json
for l in sys.stdin:
    r = json.loads(l)
    if r['op'] == 'spmm': print(r['impl'], r['dtype'], r['width'], round(r['median_ms'], 3))
" | tee -a "$LOG"
  step "ncu kernel times, width 256"
  timeout 120 ncu --clock-control none --kernel-name regex:spmm --launch-skip 9 --launch-count 3 \
    "$BIN" bench --backend cuda --graph "$G" --ops spmm --widths 256 --dtypes f32 --out /tmp/ncu.jsonl \
    > "$OUT/ncu-j-d.txt" 2>&1
  grep -E "spmm_|Duration|Hit Rate|Achieved Occupancy|Throughput" "$OUT/ncu-j-d.txt" | head -60 | tee -a "$LOG"
  step done
fi
if [ "$PHASE" = d2 ]; then
  step gen
  [ -d "$G" ] || timeout 60 "$BIN" gen rmat --features 602 --classes 41 --out "$G" >> "$LOG" 2>&1
  step "epochs, one configuration per process, split on and off"
  for hot in 1792 0; do
    for cfg in "sage relu f32" "sage relu mixedf16" "gcn relu f32"; do
      set -- $cfg
      SGNN_SPMM_HOT=$hot timeout 60 "$BIN" bench-train --backend cuda --dataset "$G" --models $1 --nonlins $2 \
        --precisions $3 --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
    done
  done
  step "pyg train"
  PYTHONUNBUFFERED=1 timeout 150 python3 bench/peers_train.py --graph "$G" --out "$RES" --models sage,gcn --paths adj_t >> "$LOG" 2>&1
  grep -h '"op":"train_epoch"\|"op": "train_epoch"' "$RES" | python3 -c "
import sys, json
for l in sys.stdin:
    r = json.loads(l)
    print(r['impl'], r.get('model'), r.get('nonlin'), r['dtype'], round(r['median_ms'], 2), r.get('tuning'),
          r.get('peak_in_use_bytes'), r.get('peak_bytes'))
" | tee -a "$LOG"
  step done
fi
if [ "$PHASE" = d3 ]; then
  step selftest
  ( time timeout 240 "$BIN" selftest --backend cuda ) > "$OUT/selftest-j-d3.log" 2>&1
  grep -E "^== |checks|selftest|FAIL|panicked" "$OUT/selftest-j-d3.log" | tail -n 40 | tee -a "$LOG"
  step gen
  [ -d "$G" ] || timeout 60 "$BIN" gen rmat --features 602 --classes 41 --out "$G" >> "$LOG" 2>&1
  step "peers spmm"
  PYTHONUNBUFFERED=1 timeout 120 python3 bench/peers.py --graph "$G" --out "$RES" --ks 32 >> "$LOG" 2>&1
  step "ours spmm"
  ours --ops spmm --dtypes f32,f16
  SGNN_SPMM_HOT=0 ours --ops spmm --dtypes f32,f16 --widths 64,256
  summary
  grep -h '"impl": "cusparse"' "$RES" | python3 -c "
import sys, json
for l in sys.stdin:
    r = json.loads(l)
    if r['op'] == 'spmm': print(r['impl'], r['dtype'], r['width'], round(r['median_ms'], 3))
" | tee -a "$LOG"
  step "epochs, one configuration per process, split on and off"
  for hot in 1792 0; do
    for cfg in "sage relu f32" "sage relu mixedf16" "gcn relu f32"; do
      set -- $cfg
      SGNN_SPMM_HOT=$hot timeout 60 "$BIN" bench-train --backend cuda --dataset "$G" --models $1 --nonlins $2 \
        --precisions $3 --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
    done
  done
  grep -h '"op":"train_epoch"' "$RES" | python3 -c "
import sys, json
for l in sys.stdin:
    r = json.loads(l)
    print(r['impl'], r.get('model'), r.get('nonlin'), r['dtype'], round(r['median_ms'], 2), r.get('tuning'),
          r.get('peak_in_use_bytes'), r.get('peak_bytes'))
" | tee -a "$LOG"
  step done
fi
if [ "$PHASE" = e ]; then
  step selftest
  ( time timeout 240 "$BIN" selftest --backend cuda ) > "$OUT/selftest-j-e.log" 2>&1
  grep -E "^== |checks|selftest|FAIL|panicked" "$OUT/selftest-j-e.log" | tail -n 40 | tee -a "$LOG"
  step gen
  [ -d "$G" ] || timeout 60 "$BIN" gen rmat --features 602 --classes 41 --out "$G" >> "$LOG" 2>&1
  step "peers spmm"
  PYTHONUNBUFFERED=1 timeout 120 python3 bench/peers.py --graph "$G" --out "$RES" --ks 32 >> "$LOG" 2>&1
  step "ours spmm"
  ours --ops spmm --dtypes f32
  summary
  grep -h '"impl": "cusparse"' "$RES" | python3 -c "
import sys, json
for l in sys.stdin:
    r = json.loads(l)
    if r['op'] == 'spmm' and r['dtype'] == 'f32': print(r['impl'], r['dtype'], r['width'], round(r['median_ms'], 3))
" | tee -a "$LOG"
  step done
fi
