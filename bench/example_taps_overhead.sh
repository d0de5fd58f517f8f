#!/usr/bin/env bash
# What generic op taps cost the two shipped examples (issue 35): examples/models/resnet.py on CIFAR-10 and
# examples/models/gpt.py on Moby Dick, trained STEPS steps without probes and with `--probe ops` at its
# default cadence (every 1000 steps: here only step 0 is a tap step), alternated REPEATS times. Prints a
# Markdown table: ms per unarmed step (the run without probes: the manifest's timings.train_s / steps)
# min / median / max, the seconds in a tap step's taps (timings.tap_s of the runs with taps), all the
# armed run added (its train_s less STEPS unarmed steps), and the larger of the two per 1000 steps — the
# overhead at the default cadence.
#   bench/example_taps_overhead.sh OUT_DIR [DEVICE [STEPS [REPEATS]]]   (cpu 20 3)
# $SADDLESCOPE names the binary (default ./build/saddlescope); $PYTHON the Python with torch that scripts
# the modules (default python3). CIFAR-10 and Moby Dick must be in $SADDLESCOPE_DATA_DIR or data/.
set -euo pipefail
out=${1:?usage: example_taps_overhead.sh OUT_DIR [DEVICE [STEPS [REPEATS]]]}
device=${2:-cpu} steps=${3:-20} repeats=${4:-3}
s=${SADDLESCOPE:-./build/saddlescope}
mkdir -p "$out"
"${PYTHON:-python3}" examples/models/resnet.py --out "$out/resnet.pt" > /dev/null
"${PYTHON:-python3}" examples/models/gpt.py --out "$out/gpt.pt" > /dev/null
common=(--device "$device" --threads 1 --steps "$steps" --log-every 1000 --snapshot-every 0 --force --out "$out/runs"
        --loss cross_entropy)
declare -A args=(
  [resnet]="--model torchscript --model-file $out/resnet.pt --data cifar10:train=10000 --batch-size 64"
  [gpt]="--model torchscript --model-file $out/gpt.pt --data moby-dick --batch-size 32 --lr 2e-3")
declare -A plain taps armed
for ((r = 0; r < repeats; r++)); do
  for m in resnet gpt; do
    read -r -a a <<< "${args[$m]}"
    for probe in "" "--probe ops"; do
      run=$("$s" train "${a[@]}" "${common[@]}" $probe | sed -n 's/^run  *//p')
      t=$(python3 -c '
import json, sys
m = json.load(open(sys.argv[1] + "/manifest.json"))
assert m["status"] == "completed", m["status"]
t = m["timings"]
print(str(t["tap_s"]) + ":" + str(t["train_s"]) if sys.argv[2] else 1e3 * t["train_s"] / m["config"]["steps"])' "$run" "$probe")
      if [ -n "$probe" ]; then taps[$m]+="${t%%:*} "; armed[$m]+="${t#*:} "; else plain[$m]+="$t "; fi
    done
  done
done
echo "| model | ms per unarmed step: min / median / max | a tap step's taps, s: min / median / max | the armed run's extra time, s (medians) | per 1000 steps (the default cadence) |"
echo "|---|---|---|---|---|"
for m in resnet gpt; do
  python3 - "$m" "${plain[$m]}" "${taps[$m]}" "${armed[$m]}" "$steps" <<'PY'
import statistics, sys
name, plain, taps = sys.argv[1], sorted(map(float, sys.argv[2].split())), sorted(map(float, sys.argv[3].split()))
armed, steps = statistics.median(map(float, sys.argv[4].split())), int(sys.argv[5])
step, tap = statistics.median(plain), statistics.median(taps)
extra = armed - step * steps / 1e3  # the armed run's train_s against the unarmed runs' median
cost = max(tap, extra)              # the taps' own time, or all the armed run added if more
print(f"| {name} | {plain[0]:.1f} / {step:.1f} / {plain[-1]:.1f} | {taps[0]:.3f} / {tap:.3f} / {taps[-1]:.3f} | "
      f"{extra:.3f} | {100 * cost / (1000 * step / 1e3):.2f}% |")
PY
done
