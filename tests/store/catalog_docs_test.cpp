// docs/catalog.md is true: its example queries run and give what they say, and it names every table
// and column the catalogue has.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>

#include "run_fixture.h"
#include "saddlescope/store/catalog.h"
#include "saddlescope/store/files.h"
#include "sql.h"
#include "temp_dir.h"

namespace saddlescope::store {
namespace {

using testing::make_manifest;
using testing::query;

std::string doc() {
  std::ifstream in(std::string(SADDLESCOPE_SOURCE_DIR) + "/docs/catalog.md");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> sql_blocks(const std::string& text) {
  std::vector<std::string> blocks;
  std::regex block("```sql\n([\\s\\S]*?)```");
  for (std::sregex_iterator it(text.begin(), text.end(), block), end; it != end; ++it) blocks.push_back((*it)[1]);
  return blocks;
}

// Three CPU seeds and three CUDA seeds of an autoencoder (the last still running on a GPU node), op
// taps on one run of each, curvature on the first CPU run, and one unreadable run directory.
std::string example_study(const testing::TempDir& study) {
  auto add = [&](const std::string& id, const std::string& device, int64_t seed, RunStatus status) {
    RunManifest m = make_manifest(id, status, seed, "autoencoder-" + device + "-t1");
    m.config["device"] = device;
    if (status == RunStatus::kRunning) {
      m.process = ProcessInfo{4242, "gpu-node-1", 1.8e9};
      m.timings.started = "2026-01-02T00:00:00Z";
    }
    return testing::add_run(study.path(), m, 10, id == "autoencoder-cpu-t1-s0-6a417f23" ? 5 : 0);
  };
  std::string cpu0 = add("autoencoder-cpu-t1-s0-6a417f23", "cpu", 0, RunStatus::kCompleted);
  add("autoencoder-cpu-t1-s1-0b9d2e11", "cpu", 1, RunStatus::kCompleted);
  add("autoencoder-cpu-t1-s2-77c1a0f4", "cpu", 2, RunStatus::kCompleted);
  std::string cuda0 = add("autoencoder-cuda-t1-s0-5e8f3b2a", "cuda", 0, RunStatus::kCompleted);
  add("autoencoder-cuda-t1-s1-c3d4e5f6", "cuda", 1, RunStatus::kCompleted);
  add("autoencoder-cuda-t1-s2-9a8b7c6d", "cuda", 2, RunStatus::kRunning);
  auto tap = [](const std::string& dir, const std::vector<std::string>& flags) {
    std::vector<OpRow> rows;
    for (size_t i = 0; i < flags.size(); ++i)
      rows.push_back({0, "encoder.0", "fwd", std::to_string(i), 1, 1, 0, 1e-7, 0, 0, "linear", "float32", 784, flags[i]});
    auto m = read_manifest(dir);
    testing::write_rows(dir, &*m, kOps, rows);
    ASSERT_TRUE(write_manifest(dir, *m).ok());
  };
  tap(cpu0, {"within", "within", "within"});
  tap(cuda0, {"within", "beyond", "nonfinite_input"});
  auto bad = create_run_dir(study.path(), "autoencoder-cpu-t1-s3-deadbeef", false);
  EXPECT_TRUE(write_file_atomic(*bad + "/manifest.json", "").ok());
  EXPECT_TRUE(rebuild_catalog(study.path()).ok());
  return study.file("catalog.sqlite");
}

TEST(CatalogDocs, ExampleQueriesRunAndGiveWhatTheySay) {
  testing::TempDir study;
  std::string db = example_study(study);
  auto blocks = sql_blocks(doc());
  ASSERT_EQ(blocks.size(), 6u) << "docs/catalog.md: one expectation per example query";
  std::vector<std::vector<std::string>> want = {
      // final loss over seeds: 0.5 / (1 + seed)
      {"autoencoder-cpu-t1|3|0.305555555555556|0.166666666666667|0.5", "autoencoder-cuda-t1|2|0.375|0.25|0.5"},
      {"autoencoder-cuda-t1-s2-9a8b7c6d|gpu-node-1|4242|2026-01-02T00:00:00Z|1800000000.0"},
      {"0|-1.0|2.0|1", "5|-0.5|2.0|1"},
      {"autoencoder-cpu-t1|encoder.0|fwd|0|3", "autoencoder-cuda-t1|encoder.0|fwd|1|2"},
      // loss = (1 + seed) / (1 + step) < 0.3: step 3 for seed 0, step 6 for seed 1, none in 10 for seed 2
      {"cpu|0|3", "cpu|1|6", "cuda|0|3", "cuda|1|6"},
      {"autoencoder-cpu-t1-s3-deadbeef|manifest.json|" + study.path() +
       "/runs/autoencoder-cpu-t1-s3-deadbeef/manifest.json: not valid JSON"},
  };
  for (size_t i = 0; i < blocks.size(); ++i) EXPECT_EQ(query(db, blocks[i]), want[i]) << blocks[i];
}

TEST(CatalogDocs, EveryTableAndColumnIsDocumented) {
  testing::TempDir study;
  ASSERT_TRUE(rebuild_catalog(study.path()).ok());
  std::string text = doc();
  std::string db = study.file("catalog.sqlite");
  for (const auto& table : query(db, "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")) {
    EXPECT_TRUE(text.find("### `" + table + "`") != std::string::npos ||
                text.find("| `" + table + "` |") != std::string::npos || table == "meta")
        << "table " << table << " has no section or row";
    for (const auto& column : query(db, "SELECT name FROM pragma_table_info('" + table + "')"))
      EXPECT_NE(text.find("`" + column + "`"), std::string::npos) << table << "." << column;
  }
}

}  // namespace
}  // namespace saddlescope::store
