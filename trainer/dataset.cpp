#include "saddlescope/trainer/dataset.h"

#include <cmath>
#include <limits>
#include <map>
#include <utility>

#include <fmt/format.h>
#include <torch/torch.h>

#include "saddlescope/base/memory.h"
#include "saddlescope/store/npy.h"
#include "saddlescope/trainer/cifar10.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/data_spec.h"
#include "saddlescope/trainer/idx.h"
#include "saddlescope/trainer/memory.h"
#include "saddlescope/trainer/mnist.h"
#include "saddlescope/trainer/moving_mnist.h"
#include "saddlescope/trainer/teacher.h"

namespace saddlescope::trainer {
namespace {

// (n, d) bytes as float32 values: pixels scaled by 1/255 into [0, 1], labels (`pixels` false) as they are.
torch::Tensor bytes_to_float(const uint8_t* bytes, int64_t n, int64_t d, bool pixels = true) {
  torch::Tensor t = torch::from_blob(const_cast<uint8_t*>(bytes), {n, d}, torch::kUInt8).to(torch::kFloat32);
  return pixels ? t.div_(255.0f) : t;
}

torch::Tensor images_to_float(const IdxArray& a) {
  const int64_t n = a.dims[0];
  return bytes_to_float(a.data.data(), n, static_cast<int64_t>(a.data.size()) / n);
}

// (N, 1) class labels as float32 values (exact below 2^24).
torch::Tensor labels_to_float(const IdxArray& a) { return bytes_to_float(a.data.data(), a.dims[0], 1, false); }

Result<Dataset> load_mnist(const RunConfig& cfg) {
  std::map<std::string, std::string> digests;
  auto train = read_mnist(cfg.data_dir, "train", &digests);
  if (!train) return train.status();
  auto test = read_mnist(cfg.data_dir, "test", &digests);
  if (!test) return test.status();
  auto files = find_mnist(cfg.data_dir);  // the paths, for the manifest (read_mnist checked them)
  Dataset data{images_to_float(train->images), nullptr, images_to_float(test->images), "test",
               "mnist (" + files->train_images + ", " + files->test_images + ")"};
  data.digests = std::move(digests);
  if (cfg.model == ModelKind::kTorchScript) {
    data.input_shape = {1, train->images.dims[1], train->images.dims[2]};  // as torchvision gives them
    if (cfg.loss != "mse") {  // classes: rows [pixels, label]
      data.train = torch::cat({data.train, labels_to_float(train->labels)}, 1);
      data.eval = torch::cat({data.eval, labels_to_float(test->labels)}, 1);
      data.target_columns = 1;
      data.source = "mnist (" + files->train_images + ", " + files->train_labels + ", " + files->test_images + ", " +
                    files->test_labels + ")";
    }
  }
  return data;
}

// CIFAR-10's first spec.train training images (all 50,000 when 0) and its 10,000 test images, pixels in
// [0, 1] channels first; under a class loss each row ends in its label.
Result<Dataset> load_cifar10(const RunConfig& cfg, const DataSpec& spec) {
  std::map<std::string, std::string> digests;
  const int64_t n = spec.train == 0 ? kCifar10Train : spec.train;
  const std::string key = fmt::format("data {}", cfg.data);
  SADDLESCOPE_RETURN_IF_ERROR(check_memory({{key, "the decoded CIFAR-10 images", 10.0 * 3072 * (n + kCifar10Test)}},
                                           memory_limit_bytes()));
  auto train = read_cifar10(cfg.data_dir, "train", n, &digests);
  if (!train) return train.status();
  auto test = read_cifar10(cfg.data_dir, "test", kCifar10Test, &digests);
  if (!test) return test.status();
  const bool labels = cfg.loss != "mse";
  auto rows = [&](const Cifar10Split& s) {
    torch::Tensor x = bytes_to_float(s.pixels.data(), s.n, 3072);
    return labels ? torch::cat({x, bytes_to_float(s.labels.data(), s.n, 1, false)}, 1) : x;
  };
  Dataset data{rows(*train), nullptr, rows(*test), "test",
               fmt::format("cifar10 ({} training and {} test images of {} in {}/cifar10)", n, kCifar10Test,
                           cifar10_package().npm, cfg.data_dir), {}};
  data.input_shape = {3, 32, 32};
  data.target_columns = labels ? 1 : 0;
  data.digests = std::move(digests);
  return data;
}

// Moby Dick as bytes for next-byte prediction: the first 90% of the text for training, the rest held
// out. Example i of a split is its bytes [iT, iT + T] (T = spec.context): the input is the first T, the
// target each input byte's successor, so a row is [x_1..x_T, x_2..x_{T+1}] as float values 0..255.
Result<Dataset> load_moby_dick(const RunConfig& cfg, const DataSpec& spec) {
  std::map<std::string, std::string> digests;
  auto text = read_package_file(moby_dick_package(), cfg.data_dir, "data.txt", &digests);
  if (!text) return text.status();
  const int64_t t = spec.context, cut = static_cast<int64_t>(text->size()) * 9 / 10;
  auto windows = [&](int64_t begin, int64_t end) {
    const int64_t n = (end - begin - 1) / t;
    torch::Tensor bytes = torch::from_blob(text->data() + begin, {end - begin}, torch::kUInt8).to(torch::kFloat32);
    torch::Tensor x = bytes.narrow(0, 0, n * t).reshape({n, t});
    torch::Tensor y = bytes.narrow(0, 1, n * t).reshape({n, t});
    return torch::cat({x, y}, 1);
  };
  Dataset data{windows(0, cut), nullptr, windows(cut, static_cast<int64_t>(text->size())), "test",
               fmt::format("moby-dick ({} bytes of {}: the first {} for training, the rest held out; {} bytes per "
                           "example)", text->size(), moby_dick_package().npm, cut, t), {}};
  data.input_shape = {t};
  data.target_columns = t;
  data.digests = std::move(digests);
  return data;
}

// The (n, d) float32 values of an array read from `path`: uint8 scaled by 1/255 (pixels) unless
// `labels`, floats as they are.
torch::Tensor npy_to_float(const store::NpyArray& a, int64_t n, int64_t d, bool labels = false) {
  auto* bytes = const_cast<uint8_t*>(a.bytes.data());
  switch (a.dtype) {
    case store::Dtype::kUInt8:
      return bytes_to_float(bytes, n, d, !labels);
    case store::Dtype::kFloat32:
      return torch::from_blob(bytes, {n, d}, torch::kFloat32).clone();
    case store::Dtype::kFloat64:
      return torch::from_blob(bytes, {n, d}, torch::kFloat64).to(torch::kFloat32);
  }
  return {};
}

// "" or what is wrong with the first of the `n` values at `p` that is not a float32 value in [lo, hi]:
// NaN, ±inf, a value outside [lo, hi], or a float64 value beyond float32's range (it would become ±inf).
template <class T>
std::string first_bad(const T* p, int64_t n, double lo, double hi) {
  for (int64_t i = 0; i < n; ++i) {
    const double x = p[i];
    if (!std::isfinite(x) || x < lo || x > hi) return fmt::format("element {} is {}", i, x);
    if (std::fabs(x) > std::numeric_limits<float>::max())
      return fmt::format("element {} is {}, beyond float32's range", i, x);
  }
  return "";
}

// first_bad over the elements of `a`, read from a .npy file; uint8 pixels are scaled into [0, 1].
std::string first_bad(const store::NpyArray& a, double lo, double hi) {
  switch (a.dtype) {
    case store::Dtype::kUInt8: return "";
    case store::Dtype::kFloat32: return first_bad(a.data<float>(), a.numel(), lo, hi);
    case store::Dtype::kFloat64: return first_bad(a.data<double>(), a.numel(), lo, hi);
  }
  return "";
}

// X alone (rows of pixels), X with N labels, or for model linear X with its N targets (rows [x, y]);
// for model torchscript X with its targets, or with class labels under loss cross_entropy.
Result<Dataset> load_npy(const RunConfig& cfg, const DataSpec& spec) {
  const std::string& x_path = spec.x;
  const std::string& y_path = spec.y;
  const bool module = cfg.model == ModelKind::kTorchScript;
  const bool pairs = cfg.model == ModelKind::kLinear || (module && !y_path.empty());
  const bool labels = module && cfg.loss == "cross_entropy";
  if (labels && y_path.empty())
    return Status::Error("data " + cfg.data + ": loss cross_entropy needs class labels (npy:X.npy,Y.npy)");

  std::map<std::string, std::string> digests;
  auto x = store::read_npy(x_path, &digests[x_path]);
  if (!x) return x.status();
  if (x->shape.size() < 2)
    return Status::Error(x_path + ": expected shape (N, features...), found " +
                         std::to_string(x->shape.size()) + " dimension(s)");
  int64_t n = x->shape[0];
  int64_t d = n > 0 ? x->numel() / n : 0;
  if (n == 0 || d == 0) return Status::Error(x_path + ": holds no examples");
  const double inf = std::numeric_limits<double>::infinity();
  // The autoencoder's sigmoid output can only match targets in [0, 1]; NaN and ±inf fail this check too.
  const bool any_values = pairs || module;
  if (std::string bad = any_values ? first_bad(*x, -inf, inf) : first_bad(*x, 0, 1); !bad.empty())
    return Status::Error(x_path + ": " + bad + (any_values ? "; inputs must be finite float32 values"
                                                           : "; float data must lie in [0, 1] (scale it, or save uint8 pixels)"));
  torch::Tensor t = npy_to_float(*x, n, d);
  const std::vector<int64_t> input_shape(x->shape.begin() + 1, x->shape.end());
  if (y_path.empty()) {
    Dataset data{t, nullptr, t, "train", "npy (" + x_path + ")", {}};
    data.digests = std::move(digests);
    if (module) data.input_shape = input_shape;
    return data;
  }

  auto y = store::read_npy(y_path, &digests[y_path]);
  if (!y) return y.status();
  std::string source = "npy (" + x_path + ", " + y_path + ")";
  if (!pairs) {
    bool column = y->shape.size() == 1 || (y->shape.size() == 2 && y->shape[1] == 1);
    if (!column || y->shape[0] != n)
      return Status::Error(y_path + ": expected " + std::to_string(n) + " labels (shape (N,) to match " +
                           x_path + "), found shape with " + std::to_string(y->numel()) + " elements");
    Dataset data{t, nullptr, t, "train", source, {}};
    data.digests = std::move(digests);
    return data;
  }
  if (y->shape.empty() || y->shape.size() > 2 || y->shape[0] != n || y->numel() == 0)
    return Status::Error(y_path + ": expected " + std::to_string(n) + " targets (shape (N) or (N, outputs) to match " +
                         x_path + "), found " + std::to_string(y->shape.size()) + " dimension(s) and " +
                         std::to_string(y->numel()) + " elements");
  int64_t c = y->numel() / n;
  if (std::string bad = first_bad(*y, -inf, inf); !bad.empty())
    return Status::Error(y_path + ": " + bad + "; targets must be finite float32 values");
  torch::Tensor targets = npy_to_float(*y, n, c, labels);
  if (labels) {
    torch::Tensor bad = (targets < 0).logical_or(targets != targets.floor()).logical_or(targets >= (1 << 24));
    if (bad.any().item<bool>()) {
      const int64_t i = bad.reshape({-1}).nonzero()[0].item<int64_t>();
      return Status::Error(fmt::format("{}: element {} is {}; class labels must be integers in [0, 2^24)", y_path, i,
                                       targets.reshape({-1})[i].item<double>()));
    }
  }
  torch::Tensor rows = torch::cat({t, targets}, 1);
  Dataset data{rows, nullptr, rows, "train", source, {}};
  data.target_columns = c;
  if (module) data.input_shape = input_shape;
  data.digests = std::move(digests);
  return data;
}

Result<Dataset> load_teacher(const RunConfig& cfg) {
  const TeacherConfig& t = cfg.teacher;
  // make_teacher holds about eight float64 (examples, inputs + outputs) arrays at once.
  const std::string key = fmt::format("teacher_examples {}", t.examples);
  const double bytes = 64.0 * static_cast<double>(t.examples) * static_cast<double>(t.inputs + t.outputs);
  SADDLESCOPE_RETURN_IF_ERROR(check_memory({{key, "the generated teacher data", bytes}}, memory_limit_bytes()));
  TeacherData generated;
  SADDLESCOPE_RETURN_IF_ERROR(allocating(key, "the generated teacher data", [&] {
    generated = make_teacher(t, static_cast<uint64_t>(cfg.data_seed));
  }));
  std::string sigmas;
  for (double s : t.sigmas) sigmas += (sigmas.empty() ? "" : ", ") + fmt::format("{}", s);
  Dataset data{generated.train, nullptr, generated.test, "test",
               fmt::format("teacher (generated from data_seed {}: {} inputs, {} outputs, singular values {}, "
                           "noise {}, {} training and {} test examples)", cfg.data_seed, t.inputs, t.outputs,
                           sigmas, t.noise, t.examples, t.examples), {}};
  data.target_columns = t.outputs;
  return data;
}

}  // namespace

Result<Dataset> load_moving_mnist(const RunConfig& cfg) {
  // The held-out sequences are generated whole: uint8 frames, their float32 copy and its permuted copy.
  const std::string eval_key = fmt::format("eval_sequences {}", cfg.prednet.eval_sequences);
  const double eval_bytes = 9.0 * static_cast<double>(cfg.prednet.eval_sequences) * static_cast<double>(cfg.prednet.nt) *
                            static_cast<double>(cfg.prednet.canvas) * static_cast<double>(cfg.prednet.canvas);
  SADDLESCOPE_RETURN_IF_ERROR(check_memory({{eval_key, "the held-out sequences", eval_bytes}}, memory_limit_bytes()));
  MovingMnistOptions o;
  o.canvas = cfg.prednet.canvas;
  o.digits = cfg.prednet.digits;
  o.frames = cfg.prednet.nt;
  std::map<std::string, std::string> digests;
  auto sequences = [&](const std::string& split, uint64_t seed) -> Result<MovingMnist> {
    auto digits = moving_mnist_digits(cfg.data_dir, split, &digests);
    if (!digits) return digits.status();
    MovingMnistOptions so = o;
    so.seed = seed;
    return MovingMnist::create(so, std::move(*digits));
  };
  auto train = sequences("train", static_cast<uint64_t>(cfg.data_seed));
  if (!train) return train.status();
  auto test = sequences("test", 0);  // seed 0: every run is scored on the same held-out sequences
  if (!test) return test.status();
  Dataset d;
  d.sequences = std::make_shared<MovingMnist>(std::move(*train));
  SADDLESCOPE_RETURN_IF_ERROR(allocating(eval_key, "the held-out sequences", [&] {
    d.eval = frames_to_input(test->batch(0, cfg.prednet.eval_sequences));
  }));
  d.eval_split = "test";
  d.source = "moving-mnist (generated from the MNIST train digits; test sequences from the test digits)";
  d.example_shape = {cfg.prednet.nt, 1, cfg.prednet.canvas, cfg.prednet.canvas};
  d.digests = std::move(digests);
  return d;
}

Result<Dataset> load_dataset(const RunConfig& cfg) {
  // Input-target pairs and the linear network go together; said before anything is read.
  auto spec = parse_data_spec(cfg.data);
  if (!spec) return Status::Error("data " + spec.status().message());
  using K = DataSpec::Kind;
  const bool module_data = spec->kind == K::kCifar10 || spec->kind == K::kMobyDick;
  if (cfg.model == ModelKind::kTorchScript && !module_data && spec->kind != K::kMnist && spec->kind != K::kNpy)
    return Status::Error("model torchscript trains on data mnist, cifar10, moby-dick or npy:X.npy[,Y.npy], not " +
                         cfg.data);
  if (cfg.model != ModelKind::kTorchScript && module_data)
    return Status::Error("data " + cfg.data + " is for model torchscript (a module of your own), not " +
                         std::string(model_name(cfg.model)));
  if (spec->kind == K::kMobyDick && cfg.loss != "cross_entropy" && cfg.loss != "module")
    return Status::Error("data " + cfg.data + " holds next-byte targets: loss must be cross_entropy or module, not " +
                         cfg.loss);
  if (cfg.model == ModelKind::kLinear && !spec->pairs())
    return Status::Error("model linear needs input-target pairs (data teacher or npy:X.npy,Y.npy), not " + cfg.data);
  if (cfg.model != ModelKind::kLinear && spec->kind == K::kTeacher)
    return Status::Error("data teacher holds input-target pairs for model linear, not " +
                         std::string(model_name(cfg.model)));
  if (spec->kind == K::kMovingMnist) return load_moving_mnist(cfg);
  auto data = spec->kind == K::kMnist      ? load_mnist(cfg)
              : spec->kind == K::kCifar10  ? load_cifar10(cfg, *spec)
              : spec->kind == K::kMobyDick ? load_moby_dick(cfg, *spec)
              : spec->kind == K::kTeacher  ? load_teacher(cfg)
                                           : load_npy(cfg, *spec);
  if (!data) return data;
  data->example_shape = {data->train.size(1)};
  if (cfg.batch_size > data->train.size(0))
    return Status::Error("batch_size " + std::to_string(cfg.batch_size) + " exceeds the " +
                         std::to_string(data->train.size(0)) + " training examples of " + cfg.data);
  return data;
}

}  // namespace saddlescope::trainer
