#include "saddlescope/study/slurm.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "saddlescope/base/process.h"
#include "saddlescope/base/text.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/json_input.h"
#include "saddlescope/store/manifest.h"
#include "saddlescope/study/status.h"

namespace saddlescope::study {
namespace {

namespace fs = std::filesystem;

std::string jobs_file(const std::string& out) { return out + "/slurm/jobs.json"; }

}  // namespace

std::string array_spec(const std::vector<int64_t>& tasks) {
  std::string spec;
  for (size_t i = 0; i < tasks.size();) {
    size_t j = i;
    while (j + 1 < tasks.size() && tasks[j + 1] == tasks[j] + 1) ++j;
    spec += (spec.empty() ? "" : ",") + (j == i ? std::to_string(tasks[i]) : fmt::format("{}-{}", tasks[i], tasks[j]));
    i = j + 1;
  }
  return spec;
}

Result<std::vector<SlurmJob>> plan_slurm(const Study& study, const std::string& out_dir, const SlurmOptions& o) {
  const std::string out = fs::absolute(out_dir).lexically_normal().string();
  const std::string cwd = fs::current_path().string();
  std::map<std::string, SlurmJob> by_group;
  std::map<std::string, int64_t> cpus;
  for (const StudyRun& run : study.runs) {
    if (finished(inspect_run(out, run.run_id).state)) continue;
    if (!run.threads_set)
      return Status::Error(study.file + ": " + run.label() + " leaves threads to the default, every core of the machine "
                           "that runs it, which is not known here: set threads = N in [base] or its table for Slurm");
    std::string group = fmt::format("{}-t{}", run.cuda() ? "cuda" : "cpu", run.cfg.execution.threads);
    by_group[group].tasks.push_back(run.task);
    cpus[group] = run.cfg.execution.threads;
  }
  std::vector<SlurmJob> jobs;
  for (auto& [group, job] : by_group) {
    job.group = group;
    job.script_path = out + "/slurm/" + group + ".sh";
    job.script = fmt::format(
        "#!/bin/sh\n"
        "# Study {}, runs {}: one array task per run (`saddlescope study plan` lists the task numbers).\n"
        "# A task Slurm requeues resumes its run from the last checkpoint.\n"
        "exec {} study exec {} --out {} --task \"$SLURM_ARRAY_TASK_ID\"{}\n",
        study.name, group, shell_quote(o.self), shell_quote(out + "/study.toml"), shell_quote(out),
        group.rfind("cuda", 0) == 0 ? fmt::format(" --gpu-sharing slurm --per-gpu 1") : "");
    job.sbatch = {"sbatch", "--parsable", "--job-name=saddlescope-" + study.name + "-" + group,
                  "--array=" + array_spec(job.tasks), fmt::format("--cpus-per-task={}", cpus[group]),
                  "--output=" + out + "/logs/slurm-%A_%a.log", "--open-mode=append", "--requeue", "--chdir=" + cwd};
    if (!o.partition.empty()) job.sbatch.push_back("--partition=" + o.partition);
    if (!o.time.empty()) job.sbatch.push_back("--time=" + o.time);
    if (group.rfind("cuda", 0) == 0) job.sbatch.push_back(fmt::format("--gpus-per-task={}", o.gpus_per_run));
    job.sbatch.push_back(job.script_path);
    jobs.push_back(std::move(job));
  }
  return jobs;
}

Status submit_slurm(std::vector<SlurmJob>* jobs, const std::string& out_dir) {
  const std::string out = fs::absolute(out_dir).lexically_normal().string();
  std::error_code ec;
  fs::create_directories(out + "/slurm", ec);
  fs::create_directories(out + "/logs", ec);
  if (ec) return Status::Error(out + "/slurm: cannot create: " + ec.message());
  nlohmann::json record = {{"jobs", nlohmann::json::array()}};
  if (store::file_exists(jobs_file(out))) {
    auto text = store::read_file(jobs_file(out), 64 << 20);
    if (!text) return text.status();
    auto parsed = store::parse_json(*text, jobs_file(out));
    if (!parsed) return parsed.status();
    record = std::move(*parsed);
    if (!record.is_object() || !record["jobs"].is_array())
      return Status::Error(jobs_file(out) + ": not a saddlescope job record (expected {\"jobs\": [...]})");
  }
  for (SlurmJob& job : *jobs) {
    SADDLESCOPE_RETURN_IF_ERROR(store::write_file_atomic(job.script_path, job.script));
    fs::permissions(job.script_path, fs::perms::owner_exec | fs::perms::group_exec | fs::perms::others_exec,
                    fs::perm_options::add, ec);
    auto printed = run_process_output(job.sbatch);
    if (!printed) return printed.status();
    job.id = printed->substr(0, printed->find_first_of(";\n"));  // "JOBID" or "JOBID;CLUSTER"
    record["jobs"].push_back({{"id", job.id}, {"group", job.group}, {"tasks", job.tasks},
                              {"submitted", store::utc_now()}});
    // Recorded after each submission: a failure later leaves the jobs already submitted known.
    SADDLESCOPE_RETURN_IF_ERROR(store::write_file_atomic(jobs_file(out), record.dump(2) + "\n"));
  }
  return Status::Ok();
}

std::map<std::pair<std::string, int64_t>, std::string> parse_task_states(const std::string& text) {
  std::map<std::pair<std::string, int64_t>, std::string> single, ranged;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    auto fields = split(line, '|');
    if (fields.size() < 2) continue;
    const std::string& id = fields[0];
    std::string state = fields[1].substr(0, fields[1].find(' '));  // "CANCELLED by 0"
    auto us = id.find('_');
    if (us == std::string::npos || state.empty()) continue;
    std::string job = id.substr(0, us), tasks = id.substr(us + 1);
    int64_t t;
    if (parse_int(tasks, &t)) {
      single[{job, t}] = state;
      continue;
    }
    if (tasks.size() < 3 || tasks.front() != '[') continue;
    tasks = tasks.substr(1, tasks.find(']') - 1);  // "[2-4,7%2]" -> "2-4,7%2"
    tasks = tasks.substr(0, tasks.find('%'));
    for (const auto& part : split(tasks, ',')) {
      auto dash = part.find('-');
      int64_t a, b;
      if (dash == std::string::npos ? !parse_int(part, &a) : !parse_int(part.substr(0, dash), &a)) continue;
      if (dash == std::string::npos) b = a;
      else if (!parse_int(part.substr(dash + 1), &b)) continue;
      for (int64_t k = a; k <= b && k - a < 1000000; ++k) ranged[{job, k}] = state;
    }
  }
  for (auto& [key, state] : single) ranged[key] = state;
  return ranged;
}

