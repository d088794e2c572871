#!/usr/bin/env bash
# Training on several GPUs of one host (repository root, a machine with >= 2 GPUs):
#   bench/multi_gpu.sh <train-app binary> <out dir> [partition cache prefix] [stages]
# Stages (default "scaling large", each fits one 10-minute command):
#   partition: the partitioners timed on this host (all its cores): the products-scale R-MAT
#            graph into 2, 4 and 8 parts by the default multilevel partitioner and into 2 by
#            METIS on the whole graph, and a 2M-node SBM graph (homophily 0.8, 16 classes)
#            into 2 by both; one JSON line each (`partition` output: cut, halo rows,
#            imbalance, partition_seconds) in <out dir>/partition.jsonl; the multilevel ones
#            are written as PREFIX-<parts>.part for the later stages;
#   scaling: the self test (its partitioned-model checks use two GPUs when there are two), then
#            the products-scale R-MAT GraphSAGE 4x256 epoch on one GPU and on two in both halo
#            layouts (f32 and mixed f16, the same binary and graph), and on two with boundary
#            sampling (f32, a tenth of the halo rows, both layouts); on a host of four GPUs
#            or more, also on four (halo layout auto);
#   large:   a wider model whose memory estimate exceeds one GPU, on two; and a model started
#            on one GPU past its estimate (--memory-budget), which must stop with an
#            out-of-memory error, not a panic;
#   sbm:     a model that does not fit one GPU by the estimate on a graph whose partition keeps
#            the halo small (SBM, 3M nodes, 30M edges, homophily 0.98, 8 classes, 128 features;
#            GraphSAGE 4x$SBM_WIDE, the width by the GPU's memory): refused on one GPU, trained
#            on two (needs PREFIX-sbm3m-2.part beside the products caches; not in the default list);
#   processes: the products-scale SAGE 4x256 f32 epoch as two processes, one per GPU, the halo
#            rows moving through NCCL (`train --processes 2 --devices 0,1`, transport auto),
#            with the same partition (stage not in the default list);
#   equality: coauthor_cs SAGE 2x256, 100 epochs, the same seed, trained on one GPU, on two in
#            one process (`--devices 0,1`), as two processes (`--processes 2 --devices 0,1`)
#            and on four in one process where the host has four GPUs: per-epoch losses and
#            accuracies side by side in <out dir>/equality.json (needs the coauthor_cs npy
#            folder as $CS, default .carry/coauthor_cs; not in the default list).
#   sbm-scaling: the SAGE 4x256 epoch on a 2M-node SBM graph (average degree $SBM_DEG, default
#            20, homophily $SBM_H, default 0.8, 16 classes, 64 features) on one GPU and on two
#            (split layout), f32 and mixed f16 (partitions it when its cache is not beside the
#            products caches; not in the default list);
#   profile: CubeCL kernel profiles of the products-scale mixed f16 epoch: the whole graph and 2
#            parts on one GPU, 2 parts on two GPUs and, on a host of four, 4 parts on four
#            (profile-*.log, summarised per GPU by profile_summary.py into profile-*.md; not in
#            the default list);
#   strong:  the products-scale GraphSAGE 4x256 epoch (f32 and mixed f16, split halo layout) on
#            1, 2, 4 and 8 GPUs, as many as the host has, each multi-GPU count once per
#            $LINKS (not in the default list);
#   weak:    an R-MAT graph of $WEAK_NODES x P nodes and $WEAK_EDGES x P edges (default the
#            products scale) on P = 1, 2, 4, 8 GPUs as the host has, the same model, the first
#            of $LINKS (not in the default list);
#   link:    link prediction's products-scale GraphSAGE step (2 layers, hidden 128, embedding 64)
#            on one GPU and with its encoder on two (`bench-train --task link --devices 0,1`),
#            f32 and mixed f16 (not in the default list).
# The cache prefix names METIS partitions written by `train-app partition --cache PREFIX`
# (PREFIX-2.part), so the run does not spend minutes partitioning. Lines go to
# <out dir>/multi-gpu.jsonl (results format of bench/README.md, `devices` on multi-GPU lines);
# the run folders of the processes and equality stages go to $RUNS (default /tmp/sgnn-runs), so
# that <out dir> holds only the logs and results.
set -u
BIN=${1:-.carry/train-app}
OUT=${2:-${OUT:-/tmp/sgnn-out}}
CACHE=${3:-.carry/products}
STAGES=${4:-scaling large}
# the scaling stage's precisions and whether it runs the self test first (to fit a stage into
# one 10-minute command: e.g. PRECS=f32 first, then PRECS=mixedf16 SELFTEST=0)
PRECS=${PRECS:-f32 mixedf16}
SELFTEST=${SELFTEST:-1}
# the halo layouts of the two-GPU runs and of the boundary-sampling runs
LAYOUTS=${LAYOUTS:-split joined}
BNS_LAYOUTS=${BNS_LAYOUTS:-split joined}
# how the halo rows move in the two-GPU runs of the scaling stages (`--device-links`: peer
# copies on the copy engines, or one NCCL group; e.g. LINKS="peer nccl" for both)
LINKS=${LINKS:-nccl}
# hidden width of the wide model: its one-GPU estimate (140.5 GiB) exceeds an H200's free memory
# (139.25 GiB), its largest part on two GPUs does not
WIDE=${WIDE:-1152}
export NCCL_NVLS_ENABLE=0
mkdir -p "$OUT"
RES="$OUT/multi-gpu.jsonl"
LOG="$OUT/multi-gpu.log"
RUNS=${RUNS:-/tmp/sgnn-runs}
# the records name the GPU the run found
DEV=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
# on a host of four GPUs or more the scaling stage also runs on four (needs PREFIX-4.part)
NG=$(nvidia-smi -L | grep -c '^GPU')
P=/tmp/products-rmat
step() { echo "== $1 ($(date +%T))" | tee -a "$LOG"; }
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | tee -a "$LOG"
nvidia-smi topo -m >> "$LOG" 2>&1
step "gen products-scale"
[ -d "$P" ] || timeout 150 "$BIN" gen rmat --nodes 2449029 --edges 123718280 --features 100 --classes 47 --out "$P" >> "$LOG" 2>&1
if [[ " $STAGES " == *" partition "* ]]; then
echo "host: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)" | tee -a "$LOG"
S2=/tmp/sbm2m
[ -d "$S2" ] || timeout 150 "$BIN" gen sbm --nodes 2000000 --avg-degree 20 --homophily 0.8 --classes 16 --features 64 --out "$S2" >> "$LOG" 2>&1
step "partition products-scale: multilevel into 2, 4, 8 parts"
timeout 200 "$BIN" partition --dataset "$P" --parts 2,4,8 --method multilevel --cache "$CACHE" >> "$OUT/partition.jsonl" 2>> "$LOG"
step "partition products-scale: METIS into 2 parts"
timeout 300 "$BIN" partition --dataset "$P" --parts 2 --method metis >> "$OUT/partition.jsonl" 2>> "$LOG"
for m in multilevel metis; do
  step "partition SBM 2M: $m into 2 parts"
  timeout 200 "$BIN" partition --dataset "$S2" --parts 2 --method $m >> "$OUT/partition.jsonl" 2>> "$LOG"
