#!/usr/bin/env bash
# The PredNet GPU measurements of docs/benchmarks.md and docs/determinism.md (issue 19) in one command,
# for a device call on a CUDA host where the project is built and MNIST is installed:
#   bench/prednet_gpu.sh OUT_DIR [bench] [peers] [determinism] [ncu]      (no part: all four)
#   bench        ours, kernels libtorch and fused, CUDA graphs, batch 1 and 16 (bench_prednet 16 threads,
#                STEPS × REPEATS), run twice: OUT_DIR/bench.md
#   peers        bench/prednet_pytorch.py: the whole step as one CUDA graph and torch.compile
#                reduce-overhead, batch 1 and 16 (needs PyTorch with CUDA): appended to bench.md
#   determinism  PredNet batch 4, DET_STEPS steps, snapshots every 100: fused twice under cuda-det
#                (deterministic strict, cuDNN deterministic), libtorch once under cuda-det, fused twice
#                under cuda; `saddlescope diverge` of the three pairs: OUT_DIR/determinism.md
#   ncu          Nsight Compute over one eager fused step at batch 16 and 1, split by kernel kind with
#                bench/ncu_kernels.py: OUT_DIR/ncu-b16.md, ncu-b1.md (and the CSVs, gzipped)
# Environment: BUILD (build dir, default build), DEVICE (default cuda; cpu tries the script without a
# GPU: eager steps, no cuDNN flags, no peers or ncu), STEPS and REPEATS (20, 5), DET_STEPS (300).
set -euo pipefail
out=${1:?usage: prednet_gpu.sh OUT_DIR [bench] [peers] [determinism] [ncu]}
shift
parts=${*:-bench peers determinism ncu}
build=${BUILD:-build} device=${DEVICE:-cuda} steps=${STEPS:-20} repeats=${REPEATS:-5} det_steps=${DET_STEPS:-300}
for part in $parts; do
  case $part in bench | peers | determinism | ncu) ;; *) echo "prednet_gpu.sh: unknown part '$part'" >&2; exit 2 ;; esac
done
mkdir -p "$out"
has() { [[ " $parts " == *" $1 "* ]]; }
mode=graph
[ "$device" = cpu ] && mode=eager

ours() {
  for b in 1 16; do
    for k in "" +fused; do "$build/bench/bench_prednet" "$device" "$b" "$mode$k" 16 "$steps" "$repeats" 2>/dev/null; done
  done
}
if has bench; then
  { echo "| device | batch | mode | threads | min | median | max | compile s |"; echo "|---|---|---|---|---|---|---|---|"; ours; } |
    tee "$out/bench.md"
fi
if has peers && [ "$device" != cpu ]; then
  for b in 1 16; do
    for m in graph compile-reduce-overhead; do
      PYTHONUNBUFFERED=1 python3 bench/prednet_pytorch.py "$device" "$b" 16 "$steps" "$repeats" "$m" | grep '^|' |
        tee -a "$out/bench.md"
    done
  done
fi
if has bench; then ours | tee -a "$out/bench.md"; fi  # again: the machine's drift over the call

if has determinism; then
  runs=$out/determinism-runs
  rm -rf "$runs"
  common=(--model prednet --data moving-mnist --batch-size 4 --steps "$det_steps" --seed 1 --snapshot-every 100
          --device "$device" --eval-sequences 8)
  det=(--deterministic strict)
  [ "$device" != cpu ] && det+=(--cudnn-deterministic true --cublas-workspace :4096:8)
  train() {  # NAME KERNELS [flags...]
    local name=$1 kernels=$2
    shift 2
    "$build/saddlescope" train "${common[@]}" "$@" --kernels "$kernels" --out "$runs/$name" >"$runs-$name.log" 2>&1 ||
      { echo "prednet_gpu.sh: run $name failed; see $runs-$name.log" >&2; exit 1; }
  }
  mkdir -p "$runs"
  train det-fused-1 fused "${det[@]}"
  train det-fused-2 fused "${det[@]}"
  train det-libtorch libtorch "${det[@]}"
  train fused-1 fused
  train fused-2 fused
  run_of() { local d=("$runs/$1"/runs/*/); echo "${d[0]}"; }
  for pair in "det-fused-1 det-fused-2" "det-libtorch det-fused-1" "fused-1 fused-2"; do
    read -r a b <<<"$pair"
    echo "### $a against $b"
    "$build/saddlescope" diverge "$(run_of "$a")" "$(run_of "$b")" --csv "$out/diverge-$a-$b.csv" | tail -n 1
    echo
  done | tee "$out/determinism.md"
fi

if has ncu && [ "$device" != cpu ]; then
  for b in 16 1; do
    ncu --metrics gpu__time_duration.sum --csv --print-units base \
      "$build/bench/bench_prednet" "$device" "$b" eager+fused 16 1 1 2>/dev/null | gzip >"$out/ncu-b$b.csv.gz"
    python3 bench/ncu_kernels.py "$out/ncu-b$b.csv.gz" | tee "$out/ncu-b$b.md"
  done
fi
