// Preflight of a run's large allocations, so that a config that cannot fit in memory is refused with
// the key that asked for the memory, before anything large is allocated, instead of ending in
// std::bad_alloc, LibTorch's "can't allocate memory" or the kernel's OOM killer (which on Linux, with
// overcommit, is what usually happens: a too-large allocation succeeds and the process dies later).
//
// Estimates, not accounting: each use is the size of the tensors one key makes, counted once; allocator
// slack, LibTorch's workspaces and the autograd graph's small tensors are not counted. The budget is
// memory_limit_bytes() (base/memory.h): the machine's memory, not what is free now, so that the same
// config passes or fails the same way on the same machine.
#pragma once

#include <cstdint>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "saddlescope/base/status.h"

namespace saddlescope::trainer {

struct RunConfig;
struct Dataset;
class Model;

struct MemoryUse {
  std::string key;   // the config key that sizes it, with its value: "batch_size 4096"
  std::string what;  // what is allocated: "a training step (batch, activations and their gradients)"
  double bytes = 0;
};

// Ok when the uses fit in `limit` bytes together; else an error naming the key of the largest use:
// "batch_size 100000: about 152.3 GiB for a training step (...); the run needs about 153.0 GiB in all,
// more than this machine's 23.4 GiB".
Status check_memory(const std::vector<MemoryUse>& uses, uint64_t limit);

// The large allocations of training `model` on `data` as `cfg` says, on the CPU: the data, the
// parameters with their gradients, Adam's two moments and a snapshot's copy (sized by the model's width
// key), a training step's batch with its activations and their gradients (batch_size), a curvature
// probe's batch with its Hessian-vector-product graphs (probe ... batch=), and one forward pass of the
// evaluation (one eval_chunk). Activations are counted from model.tap_ops(): every op's output
// elements. Under fc1_kernel = index_add, encoder.fc1's gathered terms (inputs × outputs per example)
// are a use of their own in the step, the probe and the evaluation.
std::vector<MemoryUse> run_memory(const RunConfig& cfg, const Dataset& data, Model& model);

// The key that sizes `cfg`'s model, with its value: "hidden [256, 64]", "linear_hidden 4",
// "prednet_stacks [1, 32, 64, 128]".
std::string model_size_key(const RunConfig& cfg);

// Whether `what` (of a caught exception) is LibTorch's report of a failed allocation.
bool is_allocation_failure(const std::string& what);

// Runs `allocate` (which allocates for `key`) and turns an allocation failure, std::bad_alloc or
// LibTorch's out-of-memory error, into "<key>: cannot allocate <what> (<reason>)". Other exceptions
// pass through.
template <class F>
Status allocating(const std::string& key, const std::string& what, F&& allocate) {
  try {
    allocate();
  } catch (const std::bad_alloc&) {
    return Status::Error(key + ": cannot allocate " + what + " (out of memory)");
  } catch (const std::exception& e) {
    std::string why = e.what();
    if (!is_allocation_failure(why)) throw;
    return Status::Error(key + ": cannot allocate " + what + " (" + why.substr(0, why.find('\n')) + ")");
  }
  return Status::Ok();
}

}  // namespace saddlescope::trainer
