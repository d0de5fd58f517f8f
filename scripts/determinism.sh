#!/usr/bin/env bash
# The determinism tables of docs/determinism.md: for each execution config of a study, is it bitwise
# reproducible run to run (and if not, from which step), and how far is it after its steps from the
# cpu-1thread run and from the float64 run, all from bit-identical initial weights. The study
# (studies/determinism.toml: the autoencoder; studies/determinism-prednet.toml: PredNet at batch 1) is
# run twice, into OUT_DIR/repeat-1 and OUT_DIR/repeat-2: the same run ids, two runs of each. CUDA
# configs are skipped on a host without CUDA. Reruns continue where a killed one stopped.
#   scripts/determinism.sh OUT_DIR [STUDY_FILE]
# Prints a Markdown table (and writes OUT_DIR/table.md). Needs MNIST in the data cache.
set -euo pipefail
out=${1:?usage: determinism.sh OUT_DIR [STUDY_FILE]}
study=${2:-studies/determinism.toml}
bin=${SADDLESCOPE:-./build/saddlescope}

mkdir -p "$out"
for r in 1 2; do
  "$bin" study run "$study" --out "$out/repeat-$r" >"$out/repeat-$r.log" 2>&1 ||
    echo "determinism.sh: some runs failed; see $out/repeat-$r.log" >&2
done

# config name -> run id, in the plan's order, from its rows (task, model/config/seed, run id, state, ...).
declare -A id_of
configs=()
while read -r _ label id _; do
  config=${label#*/}
  config=${config%/*}
  id_of[$config]=$id
  configs+=("$config")
done < <("$bin" study plan "$study" --out "$out/repeat-1" --no-measure | awk '$1 ~ /^[0-9]+$/')

run_of() { echo "$out/repeat-$2/runs/${id_of[$1]}"; }
field() { grep -o "\"$2\": [^,}]*" "$1/manifest.json" 2>/dev/null | head -1 | sed "s/.*: //" || true; }
# rel_l2 and max_ulp_distance at the last common snapshot, and the first differing loss step:
# "rel ulp first". The per-snapshot table's columns are found by name in its header.
distance() {
  local d csv last first
  csv=$(mktemp)
  d=$("$bin" diverge "$1" "$2" --csv "$csv")
  last=$(awk -F, 'NR==1 {for (i=1;i<=NF;i++) c[$i]=i; next} {l=$(c["rel_l2"]) " " $(c["max_ulp_distance"])} END {print l}' "$csv")
  rm -f "$csv"
  first=$(echo "$d" | grep -o 'losses first differ at step [0-9]*' | grep -o '[0-9]*$' || true)
  echo "$last ${first:--}"
}

steps=$(field "$(run_of cpu-1thread 1)" steps_completed)
table="| config | bitwise reproducible (2 runs) | first differing step | vs cpu-1thread after $steps steps: rel L2, max ULP, first differing step | vs float64: rel L2 | final loss | test MSE | steps/s |
|---|---|---|---|---|---|---|---|"
for name in "${configs[@]}"; do
  a=$(run_of "$name" 1) b=$(run_of "$name" 2)
  [ "$(field "$a" status)" = '"completed"' ] && [ "$(field "$b" status)" = '"completed"' ] || continue
  read -r rrel _ rfirst <<<"$(distance "$a" "$b")"
  read -r rel ulp dfirst <<<"$(distance "$(run_of cpu-1thread 1)" "$a")"
  read -r rel64 _ _ <<<"$(distance "$(run_of float64 1)" "$a")"
  table+="
| $name | $([ "$rfirst" = - ] && [ "$(printf %g "$rrel")" = 0 ] && echo yes || echo no) | $rfirst | $(printf '%.3g, %.0f, %s' "$rel" "$ulp" "$dfirst") \
| $(printf %.3g "$rel64") | $(printf %.6f "$(field "$a" final_loss)") | $(printf %.6f "$(field "$a" mse)") \
| $(printf %.0f "$(field "$a" steps_per_s)") |"
done
echo "$table" | tee "$out/table.md"
