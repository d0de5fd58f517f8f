#include "saddlescope/store/run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "saddlescope/base/text.h"
#include "saddlescope/base/remove_tree.h"
#include "fault_hooks.h"
#include "file_lock.h"
#include "run_scan.h"
#include "saddlescope/store/json_input.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/sha256.h"

namespace fs = std::filesystem;

namespace saddlescope::store {
namespace {

std::string lock_path(const std::string& study_dir, const std::string& run_id) {
  return (fs::path(study_dir) / "runs" / ("." + run_id + ".lock")).string();
}

// The pid written in a lock file by its holder, or "" when unreadable.
std::string lock_holder(const std::string& path) {
  auto text = read_file(path);
  return text ? std::string(text->substr(0, text->find('\n'))) : "";
}

}  // namespace

Status validate_run_id(const std::string& id) {
  if (id.empty() || id.size() > 128)
    return Status::Error("run id '" + id + "' must be 1-128 characters");
  if (id == "." || id == "..") return Status::Error("run id '" + id + "' is not a directory name");
  for (char c : id) {
    bool okc = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == '-';
    if (!okc)
      return Status::Error("run id '" + id + "' may only contain letters, digits, '.', '_' and '-'");
  }
  return Status::Ok();
}

bool is_temporary_name(const std::string& name) {
  return (!name.empty() && name[0] == '.' && ends_with(name, ".tmp")) || name.find(".tmp.") != std::string::npos ||
         ends_with(name, ".resume");
}

std::string make_run_id(const std::string& prefix, const std::string& canonical_config) {
  SADDLESCOPE_CHECK(validate_run_id(prefix).ok());
  return prefix + "-" + sha256_hex(canonical_config).substr(0, 8);
}

Result<RunLock> RunLock::acquire(const std::string& study_dir, const std::string& run_id) {
  SADDLESCOPE_RETURN_IF_ERROR(validate_run_id(run_id));
  std::error_code ec;
  fs::create_directories(fs::path(study_dir) / "runs", ec);
  if (ec) return Status::Error(study_dir + "/runs: cannot create: " + ec.message());
  std::string path = lock_path(study_dir, run_id);
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Error(path + ": cannot open: " + std::strerror(errno));
  // A reader testing liveness holds a shared lock for an instant: retry briefly before refusing.
  for (int attempt = 0; ::flock(fd, LOCK_EX | LOCK_NB) != 0; ++attempt) {
    if (errno != EWOULDBLOCK || attempt == 20) {
      std::string holder = lock_holder(path);
      ::close(fd);
      return Status::Error(study_dir + "/runs/" + run_id + ": being written by a live process" +
                           (holder.empty() ? std::string() : " (pid " + holder + ")") +
                           "; wait for it or stop it first");
    }
    ::usleep(10000);
  }
  std::string pid = fmt::format("{}\n{}\n", getpid(), this_host());
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, pid.data(), pid.size(), 0) != static_cast<ssize_t>(pid.size())) {
    ::close(fd);
    return Status::Error(path + ": cannot write: " + std::strerror(errno));
  }
  return RunLock(fd);
}

bool RunLock::held(const std::string& study_dir, const std::string& run_id) {
  return FileLock::held(lock_path(study_dir, run_id));
}

RunLock::RunLock(RunLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
RunLock::~RunLock() {
  if (fd_ >= 0) ::close(fd_);  // the file stays: removing it would race with a new acquirer
}

Result<std::string> create_run_dir(const std::string& study_dir, const std::string& run_id, bool replace) {
  SADDLESCOPE_RETURN_IF_ERROR(validate_run_id(run_id));
  fs::path dir = fs::path(study_dir) / "runs" / run_id;
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!replace)
      return Status::Error(dir.string() + ": run directory exists (same config); pass --force to replace it, " +
                           "or --resume it if it was interrupted");
    SADDLESCOPE_RETURN_IF_ERROR(remove_tree(dir.string()));
  }
  fs::create_directories(dir, ec);
  if (ec) return Status::Error(dir.string() + ": cannot create: " + ec.message());
  return dir.string();
}

