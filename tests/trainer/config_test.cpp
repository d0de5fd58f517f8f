#include "saddlescope/trainer/config.h"

#include <cstdlib>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include <nlohmann/json.hpp>

#include "saddlescope/store/config_view.h"
#include "saddlescope/store/run_dir.h"
#include "saddlescope/trainer/config_choices.h"
#include "temp_dir.h"
#include "watchdog.h"

namespace saddlescope::trainer {
namespace {

class ConfigTest : public ::testing::Test {
 protected:
  std::string toml(const std::string& text) { return dir_.write("run.toml", text); }
  // Expects loading `text` to fail with exactly `message` after "<path>:".
  void expect_file_error(const std::string& text, const std::string& message) {
    std::string path = toml(text);
    ConfigBuilder b;
    Status s = b.load_toml(path);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_EQ(s.message(), path + ":" + message);
  }
  void expect_flag_error(const std::string& key, const std::string& value, const std::string& message) {
    ConfigBuilder b;
    Status s = b.set_flag(key, value);
    ASSERT_FALSE(s.ok()) << key << "=" << value;
    EXPECT_EQ(s.message(), message);
  }
  testing::TempDir dir_;
};

TEST_F(ConfigTest, DefaultsAreResolvedAndWrittenOut) {
  // Unset for this test only: the data tests that run after it in the same process read the cache.
  const char* was = std::getenv("SADDLESCOPE_DATA_DIR");
  const std::string saved = was ? was : "";
  unsetenv("SADDLESCOPE_DATA_DIR");
  struct Restore {
    std::string value;
    bool set;
    ~Restore() { if (set) setenv("SADDLESCOPE_DATA_DIR", value.c_str(), 1); }
  } restore{saved, was != nullptr};
  auto c = ConfigBuilder().resolve();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->model, ModelKind::kAutoencoder);
  EXPECT_EQ(c->hidden, (std::vector<int64_t>{256, 64}));
  EXPECT_EQ(c->batch_size, 1);
  EXPECT_DOUBLE_EQ(c->lr, 1e-3);
  EXPECT_GE(c->execution.threads, 1);
  EXPECT_EQ(c->data_seed, c->seed);
  EXPECT_EQ(c->data_dir, "data");
  nlohmann::json j = c->to_json();
  for (const auto& key : config_keys()) EXPECT_TRUE(j.contains(key)) << key;
}

TEST_F(ConfigTest, FileThenFlagsOverride) {
  ConfigBuilder b;
  ASSERT_TRUE(b.load_toml(toml("model = \"autoencoder\"\nsteps = 50\nlr = 0.01\nhidden = [32, 8]\n"
                               "device = \"cuda:1\"\ndata = \"npy:x.npy,y.npy\"\n")).ok());
  ASSERT_TRUE(b.set_flag("steps", "70").ok());
  ASSERT_TRUE(b.set_flag("seed", "9").ok());
  auto c = b.resolve();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->steps, 70);
  EXPECT_DOUBLE_EQ(c->lr, 0.01);
  EXPECT_EQ(c->hidden, (std::vector<int64_t>{32, 8}));
  EXPECT_EQ(c->execution.device.name(), "cuda:1");
  EXPECT_EQ(c->data_seed, 9);  // follows the seed unless set
  EXPECT_EQ(c->run_prefix(), "autoencoder-cuda.1-cudnn-t" + std::to_string(c->execution.threads) + "-s9");
}

TEST_F(ConfigTest, FileErrorsNameFileLineAndKey) {
  expect_file_error("steps = 10\nbatchsize = 4\n", "2: unknown key 'batchsize'");
  expect_file_error("lr = -1.0\n", "1: lr must be > 0 and finite, got -1");
  expect_file_error("\nsteps = 0\n", "2: steps must be >= 1, got 0");
  expect_file_error("steps = \"many\"\n", "1: steps must be an integer");
  expect_file_error("hidden = [32, \"x\"]\n", "1: hidden must be a list of integers");
  expect_file_error("hidden = []\n", "1: hidden must list at least one width");
  expect_file_error("device = \"gpu\"\n", "1: device must be cpu, cuda or cuda:N, got 'gpu'");
  expect_file_error("data = \"npy:\"\n", "1: data must be mnist, cifar10[:train=N], moby-dick[:context=T], npy:X.npy[,Y.npy], moving-mnist or teacher, got 'npy:'");
  expect_file_error("model = \"resnet\"\n", "1: model must be one of autoencoder, prednet, linear, torchscript, got 'resnet'");
  expect_file_error("threads = 0\n", "1: threads must be >= 1, got 0");
  expect_file_error("[probes]\nx = 1\n", "1: unknown key 'probes'");
}