done
python3 - "$OUT/partition.jsonl" <<'PY' | tee -a "$LOG"
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(r["graph"], r["method"], r["parts"], "cut", round(r["cut_fraction"], 4), "halo", r["halo_total"],
          "edge imbalance", round(r["edge_imbalance"], 4), "seconds", round(r["partition_seconds"], 2))
PY
fi
if [[ " $STAGES " == *" scaling "* ]]; then
if [ "$SELFTEST" = 1 ]; then
step selftest
( time timeout 200 "$BIN" selftest --backend cuda ) > "$OUT/selftest-multi-gpu.log" 2>&1
grep -E "^== |parts|checks|selftest|FAIL" "$OUT/selftest-multi-gpu.log" | tail -n 40 | tee -a "$LOG"
fi
for prec in $PRECS; do
  step "products $prec: one GPU"
  timeout 120 "$BIN" bench-train --backend cuda --dataset "$P" --models sage --nonlins relu --precisions $prec --epochs 5 --warmup 2 \
    --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1 || echo "FAILED: one GPU $prec" | tee -a "$LOG"
  for layout in $LAYOUTS; do
  for links in $LINKS; do
    step "products $prec: two GPUs, $layout halo layout, device links $links"
    timeout 150 "$BIN" bench-train --backend cuda --dataset "$P" --models sage --nonlins relu --precisions $prec --epochs 5 --warmup 2 \
      --devices 0,1 --halo-layout $layout --device-links $links --partition-cache "$CACHE-2.part" --out "$RES" --device-name "$DEV" \
      >> "$LOG" 2>&1 || echo "FAILED: two GPUs $prec $layout $links" | tee -a "$LOG"
  done
  done
  if [ "$NG" -ge 4 ]; then
    step "products $prec: four GPUs, halo layout auto"
    timeout 150 "$BIN" bench-train --backend cuda --dataset "$P" --models sage --nonlins relu --precisions $prec --epochs 5 --warmup 2 \
      --devices 0,1,2,3 --partition-cache "$CACHE-4.part" --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1 \
      || echo "FAILED: four GPUs $prec" | tee -a "$LOG"
  fi