Result<std::map<int64_t, std::string>> slurm_task_states(const std::string& out, std::string* source) {
  auto text = store::read_file(jobs_file(out), 64 << 20);
  if (!text) return text.status();
  auto parsed = store::parse_json(*text, jobs_file(out));
  if (!parsed) return parsed.status();
  auto& record = *parsed;
  if (!record.is_object() || !record["jobs"].is_array())
    return Status::Error(jobs_file(out) + ": not a saddlescope job record (expected {\"jobs\": [...]})");
  // A job's fields through field(): a hand-edited record may lack any of them.
  using store::field;
  std::string ids;
  for (const auto& j : record["jobs"])
    if (field(j, "id").is_string()) ids += (ids.empty() ? "" : ",") + field(j, "id").get<std::string>();
  if (ids.empty()) return std::map<int64_t, std::string>{};
  auto printed = run_process_output({"sacct", "-X", "-j", ids, "--format=JobID,State", "--parsable2", "--noheader"});
  *source = "sacct";
  if (!printed) {
    printed = run_process_output({"squeue", "-j", ids, "--states=all", "--array", "--noheader", "-O", "JobArrayID:|,State:|"});
    *source = "squeue";
  }
  if (!printed) return Status::Error("neither sacct nor squeue answered: " + printed.status().message());
  auto states = parse_task_states(*printed);
  std::map<int64_t, std::string> by_task;
  for (const auto& j : record["jobs"]) {  // in submission order: a later job's state wins
    const nlohmann::json id = field(j, "id"), tasks = field(j, "tasks");
    if (!id.is_string() || !tasks.is_array()) continue;
    for (const auto& t : tasks) {
      if (!t.is_number_integer()) continue;
      auto it = states.find({id.get<std::string>(), t.get<int64_t>()});
      if (it != states.end()) by_task[t.get<int64_t>()] = it->second;
    }
  }
  return by_task;
}

}  // namespace saddlescope::study
