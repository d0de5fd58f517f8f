// Regression tests for what the fuzz targets (fuzz/, docs/reliability.md) found in the store's readers.
#include <gtest/gtest.h>

#include <sqlite3.h>

#include <filesystem>
#include <string>

#include "saddlescope/store/catalog.h"
#include "saddlescope/store/check.h"
#include "saddlescope/store/csv.h"
#include "saddlescope/store/npy.h"
#include "run_fixture.h"
#include "saddlescope/store/schema.h"
#include "temp_dir.h"

namespace saddlescope::store {
namespace {

// fuzz_npy: a header key holding a newline was echoed into the error, which then spanned two lines.
TEST(FuzzFindings, NpyErrorsShowControlCharactersEscaped) {
  testing::TempDir dir;
  std::string header = "{'sh\nape': (2,), 'descr': '<f4', 'fortran_order': False}";
  header += std::string((64 - (10 + header.size() + 1) % 64) % 64, ' ') + "\n";
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) + '\0' + header;
  auto r = read_npy(dir.write("k.npy", bytes));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), dir.file("k.npy") + ": malformed header at byte 11: unexpected key 'sh\\x0aape'");
  // A dtype string is cut as well as escaped: the file does not choose the message's size.
  std::string longer = "{'descr': '" + std::string(5000, 'x') + "', 'fortran_order': False, 'shape': (0,)}";
  longer += std::string((64 - (12 + longer.size() + 1) % 64) % 64, ' ') + "\n";
  std::string v2 = std::string("\x93NUMPY\x02\x00", 8);
  for (int i = 0; i < 4; ++i) v2 += static_cast<char>((longer.size() >> (8 * i)) & 0xff);
  auto l = read_npy(dir.write("l.npy", v2 + longer));
  ASSERT_FALSE(l.ok());
  EXPECT_LT(l.status().message().size(), 400u) << l.status().message().size();
  EXPECT_NE(l.status().message().find("xxx...' (expected"), std::string::npos);
}

// fuzz_tables: a text field holding a quote read, and writing the row back (a resumed run rewrites
// its tables) aborted on CsvWriter's REQUIRES. The reader now refuses what the writer cannot write.
TEST(FuzzFindings, TableTextWithAQuoteIsRefusedNotRewrittenIntoAnAbort) {
  testing::TempDir dir;
  dir.write("curvature_eigen.csv", "step,end,index,lambda,residual\n0,mi\"n,0,-1,0.1\n");
  auto rows = read_table(dir.path(), kCurvatureEigen);
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.status().message(),
            dir.file("curvature_eigen.csv") + ":2: column end must be text without '\"', got 'mi\"n'");
  auto resumed = TableWriter<CurvatureEigenRow>::resume(dir.path(), kCurvatureEigen, 10);
  ASSERT_FALSE(resumed.ok());
  EXPECT_EQ(resumed.status().message(), rows.status().message());
}

// A malformed number is echoed escaped and cut (a field may be up to a mebibyte long).
TEST(FuzzFindings, CsvErrorsEchoFieldsEscapedAndCut) {
  testing::TempDir dir;
  dir.write("metrics.csv", "step,loss,batch_grad_norm,lr,wall_s\n0,1\r,0,0," + std::string(100000, '9') + "x\n");
  auto rows = read_table(dir.path(), kMetrics);
  ASSERT_FALSE(rows.ok());
  EXPECT_EQ(rows.status().message(), dir.file("metrics.csv") + ":2: column loss must be a number, got '1\\x0d'");
  dir.write("m2.csv", "a\n" + std::string(100000, '9') + "x\n");
  auto any = read_csv(dir.file("m2.csv"));
  ASSERT_FALSE(any.ok());
  EXPECT_LT(any.status().message().size(), 400u);
}

