#!/usr/bin/env bash
# The batch-invariance table (docs/results/batch-invariance/): `saddlescope invariance` on the seed
# study's autoencoder, its PredNet and the transformer example, under every execution config of DEVICE,
# one JSON per (model, config) in OUT, then OUT/table.md (saddlescope invariance-table).
#   scripts/batch-invariance.sh cpu|cuda OUT [MODELS...]     MODELS: autoencoder prednet transformer
# $SADDLESCOPE names the binary (default ./build/saddlescope); $PYTHON the Python with torch that
# scripts the transformer (default python3). The MNIST cache must be in data/ (saddlescope data fetch).
set -euo pipefail
cd "$(dirname "$0")/.."
device=${1:?usage: scripts/batch-invariance.sh cpu|cuda OUT [MODELS...]}
out=${2:?usage: scripts/batch-invariance.sh cpu|cuda OUT [MODELS...]}
shift 2
models=${*:-autoencoder prednet transformer}
s=${SADDLESCOPE:-./build/saddlescope}
py=${PYTHON:-python3}
mkdir -p "$out"
"$s" env > "$out/env-$device.txt"
case $device in
  cpu) configs=("t1:--threads 1" "tall:--threads $(nproc)") ;;
  cuda) configs=("default:"
                 "tf32:--tf32-matmul true"
                 "notf32:--tf32-cudnn false"
                 "nocudnn:--cudnn false"
                 "cudnn-det:--cudnn-deterministic true"
                 "det:--deterministic strict") ;;
  *) echo "batch-invariance.sh: device must be cpu or cuda, got '$device'" >&2; exit 2 ;;
esac
"$py" examples/models/transformer.py --out "$out/transformer.pt"
for model in $models; do
  case $model in
    autoencoder) args=(--model autoencoder --hidden 256,64 --data mnist) ;;
    prednet) args=(--model prednet --data moving-mnist --canvas 32 --prednet-stacks 1,8,16,32 --nt 10
                   --eval-sequences 136) ;;
    transformer) args=(--model torchscript --model-file "$out/transformer.pt" --loss cross_entropy --data mnist) ;;
    *) echo "batch-invariance.sh: unknown model '$model'" >&2; exit 2 ;;
  esac
  for c in "${configs[@]}"; do
    name=${c%%:*}
    read -r -a extra <<< "${c#*:}"
    echo "== $model $device $name"
    "$s" invariance "${args[@]}" --device "$device" "${extra[@]}" --backward \
      --json "$out/$model-$device-$name.json" > "$out/$model-$device-$name.txt"
    tail -1 "$out/$model-$device-$name.txt"
  done
done
rm -f "$out/table.json"
"$s" invariance-table --json "$out/table.json" "$out"/*-*-*.json > "$out/table.md"
cat "$out/table.md"
