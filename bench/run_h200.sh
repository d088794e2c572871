#!/usr/bin/env bash
# One GPU session: self-test the kernels on CUDA, generate the reddit-scale R-MAT graph, then
# time the peers (torch / cuSPARSE) and our kernels on the same graph file, and sweep the SpMM
# kernel shape. Usage (GPU machine, repository root):
#   bench/run_h200.sh <train-app binary> <out dir>
# Files written to <out dir>: <date>-h200.jsonl (results), sweep.jsonl, selftest.log, run.log,
# summary.md.
set -u
BIN=${1:-.carry/train-app}
OUT=${2:-${OUT:-/tmp/sgnn-out}}
GRAPH=${GRAPH:-/tmp/reddit-rmat}
mkdir -p "$OUT"
DATE=$(date +%Y-%m-%d)
RES="$OUT/${DATE}-h200.jsonl"
LOG="$OUT/run.log"
COMMIT=$("$BIN" --version | awk '{print $3}')
export SGNN_COMMIT=$COMMIT
step() { echo "== $1 ($(date +%T))" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$LOG"
step selftest
( time timeout ${SELFTEST_S:-200} "$BIN" selftest --backend cuda ) > "$OUT/selftest.log" 2>&1
tail -n 4 "$OUT/selftest.log" | tee -a "$LOG"
step gen
( time timeout 90 "$BIN" gen rmat --features 0 --out "$GRAPH" ) >> "$LOG" 2>&1
step peers
PYTHONUNBUFFERED=1 timeout 150 python3 bench/peers.py --graph "$GRAPH" --out "$RES" >> "$LOG" 2>&1
step ours
timeout ${BENCH_S:-200} "$BIN" bench --backend cuda --graph "$GRAPH" --ops all --out "$RES" --device-name "NVIDIA H200" >> "$LOG" 2>&1
step sweep
for gw in ${SWEEP_GW:-128 1024}; do for lanes in ${SWEEP_LANES:-32 64}; do
  SGNN_SPMM_LANES=$lanes timeout 60 "$BIN" bench --backend cuda --graph "$GRAPH" --ops spmm --widths 64,256 --runs 10 \
    --group-width "$gw" --out "$OUT/sweep.jsonl" --device-name "NVIDIA H200" >> "$LOG" 2>&1
done; done
step summary
python3 bench/summarize.py "$RES" > "$OUT/summary.md" 2>> "$LOG"
python3 - "$OUT/sweep.jsonl" <<'PY' >> "$OUT/summary.md" 2>> "$LOG"
import json, sys
print("\n## SpMM shape sweep\n\n| tuning | width | median ms | GB/s |\n|---|---|---|---|")
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(f"| {r['tuning']} | {r['width']} | {r['median_ms']:.3f} | {r['gbps']:.0f} |")
PY
cat "$OUT/summary.md"