done
# BNS-GCN boundary sampling (not exact): a tenth of the halo rows cross per step
if [[ " $PRECS " == *" f32 "* ]]; then
for layout in $BNS_LAYOUTS; do
step "products f32: two GPUs, boundary sampling 0.1, $layout halo layout"
timeout 150 "$BIN" bench-train --backend cuda --dataset "$P" --models sage --nonlins relu --precisions f32 --epochs 5 --warmup 2 \
  --devices 0,1 --boundary-sampling 0.1 --halo-layout $layout --partition-cache "$CACHE-2.part" --out "$RES" \
  --device-name "$DEV" >> "$LOG" 2>&1 || echo "FAILED: two GPUs, boundary sampling, $layout" | tee -a "$LOG"
done
fi
fi
if [[ " $STAGES " == *" large "* ]]; then
step "wide model: estimate on one GPU and on two"
timeout 100 "$BIN" train --backend cuda --dataset "$P" --model sage --architecture linear-io --layers 4 --hidden $WIDE --nonlin relu \
  --dry-run --out /tmp/wide-1 >> "$LOG" 2>&1; echo "one GPU dry run exit $?" | tee -a "$LOG"
timeout 200 "$BIN" train --backend cuda --dataset "$P" --model sage --architecture linear-io --layers 4 --hidden $WIDE --nonlin relu \
  --devices 0,1 --partition-cache "$CACHE-2.part" --dry-run --out /tmp/wide-2 >> "$LOG" 2>&1; echo "two GPUs dry run exit $?" | tee -a "$LOG"
step "wide model on two GPUs"
timeout 200 "$BIN" bench-train --backend cuda --dataset "$P" --models sage --nonlins relu --hidden $WIDE --epochs 2 --warmup 1 \
  --devices 0,1 --partition-cache "$CACHE-2.part" --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1 \
  || echo "FAILED: wide model on two GPUs" | tee -a "$LOG"
step "out of memory during training: 4x1536 on one GPU with the estimate overridden"
timeout 200 "$BIN" train --backend cuda --dataset "$P" --model sage --architecture linear-io --layers 4 --hidden 1536 --nonlin relu \
  --epochs 2 --memory-budget 1024GiB --out /tmp/oom-1 > "$OUT/oom.log" 2>&1; echo "exit $?" >> "$OUT/oom.log"
