#!/usr/bin/env bash
# The first-divergent-op checks that run on a CPU (issue 40), on the dev VM, from the project's root:
#   bash docs/results/first-divergent-op/dev-vm-cpu/run.sh SADDLESCOPE OUT_DIR > diverge.txt
set -u
S=${1:-saddlescope}; O=${2:-/tmp/fdo/out}; rm -rf $O; mkdir -p $O
P="--model prednet --data moving-mnist --canvas 32 --prednet-stacks 1,8,16,32 --prednet-loss pixel_mse --nt 10 --batch-size 4 --lr 3e-3 --steps 4 --eval-sequences 8"
A="--model autoencoder --data mnist --batch-size 64 --steps 3"
/usr/bin/python3 examples/models/autoencoder.py --out $O/ae.pt > /dev/null
T="--model torchscript --model-file $O/ae.pt --data mnist --batch-size 64 --steps 6"
one() { ls -d $O/$1/runs/*/ | head -1; }
for r in "pn-t1 $P --threads 1 --probe ophash" "pn-t1b $P --threads 1 --probe ophash" "pn-t2 $P --threads 2 --probe ophash" \
         "pn-fused $P --threads 1 --kernels fused --probe ophash" "ae-t1 $A --threads 1" "ae-t2 $A --threads 2" \
         "ts-t1 $T --threads 1" "ts-t1b $T --threads 1" "ts-fault $T --threads 1 --fault alias-target" "ts-t2 $T --threads 2"; do
  set -- $r; n=$1; shift
  $S train "$@" --out $O/$n > $O/$n.log 2>&1 || { echo "train $n failed"; tail -3 $O/$n.log; }
done
for p in "pn-t1 pn-t1b" "pn-t1 pn-t2" "pn-t1 pn-fused" "ae-t1 ae-t2" "ts-t1 ts-t1b" "ts-t1 ts-fault" "ts-t1 ts-t2"; do
  set -- $p; echo "== diverge $1 $2"
  $S diverge $(one $1) $(one $2) --json $O/$1-$2.json | tail -3
done
