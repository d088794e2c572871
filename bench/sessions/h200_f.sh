#!/usr/bin/env bash
# GPU session F: the ogbn-products-scale R-MAT graph (2,449,029 nodes, ~124M edges, 100 features,
# 47 classes): SpMM against cuSPARSE and GraphSAGE epochs against PyG; then accuracy over five
# seeds, ours against PyG (classic 2-layer GCN / GraphSAGE on the exported real datasets), and
# mixed-precision against f32 (GCN / GIN), trainings run 8 at a time.
# Usage: bench/h200_f.sh <binary> <out dir> <data dir>
set -u
BIN=${1:-.carry/train-app}
OUT=${2:-/tmp/sgnn-out}
DATA=${3:-.carry/data}
G=/tmp/products-rmat
mkdir -p "$OUT"
RES="$OUT/h200-f.jsonl"
LOG="$OUT/run-f.log"
export SGNN_COMMIT=$("$BIN" --version | awk '{print $3}')
DEV="NVIDIA H200"
SEEDS="1 2 3 4 5"
step() { echo "== $1 ($(date +%T))" | tee -a "$LOG"; }
step "gen products-scale"
timeout 120 "$BIN" gen rmat --nodes 2449029 --edges 123718280 --features 100 --classes 47 --out "$G" >> "$LOG" 2>&1
step "peers spmm"
PYTHONUNBUFFERED=1 timeout 60 python3 bench/peers.py --graph "$G" --out "$RES" --widths 64,256 --ks 32 >> "$LOG" 2>&1
step "ours spmm"
timeout 60 "$BIN" bench --backend cuda --graph "$G" --ops spmm --widths 64,256 --dtypes f32,f16 --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
step "train"
timeout 80 "$BIN" bench-train --backend cuda --dataset "$G" --models sage --nonlins relu,maxk:32 --precisions f32,mixedf16 --epochs 5 --warmup 2 \
  --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1
PYTHONUNBUFFERED=1 timeout 60 python3 bench/peers_train.py --graph "$G" --out "$RES" --models sage --paths adj_t --epochs 5 --warmup 2 >> "$LOG" 2>&1
rm -rf "$G"
step "accuracy"
GRAPHS=$(ls -d "$DATA"/*/ | tr '\n' ',' | sed 's/,$//')
PYTHONUNBUFFERED=1 timeout 200 python3 bench/peers_accuracy.py --graphs "$GRAPHS" --seeds 1,2,3,4,5 --out "$RES" >> "$LOG" 2>&1 &
PEER=$!
jobs_run() { # runs the queued commands 8 at a time
  local n=0
  while read -r cmd; do
    bash -c "$cmd" >> "$LOG" 2>&1 &
    n=$((n + 1))
    if [ $((n % 8)) -eq 0 ]; then wait -n; n=$((n - 1)); fi
  done
  wait
}
{
for d in "$DATA"/*/; do
  for m in gcn sage; do
    for s in $SEEDS; do
      o=/tmp/acc-$(basename "$d")-$m-$s
      echo "timeout 90 $BIN train --backend cuda --dataset $d --model $m --classic --hidden 64 --dropout 0.6 --input-dropout 0.6 --normalize-features --epochs 200 --seed $s --no-checkpoints --log-every 0 --out $o && python3 bench/ours_accuracy.py $o/results.json $RES '$DEV'"
    done
  done
done
for d in cora citeseer coauthor_cs; do
  for p in f32 mixedf16; do
    for s in $SEEDS; do
      o=/tmp/mp-$d-gcn-$p-$s
      echo "timeout 90 $BIN train --backend cuda --dataset $DATA/$d --model gcn --classic --hidden 64 --dropout 0.6 --input-dropout 0.6 --normalize-features --precision $p --epochs 200 --seed $s --no-checkpoints --log-every 0 --out $o && python3 bench/ours_accuracy.py $o/results.json $RES '$DEV'"
      o=/tmp/mp-$d-gin-$p-$s
      echo "timeout 90 $BIN train --backend cuda --dataset $DATA/$d --model gin --classic --hidden 64 --dropout 0.5 --input-dropout 0.5 --normalize-features --lr 0.005 --weight-decay 0.001 --precision $p --epochs 200 --seed $s --no-checkpoints --log-every 0 --out $o && python3 bench/ours_accuracy.py $o/results.json $RES '$DEV'"
    done
  done
done
} | jobs_run
wait $PEER
step done
grep -c . "$RES" | tee -a "$LOG"