// A TOML string may hold a newline (and other control characters): echoed in an error, it is shown
// escaped, so the message stays one line (the fuzzer's finding for data; the other echoes alike).
TEST_F(ConfigTest, AValueWithANewlineIsEchoedOnOneLine) {
  expect_file_error("data = \"teache\\nr\"\n",
                    "1: data must be mnist, cifar10[:train=N], moby-dick[:context=T], npy:X.npy[,Y.npy], moving-mnist or teacher, got 'teache\\x0ar'");
  expect_file_error("device = \"cu\\nda\"\n", "1: device must be cpu, cuda or cuda:N, got 'cu\\x0ada'");
  expect_file_error("perturbation = \"gaussian:1\\n\"\n",
                    "1: perturbation gaussian sigma must be a number > 0, got '1\\x0a'");
  expect_file_error("perturbation = \"bit\\rflip\"\n",
                    "1: perturbation must be none, shuffle-reduction, gaussian:SIGMA[:element|:absolute], "
                    "stochastic-rounding or bitflip[:PARAM[:INDEX]], got 'bit\\x0dflip'");
}

TEST_F(ConfigTest, TomlSyntaxErrorNamesTheLine) {
  std::string path = toml("steps = 10\nlr = = 3\n");
  Status s = ConfigBuilder().load_toml(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().rfind(path + ":2: ", 0), 0u) << s.message();
}

// Absurd nesting in a config (and so in a study: the same parser) is a one-line error naming the file,
// not a stack overflow: arrays a million deep stop at the TOML parser's depth limit, tables a quarter
// of a million deep at the config's.
TEST_F(ConfigTest, NestingAMillionDeepIsAOneLineError) {
  for (const std::string& text : {"a = " + std::string(1000000, '['), std::string("x") + std::string(1, '.') + [] {
                                    std::string k;
                                    for (int i = 0; i < 250000; ++i) k += "a.";
                                    return k + "b = 1\n";
                                  }()}) {
    std::string path = toml(text);
    Status s = ConfigBuilder().load_toml(path);
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.message().rfind(path + ":1: ", 0), 0u) << s.message().substr(0, 200);
    EXPECT_EQ(s.message().find('\n'), std::string::npos);
  }
}

// Found by fuzz_config: toml++ quotes the character it saw, a newline included, and the error was two
// lines. It is shown escaped.
TEST_F(ConfigTest, TomlErrorQuotingANewlineStaysOneLine) {
  std::string path = toml("steps = 10\nlr =t\n\n");
  Status s = ConfigBuilder().load_toml(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
  EXPECT_EQ(s.message().rfind(path + ":2: ", 0), 0u) << s.message();
  EXPECT_NE(s.message().find("saw 't\\x0a'"), std::string::npos) << s.message();
}

// fuzz_study found it: a choice given as a TOML string with an escaped newline was echoed on two lines.
TEST_F(ConfigTest, AChoiceHoldingANewlineIsEchoedOnOneLine) {
  for (const char* key : {"model", "optimizer"}) {
    std::string path = toml(std::string(key) + " = \"auto\\ncoder\"\n");
    ConfigBuilder builder;
    Status s = builder.load_toml(path);
    if (s.ok()) s = builder.resolve().status();
    ASSERT_FALSE(s.ok()) << key;
    EXPECT_EQ(s.message().find('\n'), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("got 'auto\\x0acoder'"), std::string::npos) << s.message();
  }
}

TEST_F(ConfigTest, MissingFileIsNamed) {
  Status s = ConfigBuilder().load_toml(dir_.file("absent.toml"));
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("absent.toml"), std::string::npos) << s.message();
}

TEST_F(ConfigTest, ConfigMustBeARegularFileOfAtMostOneMebibyte) {
  testing::Watchdog watchdog(60);  // reading the FIFO or /dev/zero would hang
  ASSERT_EQ(mkfifo(dir_.file("fifo.toml").c_str(), 0600), 0);
  std::filesystem::create_directory(dir_.file("dir.toml"));
  // Each is refused before a byte is read: a FIFO without a writer would block, /dev/zero never end.
  for (const std::string& path : {dir_.file("fifo.toml"), std::string("/dev/zero"), dir_.file("dir.toml")}) {
    Status s = ConfigBuilder().load_toml(path);
    ASSERT_FALSE(s.ok()) << path;
    EXPECT_EQ(s.message(), path + ": not a regular file");
  }
  std::string big = toml("# " + std::string(kMaxConfigBytes, 'x') + "\nsteps = 10\n");
  Status s = ConfigBuilder().load_toml(big);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.message(), big + ": " + std::to_string(kMaxConfigBytes + 14) + " bytes, more than the 1048576 "
                         "accepted (the limit for a config file)");
  std::string at_limit = toml("steps = 10\n#" + std::string(kMaxConfigBytes - 13, 'x') + "\n");
  EXPECT_TRUE(ConfigBuilder().load_toml(at_limit).ok()) << "exactly 1 MiB is accepted";
}