Status write_manifest(const std::string& run_dir, const RunManifest& manifest) {
  return write_file_atomic((fs::path(run_dir) / "manifest.json").string(), manifest.to_json().dump(2) + "\n");
}

Result<RunManifest> read_manifest(const std::string& run_dir) {
  std::string path = (fs::path(run_dir) / "manifest.json").string();
  auto text = read_file(path, kMaxManifestBytes, "the limit for a manifest");
  if (!text) return text.status();
  auto j = parse_json(*text, path);
  if (!j) return j.status();
  return RunManifest::from_json(*j, path);
}

std::string snapshot_dir(const std::string& run_dir, int64_t step) {
  return fmt::format("{}/snapshots/step-{:08d}", run_dir, step);
}

std::string checkpoint_dir(const std::string& run_dir, int64_t step) {
  return fmt::format("{}/checkpoint/step-{:08d}", run_dir, step);
}

Result<AtomicDir> AtomicDir::begin(const std::string& final_dir) {
  fs::path final_path(final_dir);
  std::string tmp = (final_path.parent_path() / ("." + final_path.filename().string() + ".tmp")).string();
  SADDLESCOPE_RETURN_IF_ERROR(injected_write_failure(final_dir));
  std::error_code ec;
  if (fs::exists(tmp, ec)) SADDLESCOPE_RETURN_IF_ERROR(remove_tree(tmp));  // left by a killed writer
  fs::create_directories(tmp, ec);
  if (ec) return Status::Error(tmp + ": cannot create: " + ec.message());
  return AtomicDir(final_dir, tmp);
}

AtomicDir::AtomicDir(AtomicDir&& other) noexcept
    : final_(std::move(other.final_)), tmp_(std::move(other.tmp_)), done_(other.done_) {
  other.done_ = true;
}

AtomicDir::~AtomicDir() {
  if (!done_) (void)remove_tree(tmp_);
}

Status AtomicDir::commit() {
  SADDLESCOPE_CHECK(!done_);
  SADDLESCOPE_RETURN_IF_ERROR(injected_write_failure(final_));
  // Make the files durable before the rename publishes them.
  SADDLESCOPE_RETURN_IF_ERROR(injected_fsync_failure(final_));
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(tmp_, ec)) {
    int fd = ::open(e.path().c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
  }
  // A directory of the same name is from before a resume (the same step written again, the same
  // bits): replace it.
  SADDLESCOPE_RETURN_IF_ERROR(injected_rename_failure(final_));
  if (fs::exists(final_, ec)) SADDLESCOPE_RETURN_IF_ERROR(remove_tree(final_));
  if (std::rename(tmp_.c_str(), final_.c_str()) != 0)
    return Status::Error(final_ + ": cannot rename into place: " + std::strerror(errno));
  done_ = true;
  return Status::Ok();
}

Result<RunDir> RunDir::open(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec)) return Status::Error(path + ": not a run directory (no such directory)");
  if (!fs::exists(fs::path(path) / "manifest.json", ec))
    return Status::Error(path + ": not a run directory (no manifest.json)");
  auto m = read_manifest(path);
  if (!m) return m.status();
  std::string clean = path;  // as the user wrote it (messages quote it), less a trailing '/'
  while (clean.size() > 1 && clean.back() == '/') clean.pop_back();
  return RunDir(clean, std::move(*m));
}

std::string RunDir::study_dir() const {
  return fs::path(path_).lexically_normal().parent_path().parent_path().string();  // path_ has no trailing '/'
}

RunStatus RunDir::state() const {
  if (manifest_.status != RunStatus::kRunning) return manifest_.status;
  if (!manifest_.process) return RunStatus::kStale;
  if (manifest_.process->host == this_host())
    return RunLock::held(study_dir(), manifest_.run_id) ? RunStatus::kRunning : RunStatus::kStale;
  return unix_now() - manifest_.process->heartbeat_unix > kStaleAfterSeconds ? RunStatus::kStale : RunStatus::kRunning;
}

