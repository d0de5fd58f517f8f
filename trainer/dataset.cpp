#include "saddlescope/trainer/dataset.h"

#include <torch/torch.h>

#include "saddlescope/store/npy.h"
#include "saddlescope/trainer/config.h"
#include "saddlescope/trainer/idx.h"
#include "saddlescope/trainer/mnist.h"
#include "saddlescope/trainer/moving_mnist.h"

namespace saddlescope::trainer {
namespace {

torch::Tensor images_to_float(const IdxArray& a) {
  int64_t n = a.dims[0];
  int64_t d = static_cast<int64_t>(a.data.size()) / n;
  auto bytes = torch::from_blob(const_cast<uint8_t*>(a.data.data()), {n, d}, torch::kUInt8);
  return bytes.to(torch::kFloat32).div_(255.0f);
}

Result<Dataset> load_mnist(const RunConfig& cfg) {
  auto files = find_mnist(cfg.data_dir);
  if (!files) return files.status();
  auto train = read_idx_images(files->train_images, files->train_labels);
  if (!train) return train.status();
  auto test = read_idx_images(files->test_images, files->test_labels);
  if (!test) return test.status();
  return Dataset{images_to_float(train->images), nullptr, images_to_float(test->images), "test",
                 "mnist (" + files->train_images + ", " + files->test_images + ")"};
}

Result<Dataset> load_npy(const RunConfig& cfg) {
  std::string rest = cfg.data.substr(4);
  size_t comma = rest.find(',');
  std::string x_path = rest.substr(0, comma);
  std::string y_path = comma == std::string::npos ? "" : rest.substr(comma + 1);

  auto x = store::read_npy(x_path);
  if (!x) return x.status();
  if (x->shape.size() < 2)
    return Status::Error(x_path + ": expected shape (N, features...), found " +
                         std::to_string(x->shape.size()) + " dimension(s)");
  int64_t n = x->shape[0];
  int64_t d = n > 0 ? x->numel() / n : 0;
  if (n == 0 || d == 0) return Status::Error(x_path + ": holds no examples");

  torch::Tensor t;
  switch (x->dtype) {
    case store::Dtype::kUInt8:
      t = torch::from_blob(const_cast<uint8_t*>(x->bytes.data()), {n, d}, torch::kUInt8)
              .to(torch::kFloat32).div_(255.0f);
      break;
    case store::Dtype::kFloat32:
      t = torch::from_blob(const_cast<uint8_t*>(x->bytes.data()), {n, d}, torch::kFloat32).clone();
      break;
    case store::Dtype::kFloat64:
      t = torch::from_blob(const_cast<uint8_t*>(x->bytes.data()), {n, d}, torch::kFloat64)
              .to(torch::kFloat32);
      break;
  }
  // The autoencoder's sigmoid output can only match targets in [0, 1]; NaN fails this check too.
  auto outside = (t.isnan() | (t < 0) | (t > 1)).nonzero();
  if (outside.size(0) > 0) {
    int64_t flat = outside[0][0].item<int64_t>() * d + outside[0][1].item<int64_t>();
    return Status::Error(x_path + ": element " + std::to_string(flat) + " is " +
                         std::to_string(t.view(-1)[flat].item<double>()) +
                         "; float data must lie in [0, 1] (scale it, or save uint8 pixels)");
  }

  if (!y_path.empty()) {
    auto y = store::read_npy(y_path);
    if (!y) return y.status();
    bool column = y->shape.size() == 1 || (y->shape.size() == 2 && y->shape[1] == 1);
    if (!column || y->shape[0] != n)
      return Status::Error(y_path + ": expected " + std::to_string(n) + " labels (shape (N,) to match " +
                           x_path + "), found shape with " + std::to_string(y->numel()) + " elements");
  }
  return Dataset{t, nullptr, t, "train", "npy (" + x_path + (y_path.empty() ? "" : ", " + y_path) + ")", {}};
}

}  // namespace

Result<Dataset> load_moving_mnist(const RunConfig& cfg) {
  MovingMnistOptions o;
  o.canvas = cfg.prednet.canvas;
  o.digits = cfg.prednet.digits;
  o.frames = cfg.prednet.nt;
  auto sequences = [&](const std::string& split, uint64_t seed) -> Result<MovingMnist> {
    auto digits = moving_mnist_digits(cfg.data_dir, split);
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
  d.eval = frames_to_input(test->batch(0, cfg.prednet.eval_sequences));
  d.eval_split = "test";
  d.source = "moving-mnist (generated from the MNIST train digits; test sequences from the test digits)";
  d.example_shape = {cfg.prednet.nt, 1, cfg.prednet.canvas, cfg.prednet.canvas};
  return d;
}

Result<Dataset> load_dataset(const RunConfig& cfg) {
  if (cfg.data == "moving-mnist") return load_moving_mnist(cfg);
  auto data = cfg.data == "mnist" ? load_mnist(cfg) : load_npy(cfg);
  if (!data) return data;
  data->example_shape = {data->train.size(1)};
  if (cfg.batch_size > data->train.size(0))
    return Status::Error("batch_size " + std::to_string(cfg.batch_size) + " exceeds the " +
                         std::to_string(data->train.size(0)) + " training examples of " + cfg.data);
  return data;
}

}  // namespace saddlescope::trainer
