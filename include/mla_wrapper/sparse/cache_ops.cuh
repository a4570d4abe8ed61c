// vLLM's cache-gather ops (cp_gather_cache, gather_and_maybe_dequant_cache without dequant):
// rows of a paged cache [num_blocks, block_size, entry] -> a contiguous [tokens, entry] buffer.
// Token t of sequence b (cu_seq_lens[b] <= t < cu_seq_lens[b + 1]) is position
// p = t - cu_seq_lens[b] + seq_starts[b] (0 without seq_starts) of that sequence, read from
// block block_table[b, p / block_size], row p % block_size. One warp copies one token's row
// with kVec-byte accesses; warps grid-stride over tokens.
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

namespace mlaw {
namespace sparse {

struct GatherCacheParams {
  const char* src;
  char* dst;
  const int32_t* block_table;   // [batch, max_blocks]
  const int32_t* cu_seq_lens;   // [batch + 1]
  const int32_t* token_to_seq;  // [num_tokens] or NULL (then a binary search of cu_seq_lens)
  const int32_t* seq_starts;    // [batch] or NULL
  int64_t num_tokens;           // tokens to write (dst rows >= cu_seq_lens[batch] are skipped)
  int64_t batch;
  int64_t block_size;
  int64_t entry_bytes;
  int64_t src_stride_block, src_stride_token;  // bytes
  int64_t dst_stride_token;                    // bytes
  int64_t block_table_stride;                  // elements
};

template <int kVec>
struct VecType;
template <> struct VecType<16> { using type = int4; };
template <> struct VecType<8> { using type = int2; };
template <> struct VecType<4> { using type = int; };
template <> struct VecType<2> { using type = short; };

template <int kVec>
__global__ void gather_cache_kernel(const GatherCacheParams p) {
  using V = typename VecType<kVec>::type;
  const int lane = threadIdx.x % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  const int64_t total = min(p.num_tokens, static_cast<int64_t>(__ldg(p.cu_seq_lens + p.batch)));
  for (int64_t t = blockIdx.x * static_cast<int64_t>(blockDim.x / 32) + threadIdx.x / 32;
       t < total; t += warps) {
    int64_t b;
    if (p.token_to_seq != nullptr) {
      b = __ldg(p.token_to_seq + t);
    } else {  // last b with cu_seq_lens[b] <= t
      int64_t lo = 0, hi = p.batch - 1;
      while (lo < hi) {
        const int64_t mid = (lo + hi + 1) / 2;
        if (__ldg(p.cu_seq_lens + mid) <= t) lo = mid; else hi = mid - 1;
      }
      b = lo;
    }
    const int64_t pos = t - __ldg(p.cu_seq_lens + b) + (p.seq_starts ? __ldg(p.seq_starts + b) : 0);
    const int64_t block = __ldg(p.block_table + b * p.block_table_stride + pos / p.block_size);
    const V* src = reinterpret_cast<const V*>(p.src + block * p.src_stride_block +
                                              (pos % p.block_size) * p.src_stride_token);
    V* dst = reinterpret_cast<V*>(p.dst + t * p.dst_stride_token);
    for (int64_t i = lane; i < p.entry_bytes / kVec; i += 32) dst[i] = src[i];
  }
}

}  // namespace sparse
}  // namespace mlaw
