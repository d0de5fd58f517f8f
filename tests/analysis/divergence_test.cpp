#include "saddlescope/analysis/divergence.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "saddlescope/store/csv.h"
#include "saddlescope/store/files.h"
#include "saddlescope/store/npy.h"
#include "saddlescope/store/run_dir.h"
#include "temp_dir.h"

namespace fs = std::filesystem;

namespace saddlescope::analysis {
namespace {

TEST(UlpDistance, CountsRepresentableValuesBetween) {
  EXPECT_EQ(ulp_distance(1.0f, 1.0f), 0);
  EXPECT_EQ(ulp_distance(1.0f, std::nextafter(1.0f, 2.0f)), 1);
  EXPECT_EQ(ulp_distance(std::nextafter(1.0f, 0.0f), std::nextafter(1.0f, 2.0f)), 2);
  EXPECT_EQ(ulp_distance(0.0f, -0.0f), 0);
  float tiny = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(ulp_distance(-tiny, tiny), 2);  // across zero
  EXPECT_EQ(ulp_distance(1.0, std::nextafter(1.0, 2.0)), 1);
  EXPECT_EQ(ulp_distance(-1.0, 1.0), 2.0 * 0x3ff0000000000000);
  EXPECT_TRUE(std::isinf(ulp_distance(NAN, 1.0f)));
}

// A fake run directory: metrics.csv with `losses` and one snapshot per entry of `snapshots`.
class FakeRun {
 public:
  FakeRun(const testing::TempDir& root, const std::string& name) : dir_(root.file(name)) {
    fs::create_directories(dir_ + "/snapshots");
    store::RunManifest m;
    m.run_id = name;
    m.config_key = "fake";
    m.status = store::RunStatus::kCompleted;
    m.files = {{store::kMetrics.file, store::kMetrics.version}, {store::kSnapshotsEntry, store::kSnapshotsVersion}};
    EXPECT_TRUE(store::write_manifest(dir_, m).ok());
  }
  void losses(const std::vector<double>& l) {
    std::string csv = "step,loss,batch_grad_norm,lr,wall_s\n";
    for (size_t i = 0; i < l.size(); ++i) csv += std::to_string(i) + "," + store::format_double(l[i]) + ",1,0.001,0\n";
    ASSERT_TRUE(store::write_file_atomic(dir_ + "/metrics.csv", csv).ok());
  }
  template <class T>
  void snapshot(int step, const std::string& param, const std::vector<T>& v) {
    std::string d = dir_ + "/snapshots/step-" + std::string(8 - std::to_string(step).size(), '0') + std::to_string(step);
    fs::create_directories(d);
    auto dt = sizeof(T) == 8 ? store::Dtype::kFloat64 : store::Dtype::kFloat32;
    ASSERT_TRUE(store::write_npy(d + "/" + param + ".npy", dt, {static_cast<int64_t>(v.size())}, v.data()).ok());
  }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

TEST(Diverge, IdenticalRuns) {
  testing::TempDir root;
  FakeRun a(root, "a"), b(root, "b");
  for (FakeRun* r : {&a, &b}) {
    r->losses({0.5, 0.4, 0.3});
    r->snapshot<float>(0, "w", {1, 2, 3});
    r->snapshot<float>(2, "w", {1.5f, 2, 3});
  }
  auto d = diverge(a.dir(), b.dir());
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_FALSE(d->first_loss_step);
  EXPECT_FALSE(d->first_param_step);
  EXPECT_EQ(d->loss_steps, 3);
  ASSERT_EQ(d->snapshots.size(), 2u);
  EXPECT_EQ(d->snapshots[1].rel_l2, 0);
  EXPECT_NE(summarize(*d, "A", "B").find("bitwise identical over all 3 steps"), std::string::npos);
}

TEST(Diverge, FindsTheFirstDifferences) {
  testing::TempDir root;
  FakeRun a(root, "a"), b(root, "b");
  a.losses({0.5, 0.4, 0.3, 0.2});
  b.losses({0.5, 0.4, std::nextafter(0.3, 1.0), 0.2});
  for (FakeRun* r : {&a, &b}) r->snapshot<float>(0, "bias", {0, 0}), r->snapshot<float>(0, "w", {1, 2});
  a.snapshot<float>(3, "bias", {0, 0});
  b.snapshot<float>(3, "bias", {0, 0});
  a.snapshot<float>(3, "w", {1, 2});
  b.snapshot<float>(3, "w", {1, std::nextafter(2.0f, 3.0f)});
  auto d = diverge(a.dir(), b.dir());
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->first_loss_step, 2);
  EXPECT_EQ(d->first_param_step, 3);
  const SnapshotDivergence& s = d->snapshots.back();
  EXPECT_EQ(s.differing, 1);
  EXPECT_EQ(s.elements, 4);
  EXPECT_EQ(s.max_ulp_distance, 1);
  EXPECT_EQ(s.first_param, "w");
  EXPECT_NEAR(s.rel_l2, std::ldexp(1.0, -22) / std::sqrt(5.0), 1e-15);
  EXPECT_NE(to_csv(*d).find("3,"), std::string::npos);
}

TEST(Diverge, Float64AgainstFloat32ComparesValuesAndFloat32Ulps) {
  testing::TempDir root;
  FakeRun a(root, "a"), b(root, "b");
  a.losses({0.5});
  b.losses({0.5});
  a.snapshot<double>(0, "w", {1.0, 0.1});
  b.snapshot<float>(0, "w", {1.0f, 0.1f});  // 0.1f != 0.1 in value, but rounds to the same float32
  auto d = diverge(a.dir(), b.dir());
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_FALSE(d->same_format);
  EXPECT_EQ(d->snapshots[0].differing, 1);
  EXPECT_EQ(d->snapshots[0].max_ulp_distance, 0);
}

TEST(Diverge, ErrorsNameTheRun) {
  testing::TempDir root;
  FakeRun a(root, "a"), b(root, "b");
  a.losses({0.5});
  b.losses({0.5});
  auto no_snapshots = diverge(a.dir(), b.dir());
  ASSERT_FALSE(no_snapshots.ok());
  EXPECT_EQ(no_snapshots.status().message(), a.dir() + ": has no snapshots (status completed)");
  a.snapshot<float>(1, "w", {1});
  b.snapshot<float>(2, "w", {1});
  auto no_common = diverge(a.dir(), b.dir());
  ASSERT_FALSE(no_common.ok());
  EXPECT_NE(no_common.status().message().find("no snapshot step in common"), std::string::npos);
  a.snapshot<float>(0, "w", {1});
  b.snapshot<float>(0, "v", {1});
  auto other_params = diverge(a.dir(), b.dir());
  ASSERT_FALSE(other_params.ok());
  EXPECT_NE(other_params.status().message().find("snapshots hold different parameters"), std::string::npos)
      << other_params.status().message();
  auto missing = diverge(a.dir(), root.file("nowhere"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().message(), root.file("nowhere") + ": not a run directory (no such directory)");
  FakeRun c(root, "c");
  c.losses({0.5});
  c.snapshot<float>(0, "w", {1, 2});
  auto shape = diverge(a.dir(), c.dir());
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.status().message().find("w: shapes differ between the runs"), std::string::npos)
      << shape.status().message();
}

}  // namespace
}  // namespace saddlescope::analysis
