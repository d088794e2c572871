#!/usr/bin/env bash
# Link prediction on one CUDA GPU, ours against PyG 2.8 on the identical split.
#   bench/link_h200.sh BIN OUT DATA [accuracy|speed]...
# accuracy: 2-layer GCN and GraphSAGE (hidden 128, embedding 64, no dropout, no weight decay,
#   100 epochs, the test metrics of the epoch best on valid AUC) on the npy folders of DATA
#   (cora citeseer coauthor_cs amazon_computers) over seeds 42 1 2 3 4; ours writes each split
#   into its run folder and bench/pyg_link.py trains PyG on that split and its fixed negatives.
#   LINK_DATASETS and LINK_SEEDS (space-separated) replace the datasets and the seeds.
# ours: the accuracy runs of ours alone.
# speed: the same GCN / GraphSAGE training step (encoder, decoder over every training edge and one
#   negative per positive, loss, backward, Adam) on the reddit- and products-scale R-MAT graphs
#   (SCALES), f32 and mixed f16: ours through `bench-train --task link`, PyG through
#   `bench/pyg_link.py --time --negatives device` on the split ours wrote (PyG's host
#   `negative_sampling` does not return at these scales).
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
  accuracy|ours)
    for ds in ${LINK_DATASETS:-cora citeseer coauthor_cs amazon_computers}; do
      for seed in ${LINK_SEEDS:-42 1 2 3 4}; do
        for m in gcn sage; do
          echo "timeout 300 $BIN train --backend cuda --dataset $DATA/$ds --model $m $COMMON --epochs 100 --seed $seed --select best-valid --checkpoints false --log-every 0 --out $OUT/runs/$ds-$m-$seed"
        done
      done
    done | jobs_run
    python3 "$HERE/link_collect.py" "$OUT/runs" >> "$OUT/ours_link_accuracy.jsonl"
    [ "$part" = ours ] && continue
    for ds in ${LINK_DATASETS:-cora citeseer coauthor_cs amazon_computers}; do
      for seed in ${LINK_SEEDS:-42 1 2 3 4}; do
        echo "timeout 300 python3 $HERE/pyg_link.py --graph $DATA/$ds --split $OUT/runs/$ds-gcn-$seed --models gcn,sage --seeds $seed --epochs 100 --hidden 128 --embedding 64 --out $OUT/pyg_link_accuracy.jsonl"
      done
    done | jobs_run
    ;;
  speed)
    for scale in ${SCALES:-reddit products}; do
      G=$OUT/rmat-$scale
      case $scale in
        reddit) GEN="--features 602 --classes 41" ;;
        products) GEN="--nodes 2449029 --edges 123718280 --features 100 --classes 47" ;;
      esac
      [ -d "$G" ] || timeout 150 "$BIN" gen rmat $GEN --out "$G" >> "$LOG" 2>&1
      timeout 400 "$BIN" bench-train --backend cuda --dataset "$G" --task link --models gcn,sage --nonlins relu \
        --precisions f32,mixedf16 --layers 2 --hidden 128 --embedding 64 --epochs 10 --warmup 3 \
        --link-split "$OUT/split-$scale" --out "$OUT/ours_link_speed.jsonl" >> "$LOG" 2>&1
      for m in ${PEER_MODELS:-gcn sage}; do
        for prec in ${PEER_PRECISIONS:-f32 mixed}; do
          amp=; [ "$prec" = mixed ] && amp=--amp
          timeout ${PEER_TIMEOUT:-240} python3 "$HERE/pyg_link.py" --graph "$G" --split "$OUT/split-$scale" --models $m --time $amp --negatives device \
            --runs ${PEER_RUNS:-5} --warmup ${PEER_WARMUP:-2} --hidden 128 --embedding 64 --out "$OUT/pyg_link_speed.jsonl" >> "$LOG" 2>&1 \
            || echo "pyg $m $amp on $scale: exit $?" >> "$OUT/pyg_link_speed.log"
        done
      done
      rm -rf "$G" "$OUT/split-$scale"
    done
    ;;
  esac
done