TEST_F(ConfigTest, FloatKeysMustHoldFloat32Values) {
  // Each of these would become inf or 0 in float32 (the learning rate tensor, scaled weights, data, noise).
  expect_file_error("lr = 1e39\n", "1: lr must be at most 3.4028234663852886e+38 (float32's largest value), got 1e+39");
  expect_file_error("\nlr = 1e-50\n",
                    "2: lr must be at least 1.401298464324817e-45 (float32's smallest positive value), got 1e-50");
  expect_file_error("init_scale = 1e300\n",
                    "1: init_scale must be at most 3.4028234663852886e+38 (float32's largest value), got 1e+300");
  expect_file_error("teacher_noise = 3.5e38\n",
                    "1: teacher_noise must be at most 3.4028234663852886e+38 (float32's largest value), got 3.5e+38");
  expect_file_error("teacher_noise = 1e-46\n", "1: teacher_noise must be 0 or at least 1.401298464324817e-45 "
                    "(float32's smallest positive value), got 1e-46");
  expect_flag_error("lr", "1e39", "--lr: must be at most 3.4028234663852886e+38 (float32's largest value), got 1e+39");
  expect_flag_error("init_scale", "1e39",
                    "--init-scale: must be at most 3.4028234663852886e+38 (float32's largest value), got 1e+39");
  expect_flag_error("teacher_sigmas", "4,1e40",
                    "--teacher-sigmas: values must be at most 3.4028234663852886e+38 (float32's largest value), got 1e+40");
  expect_flag_error("perturbation", "gaussian:1e39:absolute",
                    "--perturbation: gaussian sigma must be at most 3.4028234663852886e+38 (float32's largest value), "
                    "got 1e+39");
  // float32's extremes themselves are accepted, and 0 noise.
  ConfigBuilder b;
  EXPECT_TRUE(b.set_flag("lr", "3.4028234663852886e+38").ok());
  EXPECT_TRUE(b.set_flag("init_scale", "1.401298464324817e-45").ok());
  EXPECT_TRUE(b.set_flag("teacher_noise", "0").ok());
}

TEST_F(ConfigTest, ThreadsAboveTheCoresWarnOnce) {
  const int64_t cores = std::max(1u, std::thread::hardware_concurrency());
  ConfigBuilder b;
  ASSERT_TRUE(b.set_flag("threads", std::to_string(cores + 1)).ok());
  std::vector<std::string> warnings;
  auto c = b.resolve(&warnings);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->execution.threads, cores + 1) << "a warning, not a change";
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "--threads: threads " + std::to_string(cores + 1) + " exceeds the " + std::to_string(cores) +
                             " cores of this machine; the threads will share cores and run slower");
  std::string path = toml("\nthreads = " + std::to_string(cores + 1) + "\n");
  ConfigBuilder from_file;
  ASSERT_TRUE(from_file.load_toml(path).ok());
  warnings.clear();
  ASSERT_TRUE(from_file.resolve(&warnings).ok());
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0].rfind(path + ":2: threads ", 0), 0u) << warnings[0];
  for (int64_t fine : {int64_t{1}, cores}) {
    ConfigBuilder ok;
    ASSERT_TRUE(ok.set_flag("threads", std::to_string(fine)).ok());
    warnings.clear();
    ASSERT_TRUE(ok.resolve(&warnings).ok());
    EXPECT_TRUE(warnings.empty()) << fine << " threads";
  }
  warnings.clear();
  ASSERT_TRUE(ConfigBuilder().resolve(&warnings).ok());
  EXPECT_TRUE(warnings.empty()) << "the default is the core count";
}

TEST_F(ConfigTest, FlagErrorsNameTheFlag) {
  expect_flag_error("lr", "-1", "--lr: must be > 0 and finite, got -1");
  expect_flag_error("lr", "fast", "--lr: must be a number, got 'fast'");
  expect_flag_error("batch_size", "0", "--batch-size: must be >= 1, got 0");
  expect_flag_error("batch_size", "2.5", "--batch-size: must be an integer, got '2.5'");
  expect_flag_error("steps", "99999999999999999999", "--steps: must be an integer, got '99999999999999999999'");
  expect_flag_error("hidden", "256,,64", "--hidden: must be a list of integers, got '256,,64'");
  expect_flag_error("threads", "5000", "--threads: must be <= 1024, got 5000");
  expect_flag_error("device", "cuda:x", "--device: must be cpu, cuda or cuda:N, got 'cuda:x'");
}

TEST_F(ConfigTest, ExecutionAndPerturbationKeys) {
  ConfigBuilder b;
  ASSERT_TRUE(b.load_toml(toml("device = \"cuda\"\ncudnn = false\ndeterministic = \"strict\"\n"
                               "tf32_matmul = true\nperturbation = \"gaussian:1e-7:element\"\n"
                               "perturbation_seed = 5\n")).ok());
  auto c = b.resolve();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_FALSE(c->execution.cudnn);
  EXPECT_EQ(c->execution.cublas_workspace, ":4096:8") << "deterministic cuBLAS needs a fixed workspace";
  EXPECT_EQ(c->perturbation.kind, "gaussian");
  EXPECT_DOUBLE_EQ(c->perturbation.sigma, 1e-7);
  EXPECT_TRUE(c->perturbation.elementwise);
  EXPECT_EQ(c->perturbation.seed, 5);
  EXPECT_EQ(c->to_json()["perturbation"], "gaussian:1e-07:element");
  EXPECT_EQ(c->run_prefix(), "autoencoder-cuda-nocudnn-det-tf32-gaussian-t" + std::to_string(c->execution.threads) + "-s0");

  ConfigBuilder flip;
  ASSERT_TRUE(flip.set_flag("perturbation", "bitflip:decoder.fc2.bias:3").ok());
  EXPECT_EQ(flip.resolve()->perturbation.param, "decoder.fc2.bias");
  EXPECT_EQ(flip.resolve()->perturbation.index, 3);
}

