// The ophash digest (kernels/digest.h) against its definition written out word by word here, a flipped
// bit anywhere, the length and the blocks' order; and on a CUDA device, a trace's digests summed there
// against the host's of the same bytes.
#include "saddlescope/kernels/digest.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include <torch/torch.h>

#include "saddlescope/probes/op_trace.h"

namespace saddlescope {
namespace {

uint64_t fmix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

// digest.h's definition, one 32-bit word at a time: word i is bytes 4i..4i+3 little-endian (zero past
// the end); block b's NH pairs words 64b+2j and 64b+2j+1 with keys K(2j), K(2j+1).
uint64_t by_definition(const std::vector<unsigned char>& bytes) {
  const uint64_t golden = 0x9e3779b97f4a7c15ull;
  auto word = [&](size_t i) {
    uint32_t w = 0;
    for (size_t k = 0; k < 4; ++k)
      if (4 * i + k < bytes.size()) w |= uint32_t{bytes[4 * i + k]} << (8 * k);
    return w;
  };
  auto key = [&](size_t j) { return static_cast<uint32_t>(fmix((j + 1) * golden)); };
  uint64_t sum = 0;
  for (size_t b = 0; 256 * b < bytes.size(); ++b) {
    uint64_t nh = 0;
    for (size_t j = 0; j < 32; ++j) {
      const uint32_t lo = word(64 * b + 2 * j) + key(2 * j), hi = word(64 * b + 2 * j + 1) + key(2 * j + 1);
      nh += uint64_t{lo} * hi;
    }
    sum += fmix(nh ^ ((b + 1) * golden));
  }
  return fmix(sum ^ fmix(bytes.size() + golden));
}

uint64_t digest(const std::vector<unsigned char>& bytes) {
  return kernels::digest_finish(kernels::digest_sum(bytes.data(), bytes.size()), bytes.size());
}

std::vector<unsigned char> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::vector<unsigned char> v(n);
  for (auto& c : v) c = static_cast<unsigned char>(gen());
  return v;
}

TEST(Digest, IsItsDefinition) {
  for (size_t n : {0, 1, 3, 4, 5, 255, 256, 257, 511, 512, 4099}) {
    const auto bytes = random_bytes(n, static_cast<uint32_t>(n));
    EXPECT_EQ(digest(bytes), by_definition(bytes)) << n << " bytes";
  }
}

TEST(Digest, AnyFlippedBitChangesIt) {
  for (size_t n : {1, 3, 5, 256, 300}) {
    auto bytes = random_bytes(n, 11);
    const uint64_t d = digest(bytes);
    for (size_t i = 0; i < n; ++i)
      for (int bit = 0; bit < 8; ++bit) {
        bytes[i] ^= static_cast<unsigned char>(1u << bit);
        EXPECT_NE(digest(bytes), d) << n << " bytes, byte " << i << " bit " << bit;
        bytes[i] ^= static_cast<unsigned char>(1u << bit);
      }
  }
}

TEST(Digest, TheLengthAndTheBlocksOrderCount) {
  EXPECT_NE(digest({'a', 'b'}), digest({'a', 'b', 0}));  // zero padding is not data
  EXPECT_NE(digest({}), digest({0}));
  auto bytes = random_bytes(512, 5);
  const uint64_t d = digest(bytes);
  std::swap_ranges(bytes.begin(), bytes.begin() + 256, bytes.begin() + 256);
  EXPECT_NE(digest(bytes), d);
}

// A trace on a CUDA device sums its digests there: equal to the host's digest of the same tensors, for
// sizes around a block and a word, float16 at an odd offset (not 4-byte aligned) and float64.
TEST(Digest, CudaTraceDigestsAreTheHostOnes) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a CUDA device";
  probes::OpTrace trace({}, probes::OpTrace::Mode::kDigests);
  std::vector<at::Tensor> inputs, outputs;
  torch::manual_seed(3);
  for (int64_t n : {0, 1, 63, 64, 65, 1000, 100003})
    for (auto dtype : {torch::kFloat, torch::kHalf, torch::kDouble})
      inputs.push_back(torch::randn({n + 1}, torch::TensorOptions().dtype(dtype).device(torch::kCUDA)).narrow(0, 1, n));
  trace.start();
  for (const at::Tensor& x : inputs) outputs.push_back(torch::neg(x));
  trace.stop();
  const auto& ops = trace.ops();
  ASSERT_EQ(ops.size(), inputs.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    SCOPED_TRACE(ops[i].name + " " + ops[i].output_shapes[0] + " " + ops[i].dtype);
    EXPECT_EQ(ops[i].inputs_digest, probes::tensor_digest({inputs[i].cpu()}));
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(probes::tensor_digest({outputs[i].cpu()})));
    EXPECT_EQ(ops[i].output_digests[0], hex);
  }
}

}  // namespace
}  // namespace saddlescope
