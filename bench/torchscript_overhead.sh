#!/usr/bin/env bash
# What a TorchScript module costs against the built-in model it scripts, and what generic op taps cost
# against named ones: the seed study's autoencoder (784-256-64-256-784) trained built in and as
# examples/models/autoencoder.py's module, each without probes and with op taps every 100 steps,
# repeated alternately. Times are the training loop's own (the manifest's timings.train_s: start-up,
# loading and the final evaluation excluded; the taps' time included). Prints a Markdown table: ms per step min /
# median / max over the repeats and each variant's median over the built-in's without probes.
#   bench/torchscript_overhead.sh OUT_DIR [DEVICE [STEPS [BATCH [REPEATS]]]]   (cpu 1000 64 5)
# $TAPS is the taps' probe spec (default ops:every=100,k=8: ten times the default cadence, ops:every=1000).
# $SADDLESCOPE names the binary (default ./build/saddlescope); $PYTHON the Python with torch that scripts
# the module (default python3). The MNIST cache must be in data/.
set -euo pipefail
out=${1:?usage: torchscript_overhead.sh OUT_DIR [DEVICE [STEPS [BATCH [REPEATS]]]]}
device=${2:-cpu} steps=${3:-1000} batch=${4:-64} repeats=${5:-5}
s=${SADDLESCOPE:-./build/saddlescope}
mkdir -p "$out"
"${PYTHON:-python3}" examples/models/autoencoder.py --out "$out/autoencoder.pt"
common=(--data mnist --device "$device" --threads 1 --steps "$steps" --batch-size "$batch" --lr 1e-3 --log-every 100
        --snapshot-every 0 --force --out "$out/runs")
declare -A args=(
  [built-in]="--model autoencoder --hidden 256,64"
  [torchscript]="--model torchscript --model-file $out/autoencoder.pt"
  [built-in+taps]="--model autoencoder --hidden 256,64 --probe ${TAPS:-ops:every=100,k=8}"
  [torchscript+taps]="--model torchscript --model-file $out/autoencoder.pt --probe ${TAPS:-ops:every=100,k=8}")
order=(built-in torchscript built-in+taps torchscript+taps)
declare -A times
for ((r = 0; r < repeats; r++)); do
  for v in "${order[@]}"; do
    read -r -a a <<< "${args[$v]}"
    run=$("$s" train "${a[@]}" "${common[@]}" | sed -n 's/^run  *//p')
    times[$v]+="$(python3 -c '
import json, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
assert m["status"] == "completed", m["status"]
print(1e3 * m["timings"]["train_s"] / m["config"]["steps"])' "$run") "
  done
done
echo "| variant | ms per step: min / median / max | median / built-in's |"
echo "|---|---|---|"
python3 - <<PY
import statistics
order = "${order[*]}".split()
times = {$(for v in "${order[@]}"; do printf '"%s": [%s], ' "$v" "$(echo ${times[$v]} | tr ' ' ',')"; done)}
base = statistics.median(times["built-in"])
for v in order:
    t = sorted(times[v])
    print(f"| {v} | {t[0]:.3f} / {statistics.median(t):.3f} / {t[-1]:.3f} | {statistics.median(t) / base:.3f} |")
PY
