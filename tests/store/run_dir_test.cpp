#include "saddlescope/store/run_dir.h"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "saddlescope/store/files.h"
#include "temp_dir.h"

namespace saddlescope::store {
namespace {

RunManifest minimal_manifest(const std::string& id) {
  RunManifest m;
  m.run_id = id;
  m.config_key = "ae-cpu-t1-00000000";
  m.files = {{kMetrics.file, kMetrics.version}, {kSnapshotsEntry, kSnapshotsVersion}};
  return m;
}

TEST(RunId, ValidAndInvalid) {
  EXPECT_TRUE(validate_run_id("prednet-cuda-cudnn-s3-1a2b3c4d").ok());
  EXPECT_TRUE(validate_run_id("a.b_c").ok());
  for (const char* bad : {"", ".", "..", "a/b", "../x", "a b", "x\\y"}) {
    Status s = validate_run_id(bad);
    EXPECT_FALSE(s.ok()) << bad;
    EXPECT_NE(s.message().find("run id"), std::string::npos);
  }
  EXPECT_FALSE(validate_run_id(std::string(129, 'a')).ok());
}

TEST(RunId, StableHashOfTheConfig) {
  std::string a = make_run_id("ae-cpu", R"({"lr":0.001})");
  EXPECT_EQ(a, make_run_id("ae-cpu", R"({"lr":0.001})"));
  EXPECT_NE(a, make_run_id("ae-cpu", R"({"lr":0.002})"));
  EXPECT_EQ(a.size(), std::string("ae-cpu-").size() + 8);
  EXPECT_TRUE(validate_run_id(a).ok());
}

TEST(RunDir, TemporaryNamesAreTheWritersOwn) {
  for (const char* t : {".step-00000010.tmp", "manifest.json.tmp.123", "metrics.csv.resume", "catalog.sqlite.tmp.9"})
    EXPECT_TRUE(is_temporary_name(t)) << t;
  for (const char* f : {"step-00000010", "manifest.json", "metrics.csv", "w.npy", "tmp", ".x.lock", ""})
    EXPECT_FALSE(is_temporary_name(f)) << f;
}

TEST(RunDir, CreateRefusesAnExistingRunUnlessReplacing) {
  testing::TempDir dir;
  auto first = create_run_dir(dir.path(), "r1", false);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_TRUE(std::filesystem::is_directory(*first));
  write_file_atomic(*first + "/old.txt", "x");
  auto again = create_run_dir(dir.path(), "r1", false);
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.status().message().find("exists"), std::string::npos);
  EXPECT_NE(again.status().message().find("--force"), std::string::npos);
  auto replaced = create_run_dir(dir.path(), "r1", true);
  ASSERT_TRUE(replaced.ok());
  EXPECT_FALSE(std::filesystem::exists(*replaced + "/old.txt"));
  EXPECT_FALSE(create_run_dir(dir.path(), "../escape", false).ok());
}

TEST(Manifest, WritesAtomicallyAndReadsBackEveryField) {
  testing::TempDir dir;
  RunManifest m = minimal_manifest("r1");
  m.status = RunStatus::kInterrupted;
  m.stopped_by = "SIGTERM";
  m.process = ProcessInfo{42, "host-a", 1.5e9};
  m.config = {{"model", "autoencoder"}, {"seed", 3}};
  m.steps_completed = 120;
  m.checkpoint_step = 100;
  m.resumes = 2;
  m.evaluation = Evaluation{"test", 0.01, "mean training image", 0.07, {0.1, 0.2}, {0.3, 0.4}};
  m.extra["probe_examples"] = {{"asked", 256}, {"used", 64}};
  ASSERT_TRUE(write_manifest(dir.path(), m).ok());
  auto back = read_manifest(dir.path());
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->to_json(), m.to_json());
  EXPECT_EQ(back->status, RunStatus::kInterrupted);
  EXPECT_EQ(back->process->host, "host-a");
  EXPECT_EQ(*back->checkpoint_step, 100);
  EXPECT_FALSE(back->final_loss) << "null, not 0.0, unless completed";
  EXPECT_EQ(back->config_value("seed"), 3);
  EXPECT_TRUE(back->config_value("nothing").is_null());
  for (const auto& e : std::filesystem::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename(), "manifest.json") << "no temporary file left behind";
}