tail -n 5 "$OUT/oom.log" | cut -c1-600 | tee -a "$LOG"
fi
if [[ " $STAGES " == *" sbm "* ]]; then
S=/tmp/sbm3m
SC="$(dirname "$CACHE")/sbm3m-2.part"
# a width whose one-GPU estimate exceeds the GPU's free memory (4x1024: 83.9 GiB against an
# H100's 78.6 GiB; 4x1792: 145.3 GiB against an H200's 139.2 GiB); on two GPUs it is
# half to two thirds of that
MEM=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits | head -n 1)
SBM_WIDE=${SBM_WIDE:-$([ "$MEM" -lt 100000 ] && echo 1024 || echo 1792)}
step "gen SBM 3M"
[ -d "$S" ] || timeout 150 "$BIN" gen sbm --nodes 3000000 --avg-degree 10 --homophily 0.98 --classes 8 --features 128 --out "$S" >> "$LOG" 2>&1
W=(--dataset "$S" --model sage --architecture linear-io --layers 4 --hidden $SBM_WIDE --nonlin relu)
step "SBM 3M, SAGE 4x$SBM_WIDE: estimate on one GPU and on two"
timeout 100 "$BIN" train --backend cuda "${W[@]}" --dry-run --out "$RUNS/sbm-1" >> "$LOG" 2>&1; echo "one GPU dry run exit $?" | tee -a "$LOG"
timeout 100 "$BIN" train --backend cuda "${W[@]}" --devices 0,1 --partition-cache "$SC" --dry-run --out "$RUNS/sbm-2" >> "$LOG" 2>&1
echo "two GPUs dry run exit $?" | tee -a "$LOG"
step "SBM 3M, SAGE 4x$SBM_WIDE on two GPUs"
timeout 200 "$BIN" bench-train --backend cuda --dataset "$S" --models sage --nonlins relu --hidden $SBM_WIDE --epochs 3 --warmup 1 \
  --devices 0,1 --partition-cache "$SC" --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1 \
  || echo "FAILED: SBM on two GPUs" | tee -a "$LOG"
fi
if [[ " $STAGES " == *" processes "* ]]; then
step "products f32: two processes, one per GPU"
( time timeout 300 "$BIN" train --backend cuda --dataset "$P" --model sage --layers 4 --hidden 256 --nonlin relu --epochs 8 \
  --log-every 1 --processes 2 --devices 0,1 --partition-cache "$CACHE-2.part" --out "$RUNS/products-processes" ) >> "$LOG" 2>&1 \
  || echo "FAILED: two processes" | tee -a "$LOG"
cp "$RUNS/products-processes/results.json" "$OUT/products-processes.json" 2>/dev/null
grep -E "move through|epoch +[0-9]+/|real" "$LOG" | tail -n 12
fi
if [[ " $STAGES " == *" equality "* ]]; then
CS=${CS:-.carry/coauthor_cs}
M=(--dataset "$CS" --model sage --layers 2 --hidden 256 --epochs 100 --seed 7 --log-every 0)
step "coauthor_cs: one GPU"
timeout 150 "$BIN" train --backend cuda "${M[@]}" --out "$RUNS/eq-one" >> "$LOG" 2>&1 || echo "FAILED: one GPU" | tee -a "$LOG"
step "coauthor_cs: two GPUs, one process"
timeout 150 "$BIN" train --backend cuda "${M[@]}" --devices 0,1 --out "$RUNS/eq-two" >> "$LOG" 2>&1 || echo "FAILED: two GPUs" | tee -a "$LOG"
if [ "$NG" -ge 4 ]; then
  step "coauthor_cs: four GPUs, one process"
  timeout 150 "$BIN" train --backend cuda "${M[@]}" --devices 0,1,2,3 --out "$RUNS/eq-four" >> "$LOG" 2>&1 || echo "FAILED: four GPUs" | tee -a "$LOG"
fi
step "coauthor_cs: two processes"
timeout 150 "$BIN" train --backend cuda "${M[@]}" --processes 2 --devices 0,1 --out "$RUNS/eq-procs" >> "$LOG" 2>&1 \
  || echo "FAILED: two processes" | tee -a "$LOG"
python3 - "$RUNS" "$OUT" <<'PY' | tee -a "$LOG"
import json, os, sys
runs_dir, out = sys.argv[1], sys.argv[2]
runs = {}
for name in ("eq-one", "eq-two", "eq-four", "eq-procs"):
    d = os.path.join(runs_dir, name)
    try:
        r = json.load(open(os.path.join(d, "results.json")))
    except OSError:
        continue
    losses = [x["train_loss"] for x in r["epochs"]]
    runs[name] = {"losses": losses, "final_accuracy": r.get("final_accuracy"),
                  "transport": r.get("partition", {}).get("transport")}
    print(name, "first", losses[0], "last", losses[-1], "acc", r.get("final_accuracy"), "transport", runs[name]["transport"])
