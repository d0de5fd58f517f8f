#!/usr/bin/env bash
# The first-divergent-op checks that run on a CPU (issue 40), on the dev VM.
set -u
S=/tmp/fdo/s; O=/tmp/fdo/out; mkdir -p $O
export SADDLESCOPE_DATA_DIR=/work/main/data
P="--model prednet --data moving-mnist --canvas 32 --prednet-stacks 1,8,16,32 --prednet-loss pixel_mse --nt 10 --batch-size 4 --lr 3e-3 --steps 4 --eval-sequences 8"
/usr/bin/python3 examples/models/autoencoder.py --out $O/ae.pt > /dev/null
T="--model torchscript --model-file $O/ae.pt --data mnist --batch-size 64 --steps 6"
one() { ls -d $O/$1/runs/*/ | head -1; }
for r in "ts-t1 $T --threads 1" "ts-t1b $T --threads 1" "ts-fault $T --threads 1 --fault alias-target" "ts-t2 $T --threads 2"; do
  set -- $r; n=$1; shift
  $S train "$@" --out $O/$n > $O/$n.log 2>&1 || { echo "train $n failed"; tail -3 $O/$n.log; }
done
for p in "ts-t1 ts-t1b" "ts-t1 ts-fault" "ts-t1 ts-t2"; do
  set -- $p; echo "== diverge $1 $2"
  $S diverge $(one $1) $(one $2) --json $O/$1-$2.json | tail -3
done
