#include "saddlescope/store/catalog.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "run_fixture.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/sha256.h"
#include "sql.h"
#include "temp_dir.h"

namespace fs = std::filesystem;

namespace saddlescope::store {
namespace {

using testing::add_run;
using testing::make_manifest;
using testing::query;
using testing::query_one;

TEST(Catalog, UpsertIntoNoCatalogueIndexesTheWholeStudy) {
  testing::TempDir study;
  add_run(study.path(), make_manifest("b-run", RunStatus::kCompleted, 1));
  std::string a = add_run(study.path(), make_manifest("a-run", RunStatus::kDiverged, 2));
  Status st = upsert_run(study.path(), a);
  ASSERT_TRUE(st.ok()) << st.message();
  std::string db = study.file("catalog.sqlite");
  EXPECT_EQ(query(db, "SELECT run_id, status, model, device, threads, cudnn, tf32_cudnn, seed, evaluation_mse, "
                      "evaluation_baseline_mse, steps, finished FROM runs ORDER BY run_id"),
            (std::vector<std::string>{"a-run|diverged|autoencoder|cpu|1|1|1|2|NULL|NULL|10|2026-01-01T00:01:00Z",
                                      "b-run|completed|autoencoder|cpu|1|1|1|1|0.02|0.067|10|2026-01-01T00:01:00Z"}));
  EXPECT_EQ(query_one(db, "SELECT json_extract(manifest, '$.evaluation.baseline') FROM runs WHERE run_id = 'b-run'"),
            "mean training image");
  EXPECT_EQ(query_one(db, "SELECT fingerprint_digest FROM runs WHERE run_id = 'b-run'"),
            sha256_hex(make_manifest("b-run", RunStatus::kCompleted).fingerprint.dump()));
  EXPECT_EQ(query(db, "SELECT key, value FROM meta WHERE key != 'written_by' ORDER BY key"),
            (std::vector<std::string>{"format|saddlescope.catalog", "version|4"}));
}

TEST(Catalog, RowTablesFollowTheTableDeclarations) {
  testing::TempDir study;
  ASSERT_TRUE(rebuild_catalog(study.path()).ok());
  std::string db = study.file("catalog.sqlite");
  auto columns = [&](const std::string& table) {
    return query(db, "SELECT name, type FROM pragma_table_info('" + table + "') ORDER BY cid");
  };
  std::vector<std::string> want = {"run_id|TEXT"};
  for (const auto& n : kMetrics.names()) want.push_back(n + "|" + (n == "step" ? "INTEGER" : "REAL"));
  EXPECT_EQ(columns("metrics"), want);
  auto curvature = columns("curvature");
  ASSERT_EQ(curvature.size(), kCurvature.columns.size() + 1);
  EXPECT_EQ(curvature[9], "converged|INTEGER");  // a bool
  auto eigen = columns("curvature_eigen");
  EXPECT_EQ(eigen[2], "end|TEXT");              // an SQL keyword, quoted
  for (const char* t : {"symmetry", "ops"}) EXPECT_EQ(columns(t)[0], "run_id|TEXT") << t;
  EXPECT_EQ(columns("ops")[4], "index|TEXT");  // coordinates joined by ':'
  EXPECT_EQ(query(db, "SELECT name FROM sqlite_master WHERE type = 'index' AND name IN "
                      "('runs_config_key', 'metrics_run_id', 'ops_run_id') ORDER BY name"),
            (std::vector<std::string>{"metrics_run_id", "ops_run_id", "runs_config_key"}));
}

TEST(Catalog, CsvRowsAreIndexedWithNanAsNull) {
  testing::TempDir study;
  std::string dir = add_run(study.path(), make_manifest("r", RunStatus::kCompleted, 0), 30, 10);
  ASSERT_TRUE(upsert_run(study.path(), dir).ok());
  std::string db = study.file("catalog.sqlite");
  EXPECT_EQ(query_one(db, "SELECT count(*), min(step), max(step), sum(loss = 1.0) FROM metrics WHERE run_id = 'r'"),
            "30|0|29|1");
  EXPECT_EQ(query(db, "SELECT step, lambda_min, converged, trace IS NULL, hvp_count FROM curvature ORDER BY step"),
            (std::vector<std::string>{"0|-1.0|1|1|20", "10|-0.666666666666667|1|1|20", "20|-0.333333333333333|1|1|20"}));
}

TEST(Catalog, UpsertReplacesOneRunAndLeavesTheOthers) {
  testing::TempDir study;
  std::string a = add_run(study.path(), make_manifest("a", RunStatus::kCompleted), 10);
  std::string b = add_run(study.path(), make_manifest("b", RunStatus::kCompleted), 10);
  ASSERT_TRUE(rebuild_catalog(study.path()).ok());
  RunManifest m = make_manifest("a", RunStatus::kCompleted);
  testing::write_rows(a, &m, kMetrics, testing::metrics_rows(4));
  testing::write_final_snapshot(a, &m);
  m.final_loss = 0.25;
  ASSERT_TRUE(write_manifest(a, m).ok());
  ASSERT_TRUE(upsert_run(study.path(), a + "/").ok());  // a trailing '/' names the same run
  std::string db = study.file("catalog.sqlite");
  EXPECT_EQ(query(db, "SELECT run_id, count(*) FROM metrics GROUP BY run_id ORDER BY run_id"),
            (std::vector<std::string>{"a|4", "b|10"}));
  EXPECT_EQ(query(db, "SELECT run_id, final_loss FROM runs ORDER BY run_id"),
            (std::vector<std::string>{"a|0.25", "b|0.5"}));
  ASSERT_TRUE(remove_tree(b).ok());
  ASSERT_TRUE(upsert_run(study.path(), b).ok());  // a run directory that is gone leaves no rows
  EXPECT_EQ(query(db, "SELECT DISTINCT run_id FROM metrics UNION SELECT run_id FROM runs"),
            (std::vector<std::string>{"a"}));
}

TEST(Catalog, UpsertRefusesARunOfAnotherStudy) {
  testing::TempDir study, other;
  std::string dir = add_run(other.path(), make_manifest("x", RunStatus::kCompleted));
  Status st = upsert_run(study.path(), dir);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find(dir + ": not a run directory of study " + study.path()), std::string::npos)
      << st.message();
}

// A rebuild whose flush or rename fails keeps the catalogue it would have replaced, byte for byte, and
// leaves no temporary: the catalogue is derived from the runs, so the next rebuild restores it.
TEST(Catalog, AFailedFlushOrRenameKeepsTheOldCatalogue) {
  testing::TempDir study;
  add_run(study.path(), make_manifest("a", RunStatus::kCompleted, 1));
  ASSERT_TRUE(rebuild_catalog(study.path()).ok());
  const std::string db = study.file("catalog.sqlite");
  auto bytes = [&] { std::ifstream in(db, std::ios::binary); return std::string(std::istreambuf_iterator<char>(in), {}); };
  const std::string before = bytes();
  add_run(study.path(), make_manifest("b", RunStatus::kCompleted, 2));
  for (const auto& [hook, error] : {std::pair{"SADDLESCOPE_FAIL_FSYNC", "Input/output error"},
                                    std::pair{"SADDLESCOPE_FAIL_RENAME", "Invalid cross-device link"}}) {
    SCOPED_TRACE(hook);
    setenv(hook, "catalog.sqlite", 1);
    auto n = rebuild_catalog(study.path());
    unsetenv(hook);
    ASSERT_FALSE(n.ok());
    EXPECT_NE(n.status().message().find(db), std::string::npos) << n.status().message();
    EXPECT_NE(n.status().message().find(error), std::string::npos) << n.status().message();
    EXPECT_EQ(bytes(), before);
    for (const auto& e : fs::directory_iterator(study.path()))
      EXPECT_EQ(e.path().filename().string().find("catalog.sqlite.tmp"), std::string::npos) << e.path();
  }
  auto n = rebuild_catalog(study.path());
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(*n, 2);
}

TEST(Catalog, UnreadableRunsAreProblemsNotFailures) {
  testing::TempDir study;
  add_run(study.path(), make_manifest("good", RunStatus::kCompleted));
  std::string bad_csv = add_run(study.path(), make_manifest("bad-csv", RunStatus::kCompleted), 10, 5);
  write_file_atomic(bad_csv + "/metrics.csv", "step,loss\n0,1\n");
  auto bad = create_run_dir(study.path(), "bad-manifest", false);
  write_file_atomic(*bad + "/manifest.json", "{truncated");
  auto n = rebuild_catalog(study.path());
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(*n, 2);
  std::string db = study.file("catalog.sqlite");
  EXPECT_EQ(query(db, "SELECT run_id FROM runs ORDER BY run_id"), (std::vector<std::string>{"bad-csv", "good"}));
  EXPECT_EQ(query(db, "SELECT run_id, count(*) FROM metrics GROUP BY run_id"), (std::vector<std::string>{"good|10"}));
  EXPECT_EQ(query_one(db, "SELECT count(*) FROM curvature WHERE run_id = 'bad-csv'"), "2");  // what could be read
  auto problems = catalog_problems(study.path());
  ASSERT_TRUE(problems.ok()) << problems.status().message();
  ASSERT_EQ(problems->size(), 2u);
  EXPECT_EQ((*problems)[0].run_id, "bad-csv");
  EXPECT_EQ((*problems)[0].file, "metrics.csv");
  EXPECT_NE((*problems)[0].error.find(bad_csv + "/metrics.csv: header is not that of metrics.csv version 1"),
            std::string::npos) << (*problems)[0].error;
  EXPECT_EQ((*problems)[1].run_id, "bad-manifest");
  EXPECT_EQ((*problems)[1].error, *bad + "/manifest.json: not valid JSON");

  // Fixed and upserted: the problem goes.
  write_manifest(*bad, make_manifest("bad-manifest", RunStatus::kFailed));
  ASSERT_TRUE(upsert_run(study.path(), *bad).ok());
  EXPECT_EQ(query(db, "SELECT run_id FROM problems"), (std::vector<std::string>{"bad-csv"}));
  EXPECT_EQ(query_one(db, "SELECT status FROM runs WHERE run_id = 'bad-manifest'"), "failed");
}

TEST(Catalog, ManifestRunIdMustMatchItsDirectory) {
  testing::TempDir study;
  RunManifest m = make_manifest("right", RunStatus::kFailed);
  std::string dir = add_run(study.path(), m);
  fs::rename(dir, study.file("runs/wrong"));
  ASSERT_TRUE(rebuild_catalog(study.path()).ok());
  std::string db = study.file("catalog.sqlite");
  EXPECT_EQ(query(db, "SELECT run_id FROM runs"), (std::vector<std::string>{"wrong"}));
  EXPECT_EQ(query(db, "SELECT run_id, file, error LIKE '%run_id is ''right'', not its directory''s name' FROM problems"),
            (std::vector<std::string>{"wrong|manifest.json|1"}));
}

// Writes a catalogue as another version of saddlescope would have.
void write_foreign_catalogue(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

TEST(Catalog, NewerSchemaVersionIsRefusedAndKept) {
  testing::TempDir study;
  std::string dir = add_run(study.path(), make_manifest("r", RunStatus::kCompleted));
  std::string db = study.file("catalog.sqlite");
  write_foreign_catalogue(db, "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
                              "INSERT INTO meta VALUES ('format', 'saddlescope.catalog'), ('version', '5');");
  std::string want = db + ": catalogue schema version 5, this saddlescope reads version 4";
  Status up = upsert_run(study.path(), dir);
  ASSERT_FALSE(up.ok());
  EXPECT_EQ(up.message().find(want), 0u) << up.message();
  auto re = rebuild_catalog(study.path());
  ASSERT_FALSE(re.ok());
  EXPECT_EQ(re.status().message().find(want), 0u) << re.status().message();
  auto drift = catalog_drift(study.path());
  ASSERT_FALSE(drift.ok());
  EXPECT_EQ(drift.status().message().find(want), 0u);
  EXPECT_EQ(query_one(db, "SELECT value FROM meta WHERE key = 'version'"), "5") << "left as it was";

  write_foreign_catalogue(db, "UPDATE meta SET value = 'x' WHERE key = 'format'");
  Status foreign = upsert_run(study.path(), dir);
  ASSERT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.message(), db + ": not a saddlescope catalogue (meta format is 'x', expected 'saddlescope.catalog')");
}

TEST(Catalog, OlderOrUnreadableCatalogueIsRebuilt) {
  testing::TempDir study;
  add_run(study.path(), make_manifest("r1", RunStatus::kCompleted));
  std::string r2 = add_run(study.path(), make_manifest("r2", RunStatus::kCompleted));
  std::string db = study.file("catalog.sqlite");
  // Version 1: a runs table, no meta.
  write_foreign_catalogue(db, "CREATE TABLE runs (run_id TEXT PRIMARY KEY, status TEXT, eval_mse REAL);"
                              "INSERT INTO runs VALUES ('old', 'completed', 1);");
  auto drift = catalog_drift(study.path());
  ASSERT_TRUE(drift.ok()) << drift.status().message();
  EXPECT_EQ(drift->whole, "no meta table (schema version 1, or empty)");
  ASSERT_TRUE(upsert_run(study.path(), r2).ok());
  EXPECT_EQ(query(db, "SELECT run_id FROM runs ORDER BY run_id"), (std::vector<std::string>{"r1", "r2"}));
  EXPECT_EQ(query_one(db, "SELECT value FROM meta WHERE key = 'version'"), "4");

  write_file_atomic(db, "this is not a database, just bytes that happen to be here");
  ASSERT_TRUE(upsert_run(study.path(), r2).ok());
  EXPECT_EQ(query_one(db, "SELECT count(*) FROM runs"), "2");
}

TEST(Catalog, RebuildLeavesNoTemporaryAndRemovesOldOnes) {
  testing::TempDir study;
  add_run(study.path(), make_manifest("r", RunStatus::kCompleted));
  study.write("catalog.sqlite.tmp.99999", "left by a killed rebuild");
  auto n = rebuild_catalog(study.path());
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 1);
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(study.path())) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{".catalog.lock", "catalog.sqlite", "runs"}));
}

