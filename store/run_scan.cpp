#include "run_scan.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>

#include <fmt/format.h>

#include "catalog_schema.h"
#include "saddlescope/base/text.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/json_input.h"
#include "saddlescope/store/npy.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/store/sha256.h"

namespace fs = std::filesystem;

namespace saddlescope::store {
namespace {

using json = nlohmann::json;

// Deeper than any run directory goes (checkpoint/step-N/file is three), temporaries included.
constexpr int kMaxDepth = 6;

constexpr const char* kReserveFile = ".final-write-reserve";  // the trainer's room for its last write

struct Entry {
  std::string rel;  // relative to the run directory
  bool dir = false;
  uint64_t size = 0;
};

const char* file_type(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link (merge neither copies nor follows links)";
  if (S_ISFIFO(mode)) return "a FIFO, not a regular file";
  if (S_ISSOCK(mode)) return "a socket, not a regular file";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device, not a regular file";
  return "not a regular file or directory";
}

// Every entry below `root`, found without following links: only directories and regular files.
Status walk(const std::string& root, const std::string& rel, int depth, std::vector<Entry>* out) {
  std::string dir = rel.empty() ? root : root + "/" + rel;
  if (depth > kMaxDepth) return Status::Error(shown(dir) + ": nested deeper than a run directory goes");
  DIR* d = ::opendir(dir.c_str());
  if (!d) return Status::Error(shown(dir) + ": cannot list: " + std::strerror(errno));
  std::vector<std::string> names;
  while (dirent* e = ::readdir(d))
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0) names.push_back(e->d_name);
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    std::string r = rel.empty() ? name : rel + "/" + name;
    struct stat st {};
    if (::lstat((root + "/" + r).c_str(), &st) != 0)
      return Status::Error(shown(root + "/" + r) + ": cannot stat: " + std::strerror(errno));
    if (S_ISDIR(st.st_mode)) {
      out->push_back({r, true, 0});
      SADDLESCOPE_RETURN_IF_ERROR(walk(root, r, depth + 1, out));
    } else if (S_ISREG(st.st_mode)) {
      out->push_back({r, false, static_cast<uint64_t>(st.st_size)});
    } else {
      return Status::Error(shown(root + "/" + r) + ": " + file_type(st.st_mode));
    }
  }
  return Status::Ok();
}

// What a path inside a run directory is, by the run store's layout (docs/run-store.md).
enum class Part { kManifest, kTable, kDir, kArray, kCheckpointState, kSkipped, kUnknown };

bool is_step_dir(const std::string& name) {
  return name.size() >= 13 && name.rfind("step-", 0) == 0 &&
         name.find_first_not_of("0123456789", 5) == std::string::npos;
}

bool is_array(const std::string& name) { return ends_with(name, ".npy") && name.size() > 4; }

bool is_table(const std::string& name) {
  bool found = false;
  for_each_table([&](const auto& table, auto) { found = found || name == table.file; });
  return found;
}

Part classify(const Entry& e) {
  std::vector<std::string> parts = split(e.rel, '/');
  for (const auto& p : parts)
    if (is_temporary_name(p)) return Part::kSkipped;
  const std::string& top = parts[0];
  bool arrays_dir = top == kSnapshotsEntry || top == kCheckpointEntry;
  switch (parts.size()) {
    case 1:
      if (e.dir) return arrays_dir || top == "curvature" ? Part::kDir : Part::kUnknown;
      if (top == "manifest.json") return Part::kManifest;
      if (top == kReserveFile) return Part::kSkipped;
      return is_table(top) ? Part::kTable : Part::kUnknown;
    case 2:
      if (arrays_dir) return e.dir && is_step_dir(parts[1]) ? Part::kDir : Part::kUnknown;
      return top == "curvature" && !e.dir && is_array(parts[1]) ? Part::kArray : Part::kUnknown;
    case 3:
      if (!arrays_dir || e.dir || !is_step_dir(parts[1])) return Part::kUnknown;
      if (is_array(parts[2])) return Part::kArray;
      return top == kCheckpointEntry && parts[2] == "state.json" ? Part::kCheckpointState : Part::kUnknown;
    default:
      return Part::kUnknown;
  }
}

Status too_large(const std::string& path, uint64_t size, uint64_t max, const char* limit) {
  return Status::Error(fmt::format("{}: {} bytes, more than the {} accepted ({})", path, size, max, limit));
}

// Every entry of manifest.files is a file or directory this saddlescope reads, at its version.
Status check_listed(const std::string& dir, const RunManifest& m) {
  for (const auto& [file, version] : m.files) {
    int want = -1;
    if (file == kSnapshotsEntry) want = kSnapshotsVersion;
    if (file == kCheckpointEntry) want = kCheckpointVersion;
    for_each_table([&, f = file](const auto& table, auto) {
      if (f == table.file) want = table.version;
    });
    if (want < 0)
      return Status::Error(dir + "/manifest.json: files lists '" + shown(file) +
                           "', not a file this saddlescope knows (written by a newer one?)");
    if (version != want)
      return Status::Error(fmt::format("{}/{}: schema version {}, this saddlescope reads version {}", dir, file,
                                       version, want));
  }
  return Status::Ok();
}

// The digest a result array is compared by: its dtype, shape and values.
std::string array_digest(const NpyArray& a) {
  Sha256 h;
  std::string head = std::string(dtype_descr(a.dtype)) + "(";
  for (int64_t d : a.shape) head += std::to_string(d) + ",";
  head += ")";
  h.update(head.data(), head.size());
  h.update(a.bytes.data(), a.bytes.size());
  return h.hex_digest();
}

