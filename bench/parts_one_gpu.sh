#!/usr/bin/env bash
# Products-scale GraphSAGE 4x256 f32 on one GPU (repository root):
#   bench/parts_one_gpu.sh <train-app binary> <out dir> [partition cache]
# The whole graph (f32 and mixed f16), then 2 parts on the same GPU (the exchange a copy),
# exact and with boundary sampling 0.1, in the split and joined halo layouts: what the
# partitioned model and the sampling cost on top of the whole-graph epoch. Lines go to
# <out dir>/bns.jsonl (results format of bench/README.md), the log to <out dir>/bns.log.
set -u
BIN=${1:-/tmp/ta}
O=${2:-${OUT:-/tmp/out}}
CACHE=${3:-.carry/products-2.part}
mkdir -p $O
LOG=$O/bns.log
RES=$O/bns.jsonl
P=/tmp/products-rmat
$BIN --version | tee -a $LOG
( time timeout 150 $BIN gen rmat --nodes 2449029 --edges 123718280 --features 100 --classes 47 --out $P ) >> $LOG 2>&1
B="bench-train --backend cuda --dataset $P --models sage --nonlins relu --precisions f32 --epochs 5 --warmup 2 --out $RES --device-name H200"
echo "== whole $(date +%T)" | tee -a $LOG
timeout 100 $BIN $B >> $LOG 2>&1 || echo FAILED whole | tee -a $LOG
echo "== whole mixed f16 $(date +%T)" | tee -a $LOG
timeout 100 $BIN ${B/--precisions f32/--precisions mixedf16} >> $LOG 2>&1 || echo FAILED whole mixed | tee -a $LOG
for s in "" "--boundary-sampling 0.1"; do for l in split joined; do
  echo "== parts 2 $l $s $(date +%T)" | tee -a $LOG
  timeout 120 $BIN $B --parts 2 --halo-layout $l $s --partition-cache $CACHE >> $LOG 2>&1 || echo FAILED $l $s | tee -a $LOG
done; done
python3 - $RES <<'PY' | tee -a $LOG
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    p = r.get("partition") or {}
    print(r["variant"], r["dtype"], "median_ms", round(r["median_ms"], 1), "min", round(r["min_ms"], 1), "p90", round(r["p90_ms"], 1),
          "layout", p.get("halo_layout"), "sampling", p.get("boundary_sampling"), "bytes/epoch", p.get("exchanged_bytes_per_epoch"),
          "reserved", p.get("reserved_bytes_per_device") or r.get("peak_bytes"))
PY
echo "== done $(date +%T)" | tee -a $LOG
