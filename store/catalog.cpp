#include "saddlescope/store/catalog.h"

#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "saddlescope/store/run_dir.h"

namespace fs = std::filesystem;

namespace saddlescope::store {
namespace {

constexpr const char* kSchema = R"sql(
CREATE TABLE runs (
  run_id TEXT PRIMARY KEY, status TEXT NOT NULL, model TEXT, device TEXT, seed INTEGER,
  steps INTEGER, started TEXT, finished TEXT, eval_mse REAL, baseline_mse REAL, manifest TEXT NOT NULL);
)sql";

// Binds a JSON value at `ptr` (or NULL when absent or null) to parameter `i`.
void bind(sqlite3_stmt* st, int i, const nlohmann::json& m, const char* ptr) {
  nlohmann::json::json_pointer p(ptr);
  if (!m.contains(p) || m[p].is_null()) sqlite3_bind_null(st, i);
  else if (m[p].is_number_integer()) sqlite3_bind_int64(st, i, m[p].get<int64_t>());
  else if (m[p].is_number()) sqlite3_bind_double(st, i, m[p].get<double>());
  else sqlite3_bind_text(st, i, m[p].is_string() ? m[p].get<std::string>().c_str() : m[p].dump().c_str(),
                         -1, SQLITE_TRANSIENT);
}

}  // namespace

Result<int> rebuild_catalog(const std::string& study_dir) {
  std::vector<std::string> dirs;
  std::error_code ec;
  fs::path runs = fs::path(study_dir) / "runs";
  if (fs::is_directory(runs, ec))
    for (const auto& e : fs::directory_iterator(runs, ec))
      if (e.is_directory()) dirs.push_back(e.path().string());
  std::sort(dirs.begin(), dirs.end());

  std::vector<nlohmann::json> manifests;
  for (const auto& d : dirs) {
    auto m = read_manifest(d);
    if (!m) return m.status();
    manifests.push_back(m->to_json());
  }

  std::string path = (fs::path(study_dir) / "catalog.sqlite").string();
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  std::remove(tmp.c_str());
  sqlite3* db = nullptr;
  auto fail = [&](const std::string& what) {
    std::string msg = path + ": " + what + (db ? std::string(": ") + sqlite3_errmsg(db) : "");
    sqlite3_close(db);
    std::remove(tmp.c_str());
    return Status::Error(msg);
  };
  if (sqlite3_open(tmp.c_str(), &db) != SQLITE_OK) return fail("cannot create");
  if (sqlite3_exec(db, kSchema, nullptr, nullptr, nullptr) != SQLITE_OK) return fail("schema");
  sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
  sqlite3_stmt* st = nullptr;
  if (sqlite3_prepare_v2(db, "INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?,?,?)", -1, &st, nullptr) !=
      SQLITE_OK)
    return fail("prepare");
  for (const auto& m : manifests) {
    const char* ptrs[] = {"/run_id", "/status", "/config/model", "/config/device", "/config/seed",
                          "/config/steps", "/timings/started", "/timings/finished",
                          "/evaluation/mse", "/evaluation/baseline_mse"};
    for (int i = 0; i < 10; ++i) bind(st, i + 1, m, ptrs[i]);
    std::string text = m.dump();
    sqlite3_bind_text(st, 11, text.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_DONE) {
      sqlite3_finalize(st);
      return fail("insert " + m.value("run_id", "?"));
    }
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  if (sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) return fail("commit");
  if (sqlite3_close(db) != SQLITE_OK) return fail("close");
  db = nullptr;
  if (std::rename(tmp.c_str(), path.c_str()) != 0) return fail("rename");
  return static_cast<int>(manifests.size());
}

}  // namespace saddlescope::store
