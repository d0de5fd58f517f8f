// Study files: the matrix they expand to, the same validation as `saddlescope train` (same messages,
// with the study file's line), and every way a study file can be wrong.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "saddlescope/store/run_dir.h"
#include "saddlescope/study/study.h"
#include "temp_dir.h"

namespace saddlescope::study {
namespace {

using testing::TempDir;

Result<Study> load(const TempDir& dir, const std::string& toml) {
  return load_study(dir.write("s.toml", toml), dir.file("out"));
}

std::string error_of(const TempDir& dir, const std::string& toml) {
  auto s = load(dir, toml);
  EXPECT_FALSE(s.ok()) << toml;
  return s.ok() ? "" : s.status().message();
}

TEST(Study, ExpandsModelsTimesConfigsTimesSeedsInTheFilesOrder) {
  TempDir dir;
  auto s = load(dir, R"(name = "m"
seeds = { from = 4, to = 5 }
[base]
data = "teacher"
model = "linear"
steps = 10
[models.wide]
linear_hidden = 8
[models.narrow]
linear_hidden = 2
[configs.zeta]
threads = 1
[configs.alpha]
threads = 1
dtype = "float64"
)");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->name, "m");
  std::vector<std::string> labels;
  for (const auto& r : s->runs) labels.push_back(r.label());
  // The file's order, not the alphabet's.
  EXPECT_EQ(labels, (std::vector<std::string>{"wide/zeta/s4", "wide/zeta/s5", "wide/alpha/s4", "wide/alpha/s5",
                                              "narrow/zeta/s4", "narrow/zeta/s5", "narrow/alpha/s4", "narrow/alpha/s5"}));
  for (size_t i = 0; i < s->runs.size(); ++i) EXPECT_EQ(s->runs[i].task, static_cast<int64_t>(i));
  const StudyRun& r = s->runs[2];
  EXPECT_EQ(r.cfg.linear_hidden, 8);
  EXPECT_EQ(r.cfg.execution.dtype, trainer::Dtype::kFloat64);
  EXPECT_EQ(r.cfg.seed, 4);
  EXPECT_EQ(r.cfg.out, dir.file("out"));
  EXPECT_FALSE(r.cuda());

  // The run id is the one `saddlescope train` gives the same settings.
  trainer::ConfigBuilder b;
  for (auto [k, v] : std::vector<std::pair<std::string, std::string>>{
           {"data", "teacher"}, {"model", "linear"}, {"steps", "10"}, {"linear_hidden", "8"}, {"threads", "1"},
           {"dtype", "float64"}, {"seed", "4"}})
    ASSERT_TRUE(b.set_flag(k, v).ok());
  auto cfg = b.resolve();
  ASSERT_TRUE(cfg.ok());
  EXPECT_EQ(r.run_id, store::make_run_id(cfg->run_prefix(), cfg->identity()));
}

TEST(Study, ACudaRunKnowsWhetherItNamesItsGpu) {
  TempDir dir;
  auto s = load(dir, "seeds = [1]\n[configs.cpu]\ndevice = \"cpu\"\n[configs.any]\ndevice = \"cuda\"\n"
                     "[configs.one]\ndevice = \"cuda:1\"\n");
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->runs.size(), 3u);
  EXPECT_FALSE(s->runs[0].cuda());
  EXPECT_EQ(s->runs[0].cuda_index(), -1);
  EXPECT_TRUE(s->runs[1].cuda());
  EXPECT_EQ(s->runs[1].cuda_index(), -1) << "plain cuda: any GPU";
  EXPECT_TRUE(s->runs[2].cuda());
  EXPECT_EQ(s->runs[2].cuda_index(), 1);
}

TEST(Study, WithoutModelsAndConfigsIsOneModelAndOneConfig) {
  TempDir dir;
  auto s = load(dir, "seeds = [3, 1]\n[base]\nmodel = \"linear\"\ndata = \"teacher\"\n");
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->runs.size(), 2u);
  EXPECT_EQ(s->runs[0].label(), "linear/default/s3");
  EXPECT_EQ(s->name, "s");  // the file's stem
  // The default study directory is runs/<name>.
  auto d = load_study(dir.file("s.toml"), "");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->runs[0].cfg.out, "runs/s");
}

