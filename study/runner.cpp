#include "saddlescope/study/runner.h"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "saddlescope/base/process.h"
#include "saddlescope/base/progress.h"
#include "saddlescope/base/remove_tree.h"
#include "saddlescope/base/text.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/manifest.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/study/status.h"

extern char** environ;

namespace saddlescope::study {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

// The signal that asked the study to stop (the first), and how many have come.
volatile std::sig_atomic_t g_stop_signal = 0;
volatile std::sig_atomic_t g_stop_count = 0;

void on_stop(int sig) {
  if (g_stop_signal == 0) g_stop_signal = sig;
  g_stop_count = g_stop_count + 1;
}

// SIGINT, SIGTERM and SIGHUP stop the study for as long as it runs; the previous handlers come back after.
class StopHandlers {
 public:
  StopHandlers() {
    g_stop_signal = 0;
    g_stop_count = 0;
    struct sigaction sa {};
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~StopHandlers() {
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &old_[i], nullptr);
  }

 private:
  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction old_[3];
};

// Which programs are on PATH.
bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  for (const auto& dir : split(path ? path : "", ':'))
    if (!dir.empty() && ::access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  return false;
}

// An MPS control daemon of the study's own (its pipe and log directories private to it, so that it
// neither finds nor disturbs another one), started before the first GPU run and told to quit after.
class Mps {
 public:
  static Result<Mps> start() {
    std::string dir = fmt::format("/tmp/saddlescope-mps-{}", ::getpid());
    std::error_code ec;
    fs::create_directories(dir + "/pipe", ec);
    fs::create_directories(dir + "/log", ec);
    if (ec) return Status::Error("cannot create " + dir + " for MPS: " + ec.message());
    ::setenv("CUDA_MPS_PIPE_DIRECTORY", (dir + "/pipe").c_str(), 1);
    ::setenv("CUDA_MPS_LOG_DIRECTORY", (dir + "/log").c_str(), 1);
    if (Status started = run_process({"nvidia-cuda-mps-control", "-d"}); !started.ok()) {
      ::unsetenv("CUDA_MPS_PIPE_DIRECTORY");
      ::unsetenv("CUDA_MPS_LOG_DIRECTORY");
      return Status::Error(started.message() + " (its log: " + dir + "/log)");
    }
    return Mps(dir);
  }
  Mps(Mps&& o) noexcept : dir_(std::move(o.dir_)) { o.dir_.clear(); }
  Mps& operator=(Mps&&) = delete;
  ~Mps() {
    if (dir_.empty()) return;
    (void)run_process_with_input({"nvidia-cuda-mps-control"}, "quit\n");
    ::unsetenv("CUDA_MPS_PIPE_DIRECTORY");
    ::unsetenv("CUDA_MPS_LOG_DIRECTORY");
    (void)remove_tree(dir_);  // not std::filesystem::remove_all: LibTorch 2.x exports a broken copy
  }

