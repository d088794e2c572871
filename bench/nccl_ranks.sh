#!/usr/bin/env bash
# The NCCL row transport between processes, on a machine with one GPU (repository root):
#   bench/nccl_ranks.sh <train-app binary> <out dir> <coauthor_cs npy folder>
# NCCL refuses two ranks on one GPU of one host; NCCL_HOSTID set per rank makes each rank a
# host of its own, so the two ranks connect through NCCL's socket transport on loopback. The
# timings are those of two processes sharing one GPU over sockets (not of two GPUs); what the
# run shows is that the ranks train the model of 2 parts in one process (losses, accuracies),
# with the halo rows through NCCL: coauthor_cs SAGE 2x256 (ReLU and MaxK k = 32) and a
# 233k-node, 11.6M-edge R-MAT graph with SAGE 4x256. `train --processes 2` on the one GPU
# (transport auto) falls back to the host transport. Log: <out dir>/nccl-ranks.log.
set -u
BIN=${1:-.carry/train-app}
O=${2:-${OUT:-/tmp/sgnn-out}}
CS=${3:-.carry/coauthor_cs}
mkdir -p "$O"
LOG=$O/nccl-ranks.log
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee -a "$LOG"
"$BIN" --version | tee -a "$LOG"
show() { # the transport, losses, median epoch and per-epoch exchange of a run folder
  python3 - "$1" <<'PY' | tee -a "$LOG"
import json, sys, statistics
r = json.load(open(sys.argv[1] + "/results.json"))
e = r.get("epochs") or []
print("transport", r.get("partition", {}).get("transport"))
print("losses", [round(x["train_loss"], 6) for x in e][:3], "...", round(e[-1]["train_loss"], 6),
      "median epoch s", round(statistics.median(x["seconds"] for x in e[1:]), 4), "acc", r.get("final_accuracy"))
for x in e[:3] + e[-1:]:
    if "exchange" in x:
        print("epoch", x["epoch"], "s", round(x["seconds"], 4), {k: (round(v, 4) if isinstance(v, float) else v) for k, v in x["exchange"].items()})
PY
}
run() { # name, extra args: one command
  local name=$1; shift
  echo "== $name $(date +%T)" | tee -a "$LOG"
  ( time timeout 150 "$BIN" train --backend cuda --log-every 0 --out "$O/$name" "$@" ) >> "$LOG" 2>&1
  tail -n 6 "$LOG" | grep -E "accuracy|error|real|move" | tee /dev/null
  show "$O/$name"
}
ranks() { # name, extra args: two ranks started by hand, each a host of its own to NCCL
  local name=$1; shift
  echo "== $name $(date +%T)" | tee -a "$LOG"
  local port
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  for r in 0 1; do
    NCCL_HOSTID=rank$r NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 NCCL_DEBUG=WARN timeout 200 "$BIN" train --backend cuda \
      --log-every 0 --out "$O/$name" "$@" --rank $r --world 2 --rendezvous 127.0.0.1:$port --rank-transport nccl \
      > "$O/$name-rank$r.log" 2>&1 &
  done
  local t0
  t0=$(date +%s.%N)
  wait
  echo "both ranks done in $(python3 -c "print(round($(date +%s.%N) - $t0, 1))") s" | tee -a "$LOG"
  tail -n 8 "$O/$name-rank0.log" | tee -a "$LOG"
  tail -n 4 "$O/$name-rank1.log" | tee -a "$LOG"
  show "$O/$name"
}
M="--model sage --layers 2 --hidden 256 --epochs 30 --seed 7"
run cs-parts2 --dataset "$CS" $M --parts 2 --halo-layout joined
run cs-procs2-auto --dataset "$CS" $M --processes 2
ranks cs-nccl --dataset "$CS" $M
ranks cs-maxk-nccl --dataset "$CS" $M --nonlin maxk:32
run cs-maxk-parts2 --dataset "$CS" $M --nonlin maxk:32 --parts 2 --halo-layout joined
G=/tmp/rmat-mid
[ -d $G ] || timeout 60 "$BIN" gen rmat --nodes 232965 --edges 11606919 --features 100 --classes 41 --out $G >> "$LOG" 2>&1
M="--model sage --layers 4 --hidden 256 --epochs 6 --seed 7"
run mid-parts2 --dataset $G $M --parts 2 --halo-layout joined
ranks mid-nccl --dataset $G $M
echo "== done $(date +%T)" | tee -a "$LOG"
