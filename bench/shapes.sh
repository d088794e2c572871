#!/usr/bin/env bash
# Kernel-shape decisions measured at three graph scales (GPU machine, repository root):
#   bench/shapes.sh <train-app binary> <out dir> [graphs] [parts]
# graphs (comma-separated, default all): reddit, proteins, products (R-MAT graphs of those sizes,
# generated into /tmp and kept there for later calls on the same machine).
# parts (comma-separated, default all): split (SpMM with and without the hot-column split),
# groups (edge-group widths), tiles (feature-tile L2 budget), pools (training epochs with exact-size
# and pooled device memory).
# Every line goes to <out dir>/shapes.jsonl in the results format of bench/README.md; the
# `tuning` field says which shape ran. `burn-sparse-gnn`'s heuristic tests read these records.
set -u
BIN=${1:-.carry/train-app}
OUT=${2:-${OUT:-/tmp/sgnn-out}}
GRAPHS=${3:-reddit,proteins,products}
PARTS=${4:-split,groups,tiles,pools}
mkdir -p "$OUT"
RES="$OUT/shapes.jsonl"
LOG="$OUT/shapes.log"
DEV="NVIDIA H200"
has() { [[ ",$2," == *",$1,"* ]]; }
step() { echo "== $1 ($(date +%T))" | tee -a "$LOG"; }
gen() { # name nodes edges features classes
  [ -d "/tmp/$1" ] && return
  step "gen $1"
  timeout 200 "$BIN" gen rmat --nodes "$2" --edges "$3" --features "$4" --classes "$5" --out "/tmp/$1" >> "$LOG" 2>&1
}
bench() { # graph, then bench flags
  local g=$1
  shift
  timeout 150 "$BIN" bench --backend cuda --graph "/tmp/$g" --ops spmm --out "$RES" --device-name "$DEV" "$@" >> "$LOG" 2>&1 \
    || echo "FAILED: bench $g $*" | tee -a "$LOG"
}
for g in ${GRAPHS//,/ }; do
  case $g in
    reddit) gen reddit 232965 129362596 602 41 ;;
    proteins) gen proteins 132534 79122504 8 112 ;;
    products) gen products 2449029 123718280 100 47 ;;
  esac
  # the heuristics' picks, then one choice changed at a time
  if has split "$PARTS"; then
    step "$g: split"
    bench "$g" --widths 32,64,128,256 --dtypes f32,f16
    bench "$g" --widths 32,64,128,256 --dtypes f32 --hot-cols 0
    bench "$g" --widths 32,64,128,256 --dtypes f32 --hot-cols 1792
  fi
  if has groups "$PARTS"; then
    step "$g: group widths"
    for gw in 64 128 256 512; do
      bench "$g" --widths 64,256 --dtypes f32,f16 --hot-cols 0 --group-width $gw
    done
  fi
  if has tiles "$PARTS"; then
    step "$g: feature tiles"
    for tile in 16 32 64 128 256; do
      bench "$g" --widths 64,256 --dtypes f32,f16 --hot-cols 0 --spmm-tile $tile
    done
  fi
  if has pools "$PARTS" && [ "$g" != proteins ]; then
    step "$g: memory pools"
    for pools in exact pooled; do
      for p in f32 mixedf16; do
        timeout 200 "$BIN" bench-train --memory-pools $pools --backend cuda --dataset "/tmp/$g" --models sage --nonlins relu \
          --precisions $p --epochs 5 --warmup 2 --out "$RES" --device-name "$DEV" >> "$LOG" 2>&1 \
          || echo "FAILED: bench-train $g $pools $p" | tee -a "$LOG"
      done
    done
  fi
done
step done
grep -c . "$RES" | tee -a "$LOG"
