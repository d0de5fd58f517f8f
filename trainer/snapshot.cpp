#include "saddlescope/trainer/snapshot.h"

#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <torch/torch.h>

#include "saddlescope/store/npy.h"
#include "saddlescope/store/run_dir.h"

namespace fs = std::filesystem;

namespace saddlescope::trainer {

torch::Tensor to_tensor(const store::NpyArray& a) {
  const torch::Dtype dtype = a.dtype == store::Dtype::kFloat64   ? torch::kFloat64
                             : a.dtype == store::Dtype::kFloat32 ? torch::kFloat32
                                                                 : torch::kUInt8;
  return torch::from_blob(const_cast<uint8_t*>(a.bytes.data()), a.shape, dtype).clone();
}

Status write_tensor(const std::string& path, const torch::Tensor& t) {
  torch::Tensor c = t.detach().to(torch::kCPU).contiguous();
  store::Dtype dtype;
  switch (c.scalar_type()) {
    case torch::kFloat32: dtype = store::Dtype::kFloat32; break;
    case torch::kFloat64: dtype = store::Dtype::kFloat64; break;
    case torch::kUInt8: dtype = store::Dtype::kUInt8; break;
    default: return Status::Error(path + ": cannot store a tensor of type " + std::string(c10::toString(c.scalar_type())));
  }
  return store::write_npy(path, dtype, std::vector<int64_t>(c.sizes().begin(), c.sizes().end()), c.data_ptr());
}

namespace {

template <class Dims>
std::string shape_str(const Dims& dims) {
  std::string s = "(";
  for (auto d : dims) s += (s.size() > 1 ? ", " : "") + std::to_string(d);
  return s + ")";
}

// The flat index of the first element of `a` (float32 or float64) that is NaN or ±inf, or -1.
template <class T>
int64_t first_nonfinite(const T* p, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(p[i])) return i;
  return -1;
}

int64_t first_nonfinite(const store::NpyArray& a) {
  if (a.dtype == store::Dtype::kFloat64) return first_nonfinite(a.data<double>(), a.numel());
  if (a.dtype == store::Dtype::kFloat32) return first_nonfinite(a.data<float>(), a.numel());
  return -1;
}

}  // namespace

Status save_snapshot(const std::string& final_dir, const NamedTensors& params, bool with_grads) {
  auto dir = store::AtomicDir::begin(final_dir);
  if (!dir) return dir.status();
  for (const auto& item : params) {
    SADDLESCOPE_RETURN_IF_ERROR(write_tensor(dir->path() + "/" + item.key() + ".npy", item.value()));
    if (with_grads && item.value().grad().defined())
      SADDLESCOPE_RETURN_IF_ERROR(write_tensor(dir->path() + "/" + item.key() + ".grad.npy", item.value().grad()));
  }
  return dir->commit();
}

Status load_parameters(const std::string& path, NamedTensors& params) {
  std::string dir = path;
  std::error_code ec;
  if (fs::exists(fs::path(path) / "manifest.json", ec)) {
    auto run = store::RunDir::open(path);
    if (!run) return Status::Error("init_from: " + run.status().message());
    auto snap = run->snapshot_path(0);
    if (!snap) return Status::Error("init_from: " + snap.status().message());
    dir = *snap;
  }
  if (!fs::is_directory(dir, ec) || (!params.is_empty() && !fs::exists(dir + "/" + params.begin()->key() + ".npy", ec)))
    return Status::Error("init_from: " + path + " is neither a run directory (with manifest.json) nor a " +
                         "snapshot directory (with " + params.begin()->key() + ".npy)");
  torch::NoGradGuard no_grad;
  for (auto& item : params) {
    std::string file = dir + "/" + item.key() + ".npy";
    auto a = store::read_npy(file);
    if (!a) return Status::Error("init_from: " + a.status().message());
    torch::Tensor& p = item.value();
    if (a->shape != std::vector<int64_t>(p.sizes().begin(), p.sizes().end()))
      return Status::Error("init_from: " + file + ": shape " + shape_str(a->shape) + " does not match the model's " +
                           item.key() + " " + shape_str(p.sizes()));
    bool f64_file = a->dtype == store::Dtype::kFloat64;
    if (a->dtype == store::Dtype::kUInt8 || (f64_file && p.scalar_type() == torch::kFloat32))
      return Status::Error("init_from: " + file + ": element type " + store::dtype_descr(a->dtype) +
                           " cannot be loaded into a " + std::string(c10::toString(p.scalar_type())) +
                           " model without rounding");
    // A run started from non-finite weights would only say "diverged at step 0"; name the file instead.
    if (int64_t i = first_nonfinite(*a); i >= 0) {
      double v = f64_file ? a->data<double>()[i] : a->data<float>()[i];
      return Status::Error(fmt::format("init_from: {}: element {} is {}; initial weights must be finite", file, i, v));
    }
    p.copy_(to_tensor(*a));  // exact: same type, or float32 widened to float64
  }
  return Status::Ok();
}

}  // namespace saddlescope::trainer
