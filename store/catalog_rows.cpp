#include "catalog_rows.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>

#include "catalog_schema.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/store/sha256.h"

namespace fs = std::filesystem;

namespace saddlescope::store {
namespace {

Source stat_source(const std::string& run_dir, const std::string& file) {
  Source s{file};
  struct stat st;
  if (::stat((run_dir + "/" + file).c_str(), &st) == 0) {
    s.bytes = st.st_size;
    s.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  }
  return s;
}

Status insert_runs_row(const Db& db, const std::string& run_id, const RunManifest& m) {
  const std::vector<RunColumn>& cols = run_columns();
  std::string sql = "INSERT INTO runs VALUES (?";
  for (size_t i = 1; i < cols.size(); ++i) sql += ",?";
  auto st = db.prepare(sql + ")");
  if (!st) return st.status();
  nlohmann::json j = m.to_json();
  for (size_t i = 0; i < cols.size(); ++i) {
    int p = static_cast<int>(i) + 1;
    std::string name = cols[i].name;
    if (cols[i].pointer) {
      nlohmann::json::json_pointer ptr(cols[i].pointer);
      st->bind_json(p, j.contains(ptr) ? j[ptr] : nlohmann::json());
    } else if (name == "run_id") {
      st->bind(p, run_id);
    } else if (name == "fingerprint_digest") {
      st->bind(p, sha256_hex(m.fingerprint.dump()));
    } else if (name == "manifest") {
      st->bind(p, j.dump());
    } else {
      SADDLESCOPE_CHECK(!"a computed runs column without a value");
    }
  }
  return st->run();
}

// Appends problems rows and counts them.
class Problems {
 public:
  Problems(const Db& db, std::string run_id) : db_(db), run_id_(std::move(run_id)) {}
  Status add(const std::string& file, const std::string& error) {
    auto st = db_.prepare("INSERT INTO problems VALUES (?,?,?)");
    if (!st) return st.status();
    ++count_;
    return st->bind(1, run_id_).bind(2, file).bind(3, error).run();
  }
  int count() const { return count_; }

 private:
  const Db& db_;
  std::string run_id_;
  int count_ = 0;
};

Status insert_sources(const Db& db, const std::string& run_id, const std::vector<Source>& sources) {
  auto st = db.prepare("INSERT OR REPLACE INTO sources VALUES (?,?,?,?)");
  if (!st) return st.status();
  for (const Source& s : sources)
    SADDLESCOPE_RETURN_IF_ERROR(st->bind(1, run_id).bind(2, s.file).bind(3, s.bytes).bind(4, s.mtime_ns).run());
  return Status::Ok();
}

Status delete_run(const Db& db, const std::string& run_id) {
  std::vector<std::string> tables = {"runs", "problems", "sources"};
  for_each_table([&](const auto& table, auto) { tables.push_back(sql_table_name(table.file)); });
  for (const auto& t : tables) {
    auto st = db.prepare("DELETE FROM " + t + " WHERE run_id = ?");
    if (!st) return st.status();
    SADDLESCOPE_RETURN_IF_ERROR(st->bind(1, run_id).run());
  }
  return Status::Ok();
}

}  // namespace

std::vector<Source> run_sources(const std::string& run_dir, const RunManifest* manifest) {
  std::vector<Source> s = {stat_source(run_dir, "manifest.json")};
  if (manifest)
    for_each_table([&](const auto& table, auto) {
      if (manifest->files.count(table.file)) s.push_back(stat_source(run_dir, table.file));
    });
  std::sort(s.begin(), s.end(), [](const Source& a, const Source& b) { return a.file < b.file; });
  return s;
}

Result<std::vector<Source>> recorded_sources(const Db& db, const std::string& run_id) {
  auto st = db.prepare("SELECT file, bytes, mtime_ns FROM sources WHERE run_id = ? ORDER BY file");
  if (!st) return st.status();
  st->bind(1, run_id);
  std::vector<Source> s;
  SADDLESCOPE_RETURN_IF_ERROR(st->each_row([&] { s.push_back({st->text(0), st->int64(1), st->int64(2)}); }));
  return s;
}

Result<int> index_run(const Db& db, const std::string& run_dir, std::vector<Source>* written) {
  if (written) written->clear();
  std::string run_id = fs::path(run_dir).filename().string();
  SADDLESCOPE_RETURN_IF_ERROR(delete_run(db, run_id));
  std::error_code ec;
  if (!fs::is_directory(run_dir, ec)) return 0;
  Problems problems(db, run_id);
  if (Status valid = validate_run_id(run_id); !valid.ok())
    SADDLESCOPE_RETURN_IF_ERROR(problems.add(".", run_dir + ": " + valid.message()));
  // Files are stat'ed before they are read: one that changes meanwhile looks out of date, not current.
  Source manifest_then = stat_source(run_dir, "manifest.json");
  auto run = RunDir::open(run_dir);
  std::vector<Source> sources = run_sources(run_dir, run ? &run->manifest() : nullptr);
  for (Source& s : sources)
    if (s.file == manifest_then.file) s = manifest_then;
  SADDLESCOPE_RETURN_IF_ERROR(insert_sources(db, run_id, sources));
  if (written) *written = sources;
  if (!run) {
    SADDLESCOPE_RETURN_IF_ERROR(problems.add("manifest.json", run.status().message()));
    return problems.count();
  }
  const RunManifest& m = run->manifest();
  if (m.run_id != run_id)
    SADDLESCOPE_RETURN_IF_ERROR(problems.add(
        "manifest.json", run_dir + "/manifest.json: run_id is '" + m.run_id + "', not its directory's name"));
  SADDLESCOPE_RETURN_IF_ERROR(insert_runs_row(db, run_id, m));
  Status st;
  for_each_table([&](const auto& table, auto reader) {
    if (!st.ok() || !run->has(table.file)) return;
    auto rows = ((*run).*reader)();
    st = rows ? insert_rows(db, table, run_id, *rows) : problems.add(table.file, rows.status().message());
  });
  SADDLESCOPE_RETURN_IF_ERROR(st);
  return problems.count();
}

}  // namespace saddlescope::store
