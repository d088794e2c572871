#!/usr/bin/env bash
# Kernel tuning pass on the GPU machine: selftest, then sweeps of the SpMM feature tile and
# group width and the MaxK / CBSR kernels on the reddit-scale graph. Results: $OUT/tune.jsonl.
# Usage: bench/tune_h200.sh <train-app binary> <out dir>
set -u
BIN=${1:-.carry/train-app}
OUT=${2:-${OUT:-/tmp/sgnn-out}}
GRAPH=${GRAPH:-/tmp/reddit-rmat}
mkdir -p "$OUT"
LOG="$OUT/tune.log"
RES="$OUT/tune.jsonl"
step() { echo "== $1 ($(date +%T))" | tee -a "$LOG"; }
step selftest
( time timeout 200 "$BIN" selftest --backend cuda ) > "$OUT/selftest.log" 2>&1
grep -E "checks|selftest|FAIL" "$OUT/selftest.log" | tail -n 8 | tee -a "$LOG"
step gen
[ -f "$GRAPH/adj_indptr.npy" ] || timeout 90 "$BIN" gen rmat --features 0 --out "$GRAPH" >> "$LOG" 2>&1
for gw in ${SWEEP_GW:-256 1024}; do
  for tile in ${SWEEP_TILE:-32 64 128 256}; do
    step "spmm gw=$gw tile=$tile"
    SGNN_SPMM_TILE=$tile timeout 60 "$BIN" bench --backend cuda --graph "$GRAPH" --ops spmm --widths ${WIDTHS:-64,256} --runs 10 \
      --group-width "$gw" --out "$RES" --device-name "NVIDIA H200" >> "$LOG" 2>&1
  done
done
step "maxk, cbsr"
timeout 120 "$BIN" bench --backend cuda --graph "$GRAPH" --ops maxk,cbsr_spgemm,cbsr_sspmm --group-width 1024 --out "$RES" --device-name "NVIDIA H200" >> "$LOG" 2>&1
python3 - "$RES" <<'PY' | tee "$OUT/tune.md"
import json, sys
print("| op | width | k | variant | tuning | median ms | GB/s | check |\n|---|---|---|---|---|---|---|---|")
for l in open(sys.argv[1]):
    r = json.loads(l)
    gb = r.get("gbps"); ce = r.get("check_error")
    print(f"| {r['op']} | {r['width']} | {r.get('k') or ''} | {r.get('variant') or ''} | {r['tuning']} | {r['median_ms']:.3f} | {'' if gb is None else f'{gb:.0f}'} | {'' if ce is None else f'{ce:.1e}'} |")
PY