TEST_F(ConfigTest, ExecutionErrors) {
  expect_flag_error("cudnn", "yes", "--cudnn: must be true or false, got 'yes'");
  expect_flag_error("dtype", "float16", "--dtype: must be one of float32, float64, got 'float16'");
  expect_flag_error("deterministic", "on", "--deterministic: must be one of off, strict, warn, got 'on'");
  expect_flag_error("cublas_workspace", ":8:8", "--cublas-workspace: must be one of default, :4096:8, :16:8, got ':8:8'");
  expect_flag_error("perturbation", "gaussian", "--perturbation: must be none, shuffle-reduction, "
                    "gaussian:SIGMA[:element|:absolute], stochastic-rounding or bitflip[:PARAM[:INDEX]], got 'gaussian'");
  expect_flag_error("perturbation", "gaussian:1e-6:relative", "--perturbation: must be none, shuffle-reduction, "
                    "gaussian:SIGMA[:element|:absolute], stochastic-rounding or bitflip[:PARAM[:INDEX]], got "
                    "'gaussian:1e-6:relative'");
  expect_flag_error("perturbation", "gaussian:-1", "--perturbation: gaussian sigma must be a number > 0, got '-1'");
  expect_flag_error("perturbation", "bitflip:w:x", "--perturbation: bitflip index must be an integer >= 0, got 'x'");
  expect_file_error("cudnn = \"no\"\n", "1: cudnn must be true or false");
  expect_flag_error("lr_drop_at", "-1", "--lr-drop-at: must be >= 0, got -1");
  expect_flag_error("cuda_graph", "maybe", "--cuda-graph: must be true or false, got 'maybe'");

  // CUDA-only settings changed for a CPU run could not be honoured.
  std::string path = toml("device = \"cpu\"\n\ntf32_matmul = true\n");
  ConfigBuilder b;
  ASSERT_TRUE(b.load_toml(path).ok());
  auto c = b.resolve();
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().message(), path + ":3: tf32_matmul applies to CUDA devices only (device is cpu)");
  ConfigBuilder graph_on_cpu;
  ASSERT_TRUE(graph_on_cpu.set_flag("cuda_graph", "false").ok());
  EXPECT_EQ(graph_on_cpu.resolve().status().message(),
            "--cuda-graph: cuda_graph applies to CUDA devices only (device is cpu)");
  ConfigBuilder same_as_default;  // restating a default is harmless
  ASSERT_TRUE(same_as_default.set_flag("cudnn", "true").ok());
  EXPECT_TRUE(same_as_default.resolve().ok());

  ConfigBuilder sr;
  ASSERT_TRUE(sr.set_flag("perturbation", "stochastic-rounding").ok());
  ASSERT_TRUE(sr.set_flag("dtype", "float64").ok());
  EXPECT_EQ(sr.resolve().status().message(),
            "--perturbation: stochastic-rounding rounds float64 updates to float32; it needs dtype float32, got float64");
}

TEST_F(ConfigTest, LinearNetworkAndTeacherKeys) {
  ConfigBuilder b;
  ASSERT_TRUE(b.load_toml(toml("model = \"linear\"\nlinear_hidden = 3\ndata = \"teacher\"\n"
                               "teacher_sigmas = [3, 1.5]\nteacher_inputs = 5\nteacher_outputs = 4\n"
                               "teacher_examples = 20\nteacher_noise = 0.1\ninit = \"zero\"\n")).ok());
  ASSERT_TRUE(b.set_flag("init_scale", "1e-3").ok());
  ASSERT_TRUE(b.set_flag("perturbation", "gaussian:1e-06:absolute").ok());
  auto c = b.resolve();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->linear_hidden, 3);
  EXPECT_EQ(c->teacher.sigmas, (std::vector<double>{3, 1.5}));
  EXPECT_EQ(c->teacher.examples, 20);
  EXPECT_DOUBLE_EQ(c->teacher.noise, 0.1);
  EXPECT_DOUBLE_EQ(c->init_scale, 1e-3);
  EXPECT_TRUE(c->perturbation.absolute);
  EXPECT_FALSE(c->perturbation.elementwise);
  EXPECT_EQ(c->to_json()["perturbation"], "gaussian:1e-06:absolute");
  nlohmann::json id = nlohmann::json::parse(c->identity());
  for (const char* k : {"linear_hidden", "teacher_sigmas", "init_scale"}) EXPECT_TRUE(id.contains(k)) << k;
  for (const char* k : {"hidden", "prednet_stacks"}) EXPECT_FALSE(id.contains(k)) << k;
  EXPECT_EQ(c->run_prefix(), "linear-cpu-gaussian-init.zero-t" + std::to_string(c->execution.threads) + "-s0");

  ConfigBuilder flags;
  ASSERT_TRUE(flags.set_flag("teacher_sigmas", "2,1e-1").ok());
  EXPECT_EQ(flags.resolve()->teacher.sigmas, (std::vector<double>{2, 0.1}));
}