if "eq-one" in runs:
    for name in ("eq-two", "eq-four", "eq-procs"):
        if name in runs:
            d = max(abs(a - b) for a, b in zip(runs["eq-one"]["losses"], runs[name]["losses"]))
            print(name, "largest per-epoch loss difference to one GPU", d)
json.dump(runs, open(os.path.join(out, "equality.json"), "w"))
PY
fi
if [[ " $STAGES " == *" sbm-scaling "* ]]; then
SBM_DEG=${SBM_DEG:-20}
SBM_H=${SBM_H:-0.8}
S2=/tmp/sbm2m-d$SBM_DEG-h$SBM_H
SC2="$(dirname "$CACHE")/sbm2m-d$SBM_DEG-h$SBM_H"
[ -d "$S2" ] || timeout 150 "$BIN" gen sbm --nodes 2000000 --avg-degree $SBM_DEG --homophily $SBM_H --classes 16 --features 64 --out "$S2" >> "$LOG" 2>&1
[ -f "$SC2-2.part" ] || timeout 200 "$BIN" partition --dataset "$S2" --parts 2 --method multilevel --cache "$SC2" >> "$OUT/partition.jsonl" 2>> "$LOG"
step "SBM 2M: one GPU"
timeout 150 "$BIN" bench-train --backend cuda --dataset "$S2" --models sage --nonlins relu --precisions f32,mixedf16 --epochs 5 --warmup 2 \
  --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1 || echo "FAILED: SBM 2M one GPU" | tee -a "$LOG"
for links in $LINKS; do
step "SBM 2M: two GPUs, split halo layout, device links $links"
timeout 150 "$BIN" bench-train --backend cuda --dataset "$S2" --models sage --nonlins relu --precisions f32,mixedf16 --epochs 5 --warmup 2 \
  --devices 0,1 --halo-layout split --device-links $links --partition-cache "$SC2-2.part" --out "$RES" --device-name "$DEV" \
  >> "$LOG" 2>&1 || echo "FAILED: SBM 2M two GPUs $links" | tee -a "$LOG"
done
fi
if [[ " $STAGES " == *" profile "* ]]; then
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p /tmp/sgnn-prof
RUNS_PROF=("whole 1" "parts-one-gpu 1 --parts 2 --halo-layout split --partition-cache $CACHE-2.part"
  "two-gpus 2 --devices 0,1 --halo-layout split --partition-cache $CACHE-2.part")
[ "$NG" -ge 4 ] && RUNS_PROF+=("four-gpus 4 --devices 0,1,2,3 --halo-layout split --partition-cache $CACHE-4.part")
for run in "${RUNS_PROF[@]}"; do
  set -- $run
  name=$1 ndev=$2; shift 2
  step "profile: $name"
  # profile_summary.py reads the last epoch (the first ones after the warm-up run slower kernels)
  ( cd /tmp/sgnn-prof && printf '[profiling]\nlogger = { level = "basic", file = "%s" }\n' "$OUT/profile-$name.log" > cubecl.toml && \
    timeout 150 "$BIN" bench-train --backend cuda --dataset "$P" --models sage --nonlins relu --precisions mixedf16 --epochs 2 --warmup 1 \
      "$@" --out /tmp/sgnn-prof/ignored.jsonl --device-name "$DEV" ) >> "$LOG" 2>&1
  python3 "$HERE/profile_summary.py" "$OUT/profile-$name.log" --devices "$ndev" --markdown > "$OUT/profile-$name.md" 2>&1
done
fi
if [[ " $STAGES " == *" link "* ]]; then
L=(--dataset "$P" --task link --models sage --nonlins relu --layers 2 --hidden 128 --embedding 64 --precisions f32,mixedf16 --epochs 5 --warmup 2)
step "link prediction: one GPU"
timeout 300 "$BIN" bench-train --backend cuda "${L[@]}" --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1 || echo "FAILED: link one GPU" | tee -a "$LOG"
step "link prediction: the encoder on two GPUs"
timeout 300 "$BIN" bench-train --backend cuda "${L[@]}" --devices 0,1 --halo-layout split --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1 \
  || echo "FAILED: link two GPUs" | tee -a "$LOG"