// fuzz_catalog (CI's 30 s run): SQLite's error for a malformed schema quotes the schema's text, and a
// catalogue whose stored CREATE statement holds a newline gave a multi-line error.
TEST(FuzzFindings, CatalogueWithAMalformedSchemaIsAOneLineError) {
  testing::TempDir dir;
  std::filesystem::create_directories(dir.file("runs"));
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(dir.file("catalog.sqlite").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "CREATE TABLE meta(key TEXT, value TEXT); PRAGMA writable_schema = ON; "
                         "UPDATE sqlite_master SET sql = 'CREATE TABLE meta(key \"TE' || char(10) || 'XT)' "
                         "WHERE name = 'meta';",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto problems = catalog_problems(dir.path());
  ASSERT_FALSE(problems.ok());
  EXPECT_EQ(problems.status().message().find('\n'), std::string::npos) << problems.status().message();
  EXPECT_NE(problems.status().message().find("\\x0a"), std::string::npos) << problems.status().message();
  auto drift = catalog_drift(dir.path());
  if (drift.ok()) EXPECT_EQ(drift->whole.find('\n'), std::string::npos) << drift->whole;
  else EXPECT_EQ(drift.status().message().find('\n'), std::string::npos) << drift.status().message();
}

// A study of one completed run (the fuzz target's run id) whose catalogue is the fuzz_catalog corpus
// file `input`. Returns the run's directory.
std::string study_with_catalogue(const testing::TempDir& study, const std::string& input) {
  std::string run = testing::add_run(study.path(), testing::make_manifest("autoencoder-cpu-t1-s0-00000000",
                                                                           RunStatus::kCompleted, 0));
  std::filesystem::copy_file(SADDLESCOPE_SOURCE_DIR "/fuzz/corpus/fuzz_catalog/" + input, study.file("catalog.sqlite"));
  return run;
}

void expect_catalogue_current(const std::string& study) {
  auto drift = catalog_drift(study);
  ASSERT_TRUE(drift.ok()) << drift.status().message();
  EXPECT_EQ(drift->whole, "");
  EXPECT_TRUE(drift->runs.empty()) << drift->runs.size() << " runs drift, the first " << drift->runs[0];
}

// fuzz_catalog (CI's 30 s run, fuzz/corpus/fuzz_catalog/damaged-btree-page.sqlite): a catalogue with a
// damaged b-tree page passed the version check and took the upsert, but read back other rows for the
// run, which then drifted from its directory. Upsert reads the run's sources back and rebuilds on a
// mismatch.
TEST(FuzzFindings, DamagedCatalogueIsRebuiltWhenTheUpsertDoesNotReadBack) {
  testing::TempDir study;
  std::string run = study_with_catalogue(study, "damaged-btree-page.sqlite");
  Status up = upsert_run(study.path(), run);
  ASSERT_TRUE(up.ok()) << up.message();
  expect_catalogue_current(study.path());
}

// fuzz_catalog (CI's 30 s run at e841ebb, fuzz/corpus/fuzz_catalog/damaged-index.sqlite): a catalogue
// whose sources table and its index disagree (rows missing from the index, a page's bytes used twice).
// The upsert reads only its run's rows, which read back, so it succeeds; catalog_drift then failed with
// SQLite's "malformed" as an error, and `store check --repair` could not mend the study. The readers
// now take damage SQLite finds for a catalogue to rebuild.
TEST(FuzzFindings, CatalogueDamagedBeyondTheUpsertsRowsIsFoundByTheReadersAndRebuilt) {
  testing::TempDir study;
  std::string run = study_with_catalogue(study, "damaged-index.sqlite");
  Status up = upsert_run(study.path(), run);
  ASSERT_TRUE(up.ok()) << up.message();
  auto drift = catalog_drift(study.path());
  ASSERT_TRUE(drift.ok()) << drift.status().message();
  EXPECT_EQ(drift->whole, "damaged (SQLite: database disk image is malformed)");
  auto check = check_study(study.path());
  ASSERT_TRUE(check.ok()) << check.status().message();
  ASSERT_EQ(check->problems.size(), 1u);
  EXPECT_EQ(describe(check->problems[0]),
            "catalog.sqlite: damaged (SQLite: database disk image is malformed); `saddlescope store index` (or "
            "check --repair) rebuilds it");
  auto repair = repair_study(study.path());
  ASSERT_TRUE(repair.ok()) << repair.status().message();
  EXPECT_EQ(repair->actions, std::vector<std::string>{"catalog.sqlite: rebuilt (1 runs)"});
  expect_catalogue_current(study.path());
}

}  // namespace
}  // namespace saddlescope::store
