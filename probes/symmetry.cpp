#include "saddlescope/probes/symmetry.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include <fmt/format.h>
#include <torch/torch.h>

namespace saddlescope::probes {
namespace {

std::string shape(const at::Tensor& t) {
  std::string s = "(";
  for (int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + ")";
}

// (out, unit size): row i is unit i — incoming weights, bias, outgoing weights — in the layer's dtype,
// contiguous on the CPU so that rows can be compared byte by byte.
Result<at::Tensor> unit_matrix(const LayerUnits& layer) {
  const at::Tensor& w = layer.incoming;
  if (!w.defined() || w.dim() < 2)
    return Status::Error(fmt::format("symmetry: layer '{}': incoming weight must have >= 2 dims, got {}",
                                     layer.name, w.defined() ? w.dim() : 0));
  const int64_t out = w.size(0);
  std::vector<at::Tensor> parts = {w.detach().reshape({out, -1})};
  if (layer.bias.defined()) {
    if (layer.bias.dim() != 1 || layer.bias.size(0) != out)
      return Status::Error(fmt::format("symmetry: layer '{}': bias must be ({}), got {}", layer.name, out,
                                       shape(layer.bias)));
    parts.push_back(layer.bias.detach().reshape({out, 1}));
  }
  if (layer.outgoing.defined()) {
    if (layer.outgoing.dim() < 2 || layer.outgoing.size(1) != out)
      return Status::Error(fmt::format(
          "symmetry: layer '{}': outgoing weight must be (next_out, {}, ...), got {}", layer.name, out,
          shape(layer.outgoing)));
    parts.push_back(layer.outgoing.detach().transpose(0, 1).reshape({out, -1}));
  }
  for (const auto& p : parts)
    if (p.scalar_type() != w.scalar_type())
      return Status::Error(fmt::format("symmetry: layer '{}': bias/outgoing dtype differs from the weight's",
                                       layer.name));
  return torch::cat(parts, 1).to(torch::kCPU).contiguous();
}

}  // namespace

Result<std::vector<LayerSymmetry>> symmetry_scan(const std::vector<LayerUnits>& layers) {
  std::vector<LayerSymmetry> out;
  for (const LayerUnits& layer : layers) {
    auto units = unit_matrix(layer);
    if (!units.ok()) return units.status();
    const at::Tensor& U = *units;
    LayerSymmetry sym;
    sym.name = layer.name;
    sym.units = U.size(0);
    const size_t row_bytes = static_cast<size_t>(U.size(1)) * U.element_size();
    const auto* bytes = static_cast<const char*>(U.data_ptr());
    at::Tensor U64 = U.to(torch::kFloat64);  // differences of float32 values are exact in float64
    at::Tensor norms = U64.norm(2, {1}).contiguous();
    const double* nrm = norms.data_ptr<double>();
    for (int64_t i = 0; i + 1 < sym.units; ++i) {
      int64_t rest = sym.units - i - 1;
      at::Tensor dist = (U64.narrow(0, i + 1, rest) - U64[i]).norm(2, {1}).contiguous();
      const double* d = dist.data_ptr<double>();
      for (int64_t r = 0; r < rest; ++r) {
        int64_t j = i + 1 + r;
        if (!(d[r] > 0) && std::memcmp(bytes + i * row_bytes, bytes + j * row_bytes, row_bytes) == 0)
          sym.identical_pairs.emplace_back(i, j);
        if (std::isnan(d[r])) continue;
        double scale = std::max(nrm[i], nrm[j]);
        double rel = scale > 0 ? d[r] / scale : 0.0;
        if (rel < sym.min_relative_distance) {
          sym.min_relative_distance = rel;
          sym.closest_pair = {i, j};
        }
      }
    }
    out.push_back(std::move(sym));
  }
  return out;
}

}  // namespace saddlescope::probes
