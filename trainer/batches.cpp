#include "saddlescope/trainer/batches.h"

#include <random>
#include <vector>

#include <torch/torch.h>

#include "saddlescope/base/status.h"
#include "saddlescope/trainer/moving_mnist.h"

namespace saddlescope::trainer {

// The order in which rows are visited: a fresh permutation each epoch, kept on the device so a step
// copies nothing.
class ExampleOrder {
 public:
  ExampleOrder(int64_t n, uint64_t seed, torch::Device device) : n_(n), rng_(seed), device_(device) {
    shuffle();
    upload();
  }

  // The next `b` example indices (int64, on the device), continuing into the next epoch when needed.
  torch::Tensor next(int64_t b) {
    std::vector<torch::Tensor> parts;
    while (b > 0) {
      if (pos_ == n_) {
        shuffle();
        upload();
      }
      int64_t take = std::min(b, n_ - pos_);
      parts.push_back(perm_.narrow(0, pos_, take));
      pos_ += take;
      b -= take;
    }
    return parts.size() == 1 ? parts[0] : torch::cat(parts);
  }

  // The same draws as next() over `count` examples, on the host only.
  void skip(int64_t count) {
    while (count > 0) {
      if (pos_ == n_) shuffle();
      int64_t take = std::min(count, n_ - pos_);
      pos_ += take;
      count -= take;
    }
    upload();
  }

 private:
  // Fisher-Yates with an unbiased bounded draw: std::shuffle's output is implementation-defined.
  void shuffle() {
    host_.resize(static_cast<size_t>(n_));
    for (int64_t i = 0; i < n_; ++i) host_[i] = i;
    for (int64_t i = n_ - 1; i > 0; --i) {
      uint64_t bound = static_cast<uint64_t>(i) + 1, limit = UINT64_MAX - UINT64_MAX % bound, r;
      do r = rng_(); while (r >= limit);
      std::swap(host_[i], host_[static_cast<int64_t>(r % bound)]);
    }
    pos_ = 0;
  }
  void upload() { perm_ = torch::from_blob(host_.data(), {n_}, torch::kInt64).clone().to(device_); }

  int64_t n_, pos_ = 0;
  std::mt19937_64 rng_;
  torch::Device device_;
  std::vector<int64_t> host_;
  torch::Tensor perm_;
};

namespace {
constexpr uint64_t kProbeSeed = 0x5add1e;
constexpr int64_t kChunkSequences = 512;
}  // namespace

Batches::Batches(const Dataset& data, uint64_t seed, torch::Device device, torch::Dtype dtype)
    : data_(data), device_(device), dtype_(dtype) {
  if (!data.sequences) {
    train_x_ = data.train.to(device, dtype);
    order_ = std::make_unique<ExampleOrder>(train_x_.size(0), seed, device);
  } else {
    pixels_ = pixel_values().to(device);
  }
}

Batches::~Batches() {
  if (pending_.valid()) pending_.wait();
}

torch::Tensor Batches::next(int64_t b) {
  if (order_) return train_x_.index_select(0, order_->next(b));
  if (chunk_used_ + b > (chunk_.defined() ? chunk_.size(1) : 0)) next_chunk(b);
  torch::Tensor frames = chunk_.narrow(1, chunk_used_, b);
  chunk_used_ += b;
  return frames_to_input(frames, pixels_).to(dtype_);  // on the device, with the host's bits
}

void Batches::skip(int64_t examples) {
  SADDLESCOPE_CHECK(examples >= 0 && next_sequence_ == 0 && !chunk_.defined());
  if (order_) order_->skip(examples);
  else next_sequence_ = examples;  // sequence i is a function of (seed, i) alone
}

torch::Tensor Batches::probe_set(int64_t n) const {
  if (!order_) return frames_to_input(data_.sequences->batch(int64_t{1} << 40, n)).to(device_, dtype_);
  n = probe_set_size(data_, n);
  auto gen = at::detail::createCPUGenerator(kProbeSeed);
  torch::Tensor rows = torch::randperm(train_x_.size(0), gen, torch::kInt64).narrow(0, 0, n);
  return train_x_.index_select(0, rows.to(device_));
}

int64_t probe_set_size(const Dataset& data, int64_t n) {
  return data.sequences ? n : std::min(n, data.train.size(0));
}

torch::Tensor Batches::train_mean() const { return order_ ? train_x_.mean(0) : torch::Tensor(); }

void Batches::next_chunk(int64_t b) {
  const int64_t n = std::max<int64_t>(1, kChunkSequences / b) * b;
  if (!pending_.valid()) pending_ = generate(next_sequence_, n);
  chunk_ = pending_.get().to(device_);
  chunk_used_ = 0;
  next_sequence_ += n;
  pending_ = generate(next_sequence_, n);
}

std::future<torch::Tensor> Batches::generate(int64_t first, int64_t n) const {
  return std::async(std::launch::async, [seq = data_.sequences, first, n] { return seq->batch(first, n); });
}

}  // namespace saddlescope::trainer
