// Running a study through Slurm, for users whose cluster already has it: one `sbatch --array` job per
// group of runs that need the same resources (threads, GPUs), one array task per run, each task
// `saddlescope study exec <out>/study.toml --task $SLURM_ARRAY_TASK_ID` writing its run directory on
// the shared storage — and resuming it from its checkpoint when Slurm requeues the task (SIGTERM
// first, so it checkpoints; tasks' output is appended, never truncated, across restarts).
//
// sbatch, sacct and squeue run with argument vectors, never through a shell; the batch script holds
// only the exec line, its paths quoted. The study directory stays the state: `study status` reads the
// run directories, plus the tasks' Slurm states (sacct when the cluster keeps accounting, else squeue,
// which forgets finished jobs after MinJobAge).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"
#include "saddlescope/study/study.h"

namespace saddlescope::study {

struct SlurmOptions {
  std::string self;              // the saddlescope executable, at a path the nodes see
  std::string partition, time;   // --partition, --time (passed on when given)
  int64_t gpus_per_run = 1;      // --gpus-per-task of CUDA runs
};

struct SlurmJob {
  std::string group;                 // "cpu-t4", "cuda-t1": the runs' common resources
  std::vector<int64_t> tasks;        // array indices = the runs' task numbers
  std::vector<std::string> sbatch;   // the sbatch command, argument by argument (script last)
  std::string script_path, script;   // <out>/slurm/<group>.sh and its text
  std::string id;                    // the job id, once submitted
};

// The jobs that run every run of `study` not finished in `out`. Errors: a run whose threads the study
// leaves to the default (the nodes' cores are not known here: say threads = N), out not writable.
Result<std::vector<SlurmJob>> plan_slurm(const Study& study, const std::string& out, const SlurmOptions& options);

// Writes each job's script and submits it with sbatch; records the job ids in <out>/slurm/jobs.json.
// Errors: sbatch not on PATH, or refusing a job (its message).
Status submit_slurm(std::vector<SlurmJob>* jobs, const std::string& out);

// "0-3,7,9-10" for the sorted indices.
std::string array_spec(const std::vector<int64_t>& tasks);

// The Slurm state of every task of the jobs recorded in <out>/slurm/jobs.json (the latest job that
// holds a task wins): task -> "PENDING", "RUNNING", "COMPLETED", "FAILED", "TIMEOUT", ... `source`
// says where the states came from ("sacct", "squeue"). Errors: neither answered.
Result<std::map<int64_t, std::string>> slurm_task_states(const std::string& out, std::string* source);

// Parses sacct --parsable2 / squeue "JOBID_TASK|STATE[|...]" lines, ranges ("12_[2-4,7]|PENDING")
// expanded, rows for single tasks winning over a range's: (job id, task) -> first word of the state.
std::map<std::pair<std::string, int64_t>, std::string> parse_task_states(const std::string& text);

}  // namespace saddlescope::study