TEST(Manifest, RefusesForeignNewerOrMalformedFiles) {
  testing::TempDir dir;
  std::string path = dir.file("manifest.json");
  auto expect = [&](const std::string& text, const std::string& what) {
    write_file_atomic(path, text);
    auto m = read_manifest(dir.path());
    ASSERT_FALSE(m.ok()) << text;
    EXPECT_NE(m.status().message().find(path + ": " + what), std::string::npos) << m.status().message();
  };
  expect("{not json", "not valid JSON");
  expect("[1,2]", "not a JSON object");
  expect(R"({"format":"something-else","format_version":1})", "not a saddlescope run manifest");
  expect(R"({"format":"saddlescope.run","format_version":1})", "format_version is 1, this saddlescope reads only 2");
  expect(R"({"format":"saddlescope.run"})", "format_version is null");
  nlohmann::json good = minimal_manifest("r1").to_json();
  auto with = [&](const char* key, nlohmann::json v) {
    nlohmann::json j = good;
    j[key] = std::move(v);
    return j.dump();
  };
  expect(with("status", "runing"), "status 'runing' is not one of running, completed, diverged, failed, interrupted");
  expect(with("steps_completed", "12"), "steps_completed must be an integer");
  expect(with("steps_completed", -1), "steps_completed must be >= 0");
  expect(with("final_loss", "0.1"), "final_loss must be a number");
  expect(with("files", {{"metrics.csv", "one"}}), "files must be an object of integers");
  expect(with("process", {{"pid", 1}}), "process.host is missing");
  nlohmann::json no_id = good;
  no_id.erase("run_id");
  expect(no_id.dump(), "run_id is missing");
  auto missing = read_manifest(dir.file("nowhere"));
  ASSERT_FALSE(missing.ok());
}

MetricsRow metrics_row(int64_t step, double loss) {
  MetricsRow r;
  r.step = step;
  r.loss = loss;
  r.batch_grad_norm = 1.0 / 3;
  r.lr = 1e-3;
  r.wall_s = 0.1 * step;
  return r;
}

TEST(Table, RoundTripsEveryBitAndRefusesAnotherHeader) {
  testing::TempDir dir;
  auto w = TableWriter<MetricsRow>::create(dir.path(), kMetrics);
  ASSERT_TRUE(w.ok()) << w.status().message();
  const double odd[] = {0.1, -0.0, 1e-310, std::nan(""), INFINITY, 123456789.123456789};
  for (int i = 0; i < 6; ++i) w->append(metrics_row(i, odd[i]));
  ASSERT_TRUE(w->flush().ok());
  auto rows = read_table(dir.path(), kMetrics);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 6u);
  for (int i = 0; i < 6; ++i) {
    double a = (*rows)[i].loss, b = odd[i];
    EXPECT_TRUE(std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b))) << i;
    EXPECT_EQ((*rows)[i].batch_grad_norm, 1.0 / 3);
  }
  write_file_atomic(dir.file("metrics.csv"), "step,loss,grad_norm,lr,wall_s\n0,1,1,1,1\n");
  auto old = read_table(dir.path(), kMetrics);
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().message().find("metrics.csv: header is not that of metrics.csv version 1 (expected "
                                        "step,loss,batch_grad_norm,lr,wall_s)"),
            std::string::npos)
      << old.status().message();
  write_file_atomic(dir.file("metrics.csv"), "step,loss,batch_grad_norm,lr,wall_s\n0,x,1,1,1\n");
  auto bad = read_table(dir.path(), kMetrics);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("metrics.csv:2: column loss must be a number, got 'x'"), std::string::npos)
      << bad.status().message();
}

TEST(Table, ATornLastRowIsNotReadAndAResumeDropsLaterRows) {
  testing::TempDir dir;
  write_file_atomic(dir.file("metrics.csv"), "step,loss,batch_grad_norm,lr,wall_s\n0,1,1,1,1\n1,2,2,2,2\n2,3,3,3,3\n3,4,4");
  auto rows = read_table(dir.path(), kMetrics);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  EXPECT_EQ(rows->size(), 3u) << "the torn row of a killed writer is not a row";
  auto w = TableWriter<MetricsRow>::resume(dir.path(), kMetrics, 2);
  ASSERT_TRUE(w.ok()) << w.status().message();
  w->append(metrics_row(2, 5));
  ASSERT_TRUE(w->flush().ok());
  auto after = read_table(dir.path(), kMetrics);
  ASSERT_TRUE(after.ok());
  ASSERT_EQ(after->size(), 3u);
  EXPECT_EQ((*after)[1].loss, 2);
  EXPECT_EQ((*after)[2].loss, 5);
  EXPECT_FALSE(std::filesystem::exists(dir.file("metrics.csv.resume")));
}

TEST(Table, InjectedWriteFailuresNameTheFile) {
  testing::TempDir dir;
  setenv("SADDLESCOPE_FAIL_WRITE", "curvature.csv", 1);
  auto w = TableWriter<MetricsRow>::create(dir.path(), kMetrics);
  ASSERT_TRUE(w.ok());
  w->append(metrics_row(0, 1));
  EXPECT_TRUE(w->flush().ok()) << "another file";
  auto c = TableWriter<CurvatureRow>::create(dir.path(), kCurvature);
  ASSERT_TRUE(c.ok());
  c->append(CurvatureRow{});
  Status s = c->flush();
  unsetenv("SADDLESCOPE_FAIL_WRITE");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), dir.file("curvature.csv") + ": write failed: No space left on device (injected by SADDLESCOPE_FAIL_WRITE)");
}

