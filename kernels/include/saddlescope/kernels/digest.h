// A 64-bit digest of a byte string that the CPU and a CUDA device compute alike, whatever order a
// parallel reduction adds in — what the ophash probe (probes/op_hashes.h) needs to hash a CUDA tensor
// where it lies, without a copy to the host and a wait per tensor, and still compare it with a CPU run.
//
// The bytes are cut into 256-byte blocks, the last one zero-padded. A block's 64 little-endian 32-bit
// words w, with fixed keys K, give NH (UMAC's hash): Σⱼ (w₂ⱼ + K₂ⱼ mod 2³²)·(w₂ⱼ₊₁ + K₂ⱼ₊₁ mod 2³²)
// mod 2⁶⁴; the block's index is mixed in by a bijection (digest_math.h), and the blocks' results are
// summed mod 2⁶⁴ — a sum, so order-free. digest_finish mixes in the length. A change of the bytes
// leaves the digest as it was with probability about 2⁻³² (NH's bound for one block: the change is
// multiplied by its partner word plus key, zero for one value in 2³²) — enough to say which op first
// computed other bits, not to resist an adversary. Torch-free.
#pragma once

#include <cstddef>
#include <cstdint>

namespace saddlescope::kernels {

// The blocks' sum of `n` bytes at `bytes` (host memory).
uint64_t digest_sum(const void* bytes, size_t n);
// Adds the blocks' sum of `n` bytes at device pointer `bytes` to *sum (device memory), enqueued on the
// cudaStream_t `stream` (as void*), without waiting. REQUIRES: a build with the CUDA kernels
// (fused.h's cuda_built()), `bytes` 4-byte aligned, the stream's device current.
void digest_sum_cuda(const void* bytes, size_t n, uint64_t* sum, void* stream);
// The digest of `n` bytes whose blocks' sum is `sum`.
uint64_t digest_finish(uint64_t sum, size_t n);

}  // namespace saddlescope::kernels