fi
# the GPU counts of the strong and weak stages: 1, 2, 4, 8 up to the host's
COUNTS=$(for c in 1 2 4 8; do [ "$c" -le "$NG" ] && echo $c; done)
devs() { seq -s, 0 $(($1 - 1)); }
if [[ " $STAGES " == *" strong "* ]]; then
# products-scale SAGE 4x256, f32 and mixed f16, on 1, 2, 4 (and 8) GPUs, split halo layout
for c in $COUNTS; do
  if [ "$c" = 1 ]; then
    step "strong scaling: products on one GPU"
    timeout 150 "$BIN" bench-train --backend cuda --dataset "$P" --models sage --nonlins relu --precisions f32,mixedf16 --epochs 5 --warmup 2 \
      --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1 || echo "FAILED: strong 1" | tee -a "$LOG"
    continue
  fi
  for links in $LINKS; do
    step "strong scaling: products on $c GPUs, device links $links"
    timeout 200 "$BIN" bench-train --backend cuda --dataset "$P" --models sage --nonlins relu --precisions f32,mixedf16 --epochs 5 --warmup 2 \
      --devices "$(devs $c)" --halo-layout split --device-links $links --partition-cache "$CACHE-$c.part" --out "$RES" \
      --device-name "$DEV" >> "$LOG" 2>&1 || echo "FAILED: strong $c $links" | tee -a "$LOG"
  done
done
fi
if [[ " $STAGES " == *" weak "* ]]; then
# an R-MAT graph of WEAK_NODES x P nodes and WEAK_EDGES x P edges (default the products scale
# per GPU) on P GPUs, SAGE 4x256, f32 and mixed f16, split halo layout
WEAK_NODES=${WEAK_NODES:-2449029}
WEAK_EDGES=${WEAK_EDGES:-123718280}
for c in $COUNTS; do
  W=/tmp/rmat-weak-$c
  if [ "$c" = 1 ] && [ "$WEAK_NODES" = 2449029 ] && [ "$WEAK_EDGES" = 123718280 ]; then
    # the products-scale graph: its one-GPU epoch is the strong stage's where that ran
    [[ " $STAGES " == *" strong "* ]] && continue
    W=$P
  fi
  step "weak scaling: R-MAT of $((WEAK_NODES * c)) nodes on $c GPUs"
  [ -d "$W" ] || timeout 300 "$BIN" gen rmat --nodes $((WEAK_NODES * c)) --edges $((WEAK_EDGES * c)) --features 100 --classes 47 --out "$W" >> "$LOG" 2>&1
  if [ "$c" = 1 ]; then
    timeout 200 "$BIN" bench-train --backend cuda --dataset "$W" --models sage --nonlins relu --precisions f32,mixedf16 --epochs 5 --warmup 2 \
      --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1 || echo "FAILED: weak 1" | tee -a "$LOG"
  else
    timeout 400 "$BIN" bench-train --backend cuda --dataset "$W" --models sage --nonlins relu --precisions f32,mixedf16 --epochs 5 --warmup 2 \
      --devices "$(devs $c)" --halo-layout split --device-links "${LINKS%% *}" --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1 \
      || echo "FAILED: weak $c" | tee -a "$LOG"
  fi
done
fi
step done
# one line per epoch record so far: devices, precision, layout, median epoch, exchange
[ -f "$RES" ] && python3 - "$RES" <<'PY' | tee -a "$LOG"
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("op") != "train_epoch":
        continue
    p = r.get("partition") or {}
    print("devices", r.get("devices", 1), r.get("dtype"), "width", r.get("width"), "layout", p.get("halo_layout"),
          "sampling", p.get("boundary_sampling"), "median_ms", round(r["median_ms"], 1), "p90", round(r.get("p90_ms", 0), 1),
          "GB/epoch", round(p.get("exchanged_bytes_per_epoch", 0) / 1e9, 2),
          "exchange GB/s", round(p.get("exchange_gbps_dense_f32", 0), 1), p.get("exchange_path", ""))
PY
