#!/usr/bin/env bash
# The symmetric-saddle showcase on the MNIST autoencoder: every hidden unit starts as an exact copy of
# the first (init = duplicate). Deterministic arithmetic keeps the copies identical forever; anything
# that breaks the symmetry (nondeterministic reductions, noise) lets training escape. For each config:
# the first probe step at which the first layer's units are no longer all identical, the smallest
# relative distance between two units at the end, λmin at the first probe steps, and the test MSE.
#   scripts/symmetric_saddle.sh OUT_DIR [STEPS] [cpu|both]
set -euo pipefail
out=${1:?usage: symmetric_saddle.sh OUT_DIR [STEPS] [cpu|both]}
steps=${2:-3000}
which=${3:-both}
bin=${SADDLESCOPE:-./build/saddlescope}
common="--model autoencoder --data mnist --init duplicate --seed 7 --batch-size 64 --lr 1e-3 --steps $steps
        --probe symmetry:every=250 --probe curvature:every=1000,batch=256"
configs=("cpu-1thread|--device cpu --threads 1"
         "cpu-gaussian-1e-7|--device cpu --threads 1 --perturbation gaussian:1e-7")
if [ "$which" != cpu ]; then
  configs+=("cuda|--device cuda --threads 1"
            "cuda-deterministic|--device cuda --threads 1 --deterministic strict"
            "cuda-tf32|--device cuda --threads 1 --tf32-matmul true")
fi
echo "| config | encoder.fc1 units all identical until | min relative distance at the end | λmin at step 0, 1000, 2000 | test MSE (baseline) |"
echo "|---|---|---|---|---|"
for c in "${configs[@]}"; do
  name=${c%%|*}
  rm -rf "${out:?}/$name"
  mkdir -p "$out"
  $bin train $common ${c#*|} --out "$out/$name" >/dev/null 2>"$out/$name.err" || { echo "| $name | failed: $(cat "$out/$name.err") |"; continue; }
  run=$(ls -d "$out/$name/runs/"*)
  # Columns by name, through the run store's reader (the order below is the order asked for).
  sym=$($bin store select "$run" symmetry step layer units identical_pairs min_relative_distance)
  broken=$(echo "$sym" | awk -F, '$2=="encoder.fc1" && $4 != ($3*($3-1)/2) {print $1; exit}')
  last=$(echo "$sym" | awk -F, '$2=="encoder.fc1" {d=$5} END {print d}')
  lmin=$($bin store select "$run" curvature lambda_min | awk 'NR>1 {printf "%s%.3g", (NR>2?", ":""), $1}')
  mse=$(grep -o '"mse": [^,}]*' "$run/manifest.json" | sed 's/.*: //')
  base=$(grep -o '"baseline_mse": [^,}]*' "$run/manifest.json" | sed 's/.*: //')
  echo "| $name | $([ -n "$broken" ] && echo "step < $broken" || echo "the end ($steps steps)") | $(printf %.3g "$last") | $lmin | $(printf '%.5f (%.5f)' "$mse" "$base") |"
done