TEST(Catalog, DriftNamesRunsChangedAddedOrGoneSinceIndexed) {
  testing::TempDir study;
  auto missing = catalog_drift(study.path());
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->whole, "missing");
  std::string a = add_run(study.path(), make_manifest("a", RunStatus::kCompleted));
  std::string b = add_run(study.path(), make_manifest("b", RunStatus::kCompleted));
  ASSERT_TRUE(rebuild_catalog(study.path()).ok());
  auto clean = catalog_drift(study.path());
  ASSERT_TRUE(clean.ok());
  EXPECT_EQ(clean->whole, "");
  EXPECT_TRUE(clean->runs.empty());

  std::ofstream(a + "/metrics.csv", std::ios::app) << "10,0.1,0.1,0.001,0.1\n";  // a row appended
  ASSERT_TRUE(remove_tree(b).ok());
  add_run(study.path(), make_manifest("c", RunStatus::kFailed));
  RunManifest d = make_manifest("d", RunStatus::kRunning);
  d.process = ProcessInfo{getpid(), testing::this_host(), 0};
  {
    auto lock = RunLock::acquire(study.path(), "d");
    ASSERT_TRUE(lock.ok());
    add_run(study.path(), d);
    auto drift = catalog_drift(study.path());
    ASSERT_TRUE(drift.ok());
    std::sort(drift->runs.begin(), drift->runs.end());
    EXPECT_EQ(drift->runs, (std::vector<std::string>{"a", "b", "c"})) << "d is running: its files grow";
  }
  auto drift = catalog_drift(study.path());  // d's writer is gone: d is stale, and compared
  ASSERT_TRUE(drift.ok());
  std::sort(drift->runs.begin(), drift->runs.end());
  EXPECT_EQ(drift->runs, (std::vector<std::string>{"a", "b", "c", "d"}));
}