TEST(Study, SeedOffsetGivesATablesRunsSeedsOfTheirOwn) {
  TempDir dir;
  // The 2021 study's design: CPU and GPU runs from different initial weights.
  auto s = load(dir, "seeds = [1, 2]\n[base]\nmodel = \"linear\"\ndata = \"teacher\"\n"
                     "[models.lin]\nseed_offset = 10\n[configs.same]\nthreads = 1\n"
                     "[configs.other]\nthreads = 1\nseed_offset = 100\nlr = 0.002\n");
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->runs.size(), 4u);
  EXPECT_EQ(s->runs[0].label(), "lin/same/s11");
  EXPECT_EQ(s->runs[0].cfg.seed, 11);
  EXPECT_EQ(s->runs[3].label(), "lin/other/s112");
  EXPECT_EQ(s->runs[3].cfg.seed, 112);
  EXPECT_EQ(error_of(dir, "seeds = [1]\n[configs.a]\nseed_offset = -1\n"),
            dir.file("s.toml") + ":3: seed_offset must be an integer in 0..2^40");
  EXPECT_EQ(error_of(dir, "seeds = [1]\n[configs.a]\nseed_offset = 1.5\n"),
            dir.file("s.toml") + ":3: seed_offset must be an integer in 0..2^40");
  EXPECT_EQ(error_of(dir, "seeds = [1]\n[base]\nseed_offset = 1\n"),
            dir.file("s.toml") + ":3: seed_offset belongs in a [models.NAME] or [configs.NAME] table, not in [base]");
}

TEST(Study, ConfigKeysAreCheckedAsTrainChecksThemWithTheStudysLine) {
  TempDir dir;
  // The same value in a run config and in a study: the same message but for file and line.
  trainer::ConfigBuilder b;
  Status train = b.load_toml(dir.write("run.toml", "steps = 5\n\nlr = -1\n"));
  ASSERT_FALSE(train.ok());
  std::string study = error_of(dir, "seeds = [1]\n[configs.a]\nlr = -1\n");
  EXPECT_EQ(study.substr(study.find(": ")), train.message().substr(train.message().find(": ")));
  EXPECT_EQ(study, dir.file("s.toml") + ":3: lr must be > 0 and finite, got -1");

  EXPECT_EQ(error_of(dir, "seeds = [1]\n[base]\nsteps = 1.5\n"), dir.file("s.toml") + ":3: steps must be an integer");
  EXPECT_EQ(error_of(dir, "seeds = [1]\n[base]\ncudnn = 1\n"), dir.file("s.toml") + ":3: cudnn must be true or false");
  EXPECT_EQ(error_of(dir, "seeds = [1]\n[models.a]\nlearning_rate = 1\n"),
            dir.file("s.toml") + ":3: unknown key 'learning_rate'");
  // Cross-key checks (resolve) name the line that set the key.
  EXPECT_EQ(error_of(dir, "seeds = [1]\n[configs.cpu]\ndevice = \"cpu\"\ncudnn = false\n"),
            dir.file("s.toml") + ":4: cudnn applies to CUDA devices only (device is cpu)");
}