TEST_F(ConfigTest, LinearNetworkAndTeacherErrors) {
  expect_file_error("linear_hidden = 0\n", "1: linear_hidden must be >= 1, got 0");
  expect_file_error("teacher_sigmas = []\n", "1: teacher_sigmas must list at least one singular value");
  expect_file_error("teacher_sigmas = [1.0, -2.0]\n", "1: teacher_sigmas values must be > 0 and finite, got -2");
  expect_file_error("teacher_sigmas = [1, \"a\"]\n", "1: teacher_sigmas must be a list of numbers");
  expect_file_error("teacher_inputs = 0\n", "1: teacher_inputs must be >= 1, got 0");
  expect_file_error("teacher_noise = -0.5\n", "1: teacher_noise must be >= 0 and finite, got -0.5");
  expect_file_error("init_scale = 0\n", "1: init_scale must be > 0 and finite, got 0");
  expect_flag_error("teacher_sigmas", "4,x", "--teacher-sigmas: must be a list of numbers, got '4,x'");
  expect_flag_error("teacher_sigmas", "4,inf", "--teacher-sigmas: values must be > 0 and finite, got inf");
  expect_flag_error("init_scale", "-1", "--init-scale: must be > 0 and finite, got -1");
  expect_flag_error("teacher_examples", "0", "--teacher-examples: must be >= 1, got 0");

  // Cross-field: the sigmas and examples must fit the teacher's shape (checked for data teacher only).
  auto resolve_error = [&](const std::string& text) {
    ConfigBuilder b;
    std::string path = toml(text);
    EXPECT_TRUE(b.load_toml(path).ok());
    auto c = b.resolve();
    EXPECT_FALSE(c.ok()) << text;
    return c.ok() ? std::string() : c.status().message().substr(path.size());
  };
  EXPECT_EQ(resolve_error("data = \"teacher\"\nteacher_inputs = 2\nteacher_sigmas = [3, 2, 1]\n"),
            ":3: teacher_sigmas lists 3 values; a teacher of 2 inputs and 8 outputs has at most 2");
  EXPECT_EQ(resolve_error("data = \"teacher\"\nteacher_examples = 10\n"),
            ":2: teacher_examples must be >= teacher_inputs = 16 (the inputs are whitened), got 10");
  EXPECT_EQ(resolve_error("data = \"teacher\"\nteacher_noise = 0.1\nteacher_examples = 16\n"),
            ":3: teacher_examples must exceed teacher_inputs = 16 when teacher_noise > 0 (the noise is "
            "orthogonal to the inputs), got 16");
  ConfigBuilder defaults;
  ASSERT_TRUE(defaults.set_flag("teacher_outputs", "2").ok());
  ASSERT_TRUE(defaults.set_flag("data", "teacher").ok());
  EXPECT_EQ(defaults.resolve().status().message(),
            "default teacher_sigmas: teacher_sigmas lists 4 values; a teacher of 16 inputs and 2 outputs has at most 2");
  ConfigBuilder other_data;  // teacher keys are not checked for other data
  ASSERT_TRUE(other_data.set_flag("teacher_outputs", "2").ok());
  EXPECT_TRUE(other_data.resolve().ok());
}

TEST_F(ConfigTest, ProbesTakeTheModelsDefaults) {
  auto resolved = [](const std::string& model, const std::string& spec) {
    ConfigBuilder b;
    EXPECT_TRUE(b.set_flag("probe", spec).ok());
    EXPECT_TRUE(b.set_flag("model", model).ok());  // after the probe: the model is known at resolve()
    auto c = b.resolve();
    EXPECT_TRUE(c.ok()) << c.status().message();
    return c.ok() ? c->probes.at(0) : std::string();
  };
  EXPECT_NE(resolved("autoencoder", "curvature").find("batch=256,every=2500,"), std::string::npos);
  EXPECT_NE(resolved("prednet", "curvature").find("batch=8,every=2500,"), std::string::npos);
  EXPECT_NE(resolved("prednet", "curvature:batch=32").find("batch=32,"), std::string::npos);
  EXPECT_EQ(resolved("autoencoder", "symmetry:every=5"), "symmetry:every=5");
  EXPECT_EQ(resolved("prednet", "symmetry:every=5"), "symmetry:every=5");  // its R channels (l<l>.r)
  EXPECT_EQ(probe_defaults(ModelKind::kLinear), (std::map<std::string, std::string>{}));
}

