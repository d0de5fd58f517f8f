#!/usr/bin/env bash
# Smoke test of tests/slurm/cluster.sh: a throwaway cluster runs a 3-task `sbatch --array` job
# whose tasks write into a shared directory; checks the outputs and the per-task states.
#
#   tests/slurm/smoke.sh [--sacct]
#
# Job states come from sacct with --sacct (slurmdbd + MariaDB), from squeue otherwise (see
# cluster.sh). Exits 0 on success, 77 with "skipped: <reason>" when the cluster cannot be had
# (not root, no apt-get), non-zero otherwise.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
mode=${1:-}
work=$(mktemp -d /tmp/saddlescope-slurm.XXXXXX)
up_args=(up "$work/cluster")
[ -z "$mode" ] || up_args+=("$mode")
# Torn down however we leave; the directory is kept when the test fails, for its logs.
cleanup() {
  local rc=$?
  "$here/cluster.sh" down "$work/cluster" || true
  if [ $rc -eq 0 ] || [ $rc -eq 77 ]; then rm -rf "$work"; else echo "smoke: logs in $work" >&2; fi
}
trap cleanup EXIT

fail() { echo "smoke: FAIL: $*" >&2; exit 1; }

t0=$(date +%s%N)
ms() { echo $((($(date +%s%N) - t0) / 1000000)); }
rc=0
env_line=$("$here/cluster.sh" "${up_args[@]}") || rc=$?
[ $rc -eq 77 ] && exit 77  # cluster.sh said why
[ $rc -eq 0 ] || fail "cluster.sh up failed ($rc)"
eval "$env_line"  # export SLURM_CONF=...
echo "smoke: cluster up in $(ms) ms"

mkdir -p "$work/shared"
cat >"$work/task.sh" <<'EOF'
#!/usr/bin/env bash
set -euo pipefail
out=$1
echo "task=$SLURM_ARRAY_TASK_ID job=$SLURM_ARRAY_JOB_ID restart=${SLURM_RESTART_COUNT:-0}" \
  >"$out/task-$SLURM_ARRAY_TASK_ID.txt"
EOF

t0=$(date +%s%N)
job=$(sbatch --parsable --array=0-2 --requeue --job-name=smoke --open-mode=append \
  --output="$work/shared/slurm-%A_%a.out" --chdir="$work/shared" "$work/task.sh" "$work/shared")
job=${job%%;*}  # --parsable prints JOBID or JOBID;CLUSTER
echo "smoke: submitted array job $job"

# Per-task "JOBID_TASK|STATE" lines, one per task once the tasks have left the pending range.
states() {
  if [ "$mode" = --sacct ]; then
    sacct -X -j "$job" --format=JobID,State --parsable2 --noheader
  else
    squeue -j "$job" --states=all --array --noheader --format='%i|%T'
  fi
}
finished() {
  local s
  s=$(states | sort)
  [ "$(grep -cE '\|(COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY|BOOT_FAIL|DEADLINE|PREEMPTED)$' <<<"$s")" -eq 3 ] &&
    [ "$(wc -l <<<"$s")" -eq 3 ]
}
deadline=$((SECONDS + 120))
until finished; do
  [ $SECONDS -lt $deadline ] || fail "job $job not finished after 120 s: $(states | tr '\n' ' ')"
  sleep 0.5
done
echo "smoke: job finished in $(ms) ms"

got=$(states | sort | tr '\n' ' ')
want="${job}_0|COMPLETED ${job}_1|COMPLETED ${job}_2|COMPLETED "
[ "$got" = "$want" ] || fail "states: got '$got', want '$want'"
for i in 0 1 2; do
  grep -qx "task=$i job=$job restart=0" "$work/shared/task-$i.txt" || fail "task $i output"
done
echo "smoke: ok ($got)"