TEST(Study, EveryWayAStudyFileCanBeWrongIsOneLineNamingFileAndLine) {
  TempDir dir;
  const std::string f = dir.file("s.toml");
  EXPECT_EQ(error_of(dir, "seeds = [1]\nthreads = 2\n"),
            f + ":2: unknown key 'threads' (a study has name, description, seeds, [base], [models.NAME] and [configs.NAME])");
  EXPECT_EQ(error_of(dir, "[base]\nsteps = 3\n"), f + ": seeds is missing: give seeds = [1, 2, 3] or { from = 1, to = 3 }");
  EXPECT_EQ(error_of(dir, "seeds = []\n"), f + ":1: seeds is empty: the study would have no runs");
  EXPECT_EQ(error_of(dir, "seeds = [1, 2, 1]\n"), f + ":1: seeds lists 1 twice");
  EXPECT_EQ(error_of(dir, "seeds = [1, \"2\"]\n"), f + ":1: seeds must list integers");
  EXPECT_EQ(error_of(dir, "seeds = { from = 5, to = 4 }\n"), f + ":1: seeds from 5 to 4 is empty (to must be >= from)");
  EXPECT_EQ(error_of(dir, "seeds = { from = 1 }\n"),
            f + ":1: seeds must be a list of integers or { from = A, to = B } (integers, B >= A)");
  // Too large a matrix is refused from the axes' sizes, before anything is built.
  EXPECT_EQ(error_of(dir, "seeds = { from = 0, to = 9223372036854775806 }\n[configs.a]\nthreads = 1\n"),
            f + ":1: seeds: 9223372036854775808 seeds × 1 models and configs is more than the 100000 runs a study may have");
  EXPECT_EQ(error_of(dir, "seeds = [1]\n[base]\nlr =t\n").find('\n'), std::string::npos);  // fuzz_config's finding
  std::string deep_key;  // tables a quarter of a million deep: refused before the TOML parser recurses
  for (int i = 0; i < 250000; ++i) deep_key += "a.";
  EXPECT_EQ(error_of(dir, "seeds = [1]\n[base]\n" + deep_key + "b = 1\n"),
            f + ":3: a dotted key of more than 64 parts (tables nested that deep are not a config)");
  EXPECT_EQ(error_of(dir, "seeds = { from = 1, to = 10000000 }\n"),  // issue 18's 10^7 runs
            f + ":1: seeds: 10000000 seeds × 1 models and configs is more than the 100000 runs a study may have");
  EXPECT_EQ(error_of(dir, "seeds = { from = 1, to = 60000 }\n[configs.a]\nthreads = 1\n[configs.b]\nthreads = 2\n"),
            f + ":1: seeds: 60000 seeds × 2 models and configs is more than the 100000 runs a study may have");
  EXPECT_EQ(error_of(dir, "seeds = [1]\n[base]\nseed = 3\n"), f + ":3: seed is set by the study (its seeds), not in [base]");
  EXPECT_EQ(error_of(dir, "seeds = [1]\n[configs.a]\nout = \"x\"\n"),
            f + ":3: out is set by the study (study run --out), not in [configs.a]");
  EXPECT_EQ(error_of(dir, "seeds = [1]\n[configs.\"a/b\"]\nthreads = 1\n"),
            f + ":2: configs name 'a/b' must be 1-64 characters of A-Z a-z 0-9 . _ - (it is part of each run's label)");
  EXPECT_EQ(error_of(dir, "seeds = [1]\nconfigs = 3\n"), f + ":2: configs must be a table of tables ([configs.NAME])");
  EXPECT_EQ(error_of(dir, "seeds = [1]\n[configs]\n"), f + ":2: [configs] has no tables; give at least one [configs.NAME]");
  EXPECT_EQ(error_of(dir, "seeds = [1]\n[configs]\na = 1\n"), f + ":3: configs.a must be a table ([configs.a])");
  EXPECT_EQ(error_of(dir, "seeds = [1]\nname = \"../x\"\n"), f + ":2: name must be a string of A-Z a-z 0-9 . _ -");
  EXPECT_EQ(error_of(dir, "seeds = [1\n"), f + ":1: Error while parsing array: encountered end-of-file");
  // Two configs that change nothing between them are one run, twice.
  std::string same = error_of(dir, "seeds = [1]\n[configs.a]\nthreads = 1\n[configs.b]\nthreads = 1\nlog_every = 5\n");
  EXPECT_EQ(same.substr(0, same.find('(')), f + ": autoencoder/a/s1 and autoencoder/b/s1 are the same run ");
  EXPECT_NE(same.find("their tables differ in nothing that changes the result"), std::string::npos);
  // Not a regular file, and a file too large to be a study.
  auto d = load_study(dir.path(), dir.file("out"));
  EXPECT_EQ(d.status().message(), dir.path() + ": not a regular file");
}

}  // namespace
}  // namespace saddlescope::study

#include "saddlescope/study/slurm.h"