TEST_F(ConfigTest, TheExamplesResolve) {
  for (const char* name : {"autoencoder.toml", "linear_saddle.toml"}) {
    ConfigBuilder b;
    Status s = b.load_toml(std::string(SADDLESCOPE_SOURCE_DIR) + "/examples/" + name);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_TRUE(b.resolve().ok()) << name;
  }
}

TEST_F(ConfigTest, NewKeysLeaveExistingRunIdsAlone) {
  // The README's quickstart run: the same identity (and so run id) as before the linear network's keys.
  ConfigBuilder b;
  ASSERT_TRUE(b.load_toml(std::string(SADDLESCOPE_SOURCE_DIR) + "/examples/autoencoder.toml").ok());
  auto c = b.resolve();
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(store::make_run_id(c->run_prefix(), c->identity()), "autoencoder-cpu-t1-s7-6a417f23");
}

TEST_F(ConfigTest, OptimizerMomentumAndFaultKeys) {
  ConfigBuilder b;
  ASSERT_TRUE(b.load_toml(toml("optimizer = \"sgd\"\nmomentum = 0.9\nfault = \"alias-target\"\n")).ok());
  auto c = b.resolve();
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->optimizer, "sgd");
  EXPECT_DOUBLE_EQ(c->momentum, 0.9);
  EXPECT_EQ(c->fault, "alias-target");
  c->execution.threads = 1;
  EXPECT_EQ(c->run_prefix(), "autoencoder-cpu-sgd-fault.alias-target-t1-s0");
  nlohmann::json id = nlohmann::json::parse(c->identity());
  EXPECT_EQ(id["optimizer"], "sgd");
  EXPECT_EQ(id["fault"], "alias-target");
  EXPECT_DOUBLE_EQ(id["momentum"].get<double>(), 0.9);
  // At their defaults the keys are not part of the identity: run ids from before them stay.
  RunConfig d;
  nlohmann::json plain = nlohmann::json::parse(d.identity());
  for (const char* key : {"optimizer", "momentum", "fault"}) EXPECT_FALSE(plain.contains(key)) << key;
  EXPECT_EQ(config_help("lr").find("Adam"), std::string::npos) << config_help("lr");
}

TEST_F(ConfigTest, OptimizerMomentumAndFaultErrors) {
  expect_flag_error("optimizer", "adamw", "--optimizer: must be one of adam, sgd, got 'adamw'");
  expect_flag_error("momentum", "1", "--momentum: must be >= 0 and < 1, got 1");
  expect_flag_error("momentum", "-0.5", "--momentum: must be >= 0 and < 1, got -0.5");
  expect_flag_error("fault", "alias", "--fault: must be one of none, alias-target, got 'alias'");
  expect_file_error("momentum = 1.5\n", "1: momentum must be >= 0 and < 1, got 1.5");
  ConfigBuilder adam;  // momentum is SGD's
  ASSERT_TRUE(adam.set_flag("momentum", "0.9").ok());
  EXPECT_EQ(adam.resolve().status().message(), "--momentum: momentum applies to optimizer sgd only (optimizer is adam), got 0.9");
  ConfigBuilder sgd;
  ASSERT_TRUE(sgd.set_flag("momentum", "0.9").ok());
  ASSERT_TRUE(sgd.set_flag("optimizer", "sgd").ok());
  EXPECT_TRUE(sgd.resolve().ok());
  for (const char* loss : {"L0", "Lall"}) {
    ConfigBuilder prednet;  // L0 and Lall read no target in their backward: nothing to alias
    ASSERT_TRUE(prednet.set_flag("model", "prednet").ok());
    ASSERT_TRUE(prednet.set_flag("data", "moving-mnist").ok());
    ASSERT_TRUE(prednet.set_flag("prednet_loss", loss).ok());
    ASSERT_TRUE(prednet.set_flag("fault", "alias-target").ok());
    EXPECT_EQ(prednet.resolve().status().message(),
              std::string("--fault: alias-target needs a loss whose backward reads its target; prednet_loss ") + loss +
                  " is a mean of error units computed in the forward (use pixel_mse)");
    ASSERT_TRUE(prednet.set_flag("prednet_loss", "pixel_mse").ok());
    EXPECT_TRUE(prednet.resolve().ok());
  }
}

