// saddlescope study run|plan|status|exec: a config × seed matrix from one TOML file, run in parallel on
// this host's cores and GPUs, resumable, and the state of a study directory (study/).
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "saddlescope/base/progress.h"
#include "saddlescope/base/text.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/study/estimate.h"
#include "saddlescope/study/runner.h"
#include "saddlescope/study/slurm.h"
#include "saddlescope/study/status.h"
#include "saddlescope/study/study.h"
#include "saddlescope/trainer/execution.h"
#include "saddlescope/trainer/stop_signals.h"
#include "saddlescope/trainer/train.h"

namespace saddlescope::app {
namespace {


Result<study::Study> load(const std::string& file, const std::string& out) {
  auto s = study::load_study(file, out);
  if (s)
    for (const auto& w : s->warnings) std::fprintf(stderr, "saddlescope: warning: %s\n", w.c_str());
  return s;
}

// --gpus 0,2: CUDA indices; default every GPU this process sees.
Result<std::vector<int>> gpu_list(const std::string& text) {
  const int count = trainer::cuda_device_count();
  std::vector<int> gpus;
  if (text.empty()) {
    for (int i = 0; i < count; ++i) gpus.push_back(i);
    return gpus;
  }
  if (text == "none") return gpus;
  for (const auto& part : split(text, ',')) {
    int64_t g;
    if (!parse_int(part, &g) || g < 0 || g >= count)
      return Status::Error(fmt::format("--gpus: '{}' is not a GPU of this host ({})", part,
                                       count ? fmt::format("it has {}: 0..{}", count, count - 1) : "it has none"));
    gpus.push_back(static_cast<int>(g));
  }
  return gpus;
}

int run_command(const std::string& file, const std::string& out_flag, const study::HostSlots& flags,
                const std::string& gpus_text, const std::string& sharing, bool require_cuda) {
  auto s = load(file, out_flag);
  if (!s) return fail(s.status().message());
  const std::string out = s->runs.front().cfg.out;
  auto gpus = gpu_list(gpus_text);
  if (!gpus) return fail(gpus.status().message());
  study::LocalOptions o;
  o.self = self_path();
  o.slots = flags;
  o.slots.cores = study::usable_cores();
  o.slots.gpus = *gpus;
  o.gpu_sharing = sharing;
  o.require_cuda = require_cuda;
  if (Status w = study::write_study_file(*s, out); !w.ok()) return fail(w.message());
  fmt::print("study {}: {} runs into {} ({} cores, {} GPU{}{})\n", s->name, s->runs.size(), out, o.slots.cores.size(),
             o.slots.gpus.size(), o.slots.gpus.size() == 1 ? "" : "s",
             o.slots.gpus.empty() ? "" : fmt::format(", {} run{} per GPU", o.slots.per_gpu, o.slots.per_gpu == 1 ? "" : "s"));
  std::fflush(stdout);
  auto r = study::run_local(*s, out, o);
  if (!r) return fail(r.status().message());
  fmt::print("\n{} completed, {} diverged, {} failed, {} interrupted, {} skipped, {} already done (of {})\n",
             r->completed, r->diverged, r->failed, r->interrupted, r->skipped, r->already_done, r->planned);
  for (const auto& f : r->failures) fmt::print("failed   {}\n", f);
  if (r->signal) {
    fmt::print("stopped by {}: {} runs not started; run the same command again to continue\n",
               trainer::signal_name(r->signal), r->not_started);
    return 128 + r->signal;
  }
  fmt::print("state    saddlescope study status {}\n", out);
  return r->failed ? 1 : 0;
}

// The sbatch command as one line a user could paste (for --dry-run).
std::string shell_line(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& a : argv) line += (line.empty() ? "" : " ") + shell_quote(a);
  return line;
}

int slurm_command(const std::string& file, const std::string& out_flag, const study::SlurmOptions& options,
                  bool dry_run) {
  auto s = load(file, out_flag);
  if (!s) return fail(s.status().message());
  const std::string out = s->runs.front().cfg.out;
  auto jobs = study::plan_slurm(*s, out, options);
  if (!jobs) return fail(jobs.status().message());
  if (jobs->empty()) {
    fmt::print("study {}: every run in {} has finished; nothing to submit\n", s->name, out);
    return 0;
  }
  if (dry_run) {
    for (const auto& j : *jobs) fmt::print("# {}\n{}\n# {}:\n{}\n", j.group, shell_line(j.sbatch), j.script_path, j.script);
    return 0;
  }
  if (Status w = study::write_study_file(*s, out); !w.ok()) return fail(w.message());
  if (Status st = study::submit_slurm(&*jobs, out); !st.ok()) return fail(st.message());
  for (const auto& j : *jobs)
    fmt::print("submitted job {} ({}, {} run{}: tasks {})\n", j.id, j.group, j.tasks.size(), j.tasks.size() == 1 ? "" : "s",
               study::array_spec(j.tasks));
  fmt::print("state    saddlescope study status {}\n", out);
  return 0;
}

int status_command(const std::string& dir) {
  auto s = load(dir + "/study.toml", dir);
  if (!s) return fail(s.status().message());
  // Runs by config, by state.
  std::map<std::string, std::map<study::RunState, int>> by_config;
  std::map<study::RunState, int> total;
  std::vector<std::string> notes;
  const bool cuda_here = trainer::cuda_device_count() > 0;
  for (const auto& run : s->runs) {
    study::RunView v = study::inspect_run(dir, run.run_id);
    if (v.state == study::RunState::kNew && run.cuda() && !cuda_here) v.state = study::RunState::kSkipped;
    ++by_config[run.model + "/" + run.config][v.state];
    ++total[v.state];
    if (v.state == study::RunState::kFailed || v.state == study::RunState::kUnreadable)
      notes.push_back(fmt::format("{:<11} {} ({}): {}", study::state_name(v.state), run.label(), run.run_id, v.error));
    else if (v.state == study::RunState::kInterrupted || v.state == study::RunState::kStale)
      notes.push_back(fmt::format("{:<11} {} ({}) at step {} of {}", study::state_name(v.state), run.label(),
                                  run.run_id, v.steps_completed, run.cfg.steps));
  }
  const std::vector<study::RunState> columns = {
      study::RunState::kCompleted, study::RunState::kDiverged, study::RunState::kRunning, study::RunState::kFailed,
      study::RunState::kInterrupted, study::RunState::kStale, study::RunState::kNew, study::RunState::kSkipped,
      study::RunState::kUnreadable};
  std::string header = fmt::format("{:<32}", "model/config");
  for (auto c : columns) header += fmt::format(" {:>11}", study::state_name(c));
  fmt::print("study {} ({} runs) in {}\n\n{}\n", s->name, s->runs.size(), dir, header);
  auto row = [&](const std::string& name, std::map<study::RunState, int>& counts) {
    std::string line = fmt::format("{:<32}", name);
    for (auto c : columns) line += fmt::format(" {:>11}", counts[c]);
    fmt::print("{}\n", line);
  };
  for (auto& [name, counts] : by_config) row(name, counts);
  row("all", total);
  if (!notes.empty()) fmt::print("\n");
  for (const auto& n : notes) fmt::print("{}\n", n);
  if (store::file_exists(dir + "/slurm/jobs.json")) {
    std::string source;
    auto states = study::slurm_task_states(dir, &source);
    if (!states) {
      fmt::print("\nslurm    {}\n", states.status().message());
    } else {
      std::map<std::string, int> counts;
      for (const auto& [task, state] : *states) ++counts[state];
      std::string line;
      for (const auto& [state, n] : counts) line += fmt::format("{}{} {}", line.empty() ? "" : ", ", n, state);
      fmt::print("\nslurm    tasks by state ({}): {}\n", source, line.empty() ? "none known" : line);
      for (const auto& [task, state] : *states)
        if (state != "COMPLETED" && state != "PENDING" && state != "RUNNING" && state != "COMPLETING" &&
            task < static_cast<int64_t>(s->runs.size()))
          fmt::print("{:<11} task {} {}\n", state, task, s->runs[task].label());
    }
  }
  return 0;
}

int plan_command(const std::string& file, const std::string& out_flag, bool measure) {
  auto s = load(file, out_flag);
  if (!s) return fail(s.status().message());
  const std::string out = s->runs.front().cfg.out;
  const int gpus = trainer::cuda_device_count();
  study::Estimator estimator(out, self_path(), file);
  size_t wl = 3, wi = 6;  // column widths: the longest label and run id
  for (const auto& run : s->runs) wl = std::max(wl, run.label().size()), wi = std::max(wi, run.run_id.size());
  fmt::print("study {}: {} runs into {}\n\n{:>5}  {:<{}}  {:<{}}  {:<11} {:>9}  {}\n", s->name, s->runs.size(), out,
             "task", "run", wl, "run id", wi, "state", "estimate", "from");
  std::vector<study::Estimate> estimates;
  int unknown = 0;
  for (const auto& run : s->runs) {
    study::RunView v = study::inspect_run(out, run.run_id);
    bool skip = run.cuda() && gpus == 0;
    study::Estimate e;
    if (!study::finished(v.state) && !skip) e = estimator.estimate(run, measure);
    unknown += !study::finished(v.state) && !skip && e.seconds <= 0;
    estimates.push_back(e);
    fmt::print("{:>5}  {:<{}}  {:<{}}  {:<11} {:>9}  {}\n", run.task, run.label(), wl, run.run_id, wi,
               skip ? "skipped" : study::state_name(v.state),
               study::finished(v.state) || skip ? "-" : (e.seconds > 0 ? format_duration(e.seconds) : "?"),
               skip ? "no CUDA on this host" : e.source);
  }
  study::HostSlots host{study::usable_cores(), {}, 1, 0};
  for (int i = 0; i < gpus; ++i) host.gpus.push_back(i);
  double total = 0;
  for (const auto& e : estimates) total += e.seconds;
  if (total == 0 && unknown > 0) {
    fmt::print("\nthe cost of the {} runs to do is unknown (study plan without --no-measure times them)\n", unknown);
    return 0;
  }
  fmt::print("\n{} of training in all{}; about {} on this host ({} cores, {} GPUs, one run per GPU)\n",
             format_duration(total), unknown ? fmt::format(" ({} runs of unknown cost counted as the mean)", unknown) : "",
             format_duration(study::simulate(*s, estimates, host)), host.cores.size(), host.gpus.size());
  return 0;
}

// Runs task `task` of the study in this process: starts it, resumes it, or starts a failed one again.
// With measure_steps, trains the task's config for that many steps instead (`study plan` times it).
int exec_command(const std::string& file, const std::string& out, int64_t task, const std::string& sharing,
                 int64_t per_gpu, int64_t measure_steps) {
  auto s = load(file, out);
  if (!s) return fail(s.status().message());
  if (task < 0 || task >= static_cast<int64_t>(s->runs.size()))
    return fail(fmt::format("--task: {} has tasks 0..{}, got {}", file, s->runs.size() - 1, task));
  study::StudyRun& run = s->runs[task];
  if (measure_steps > 0) {
    run.cfg.steps = std::min(run.cfg.steps, measure_steps);
    run.cfg.log_every = std::min(run.cfg.log_every, run.cfg.steps);
    trainer::TrainOptions quiet;
    quiet.progress = nullptr;
    return print_train_result(run.cfg, trainer::train(run.cfg, quiet));
  }
  study::RunView v = study::inspect_run(out, run.run_id);
  if (study::finished(v.state)) {
    fmt::print("run      {}/runs/{} ({}) has {} already\n", out, run.run_id, run.label(), study::state_name(v.state));
    return 0;
  }
  trainer::TrainOptions options;
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  options.study = {{"name", s->name}, {"task", run.task}, {"model", run.model}, {"config", run.config},
                   {"seed", run.seed}};
  if (run.cuda())
    options.study["gpu"] = {{"sharing", sharing}, {"runs_per_gpu", per_gpu},
                            {"cuda_visible_devices", visible ? visible : ""}};
  using study::RunState;
  if ((v.state == RunState::kInterrupted || v.state == RunState::kStale) && v.checkpoint_step) {
    options.resume = true;
    options.resume_dir = out + "/runs/" + run.run_id;
  } else {
    // New, failed, unreadable, or stopped before its first checkpoint: from the start. A live
    // writer's run is refused by the trainer's lock, never replaced.
    options.replace = v.state != RunState::kNew;
  }
  fmt::print("task     {} of study {}: {} ({})\n", run.task, s->name, run.label(),
             options.resume ? fmt::format("resuming from step {}", *v.checkpoint_step)
                            : options.replace ? fmt::format("starting again; it was {}", study::state_name(v.state))
                                              : "new");
  std::fflush(stdout);
  return print_train_result(run.cfg, trainer::train(run.cfg, options));
}

}  // namespace