namespace saddlescope::study {
namespace {

// A study directory whose path is full of shell metacharacters reaches sbatch, and the node's
// saddlescope through the job script, as exactly the arguments it is: nothing in it is run.
TEST(Slurm, ShellMetacharactersInPathsAreArgumentsNotCommands) {
  TempDir dir;
  auto s = load(dir, "seeds = [1]\n[base]\nmodel = \"linear\"\ndata = \"teacher\"\nthreads = 1\n");
  ASSERT_TRUE(s.ok()) << s.status().message();
  const std::string out = dir.file("a b $(touch pwned1) `touch pwned2` \"q\" 'q'; touch pwned3 &");
  // A recorder for the node's saddlescope and for sbatch: one argument per line.
  const std::string bin = dir.file("bin");
  std::filesystem::create_directories(bin);
  for (const char* name : {"recorder", "sbatch"}) {
    std::ofstream f(bin + "/" + name);
    f << "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done > \"$0.args\"\necho 42\n";
    f.close();
    std::filesystem::permissions(bin + "/" + name, std::filesystem::perms::owner_all);
  }
  auto jobs = plan_slurm(*s, out, SlurmOptions{bin + "/recorder", "", "", 1});
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  const std::string path = ::getenv("PATH");
  ::setenv("PATH", (bin + ":" + path).c_str(), 1);
  Status submitted = submit_slurm(&*jobs, out);
  ::setenv("PATH", path.c_str(), 1);
  ASSERT_TRUE(submitted.ok()) << submitted.message();
  auto lines = [](const std::string& file) {
    std::vector<std::string> v;
    std::ifstream in(file);
    for (std::string l; std::getline(in, l);) v.push_back(l);
    return v;
  };
  EXPECT_EQ(lines(bin + "/sbatch.args"), (*jobs)[0].sbatch.size() > 1
                                             ? std::vector<std::string>((*jobs)[0].sbatch.begin() + 1, (*jobs)[0].sbatch.end())
                                             : std::vector<std::string>{});
  EXPECT_EQ(lines(bin + "/sbatch.args").back(), out + "/slurm/cpu-t1.sh");
  // The array task as Slurm starts it: the script under sh, the task number in the environment.
  const std::string script = out + "/slurm/cpu-t1.sh";
  std::string quoted = "'";
  for (char c : script) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  quoted += "'";
  ASSERT_EQ(std::system(("cd " + dir.path() + " && SLURM_ARRAY_TASK_ID=0 sh " + quoted).c_str()), 0);
  EXPECT_EQ(lines(bin + "/recorder.args"),
            (std::vector<std::string>{"study", "exec", out + "/study.toml", "--out", out, "--task", "0"}));
  for (const char* f : {"pwned1", "pwned2", "pwned3"}) EXPECT_FALSE(std::filesystem::exists(dir.file(f))) << f;
}

TEST(Slurm, JobsGroupRunsByResourcesAndNeedExplicitThreads) {
  TempDir dir;
  auto s = load(dir, "seeds = [1, 2]\n[base]\nmodel = \"linear\"\ndata = \"teacher\"\nthreads = 1\n"
                     "[configs.a]\nlr = 1e-2\n[configs.b]\nthreads = 2\n[configs.c]\ndevice = \"cuda\"\n");
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto jobs = plan_slurm(*s, dir.file("out"), SlurmOptions{"/opt/it's/saddlescope", "gpu", "10", 2});
  ASSERT_TRUE(jobs.ok()) << jobs.status().message();
  ASSERT_EQ(jobs->size(), 3u);
  EXPECT_EQ((*jobs)[0].group, "cpu-t1");
  EXPECT_EQ((*jobs)[0].tasks, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ((*jobs)[1].group, "cpu-t2");
  EXPECT_EQ((*jobs)[2].group, "cuda-t1");
  const auto& cuda = (*jobs)[2].sbatch;
  EXPECT_NE(std::find(cuda.begin(), cuda.end(), "--gpus-per-task=2"), cuda.end());
  EXPECT_NE(std::find(cuda.begin(), cuda.end(), "--array=4-5"), cuda.end());
  EXPECT_NE(std::find(cuda.begin(), cuda.end(), "--partition=gpu"), cuda.end());
  EXPECT_EQ(std::find((*jobs)[0].sbatch.begin(), (*jobs)[0].sbatch.end(), "--gpus-per-task=2"), (*jobs)[0].sbatch.end());
  // Paths are quoted for the shell, a quote in them included.
  EXPECT_NE((*jobs)[0].script.find("exec '/opt/it'\\''s/saddlescope' study exec"), std::string::npos) << (*jobs)[0].script;

  auto d = load(dir, "seeds = [1]\n[base]\nmodel = \"linear\"\ndata = \"teacher\"\n");
  ASSERT_TRUE(d.ok());
  auto refused = plan_slurm(*d, dir.file("out"), SlurmOptions{"saddlescope", "", "", 1});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(), dir.file("s.toml") + ": linear/default/s1 leaves threads to the default, every "
            "core of the machine that runs it, which is not known here: set threads = N in [base] or its table for Slurm");
}

}  // namespace
}  // namespace saddlescope::study