TEST_F(ConfigTest, EveryModelDtypeAndDeviceKeepsItsRunId) {
  // Run ids and config keys as the string-typed model, dtype and device gave them: run stores and docs
  // quote them, so a change in how these keys are held must not move a bit of the JSON they hash.
  struct Case {
    std::vector<std::pair<std::string, std::string>> flags;
    std::string run_id, config_key;
  };
  const std::vector<Case> cases = {
      {{{"model", "prednet"}, {"data", "moving-mnist"}, {"dtype", "float64"}, {"device", "cuda:1"}, {"seed", "3"}},
       "prednet-cuda.1-cudnn-f64-t2-s3-26116153", "prednet-cuda.1-cudnn-f64-t2-163a75c3"},
      {{{"model", "linear"}, {"data", "teacher"}, {"device", "cuda"}, {"cudnn", "false"}},
       "linear-cuda-nocudnn-t2-s0-baad242b", "linear-cuda-nocudnn-t2-285505f7"},
      {{{"model", "autoencoder"}, {"dtype", "float64"}, {"device", "cpu"}, {"seed", "5"}},
       "autoencoder-cpu-f64-t2-s5-0ee73a06", "autoencoder-cpu-f64-t2-5c33a2bd"},
  };
  for (const Case& t : cases) {
    ConfigBuilder b;
    for (const auto& [key, value] : t.flags) ASSERT_TRUE(b.set_flag(key, value).ok()) << key;
    ASSERT_TRUE(b.set_flag("threads", "2").ok());
    auto c = b.resolve();
    ASSERT_TRUE(c.ok()) << c.status().message();
    for (const auto& [key, value] : t.flags)
      if (key == "model" || key == "dtype" || key == "device") EXPECT_EQ(c->to_json()[key], value) << key;
    EXPECT_EQ(store::make_run_id(c->run_prefix(), c->identity()), t.run_id);
    EXPECT_EQ(c->config_key(), t.config_key);
  }
}

TEST(ConfigChoices, EachNameParsesBackToItsValue) {
  for (ModelKind m : {ModelKind::kAutoencoder, ModelKind::kPredNet, ModelKind::kLinear, ModelKind::kTorchScript})
    EXPECT_EQ(*parse_model(model_name(m)), m) << model_name(m);
  for (Dtype d : {Dtype::kFloat32, Dtype::kFloat64}) EXPECT_EQ(*parse_dtype(dtype_name(d)), d) << dtype_name(d);
  for (const char* name : {"cpu", "cuda", "cuda:0", "cuda:1", "cuda:999"}) {
    auto d = parse_device(name);
    ASSERT_TRUE(d.ok()) << name;
    EXPECT_EQ(d->name(), name);
    EXPECT_EQ(d->is_cuda(), name != std::string("cpu")) << name;
  }
  EXPECT_EQ(parse_device("cuda")->index, -1) << "LibTorch's current device: not the same run as cuda:0";
  EXPECT_EQ(parse_device("cuda:0")->index, 0);
  // Leading zeros were always accepted; the index is what they spell (LibTorch refuses "cuda:01" itself).
  EXPECT_EQ(parse_device("cuda:01")->name(), "cuda:1");
  for (const char* bad : {"", "gpu", "CPU", "cuda:", "cuda:-1", "cuda:1000", "cuda:1x", "cuda1"})
    EXPECT_EQ(parse_device(bad).status().message(), "must be cpu, cuda or cuda:N, got '" + std::string(bad) + "'");
  EXPECT_EQ(parse_model("Linear").status().message(), "must be one of autoencoder, prednet, linear, torchscript, got 'Linear'");
  EXPECT_EQ(parse_dtype("").status().message(), "must be one of float32, float64, got ''");
}

TEST_F(ConfigTest, IdentityIgnoresWhereOutputGoes) {
  ConfigBuilder a, b;
  ASSERT_TRUE(a.set_flag("out", "one").ok());
  ASSERT_TRUE(b.set_flag("out", "two").ok());
  ASSERT_TRUE(b.set_flag("log_every", "7").ok());
  EXPECT_EQ(a.resolve()->identity(), b.resolve()->identity());
  ASSERT_TRUE(b.set_flag("lr", "0.002").ok());
  EXPECT_NE(a.resolve()->identity(), b.resolve()->identity());
}

// Which units init duplicate copies, and the keys that only make sense with it.
TEST(ConfigDuplicate, UnitsLayersAndTheFc1KernelAreCheckedWhereTheyAreSet) {
  auto error = [](std::vector<std::pair<std::string, std::string>> flags) {
    ConfigBuilder b;
    for (auto& [k, v] : flags) {
      Status s = b.set_flag(k, v);
      if (!s.ok()) return s.message();
    }
    auto c = b.resolve();
    return c.ok() ? std::string("ok") : c.status().message();
  };
  EXPECT_EQ(error({{"init", "duplicate"}, {"duplicate_units", "0,64"}, {"duplicate_layers", "encoder.fc1"}}), "ok");
  EXPECT_EQ(error({{"duplicate_units", "3"}}),
            "--duplicate-units: must list at least two units (the first is copied into the others)");
  EXPECT_EQ(error({{"duplicate_units", "0,-1"}}), "--duplicate-units: units must be >= 0, got -1");
  EXPECT_EQ(error({{"duplicate_units", "0,5,5"}}), "--duplicate-units: unit 5 is listed twice");
  EXPECT_EQ(error({{"duplicate_layers", "fc1"}, {"duplicate_layers", "fc1"}}),
            "--duplicate-layers: layer 'fc1' is listed twice");
  EXPECT_EQ(error({{"duplicate_units", "0,1"}}),
            "--duplicate-units: duplicate_units applies to init duplicate only (init is default)");
  EXPECT_EQ(error({{"init", "zero"}, {"duplicate_layers", "fc1"}}),
            "--duplicate-layers: duplicate_layers applies to init duplicate only (init is zero)");
  EXPECT_EQ(error({{"fc1_kernel", "atomic"}}), "--fc1-kernel: must be one of matmul, index_add, got 'atomic'");
  EXPECT_EQ(error({{"model", "linear"}, {"data", "teacher"}, {"fc1_kernel", "index_add"}}),
            "--fc1-kernel: fc1_kernel applies to model autoencoder only (model is linear)");
}

