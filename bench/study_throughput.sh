#!/usr/bin/env bash
# Study throughput on a GPU host as the runs per GPU grow: one study of M seeds of the same CUDA run
# per M, run with `study run --per-gpu M`, timed whole (process start, CUDA graphs' capture and the
# final evaluation included). Prints a Markdown table: runs/hour, steps/s summed over the concurrent
# runs (each run's steps / its step-loop seconds), the spread of single runs' steps/s, and the mean
# GPU utilisation nvidia-smi sampled every 250 ms while the study ran.
#   bench/study_throughput.sh OUT_DIR prednet|autoencoder STEPS mps|time-slice "1 2 4 8 16"
# prednet: default size (64×64, stacks 1-32-64-128, nt 10) at batch 1 on Moving MNIST, CUDA graphs;
# autoencoder: the seed study's MLP at batch 1 on MNIST. Both CUDA with cuDNN, one CPU thread.
set -euo pipefail
out=${1:?usage: study_throughput.sh OUT_DIR MODEL STEPS SHARING "M..."}
model=$2 steps=$3 sharing=$4 ms=$5
bin=${SADDLESCOPE:-./build/saddlescope}
device=${DEVICE:-cuda}  # DEVICE=cpu tries the script where there is no GPU
mkdir -p "$out"
case $model in
  prednet) base=$'model = "prednet"\ndata = "moving-mnist"\neval_sequences = 16' ;;
  autoencoder) base=$'model = "autoencoder"\ndata = "mnist"' ;;
  *) echo "study_throughput.sh: model must be prednet or autoencoder, got '$model'" >&2; exit 2 ;;
esac

echo "| model | sharing | runs per GPU | wall s | runs/hour | steps/s summed | × one run | steps/s of a run: min / median / max | GPU util % |"
echo "|---|---|---|---|---|---|---|---|---|"
single=""
for m in $ms; do
  name=$model-$sharing-m$m
  dir=$out/$name
  rm -rf "$dir"
  printf 'name = "%s"\nseeds = { from = 1, to = %d }\n[base]\n%s\ndevice = "%s"\nthreads = 1\nbatch_size = 1\nsteps = %d\nlog_every = 100\n' \
    "$name" "$m" "$base" "$device" "$steps" >"$dir.toml"
  nvidia-smi --query-gpu=utilization.gpu --format=csv,noheader,nounits -lms 250 >"$dir.util" 2>/dev/null &
  smi=$!
  t0=$(date +%s.%N)
  "$bin" study run "$dir.toml" --out "$dir" --per-gpu "$m" --gpu-sharing "$sharing" >"$dir.log" 2>&1 ||
    { kill $smi; echo "| $model | $sharing | $m | failed: $(tail -3 "$dir.log" | tr '\n' ' ') |"; continue; }
  t1=$(date +%s.%N)
  kill $smi 2>/dev/null || true
  python3 - "$dir" "$m" "$t0" "$t1" "$dir.util" "$model" "$sharing" "${single:-0}" <<'EOF' >"$dir.row"
import glob, json, statistics, sys
d, m, t0, t1, util, model, sharing, single = sys.argv[1:]
rates = [json.load(open(f))["steps_per_s"] for f in glob.glob(d + "/runs/*/manifest.json")]
wall = float(t1) - float(t0)
u = [float(x) for x in open(util).read().split() if x.strip().replace('.', '', 1).isdigit()]
total = sum(rates)
ratio = f"{total / float(single):.2f}" if float(single) > 0 else "1.00"
print(f"| {model} | {sharing} | {m} | {wall:.1f} | {int(m) / wall * 3600:.0f} | {total:.0f} | {ratio} | "
      f"{min(rates):.0f} / {statistics.median(rates):.0f} / {max(rates):.0f} | {statistics.mean(u) if u else float('nan'):.0f} |")
EOF
  cat "$dir.row"
  [ -n "$single" ] || single=$(python3 -c "import glob,json; print(sum(json.load(open(f))['steps_per_s'] for f in glob.glob('$dir/runs/*/manifest.json')))")
done