Status RunDir::check_version(const char* entry, int version) const {
  auto it = manifest_.files.find(entry);
  if (it == manifest_.files.end())
    return Status::Error(path_ + "/" + entry + ": the run has no " + entry + " (manifest.json does not list it)");
  if (it->second != version)
    return Status::Error(fmt::format("{}/{}: schema version {}, this saddlescope reads version {}", path_, entry,
                                     it->second, version));
  return Status::Ok();
}

template <class Row>
Result<std::vector<Row>> RunDir::read(const Table<Row>& table) const {
  SADDLESCOPE_RETURN_IF_ERROR(check_version(table.file, table.version));
  return read_table(path_, table);
}

// The header's readers (metrics(), ...) call read() inline: instantiate it here for every table.
template Result<std::vector<MetricsRow>> RunDir::read(const Table<MetricsRow>&) const;
template Result<std::vector<CurvatureRow>> RunDir::read(const Table<CurvatureRow>&) const;
template Result<std::vector<CurvatureEigenRow>> RunDir::read(const Table<CurvatureEigenRow>&) const;
template Result<std::vector<SymmetryRow>> RunDir::read(const Table<SymmetryRow>&) const;
template Result<std::vector<NoiseRow>> RunDir::read(const Table<NoiseRow>&) const;
template Result<std::vector<OpHashRow>> RunDir::read(const Table<OpHashRow>&) const;
template Result<std::vector<OpRow>> RunDir::read(const Table<OpRow>&) const;

std::vector<int64_t> RunDir::snapshot_steps() const {
  std::vector<int64_t> steps;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(path_) / "snapshots", ec)) {
    std::string name = e.path().filename().string();
    if (!e.is_directory() || name.size() != 13 || name.rfind("step-", 0) != 0) continue;
    if (name.find_first_not_of("0123456789", 5) != std::string::npos) continue;
    steps.push_back(std::stoll(name.substr(5)));
  }
  std::sort(steps.begin(), steps.end());
  return steps;
}

namespace {

Result<Snapshot> read_snapshot_files(const std::string& dir, bool grads) {
  Snapshot s;
  std::error_code ec;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir, ec)) files.push_back(e.path());
  if (ec) return Status::Error(dir + ": cannot list: " + ec.message());
  for (const auto& p : files) {
    std::string name = p.filename().string();
    const std::string suffix = grads ? ".grad.npy" : ".npy";
    if (!ends_with(name, suffix) || name.size() == suffix.size() || ends_with(name, ".grad.npy") != grads) continue;
    auto a = read_npy(p.string());
    if (!a) return a.status();
    s.emplace(name.substr(0, name.size() - suffix.size()), std::move(*a));
  }
  return s;
}

}  // namespace

Result<std::string> RunDir::snapshot_path(int64_t step) const {
  SADDLESCOPE_RETURN_IF_ERROR(check_version(kSnapshotsEntry, kSnapshotsVersion));
  std::string dir = snapshot_dir(path_, step);
  std::error_code ec;
  if (fs::is_directory(dir, ec)) return dir;
  std::string have;
  for (int64_t s : snapshot_steps()) have += (have.empty() ? "" : ", ") + std::to_string(s);
  return Status::Error(fmt::format("{}: no snapshot at step {} (snapshots at steps: {})", path_, step,
                                   have.empty() ? "none" : have));
}

Result<Snapshot> RunDir::snapshot(int64_t step) const {
  auto dir = snapshot_path(step);
  if (!dir) return dir.status();
  auto s = read_snapshot_files(*dir, false);
  if (s && s->empty()) return Status::Error(*dir + ": snapshot holds no parameters");
  return s;
}

Result<Snapshot> RunDir::snapshot_grads(int64_t step) const {
  auto dir = snapshot_path(step);
  if (!dir) return dir.status();
  return read_snapshot_files(*dir, true);
}

}  // namespace saddlescope::store