TEST(ConfigDuplicate, NewKeysAtTheirDefaultsLeaveRunIdsAsTheyWere) {
  ConfigBuilder b;
  ASSERT_TRUE(b.set_flag("init", "duplicate").ok());
  RunConfig plain = *b.resolve();
  ASSERT_TRUE(b.set_flag("duplicate_units", "0,1").ok());
  RunConfig pair = *b.resolve();
  EXPECT_EQ(plain.identity().find("duplicate_"), std::string::npos) << plain.identity();
  EXPECT_EQ(plain.identity().find("fc1_kernel"), std::string::npos);
  EXPECT_NE(plain.identity(), pair.identity());
  ASSERT_TRUE(b.set_flag("fc1_kernel", "index_add").ok());
  EXPECT_NE(b.resolve()->run_prefix().find("-init.duplicate-fc1.index_add-"), std::string::npos);
}

// kernels: a choice of its own; fused needs something to fuse; libtorch keeps every run id as it was.
TEST(ConfigKernels, ChoicesErrorsAndRunIds) {
  auto resolve = [](std::vector<std::pair<std::string, std::string>> flags) {
    ConfigBuilder b;
    for (auto [k, v] : flags) {
      Status s = b.set_flag(k, v);
      if (!s.ok()) return Result<RunConfig>(s);
    }
    return b.resolve();
  };
  auto bad = resolve({{"kernels", "cudnn"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "--kernels: must be one of libtorch, fused, got 'cudnn'");
  auto sgd = resolve({{"kernels", "fused"}, {"optimizer", "sgd"}});
  ASSERT_FALSE(sgd.ok());
  EXPECT_EQ(sgd.status().message(), "--kernels: kernels fused has nothing to fuse in model autoencoder with optimizer "
                                    "sgd (it fuses PredNet's cell and error units, and Adam)");
  EXPECT_TRUE(resolve({{"kernels", "fused"}, {"optimizer", "sgd"}, {"model", "prednet"}, {"data", "moving-mnist"}}).ok());

  RunConfig plain = *resolve({}), fused = *resolve({{"kernels", "fused"}});
  EXPECT_EQ(plain.identity().find("kernels"), std::string::npos) << plain.identity();
  EXPECT_EQ(resolve({{"kernels", "libtorch"}})->identity(), plain.identity());
  EXPECT_NE(fused.identity(), plain.identity());
  EXPECT_NE(fused.run_prefix().find("-fused-"), std::string::npos) << fused.run_prefix();
  EXPECT_EQ(fused.to_json()["kernels"], "fused");
}

}  // namespace
}  // namespace saddlescope::trainer

namespace saddlescope::trainer {
namespace {

// store::ConfigView names config keys the analysis, the study's estimates and replays read from a
// manifest; each must be a key of the trainer's table, of the same kind (a list where the table's is one).
TEST(ConfigView, EveryKeyItReadsIsAKeyOfTheTrainersTable) {
  const auto& keys = config_keys();
  for (const std::string& k : store::declared_keys<store::ConfigView>()) {
    EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k << " is no config key (trainer/config.h)";
    EXPECT_EQ(config_is_list(k), k == "probe") << k;
  }
  // And it reads what a resolved config writes into a manifest.
  ConfigBuilder b;
  ASSERT_TRUE(b.set_flag("seed", "7").ok());
  ASSERT_TRUE(b.set_flag("optimizer", "sgd").ok());
  ASSERT_TRUE(b.set_flag("probe", "curvature:every=10").ok());
  auto cfg = b.resolve();
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  store::RunManifest m;
  m.config = cfg->to_json();
  auto v = store::config_view(m);
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_EQ(v->seed, 7);
  EXPECT_EQ(v->data_seed, 7);
  EXPECT_EQ(v->optimizer, "sgd");
  EXPECT_EQ(v->dtype, "float32");
  EXPECT_EQ(v->model, "autoencoder");
  ASSERT_TRUE(v->probe.has_value());
  EXPECT_EQ(v->probe->size(), 1u);
  m.config["seed"] = "x";
  EXPECT_EQ(store::config_view(m).status().message(), "config.seed: expected an integer, got \"x\"");
}

}  // namespace
}  // namespace saddlescope::trainer