 private:
  explicit Mps(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

// The physical GPU behind CUDA's index `gpu` for a child: the runner's own CUDA_VISIBLE_DEVICES, when
// set, renumbers them.
std::string visible_device(int gpu) {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (!visible || !*visible) return std::to_string(gpu);
  auto list = split(visible, ',');
  return gpu < static_cast<int>(list.size()) ? list[gpu] : std::to_string(gpu);
}

struct Child {
  pid_t pid = 0;
  const StudyRun* run = nullptr;
  Grant grant;
  Clock::time_point started;
  int64_t start_step = 0;  // steps done before this try (a resumed run's checkpoint)
};

// Starts `self study exec` for `run`, its output appended to the run's log. The child leads a process
// group of its own (the terminal's Ctrl-C reaches the runner, which passes it on once), dies with the
// runner (SIGTERM, so it checkpoints), and runs on the granted cores or GPU.
Result<pid_t> spawn(const std::string& self, const std::string& out, const StudyRun& run, const Grant& grant,
                    const std::string& sharing, int64_t per_gpu) {
  std::error_code ec;
  fs::create_directories(out + "/logs", ec);
  const std::string log = log_path(out, run.run_id);
  int fd = ::open(log.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Error(log + ": cannot open for writing: " + std::strerror(errno));
  std::string header = fmt::format("== {} study exec task {} ({}){}\n", store::utc_now(), run.task, run.label(),
                                   grant.gpu >= 0 ? fmt::format(" on GPU {}", grant.gpu) : "");
  (void)!::write(fd, header.data(), header.size());

  std::vector<std::string> argv = {self, "study", "exec", out + "/study.toml", "--out", out,
                                   "--task", std::to_string(run.task)};
  if (run.cuda()) argv.insert(argv.end(), {"--gpu-sharing", sharing, "--per-gpu", std::to_string(per_gpu)});
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::strncmp(*e, "CUDA_VISIBLE_DEVICES=", 21) != 0 || run.cuda_index() >= 0) env.push_back(*e);
  if (run.cuda() && run.cuda_index() < 0) env.push_back("CUDA_VISIBLE_DEVICES=" + visible_device(grant.gpu));
  std::vector<char*> args, envp;
  for (auto& a : argv) args.push_back(a.data());
  for (auto& e : env) envp.push_back(e.data());
  args.push_back(nullptr);
  envp.push_back(nullptr);
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  for (int c : grant.cores) CPU_SET(c, &cpus);
  const bool pin = !run.cuda();
  const pid_t parent = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd);
    return Status::Error(std::string("cannot start a run: fork: ") + std::strerror(errno));
  }
  if (pid == 0) {  // the child: only async-signal-safe calls until exec
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(128 + SIGTERM);  // the runner died before prctl took effect
    if (pin) ::sched_setaffinity(0, sizeof cpus, &cpus);
    int null = ::open("/dev/null", O_RDONLY);
    ::dup2(null, 0);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    ::execve(args[0], args.data(), envp.data());
    const char msg[] = "saddlescope: cannot start the saddlescope executable for the run\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  ::close(fd);
  return pid;
}

// Where a try of `run` starts: its checkpoint when it resumes, 0 when it starts from the beginning.
int64_t resume_step(const RunView& view) {
  return view.checkpoint_step && view.state != RunState::kFailed ? *view.checkpoint_step : 0;
}

}  // namespace

std::vector<int> usable_cores() {
  std::vector<int> cores;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0)
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) cores.push_back(i);
  if (cores.empty()) cores.push_back(0);
  return cores;
}

Status write_study_file(const Study& study, const std::string& out) {
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) return Status::Error(out + ": cannot create the study directory: " + ec.message());
  const std::string target = out + "/study.toml";
  if (fs::equivalent(study.file, target, ec)) return Status::Ok();
  auto text = store::read_file(study.file);
  if (!text) return text.status();
  return store::write_file_atomic(target, *text);
}

