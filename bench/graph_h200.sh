#!/usr/bin/env bash
# Graph classification on one CUDA GPU, ours against PyG 2.8 on the identical folds.
#   bench/graph_h200.sh BIN OUT TU [speed|accuracy|cv-time]...
# TU: the folder of the TU datasets (MUTAG PROTEINS NCI1 IMDB-BINARY).
# speed: training epochs (one pass over every graph in shuffled batches: gather, upload, forward,
#   backward, Adam step) of GIN-0 (4 convolutions, hidden 64, sum readout of every layer) at batch
#   sizes 32, 128 and 1024 on NCI1 and PROTEINS: ours through `bench-train --task graph`, PyG's
#   DataLoader + the same model through `bench/pyg_graph.py --time`.
# cv-time: one whole 10-fold run (350 epochs, batch 128) of each, alone on the GPU (CV_DATA,
#   default PROTEINS), end to end.
# accuracy: the GIN paper's protocol (10 stratified folds, 350 epochs, batch 128, Adam 0.01
#   halved every 50 epochs, the test accuracy of each fold per epoch, mean over the folds at the
#   epoch best on average) for MODELS (default gin gcn sage) on DATASETS (default MUTAG PROTEINS
#   NCI1 IMDB-BINARY): every fold of every run is one job (ours `train --folds 10 --fold F`, PyG
#   `pyg_graph.py --only-folds F` on the folds ours wrote), JOBS at a time (default 12);
#   `graph_collect.py` turns them into one record per dataset, model and implementation;
#   JOB_TIMEOUT (default 590 s) bounds each job. With FOLD_JOBS=N ours is one run of the ten
#   folds (`train --folds 10 --fold-jobs N`) and PyG's ten folds follow, JOBS at a time; the wall
#   time of each goes to graph_cv_time.jsonl (`"op": "cv_run"`).
set -u
BIN=$1; OUT=$2; TU=$3; shift 3
PARTS=${*:-speed accuracy}
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
LOG=$OUT/graph.log
export SGNN_PLAIN_LOG=1 SGNN_COMMIT=${SGNN_COMMIT:-unknown}
BACKEND=${BACKEND:-cuda}
MODEL="--layers 4 --hidden 64 --readout sum --dropout 0.5"
PROTOCOL="--epochs ${EPOCHS:-350} --lr 0.01 --lr-step 50 --lr-gamma 0.5 --batch-size 128"
# the run folder (graph-data.json: features and folds) PyG reads
folds_of() {
  [ -f "$OUT/folds-$1/graph-data.json" ] && return
  "$BIN" train --backend $BACKEND --task graph --dataset "$TU/$1" --model gin $MODEL --folds 10 --fold 1 --epochs 1 \
    --checkpoints false --log-every 0 --out "$OUT/folds-$1" >> "$LOG" 2>&1
}
run_jobs() {
  local n=0 max=${JOBS:-12}
  while read -r cmd; do
    bash -c "$cmd" >> "$LOG" 2>&1 &
    n=$((n + 1))
    if [ "$n" -ge "$max" ]; then wait -n; n=$((n - 1)); fi
  done
  wait
}
for part in $PARTS; do
  case $part in
  speed)
    for ds in NCI1 PROTEINS; do
      folds_of $ds
      timeout 300 "$BIN" bench-train --backend $BACKEND --task graph --dataset "$TU/$ds" --models gin --nonlins relu \
        --precisions f32 --layers 4 --hidden 64 --batch-sizes 32,128,1024 --epochs 5 --warmup 2 \
        --out "$OUT/graph_speed.jsonl" >> "$LOG" 2>&1
      timeout 300 python3 "$HERE/pyg_graph.py" --run "$OUT/folds-$ds" --dataset "$TU/$ds" --time \
        --batch-sizes 32,128,1024 --time-epochs 5 --out "$OUT/graph_speed.jsonl" >> "$LOG" 2>&1
    done
    ;;
  cv-time)
    ds=${CV_DATA:-PROTEINS}
    folds_of $ds
    start=$(date +%s.%N)
    timeout 580 "$BIN" train --backend $BACKEND --task graph --dataset "$TU/$ds" --model gin $MODEL $PROTOCOL --folds 10 \
      --checkpoints false --log-every 0 --out "$OUT/cv-ours-$ds" >> "$LOG" 2>&1
    echo "{\"op\": \"cv_run\", \"impl\": \"ours\", \"graph\": \"$ds\", \"seconds\": $(python3 -c "import time; print(round(time.time() - $start, 3))")}" >> "$OUT/graph_cv_time.jsonl"
    start=$(date +%s.%N)
    timeout 580 python3 "$HERE/pyg_graph.py" --run "$OUT/folds-$ds" --dataset "$TU/$ds" --model gin $PROTOCOL \
      --out "$OUT/pyg_cv_time.jsonl" >> "$LOG" 2>&1
    echo "{\"op\": \"cv_run\", \"impl\": \"pyg\", \"graph\": \"$ds\", \"seconds\": $(python3 -c "import time; print(round(time.time() - $start, 3))")}" >> "$OUT/graph_cv_time.jsonl"
    ;;
  accuracy)
    for ds in ${DATASETS:-MUTAG PROTEINS NCI1 IMDB-BINARY}; do folds_of $ds; done
    for ds in ${DATASETS:-MUTAG PROTEINS NCI1 IMDB-BINARY}; do
      for m in ${MODELS:-gin gcn sage}; do
        if [ -n "${FOLD_JOBS:-}" ]; then
          # ours as one run of FOLD_JOBS fold processes, then PyG's folds JOBS at a time; each timed
          start=$(date +%s.%N)
          timeout ${JOB_TIMEOUT:-590} "$BIN" train --backend $BACKEND --task graph --dataset "$TU/$ds" --model $m $MODEL $PROTOCOL \
            --folds 10 --fold-jobs "$FOLD_JOBS" --checkpoints false --log-every 0 --out "$OUT/runs/$ds-$m-ours" >> "$LOG" 2>&1
          echo "{\"op\": \"cv_run\", \"impl\": \"ours\", \"graph\": \"$ds\", \"model\": \"$m\", \"fold_jobs\": $FOLD_JOBS, \"seconds\": $(python3 -c "import time; print(round(time.time() - $start, 3))")}" >> "$OUT/graph_cv_time.jsonl"
          start=$(date +%s.%N)
          for f in ${FOLDS:-1 2 3 4 5 6 7 8 9 10}; do
            echo "timeout ${JOB_TIMEOUT:-590} python3 $HERE/pyg_graph.py --run $OUT/folds-$ds --dataset $TU/$ds --model $m $PROTOCOL --only-folds $f --out $OUT/runs/$ds-$m-pyg-$f.jsonl"
          done | run_jobs
          echo "{\"op\": \"cv_run\", \"impl\": \"pyg\", \"graph\": \"$ds\", \"model\": \"$m\", \"fold_jobs\": ${JOBS:-12}, \"seconds\": $(python3 -c "import time; print(round(time.time() - $start, 3))")}" >> "$OUT/graph_cv_time.jsonl"
          continue
        fi
        for f in ${FOLDS:-1 2 3 4 5 6 7 8 9 10}; do
          echo "timeout ${JOB_TIMEOUT:-590} $BIN train --backend $BACKEND --task graph --dataset $TU/$ds --model $m $MODEL $PROTOCOL --folds 10 --fold $f --checkpoints false --log-every 0 --out $OUT/runs/$ds-$m-ours-$f"
          echo "timeout ${JOB_TIMEOUT:-590} python3 $HERE/pyg_graph.py --run $OUT/folds-$ds --dataset $TU/$ds --model $m $PROTOCOL --only-folds $f --out $OUT/runs/$ds-$m-pyg-$f.jsonl"
        done | run_jobs
      done
    done
    python3 "$HERE/graph_collect.py" "$OUT/runs" >> "$OUT/graph_accuracy.jsonl"
    ;;
  *) echo "unknown part $part" >&2; exit 2 ;;
  esac
done
