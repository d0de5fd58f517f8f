#include "saddlescope/store/catalog.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <nlohmann/json.hpp>

#include "saddlescope/store/files.h"
#include "saddlescope/store/run_dir.h"
#include "temp_dir.h"

namespace saddlescope::store {
namespace {

void add_run(const std::string& study, const std::string& id, const std::string& status, double mse) {
  auto dir = create_run_dir(study, id, false);
  ASSERT_TRUE(dir.ok());
  nlohmann::json m = {{"format", kManifestFormat}, {"format_version", kManifestVersion}, {"run_id", id},
                      {"status", status}, {"config", {{"model", "autoencoder"}, {"device", "cpu"}, {"seed", 3}}},
                      {"evaluation", {{"mse", mse}, {"baseline_mse", 0.067}}}};
  ASSERT_TRUE(write_manifest(*dir, m).ok());
}

std::vector<std::string> query(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  std::vector<std::string> rows;
  sqlite3_exec(db, sql.c_str(),
               [](void* out, int n, char** vals, char**) {
                 std::string row;
                 for (int i = 0; i < n; ++i) row += (i ? "|" : "") + std::string(vals[i] ? vals[i] : "NULL");
                 static_cast<std::vector<std::string>*>(out)->push_back(row);
                 return 0;
               },
               &rows, nullptr);
  sqlite3_close(db);
  return rows;
}

TEST(Catalog, IndexesEveryRunAndKeepsTheManifest) {
  testing::TempDir study;
  add_run(study.path(), "b-run", kCompleted, 0.01);
  add_run(study.path(), "a-run", kDiverged, 0.5);
  auto n = rebuild_catalog(study.path());
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(*n, 2);
  std::string db = study.file("catalog.sqlite");
  EXPECT_EQ(query(db, "SELECT run_id, status, model, seed, eval_mse FROM runs ORDER BY run_id"),
            (std::vector<std::string>{"a-run|diverged|autoencoder|3|0.5", "b-run|completed|autoencoder|3|0.01"}));
  EXPECT_EQ(query(db, "SELECT json_extract(manifest, '$.evaluation.baseline_mse') FROM runs LIMIT 1"),
            (std::vector<std::string>{"0.067"}));
}

TEST(Catalog, RebuildReplacesAndEmptyStudyIsFine) {
  testing::TempDir study;
  auto empty = rebuild_catalog(study.path());
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(*empty, 0);
  add_run(study.path(), "r", kCompleted, 0.01);
  ASSERT_TRUE(rebuild_catalog(study.path()).ok());
  EXPECT_EQ(query(study.file("catalog.sqlite"), "SELECT count(*) FROM runs"), (std::vector<std::string>{"1"}));
}

TEST(Catalog, BrokenManifestIsNamedAndOldCatalogKept) {
  testing::TempDir study;
  add_run(study.path(), "good", kCompleted, 0.01);
  ASSERT_TRUE(rebuild_catalog(study.path()).ok());
  auto bad = create_run_dir(study.path(), "bad", false);
  write_file_atomic(*bad + "/manifest.json", "{truncated");
  auto n = rebuild_catalog(study.path());
  ASSERT_FALSE(n.ok());
  EXPECT_NE(n.status().message().find("bad/manifest.json"), std::string::npos) << n.status().message();
  EXPECT_EQ(query(study.file("catalog.sqlite"), "SELECT run_id FROM runs"), (std::vector<std::string>{"good"}));
}

}  // namespace
}  // namespace saddlescope::store