Result<StudySummary> run_local(const Study& study, const std::string& out, const LocalOptions& o) {
  StudySummary sum;
  sum.planned = static_cast<int64_t>(study.runs.size());
  Slots slots(o.slots);

  // What each run needs, and which can run here at all.
  std::vector<const StudyRun*> todo;
  int64_t remaining_steps = 0;
  bool any_gpu = false;
  for (const StudyRun& run : study.runs) {
    RunView view = inspect_run(out, run.run_id);
    if (finished(view.state)) {
      ++sum.already_done;
      continue;
    }
    if (!slots.possible(need_of(run))) {
      std::string why = run.cuda_index() >= 0
                            ? fmt::format("needs GPU {}, which this host does not have (or --gpus left out)", run.cuda_index())
                            : "needs a CUDA GPU; this host has none (or --gpus is empty)";
      if (o.require_cuda) return Status::Error(run.label() + ": " + why + " (--require-cuda)");
      ++sum.skipped;
      sum.skips.push_back(run.label() + ": " + why);
      continue;
    }
    any_gpu |= run.cuda();
    todo.push_back(&run);
    remaining_steps += run.cfg.steps - resume_step(view);
  }
  order_runs(&todo);

  std::string sharing = "time-slice";
  std::optional<Mps> mps;
  if (any_gpu && o.gpu_sharing != "time-slice" && (o.gpu_sharing == "mps" || o.slots.per_gpu > 1)) {
    if (!on_path("nvidia-cuda-mps-control")) {
      if (o.gpu_sharing == "mps") return Status::Error("--gpu-sharing mps: nvidia-cuda-mps-control is not on PATH");
    } else if (auto m = Mps::start()) {
      mps.emplace(std::move(*m));
      sharing = "mps";
    } else if (o.gpu_sharing == "mps") {
      return m.status();
    } else {
      std::fprintf(o.out, "saddlescope: warning: %s; GPU runs share GPUs by time slicing\n", m.status().message().c_str());
    }
  }

  StopHandlers handlers;
  const bool terminal = Progress::is_terminal(o.out);
  Progress bar("study " + study.name, remaining_steps, "steps", o.out, 30.0);
  auto say = [&](const std::string& line) {
    std::fprintf(o.out, "%s%s\n", terminal ? "\r\033[K" : "", line.c_str());
    std::fflush(o.out);
  };
  if (sum.already_done) say(fmt::format("{} of {} runs already finished in {}", sum.already_done, sum.planned, out));
  for (const auto& s : sum.skips) say("skipped   " + s);

  std::vector<Child> running;
  std::map<const StudyRun*, int64_t> progress_steps;  // steps done this session by finished tries
  int forwarded = 0;
  auto detail = [&] {
    return fmt::format("{} done · {} running · {} failed · {} left{}", sum.completed + sum.diverged, running.size(),
                       sum.failed, todo.size(), sum.skipped ? fmt::format(" · {} skipped", sum.skipped) : "");
  };
  auto steps_now = [&] {
    int64_t steps = 0;
    for (const auto& [run, s] : progress_steps) steps += s;
    for (const Child& c : running) steps += std::max<int64_t>(0, inspect_run(out, c.run->run_id).steps_completed - c.start_step);
    return steps;
  };
  Clock::time_point last_poll{};

  while (!todo.empty() || !running.empty()) {
    // Runs that ended.
    for (auto it = running.begin(); it != running.end();) {
      int wstatus = 0;
      pid_t r = ::waitpid(it->pid, &wstatus, WNOHANG);
      if (r == 0 || (r < 0 && errno == EINTR)) {
        ++it;
        continue;
      }
      const StudyRun& run = *it->run;
      slots.give_back(it->grant);
      RunView view = inspect_run(out, run.run_id);
      progress_steps[&run] += std::max<int64_t>(0, view.steps_completed - it->start_step);
      double took = std::chrono::duration<double>(Clock::now() - it->started).count();
      const int code = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 128 + WTERMSIG(wstatus);
      if (finished(view.state)) {
        ++(view.state == RunState::kCompleted ? sum.completed : sum.diverged);
        say(fmt::format("{:<10}{} ({}, {})", state_name(view.state), run.label(), run.run_id,
                        view.final_loss ? fmt::format("loss {:.6g}, {}", *view.final_loss, format_duration(took))
                                        : format_duration(took)));
      } else if (view.state == RunState::kInterrupted) {
        ++sum.interrupted;
        say(fmt::format("stopped   {} at step {}", run.label(), view.steps_completed));
      } else {
        // Failed, or killed without a word (the OOM killer): a rerun resumes or restarts it.
        ++sum.failed;
        std::string error = view.state == RunState::kFailed && !view.error.empty() ? view.error
                                                                                   : last_error_in_log(out, run.run_id);
        if (error.empty())
          error = WIFSIGNALED(wstatus) ? fmt::format("killed by signal {}; see {}", WTERMSIG(wstatus), log_path(out, run.run_id))
                                       : fmt::format("exited with status {}; see {}", code, log_path(out, run.run_id));
        sum.failures.push_back(fmt::format("{} ({}): {}", run.label(), run.run_id, error));
        say(fmt::format("failed    {}: {}", run.label(), error));
      }
      it = running.erase(it);
    }

    if (g_stop_signal) {
      // Stop: pass each signal on to every run once (a second SIGINT stops them at once), start nothing.
      while (forwarded < g_stop_count) {
        for (const Child& c : running) ::kill(c.pid, g_stop_signal);
        ++forwarded;
      }
      sum.signal = g_stop_signal;
      sum.not_started += static_cast<int64_t>(todo.size());
      todo.clear();
    }

    // Runs to start, as slots allow. A run another process writes (a second runner, a Slurm task, a
    // child of a killed runner still checkpointing) waits until it is free, then is looked at again.
    for (auto it = todo.begin(); it != todo.end() && !g_stop_signal;) {
      const StudyRun& run = **it;
      if (store::RunLock::held(out, run.run_id)) {
        ++it;
        continue;
      }
      RunView view = inspect_run(out, run.run_id);
      if (finished(view.state)) {  // finished by whoever held it
        ++sum.already_done;
        it = todo.erase(it);
        continue;
      }
      auto grant = slots.take(need_of(run));
      if (!grant) {
        ++it;
        continue;
      }
      auto pid = spawn(o.self, out, run, *grant, sharing, o.slots.per_gpu);
      if (!pid) {
        slots.give_back(*grant);
        return pid.status();
      }
      running.push_back({*pid, &run, *grant, Clock::now(), resume_step(view)});
      it = todo.erase(it);
    }

    if (Clock::now() - last_poll > std::chrono::seconds(1)) {
      last_poll = Clock::now();
      bar.update(steps_now(), detail());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  bar.finish(steps_now(), detail());
  return sum;
}

}  // namespace saddlescope::study