std::string utc_of(double unix_seconds) {
  std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// The liveness test of a running run opens its lock file: it must be a regular file, if any.
Status check_lock_file(const std::string& run_dir, const std::string& id) {
  std::string lock = (fs::path(run_dir).parent_path() / ("." + id + ".lock")).string();
  struct stat st {};
  if (::lstat(lock.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return Status::Error(lock + ": " + file_type(st.st_mode));
  return Status::Ok();
}

// Reads and checks one file of the layout; records what is copied.
Status scan_file(const std::string& dir, const Entry& e, Part part, uint64_t max_file_bytes, ScannedRun* run) {
  std::string path = dir + "/" + e.rel;
  bool small = part == Part::kCheckpointState;
  uint64_t max = small ? kMaxManifestBytes : max_file_bytes;
  if (e.size > max) return too_large(path, e.size, max, small ? "a checkpoint's state.json" : "--max-file-mib");
  ScannedFile f{e.rel, e.size, ""};
  if (part == Part::kArray) {
    auto a = read_npy(path, &f.sha256);
    if (!a) return a.status();
    if (e.rel.rfind(std::string(kCheckpointEntry) + "/", 0) != 0) run->arrays[e.rel] = array_digest(*a);
  } else if (part == Part::kCheckpointState) {
    auto text = read_file(path, kMaxManifestBytes);
    if (!text) return text.status();
    auto j = parse_json(*text, path);
    if (!j) return j.status();
    if (!j->is_object()) return Status::Error(path + ": not a JSON object (a checkpoint's state.json)");
    f.sha256 = sha256_hex(*text);
  } else {  // a table: read through its reader below
    auto digest = sha256_file(path);
    if (!digest) return digest.status();
    f.sha256 = *digest;
  }
  run->bytes += f.size;
  run->files.push_back(std::move(f));
  return Status::Ok();
}

}  // namespace

std::string shown(const std::string& s) { return printable(s, std::string::npos); }

Result<ScannedRun> scan_run(const std::string& run_dir, uint64_t max_file_bytes) {
  std::string name = fs::path(run_dir).filename().string();
  if (!validate_run_id(name).ok())
    return Status::Error(shown(run_dir) + ": not a run directory: its name is not a run id (1-128 characters of " +
                         "[A-Za-z0-9._-], not . or ..)");
  std::vector<Entry> entries;
  SADDLESCOPE_RETURN_IF_ERROR(walk(run_dir, "", 0, &entries));
  const Entry* manifest = nullptr;
  for (const Entry& e : entries)
    if (classify(e) == Part::kManifest) manifest = &e;
  if (!manifest) return Status::Error(run_dir + ": not a run directory (no manifest.json)");
  if (manifest->size > kMaxManifestBytes)
    return too_large(run_dir + "/manifest.json", manifest->size, kMaxManifestBytes, "a manifest");
  SADDLESCOPE_RETURN_IF_ERROR(check_lock_file(run_dir, name));
  auto opened = RunDir::open(run_dir);
  if (!opened) return opened.status();
  const RunDir& rd = *opened;
  if (rd.id() != name)
    return Status::Error(run_dir + "/manifest.json: run_id is '" + shown(rd.id()) + "', not the directory's name");
  SADDLESCOPE_RETURN_IF_ERROR(check_listed(run_dir, rd.manifest()));

  ScannedRun run;
  run.path = run_dir;
  run.manifest = rd.manifest();
  run.fingerprint_digest = sha256_hex(run.manifest.fingerprint.dump());
  RunStatus state = rd.state();
  if (state == RunStatus::kRunning) {
    const ProcessInfo& p = *run.manifest.process;
    return Status::Error(fmt::format("{}: being written by a live process (pid {} on {}, heartbeat {:.0f} s ago); "
                                     "merge it once it has ended",
                                     run_dir, p.pid, shown(p.host), unix_now() - p.heartbeat_unix));
  }
  if (state == RunStatus::kStale) {  // as `store check --repair` marks it; the source is left as it is
    run.stale = true;
    run.manifest.status = RunStatus::kInterrupted;
    run.manifest.stopped_by = "stale";
    if (run.manifest.timings.finished.empty())
      run.manifest.timings.finished = run.manifest.process ? utc_of(run.manifest.process->heartbeat_unix) : utc_now();
    run.manifest.process.reset();
  }

  for (const Entry& e : entries) {
    Part part = classify(e);
    std::string path = run_dir + "/" + e.rel;
    switch (part) {
      case Part::kManifest:
      case Part::kSkipped:
        break;
      case Part::kUnknown:
        return Status::Error(shown(path) + ": not part of a run directory (a run holds manifest.json, its tables, " +
                             "snapshots/step-N/*.npy, checkpoint/step-N/ and curvature/*.npy)");
      case Part::kDir:
        if ((e.rel == kSnapshotsEntry || e.rel == kCheckpointEntry) && !rd.has(e.rel))
          return Status::Error(path + ": not listed in manifest.json's files");
        run.dirs.push_back(e.rel);
        break;
      case Part::kTable:
        if (!rd.has(e.rel)) return Status::Error(path + ": not listed in manifest.json's files");
        [[fallthrough]];
      case Part::kArray:
      case Part::kCheckpointState:
        SADDLESCOPE_RETURN_IF_ERROR(scan_file(run_dir, e, part, max_file_bytes, &run));
        break;
    }
  }
  // The tables, through their readers (header, every value; a listed table may be absent: a run that
  // failed before its probes created their files).
  Status tables;
  for_each_table([&](const auto& table, auto reader) {
    if (!tables.ok() || !rd.has(table.file) || !file_exists(run_dir + "/" + table.file)) return;
    auto rows = (rd.*reader)();
    if (!rows) tables = rows.status();
  });
  SADDLESCOPE_RETURN_IF_ERROR(tables);
  return run;
}

}  // namespace saddlescope::store
