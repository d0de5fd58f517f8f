#!/usr/bin/env bash
# The per-op rounding-error tables of docs/rounding.md: short runs of the MNIST autoencoder and of
# default-size PredNet on Moving MNIST with op taps on (forward and weight-gradient elements measured
# against the exact values of reference/), on the CPU and on CUDA with cuDNN on/off and TF32 on/off.
#   scripts/rounding.sh OUT_DIR [cpu|both]
# Writes OUT_DIR/<model>/<config>/runs/<id>/ (ops.csv; `saddlescope ops` summarises it), OUT_DIR/fingerprint.json and
# OUT_DIR/rounding.md (also printed): per model, one column per config, each cell
# "median / max |ULP error| (share of samples beyond the a-priori bound)". Needs MNIST in the data cache.
# About 2 minutes on the H200 host (16 cores; estimated, not yet run there). `cpu` alone on the shared
# 2-core dev VM: 49 s when it was quiet, 8 min under load (two threads spin against other processes).
set -euo pipefail
out=${1:?usage: rounding.sh OUT_DIR [cpu|both]}
which=${2:-both}
bin=${SADDLESCOPE:-./build/saddlescope}
cores=$(nproc)

# Autoencoder: batch 64 as in docs/determinism.md, 100 steps, 16 elements per op at every 10th step.
ae="--model autoencoder --data mnist --seed 7 --batch-size 64 --lr 1e-3 --steps 100 --snapshot-every 0
    --probe ops:every=10,k=16"
# PredNet (stacks 1,32,64,128, 64x64, 10 frames): batch 4, 20 steps, 8 elements per op at every other
# step (l0.conv_ahat has 9 weights, so k <= 9 with weight-gradient taps). The seed study's pixel loss:
# with L0 at lr 1e-3 every gradient is exactly 0 from step 1 on (a dead Â_0), and the weight-gradient
# taps would measure zeros; pixel_mse keeps them alive and is tapped itself, as `loss`.
pn="--model prednet --data moving-mnist --seed 3 --batch-size 4 --steps 20 --eval-sequences 8 --snapshot-every 0
    --prednet-loss pixel_mse --probe ops:every=2,k=8"

# TF32 off means both switches off: LibTorch's default has TF32 on for cuDNN convolutions.
tf32_off="--tf32-matmul false --tf32-cudnn false"
tf32_on="--tf32-matmul true --tf32-cudnn true"
configs=("cpu|--device cpu --threads $cores")
if [ "$which" != cpu ]; then
  configs+=("cuda|--device cuda --threads 1 $tf32_off"
            "cuda-nocudnn|--device cuda --threads 1 --cudnn false $tf32_off"
            "cuda-tf32|--device cuda --threads 1 $tf32_on"
            "cuda-nocudnn-tf32|--device cuda --threads 1 --cudnn false $tf32_on")
fi

mkdir -p "$out"
$bin env > "$out/fingerprint.json"
# The fields the document names, from the top-level section of the pretty-printed JSON.
pick() {
  sed -n "/^  \"$1\": {/,/^  }/p" "$out/fingerprint.json" | grep -o "\"$2\": *[^,}]*" | head -1 |
    sed 's/.*: *//; s/"//g' || true
}
gpu="no GPU"
[ "$which" != cpu ] && gpu="GPU $(pick gpu name) (driver $(pick gpu driver), CUDA runtime $(pick gpu runtime_cuda), \
cuDNN $(pick gpu cudnn))"
fingerprint="$gpu; LibTorch $(pick libtorch version); CPU $(pick cpu model), $cores cores; \
BLAS $(pick blas name); $(grep -o '"compiler": *"[^"]*"' "$out/fingerprint.json" | sed 's/.*: *//; s/"//g'); \
toolkit commit $(pick toolkit commit)"

doc="# Op taps: measured rounding errors ($(date -u +%Y-%m-%d))

$fingerprint

Cells: median / max |ULP error| of the sampled elements (ULPs of the exact value in the data's dtype,
float32), and in parentheses the share of samples beyond the a-priori bound γ_n·Σ|aᵢbᵢ| (activations:
4 ULP). fwd = output elements, wgrad = weight-gradient elements (every frame's contribution for PredNet).
"
for model in autoencoder prednet; do
  flags=$ae
  [ $model = prednet ] && flags=$pn
  labels=()
  runs=()
  for c in "${configs[@]}"; do
    name=${c%%|*}
    rm -rf "${out:?}/$model/$name"
    start=$SECONDS
    # shellcheck disable=SC2086
    if ! log=$($bin train $flags ${c#*|} --out "$out/$model/$name" --force 2>&1); then
      echo "$model $name failed: $log" >&2
      continue
    fi
    echo "$model $name: $((SECONDS - start)) s" >&2
    labels+=("$name")
    runs+=("$(ls -d "$out/$model/$name/runs/"*)")
  done
  [ ${#runs[@]} -eq 0 ] && continue
  table=$($bin ops --labels "$(IFS=,; echo "${labels[*]}")" "${runs[@]}")
  [ ${#runs[@]} -eq 1 ] && table=$($bin ops "${runs[0]}")  # one run: the full per-op table
  doc+="
## $model ($( [ $model = prednet ] && echo "stacks 1,32,64,128, Moving MNIST 64x64, 10 frames, pixel_mse, batch 4, 20 steps, k=8 every 2nd step" \
  || echo "784-256-64-256-784, MNIST, batch 64, 100 steps, k=16 every 10th step"))

$table
"
done
echo "$doc" | tee "$out/rounding.md"