Command add_study(CLI::App& app) {
  struct Args {
    std::string file, out, gpus, sharing = "auto", backend = "local";
    study::SlurmOptions slurm;
    bool dry_run = false;
    study::HostSlots slots;
    bool require_cuda = false, no_measure = false;
    int64_t task = -1, measure_steps = 0;
  };
  auto a = std::make_shared<Args>();
  CLI::App* sub = app.add_subcommand("study", "Run a config × seed matrix from a TOML file (studies/*.toml)");
  sub->require_subcommand(1);

  CLI::App* run = sub->add_subcommand("run", "Run every run of a study that has not finished, in parallel");
  run->add_option("file", a->file, "Study file (studies/quick.toml)")->required();
  run->add_option("--out", a->out, "Study directory (default: runs/<study name>)");
  run->add_option("--jobs", a->slots.jobs, "At most this many runs at once (default: as cores and GPUs allow)")
      ->check(CLI::PositiveNumber);
  run->add_option("--per-gpu", a->slots.per_gpu, "Runs at once on each GPU (default 1)")->check(CLI::PositiveNumber);
  run->add_option("--gpus", a->gpus, "GPUs to use, e.g. 0,2, or none (default: every GPU this process sees)");
  run->add_option("--gpu-sharing", a->sharing, "How runs share a GPU: auto (MPS when available and --per-gpu > 1), "
                  "mps, time-slice")->check(CLI::IsMember({"auto", "mps", "time-slice"}));
  run->add_flag("--require-cuda", a->require_cuda, "A CUDA run this host cannot run is an error (default: skipped)");
  run->add_option("--backend", a->backend, "local: this host; slurm: one sbatch --array job per kind of run")
      ->check(CLI::IsMember({"local", "slurm"}));
  run->add_option("--partition", a->slurm.partition, "slurm: the partition");
  run->add_option("--time", a->slurm.time, "slurm: each task's time limit, as sbatch --time takes it");
  run->add_option("--gpus-per-run", a->slurm.gpus_per_run, "slurm: GPUs of a CUDA run (default 1)")
      ->check(CLI::PositiveNumber);
  run->add_flag("--dry-run", a->dry_run, "slurm: print the sbatch commands and scripts; submit nothing");
  run->footer("Exit status: 0 when every run that could run here finished, 1 when one failed (the others still "
              "ran), 128+N when stopped by signal N; run the same command again to continue.");

  CLI::App* plan = sub->add_subcommand("plan", "List a study's runs, their state and an estimated cost");
  plan->add_option("file", a->file, "Study file")->required();
  plan->add_option("--out", a->out, "Study directory (default: runs/<study name>)");
  plan->add_flag("--no-measure", a->no_measure, "Do not time a short run of configs that have no finished run yet");

  CLI::App* status = sub->add_subcommand("status", "The state of every run of a study directory");
  status->add_option("dir", a->out, "Study directory")->required();

  CLI::App* exec = sub->add_subcommand("exec", "Run one task of a study in this process (what `study run` and "
                                               "Slurm array tasks call)");
  exec->add_option("file", a->file, "Study file (<dir>/study.toml)")->required();
  exec->add_option("--out", a->out, "Study directory")->required();
  exec->add_option("--task", a->task, "Task number (study plan lists them)")->required();
  exec->add_option("--gpu-sharing", a->sharing, "Recorded in the manifest: how the GPU is shared");
  exec->add_option("--per-gpu", a->slots.per_gpu, "Recorded in the manifest: runs at once on the GPU");
  exec->add_option("--measure-steps", a->measure_steps, "Train only this many steps (study plan's timing run)")
      ->check(CLI::PositiveNumber);

  auto go = [a, run, plan, status, exec]() -> int {
    if (run->parsed() && a->backend == "slurm") {
      a->slurm.self = self_path();
      return slurm_command(a->file, a->out, a->slurm, a->dry_run);
    }
    if (run->parsed() && (a->dry_run || !a->slurm.partition.empty() || !a->slurm.time.empty()))
      return fail("--dry-run, --partition and --time are for --backend slurm");
    if (run->parsed()) return run_command(a->file, a->out, a->slots, a->gpus, a->sharing, a->require_cuda);
    if (plan->parsed()) return plan_command(a->file, a->out, !a->no_measure);
    if (status->parsed()) return status_command(a->out);
    return exec_command(a->file, a->out, a->task, a->sharing, a->slots.per_gpu, a->measure_steps);
  };
  return {sub, go};
}

}  // namespace saddlescope::app