TEST(AtomicDir, CompleteOrAbsent) {
  testing::TempDir dir;
  std::string final_dir = dir.file("snapshots/step-00000001");
  std::filesystem::create_directories(dir.file("snapshots"));
  {
    auto d = AtomicDir::begin(final_dir);
    ASSERT_TRUE(d.ok()) << d.status().message();
    write_file_atomic(d->path() + "/a.npy", "x");
    EXPECT_FALSE(std::filesystem::exists(final_dir)) << "not visible before commit";
  }
  EXPECT_FALSE(std::filesystem::exists(final_dir));
  EXPECT_FALSE(std::filesystem::exists(dir.file("snapshots/.step-00000001.tmp"))) << "abandoned: removed";
  auto d = AtomicDir::begin(final_dir);
  ASSERT_TRUE(d.ok());
  write_file_atomic(d->path() + "/a.npy", "y");
  ASSERT_TRUE(d->commit().ok());
  EXPECT_TRUE(std::filesystem::exists(final_dir + "/a.npy"));
}

TEST(RunDir, ReadsSnapshotsAndSaysWhatIsMissing) {
  testing::TempDir study;
  auto run = create_run_dir(study.path(), "r1", false);
  ASSERT_TRUE(run.ok());
  ASSERT_TRUE(write_manifest(*run, minimal_manifest("r1")).ok());
  for (int64_t step : {0, 50}) {
    std::filesystem::create_directories(*run + "/snapshots");
    auto d = AtomicDir::begin(snapshot_dir(*run, step));
    float w[2] = {1.f, float(step)};
    ASSERT_TRUE(write_npy(d->path() + "/fc.weight.npy", Dtype::kFloat32, {2}, w).ok());
    ASSERT_TRUE(write_npy(d->path() + "/fc.weight.grad.npy", Dtype::kFloat32, {2}, w).ok());
    ASSERT_TRUE(d->commit().ok());
  }
  std::filesystem::create_directories(*run + "/snapshots/.step-00000100.tmp");  // a killed writer's
  auto r = RunDir::open(*run + "/");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->path(), *run) << "without the trailing /";
  EXPECT_EQ(r->snapshot_steps(), (std::vector<int64_t>{0, 50}));
  auto s = r->snapshot(50);
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->size(), 1u);
  EXPECT_EQ(s->at("fc.weight").data<float>()[1], 50.f);
  EXPECT_EQ(r->snapshot_grads(50)->size(), 1u);
  auto none = r->snapshot(100);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().message(), *run + ": no snapshot at step 100 (snapshots at steps: 0, 50)");
  auto curv = r->curvature();
  ASSERT_FALSE(curv.ok());
  EXPECT_EQ(curv.status().message(), *run + "/curvature.csv: the run has no curvature.csv (manifest.json does not list it)");
  RunManifest newer = minimal_manifest("r1");
  newer.files[kMetrics.file] = 9;
  ASSERT_TRUE(write_manifest(*run, newer).ok());
  auto m = RunDir::open(*run)->metrics();
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), *run + "/metrics.csv: schema version 9, this saddlescope reads version 1");
  EXPECT_EQ(RunDir::open(study.file("nope")).status().message(), study.file("nope") + ": not a run directory (no such directory)");
}

TEST(RunLock, OneHolderAndLivenessForReaders) {
  testing::TempDir study;
  EXPECT_FALSE(RunLock::held(study.path(), "r1"));
  {
    auto a = RunLock::acquire(study.path(), "r1");
    ASSERT_TRUE(a.ok()) << a.status().message();
    EXPECT_TRUE(RunLock::held(study.path(), "r1"));
    // A second process cannot take it (flock locks are per open file: a fork shows it).
    pid_t child = fork();
    if (child == 0) _exit(RunLock::acquire(study.path(), "r1").ok() ? 1 : 0);
    int status = 0;
    waitpid(child, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the second acquirer must lose";
  }
  EXPECT_FALSE(RunLock::held(study.path(), "r1")) << "released with its holder";
  // A holder killed with SIGKILL releases it too, and a running manifest then reads as stale.
  auto run = create_run_dir(study.path(), "r2", false);
  RunManifest m = minimal_manifest("r2");
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  m.process = ProcessInfo{0, host, 0};
  pid_t child = fork();
  if (child == 0) {
    auto l = RunLock::acquire(study.path(), "r2");
    pause();
    _exit(0);
  }
  for (int i = 0; i < 200 && !RunLock::held(study.path(), "r2"); ++i) usleep(10000);
  ASSERT_TRUE(write_manifest(*run, m).ok());
  EXPECT_EQ(RunDir::open(*run)->state(), RunStatus::kRunning);
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  EXPECT_EQ(RunDir::open(*run)->state(), RunStatus::kStale);
}

}  // namespace
}  // namespace saddlescope::store
