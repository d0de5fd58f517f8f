#!/usr/bin/env bash
# The Slurm backend against a real Slurm (a throwaway single-node cluster, cluster.sh): a small study
# submitted with `study run --backend slurm` ends with the same runs, bit for bit (wall-clock columns
# aside), as the same study run by the local backend; a task requeued while it trains resumes its
# run from its checkpoint; `study status` reads the tasks' states back.
#
#   tests/slurm/study_slurm.sh SADDLESCOPE_BINARY
#
# Exits 0 on success, 77 with "skipped: <reason>" when the cluster cannot be had (not root, no
# apt-get), non-zero otherwise. CTest runs it (tests/CMakeLists.txt); CI runs as root, so it runs there.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
work=$(mktemp -d /tmp/saddlescope-slurm-study.XXXXXX)
cleanup() {
  local rc=$?
  "$here/cluster.sh" down "$work/cluster" >/dev/null 2>&1 || true
  if [ $rc -eq 0 ] || [ $rc -eq 77 ]; then rm -rf "$work"; else echo "study_slurm: logs in $work" >&2; fi
}
trap cleanup EXIT
fail() { echo "study_slurm: FAIL: $*" >&2; exit 1; }

rc=0
env_line=$("$here/cluster.sh" up "$work/cluster") || rc=$?
[ $rc -eq 77 ] && exit 77
[ $rc -eq 0 ] || fail "cluster.sh up failed ($rc)"
eval "$env_line"

# The linear network on generated data: no data files, seconds per run. Task 0 runs long enough to
# be requeued halfway.
cd "$work"
cat >study.toml <<'EOF'
name = "slurm-test"
seeds = [1, 2]
[base]
model = "linear"
data = "teacher"
threads = 1
log_every = 50
checkpoint_every = 100
probe = ["curvature:every=500,batch=64"]
[configs.long]
steps = 15000
[configs.short]
steps = 2000
lr = 1e-2
EOF

"$bin" study run study.toml --out slurm --backend slurm --dry-run | grep -q -- "--array=0-3" ||
  fail "--dry-run does not show the array job"
[ ! -e slurm/slurm/jobs.json ] || fail "--dry-run submitted"
submitted=$("$bin" study run study.toml --out slurm --backend slurm) || fail "submit: $submitted"
job=$(echo "$submitted" | sed -n 's/^submitted job \([0-9]*\) .*/\1/p')
[ -n "$job" ] || fail "no job id in: $submitted"

# Requeue task 0 once it has a checkpoint: Slurm sends SIGTERM, the run checkpoints and says
# interrupted, and the task starts again (after cred_expire) and resumes it.
manifest() { cat slurm/runs/linear-cpu-t1-s1-*/manifest.json 2>/dev/null || true; }
for _ in $(seq 600); do manifest | grep -q '"checkpoint_step": [1-9]' && break; sleep 0.1; done
manifest | grep -q '"checkpoint_step"' || fail "task 0 wrote no checkpoint: $(cat slurm/logs/slurm-* 2>/dev/null)"
scontrol requeue "${job}_0" || fail "scontrol requeue ${job}_0"

# Until every task has left the queue (squeue lists only pending and running tasks by default).
for _ in $(seq 900); do
  [ -z "$(squeue -h -j "$job" 2>/dev/null)" ] && break
  sleep 0.2
done
[ -z "$(squeue -h -j "$job")" ] || fail "job $job still queued after 180 s"

status=$("$bin" study status slurm)
echo "$status" | grep -q "^all  *4 " || fail "not all 4 runs completed: $status"
echo "$status" | grep -q "tasks by state (squeue): 4 COMPLETED" || fail "task states not read back: $status"
grep -q '"resumes": 1' slurm/runs/linear-cpu-t1-s1-*/manifest.json || fail "the requeued task did not resume its run"
grep -q '"stopped_by": "SIGTERM"' slurm/runs/linear-cpu-t1-s1-*/manifest.json 2>/dev/null ||
  grep -q 'resuming from step' slurm/logs/slurm-"${job}"_0.log || fail "no trace of the requeue in task 0's log"

# The local backend, the same study: the same runs, the same bits.
"$bin" study run study.toml --out local >/dev/null || fail "the local backend failed"
for run in local/runs/*/; do
  id=$(basename "$run")
  [ -d "slurm/runs/$id" ] || fail "$id is missing from the Slurm study"
  for table in metrics curvature; do
    cols=$([ $table = metrics ] && echo "step loss batch_grad_norm lr" || echo "step lambda_min lambda_max probe_loss")
    # shellcheck disable=SC2086
    diff <("$bin" store select "$run" $table $cols) <("$bin" store select "slurm/runs/$id" $table $cols) >/dev/null ||
      fail "$id: $table differs between the Slurm and the local backend"
  done
done
[ "$(ls local/runs | wc -l)" = "$(ls slurm/runs | wc -l)" ] || fail "the studies hold different runs"
echo "study_slurm: 4 runs through Slurm (one requeued and resumed) equal the local backend's"
