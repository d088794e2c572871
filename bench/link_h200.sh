#!/usr/bin/env bash
# Link prediction on one CUDA GPU, ours against PyG 2.8 on the identical split.
#   bench/link_h200.sh BIN OUT DATA [accuracy|speed]...
# accuracy: 2-layer GCN and GraphSAGE (hidden 128, embedding 64, no dropout, no weight decay,
#   100 epochs, the test metrics of the epoch best on valid AUC) on the npy folders of DATA
#   (cora citeseer coauthor_cs amazon_computers) over seeds 42 1 2 3 4; ours writes each split
#   into its run folder and bench/pyg_link.py trains PyG on that split and its fixed negatives.
# speed: the same GCN / GraphSAGE on the reddit-scale R-MAT graph, f32 and mixed f16: our epoch
#   time (train step plus the forward pass over the 1 % valid pairs, from results.json) and
#   PyG's train step (bench/pyg_link.py --time).
set -u
BIN=$1; OUT=$2; DATA=$3; shift 3
PARTS=${*:-accuracy speed}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
LOG=$OUT/link.log
export SGNN_PLAIN_LOG=1 SGNN_COMMIT=${SGNN_COMMIT:-unknown}
. "$HERE/jobs.sh"
COMMON="--task link --hidden 128 --embedding 64 --dropout 0 --input-dropout 0 --weight-decay 0 --lr 0.01"
for part in $PARTS; do
  case $part in
  accuracy)
    for ds in cora citeseer coauthor_cs amazon_computers; do
      for seed in 42 1 2 3 4; do
        for m in gcn sage; do
          echo "timeout 300 $BIN train --backend cuda --dataset $DATA/$ds --model $m $COMMON --epochs 100 --seed $seed --select best-valid --checkpoints false --log-every 0 --out $OUT/runs/$ds-$m-$seed"
        done
      done
    done | jobs_run
    for ds in cora citeseer coauthor_cs amazon_computers; do
      for seed in 42 1 2 3 4; do
        echo "timeout 300 python3 $HERE/pyg_link.py --graph $DATA/$ds --split $OUT/runs/$ds-gcn-$seed --models gcn,sage --seeds $seed --epochs 100 --hidden 128 --embedding 64 --out $OUT/pyg_link_accuracy.jsonl"
      done
    done | jobs_run
    ;;
  speed)
    G=$OUT/rmat-reddit
    [ -d "$G" ] || timeout 120 "$BIN" gen rmat --features 602 --classes 41 --out "$G" >> "$LOG" 2>&1
    for m in gcn sage; do
      for p in f32 mixedf16; do
        timeout 240 "$BIN" train --backend cuda --dataset "$G" --model $m $COMMON --precision $p --link-valid 0.01 --link-test 0.01 \
          --epochs 8 --checkpoints false --log-every 1 --out "$OUT/speed-$m-$p" >> "$LOG" 2>&1
      done
      timeout 200 python3 "$HERE/pyg_link.py" --graph "$G" --split "$OUT/speed-$m-f32" --models $m --time --runs 5 --warmup 2 \
        --hidden 128 --embedding 64 --out "$OUT/pyg_link_speed.jsonl" >> "$LOG" 2>&1
      timeout 200 python3 "$HERE/pyg_link.py" --graph "$G" --split "$OUT/speed-$m-f32" --models $m --time --amp --runs 5 --warmup 2 \
        --hidden 128 --embedding 64 --out "$OUT/pyg_link_speed.jsonl" >> "$LOG" 2>&1
    done
    ;;
  esac
done