// A writer killed in the middle of its transaction leaves a hot journal, and with a small page cache
// a half-written database file: the next reader or writer must roll it back, not fail or read it.
TEST(Catalog, WriterKilledMidTransactionIsRolledBack) {
  testing::TempDir study;
  std::string a = add_run(study.path(), make_manifest("a", RunStatus::kCompleted), 3000);
  ASSERT_TRUE(rebuild_catalog(study.path()).ok());
  std::string db = study.file("catalog.sqlite");
  pid_t pid = fork();
  if (pid == 0) {
    sqlite3* h = nullptr;
    sqlite3_open(db.c_str(), &h);
    sqlite3_exec(h, "PRAGMA cache_size = 1; BEGIN IMMEDIATE; DELETE FROM metrics; DELETE FROM runs;", nullptr,
                 nullptr, nullptr);
    _exit(0);  // no COMMIT, no ROLLBACK, no close
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(fs::exists(db + "-journal")) << "the test needs a hot journal";
  auto drift = catalog_drift(study.path());
  ASSERT_TRUE(drift.ok()) << drift.status().message();
  EXPECT_EQ(drift->whole, "");
  EXPECT_TRUE(drift->runs.empty());
  EXPECT_EQ(query_one(db, "SELECT count(*) FROM metrics"), "3000");
  ASSERT_TRUE(upsert_run(study.path(), a).ok());
  EXPECT_EQ(query_one(db, "PRAGMA integrity_check"), "ok");
}

}  // namespace
}  // namespace saddlescope::store
