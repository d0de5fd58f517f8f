#!/usr/bin/env bash
# The determinism tables of docs/determinism.md: for each execution config, is it bitwise
# reproducible run to run (and if not, from which step), and how far is it after N steps from the
# CPU 1-thread run and from a float64 reference, all from bit-identical initial weights.
#   scripts/determinism.sh OUT_DIR [STEPS] [cpu|cuda|both] [autoencoder|prednet]
# autoencoder: MNIST, batch 64. prednet: default size on Moving MNIST, batch 1 (the seed study's).
# Prints a Markdown table (and writes OUT_DIR/table.md). Needs MNIST in the data cache.
set -euo pipefail
out=${1:?usage: determinism.sh OUT_DIR [STEPS] [cpu|cuda|both] [autoencoder|prednet]}
steps=${2:-2000}
which=${3:-both}
model=${4:-autoencoder}
bin=${SADDLESCOPE:-./build/saddlescope}
case $model in
  autoencoder) common="--model autoencoder --data mnist --seed 7 --batch-size 64 --lr 1e-3 --steps $steps --snapshot-every 100" ;;
  prednet) common="--model prednet --data moving-mnist --eval-sequences 64 --seed 3 --batch-size 1 --lr 1e-3 --steps $steps --snapshot-every $(( (steps + 1) / 2 ))" ;;
  *) echo "determinism.sh: model must be autoencoder or prednet, got '$model'" >&2; exit 2 ;;
esac
cores=$(nproc)

configs=("cpu-1thread|--device cpu --threads 1" "cpu-${cores}threads|--device cpu --threads $cores")
if [ "$which" != cpu ]; then
  configs+=("cuda|--device cuda --threads 1"
            "cuda-nocudnn|--device cuda --threads 1 --cudnn false"
            "cuda-deterministic|--device cuda --threads 1 --deterministic strict"
            "cuda-tf32|--device cuda --threads 1 --tf32-matmul true"
            "cuda-deterministic-tf32|--device cuda --threads 1 --deterministic strict --tf32-matmul true")
  # PredNet's convolutions are where cuDNN and its TF32 matter; and CUDA graphs must not change bits.
  [ "$model" = prednet ] && configs+=("cuda-tf32-cudnn-off|--device cuda --threads 1 --tf32-cudnn false"
                                      "cuda-eager|--device cuda --threads 1 --cuda-graph false")
fi
[ "$which" = cuda ] && configs=("${configs[@]:2}") && configs=("cpu-1thread|--device cpu --threads 1" "${configs[@]}")

# The float64 CPU run: the trajectory-level high-precision reference.
rm -rf "$out/float64"
$bin train $common --device cpu --threads "$cores" --dtype float64 --out "$out/float64" --force >/dev/null
ref64=$(ls -d "$out"/float64/runs/*)

run_of() { ls -d "$out/$1/repeat-1/runs/"*; }
field() { grep -o "\"$2\": [^,}]*" "$1/manifest.json" | head -1 | sed 's/.*: //' || true; }
# rel_l2 and max_ulp_distance at the last common snapshot, and the first differing loss step:
# "rel ulp first". The per-snapshot table's columns are found by name in its header.
distance() {
  local d csv
  csv=$(mktemp)
  d=$($bin diverge "$1" "$2" --csv "$csv")
  local last
  last=$(awk -F, 'NR==1 {for (i=1;i<=NF;i++) c[$i]=i; next} {l=$(c["rel_l2"]) " " $(c["max_ulp_distance"])} END {print l}' "$csv")
  rm -f "$csv"
  local first
  first=$(echo "$d" | grep -o 'losses first differ at step [0-9]*' | grep -o '[0-9]*$' || true)
  echo "$last ${first:--}"
}

table="| config | bitwise reproducible (2 runs) | first differing step | vs cpu-1thread after $steps steps: rel L2, max ULP, first differing step | vs float64: rel L2 | final loss | test MSE | steps/s |
|---|---|---|---|---|---|---|---|"
for c in "${configs[@]}"; do
  name=${c%%|*}
  flags=${c#*|}
  rm -rf "${out:?}/$name"
  log=$($bin repeatability --repeats 2 $common $flags --out "$out/$name" 2>&1) || { echo "$name failed: $log" >&2; continue; }
  verdict=$(echo "$log" | grep -o 'bitwise reproducible: [a-z]*' | sed 's/.*: //')
  first=$(echo "$log" | grep -o 'losses from step [0-9-]*' | head -1 | sed 's/.* //' || true)
  run=$(run_of "$name")
  read -r rel ulp dfirst <<<"$(distance "$(run_of cpu-1thread)" "$run")"
  read -r rel64 _ _ <<<"$(distance "$ref64" "$run")"
  table+="
| $name | $verdict | ${first:--} | $(printf '%.3g, %.0f, %s' "$rel" "$ulp" "$dfirst") | $(printf %.3g "$rel64") \
| $(printf %.6f "$(field "$run" final_loss)") | $(printf %.6f "$(field "$run" mse)") \
| $(printf %.0f "$(field "$run" steps_per_s)") |"
done
echo "$table" | tee "$out/table.md"
