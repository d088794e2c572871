#!/usr/bin/env bash
# Run-to-run determinism and resume on one CUDA GPU (repository root):
#   bench/resume_determinism.sh <train-app binary> <out dir> <coauthor_cs npy folder>
# 1. coauthor_cs SAGE 2x256, 12 epochs, one seed, trained twice on one GPU (w), three times as
#    two processes (p), twice as 2 parts in one process (q), twice as two processes without
#    dropout (d): prints how many per-epoch values differ between runs;
# 2. for --parts 2 and --processes 2: 20 epochs, against 10 epochs then --resume 10 to 20: the
#    largest per-epoch difference, and the median epoch with and without checkpoints;
# 3. --devices past the GPUs the backend sees (train and bench-train): the error.
set -u
BIN=${1:-/tmp/ta}
O=${2:-${OUT:-/tmp/out}}
CS=${3:-.carry/coauthor_cs}
mkdir -p $O
LOG=$O/resume.log
export NCCL_NVLS_ENABLE=0
M="--backend cuda --dataset $CS --model sage --layers 2 --hidden 256 --seed 3 --log-every 0 --epochs 12"
for i in 1 2 3; do $BIN train $M --processes 2 --out /tmp/p$i > /tmp/p$i.log 2>&1; cp /tmp/p$i/results.json $O/p$i.json; done
for i in 1 2; do SGNN_PLAIN_LOG=1 $BIN train $M --out /tmp/w$i > /tmp/w$i.log 2>&1; cp /tmp/w$i/results.json $O/w$i.json; done
for i in 1 2; do $BIN train $M --parts 2 --out /tmp/q$i > /tmp/q$i.log 2>&1; cp /tmp/q$i/results.json $O/q$i.json; done
$BIN train $M --processes 2 --dropout 0 --out /tmp/d1 > /dev/null 2>&1; cp /tmp/d1/results.json $O/d1.json
$BIN train $M --processes 2 --dropout 0 --out /tmp/d2 > /dev/null 2>&1; cp /tmp/d2/results.json $O/d2.json
python3 - $O <<'PY'
import json, sys
o = sys.argv[1]
keys = ["train_loss", "valid_loss", "train_accuracy", "valid_accuracy", "test_accuracy"]
def cmp(x, y):
    a, b = (json.load(open(f"{o}/{n}.json"))["epochs"] for n in (x, y))
    d = [(e["epoch"], k, e[k], f[k]) for e, f in zip(a, b) for k in keys if k in e and e[k] != f[k]]
    print(x, y, len(d), "differ; first:", d[:4])
cmp("w1", "w2"); cmp("p1", "p2"); cmp("p1", "p3"); cmp("q1", "q2"); cmp("p1", "q1"); cmp("d1", "d2")
PY
grep -h "halo rows move" /tmp/p1.log
$BIN --version | tee -a $LOG
nvidia-smi -L | tee -a $LOG
M="--backend cuda --dataset $CS --model sage --layers 2 --hidden 256 --seed 3 --log-every 0"
for S in "--parts 2" "--processes 2"; do
  n=$(echo $S | tr -d ' -')
  echo "== $S $(date +%T)" | tee -a $LOG
  ( time $BIN train $M $S --epochs 20 --out $O/$n-whole ) >> $LOG 2>&1
  $BIN train $M $S --epochs 10 --out $O/$n-cut >> $LOG 2>&1
  ls $O/$n-cut/checkpoint | tr '\n' ' ' | tee -a $LOG; echo | tee -a $LOG
  ( time $BIN train --backend cuda --out $O/$n-cut --resume 10 --epochs 20 $S ) >> $LOG 2>&1
  $BIN train $M $S --epochs 20 --out $O/$n-nock --checkpoints false >> $LOG 2>&1
  python3 - $O/$n-whole $O/$n-cut $O/$n-nock <<'PY' | tee -a $LOG
import json, sys
a, b, c = (json.load(open(d + "/results.json")) for d in sys.argv[1:4])
ea, eb = a["epochs"], b["epochs"]
keys = ["train_loss", "valid_loss", "train_accuracy", "valid_accuracy", "test_accuracy"]
diff = max(abs(x[k] - y[k]) for x, y in zip(ea, eb) for k in keys)
print("epochs", len(ea), len(eb), "resumed_from", b["resumed_from"], "largest difference", diff)
print("final", a["final_accuracy"], b["final_accuracy"])
print("seconds per epoch (median) with checkpoints", sorted(e["seconds"] for e in ea)[len(ea)//2],
      "without", sorted(e["seconds"] for e in c["epochs"])[len(c["epochs"])//2])
PY
done
echo "== devices past the GPUs" | tee -a $LOG
$BIN train $M --devices 0,1 --epochs 1 --out $O/bad 2>&1 | tail -2 | tee -a $LOG
$BIN bench-train --backend cuda --dataset $CS --models sage --devices 0,3 --epochs 1 2>&1 | tail -2 | tee -a $LOG
echo "== done $(date +%T)" | tee -a $LOG
