#!/usr/bin/env bash
# Mixed f16 against f32 in accuracy, on one CUDA GPU (repository root):
#   bench/precision_accuracy.sh <train-app binary> <out dir> <data dir> [seeds] [datasets] [models] [architectures]
# For every dataset (default cora,citeseer,coauthor_cs, read from <data dir>), model (gcn, sage,
# gin, gat), architecture (classic, linear-io), precision (f32, mixedf16) and seed (default
# 1-5): a 2-layer, hidden-64 model, 200 epochs, dropout 0.6 on the input and hidden features,
# row-normalised features, test accuracy at the best validation epoch (the Planetoid protocol).
# GAT: 8 heads, attention dropout 0.6; GIN: lr 0.005, weight decay 1e-3 (as the Cora tests).
# Each setting runs with its defaults (mixed-f16 GIN sums its neighbours in f32). One
# JSON line per run in <out dir>/precision_accuracy.jsonl ("op": "accuracy", bench/README.md),
# then the paired table (bench/precision_table.py) in <out dir>/precision_accuracy.md.
set -u
BIN=$(realpath "$1")
OUT=$2
DATA=$3
SEEDS=${4:-1 2 3 4 5}
DATASETS=${5:-cora,citeseer,coauthor_cs}
MODELS=${6:-gcn,sage,gin,gat}
ARCHS=${7:-classic,linear-io}
HERE=$(dirname "$0")
mkdir -p "$OUT"
RES="$OUT/precision_accuracy.jsonl"
LOG="$OUT/precision_accuracy.log"
DEV=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
. "$(dirname "$0")/jobs.sh" # jobs_run: the queued trainings, 8 at a time
{
for d in ${DATASETS//,/ }; do
  for m in ${MODELS//,/ }; do
    extra=""
    [ "$m" = gat ] && extra="--heads 8 --attention-dropout 0.6"
    [ "$m" = gin ] && extra="--lr 0.005 --weight-decay 1e-3"
    for a in ${ARCHS//,/ }; do
      for p in f32 mixedf16; do
        for s in $SEEDS; do
          o=/tmp/pa-$d-$m-$a-$p-$s
          echo "timeout 120 $BIN train --backend cuda --dataset $DATA/$d --model $m --architecture $a --hidden 64 --dropout 0.6 --input-dropout 0.6 $extra --normalize-features --precision $p --epochs 200 --seed $s --select best-valid --checkpoints false --log-every 0 --out $o && python3 $HERE/ours_accuracy.py $o/results.json $RES '$DEV' > /dev/null; rm -rf $o"
        done
      done
    done
  done
done
} | jobs_run
python3 "$HERE/precision_table.py" "$RES" | tee "$OUT/precision_accuracy.md"
