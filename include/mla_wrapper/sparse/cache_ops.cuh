// vLLM's cache-gather ops: rows of a paged cache [num_blocks, block_size, entry] -> a contiguous
// [tokens, entry] buffer, each row as it is or dequantized on the way.
// Token t of sequence b (cu_seq_lens[b] <= t < cu_seq_lens[b + 1]) is position
// p = t - cu_seq_lens[b] + seq_starts[b] (0 without seq_starts) of that sequence, read from
// block block_table[b, p / block_size], row p % block_size. One warp does one token's row;
// warps grid-stride over tokens. What a row becomes (GatherCacheParams::kind):
//   kGatherCopy     its bytes (cp_gather_cache, gather_and_maybe_dequant_cache "auto")
//   kGatherDequant  fp8 values (e4m3 or e5m2) times *scale, as bf16 / fp16 / fp32
//                   (gather_and_maybe_dequant_cache "fp8", "fp8_e4m3", "fp8_e5m2")
//   kGatherDsMla    FlashMLA's 656-byte fp8 row (512 e4m3 latent values, 4 fp32 scales, one per
//                   128 values, 64 bf16 rope values) as 576 bf16 values
//                   (cp_gather_and_upconvert_fp8_kv_cache)
// Each fp8 value widens exactly (to f16, then f32); the product with its scale is rounded once
// to the output type, as torch's `x.float() * scale` then `.to(dtype)` would.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <stdint.h>

namespace mlaw {
namespace sparse {

enum GatherKind : int32_t { kGatherCopy = 0, kGatherDequant = 1, kGatherDsMla = 2 };
enum GatherFp8 : int32_t { kFp8E4m3 = 0, kFp8E5m2 = 1 };
enum GatherOut : int32_t { kOutBf16 = 0, kOutF16 = 1, kOutF32 = 2 };

// FlashMLA's fp8 row (kGatherDsMla): bytes [0, 512) e4m3, [512, 528) 4 fp32 scales,
// [528, 656) 64 bf16 rope values.
constexpr int kDsMlaRowBytes = 656;
constexpr int kDsMlaScaleOffset = 512;
constexpr int kDsMlaRopeOffset = 528;

struct GatherCacheParams {
  const char* src;
  char* dst;
  const int32_t* block_table;   // [batch, max_blocks]
  const int32_t* cu_seq_lens;   // [batch + 1] (starts_only: [batch])
  const int32_t* token_to_seq;  // [num_tokens] or NULL (then a binary search of cu_seq_lens)
  const int32_t* seq_starts;    // [batch] or NULL
  const float* scale;           // kGatherDequant: the cache's scale (one float, device memory)
  int64_t num_tokens;           // tokens to write (dst rows >= cu_seq_lens[batch] are skipped)
  int64_t batch;
  int64_t block_size;
  int64_t entry_bytes;          // a source row's bytes (kGatherDequant: its fp8 values)
  int64_t src_stride_block, src_stride_token;  // bytes
  int64_t dst_stride_token;                    // bytes
  int64_t block_table_stride;                  // elements
  int32_t kind;                 // GatherKind
  int32_t fp8_format;           // kGatherDequant: GatherFp8
  int32_t out_type;             // kGatherDequant: GatherOut
  int32_t starts_only;          // cu_seq_lens holds the batch's starts only (vLLM's
                                // workspace_starts): the last sequence runs to num_tokens
};

template <int kVec>
struct VecType;
template <> struct VecType<16> { using type = int4; };
template <> struct VecType<8> { using type = int2; };
template <> struct VecType<4> { using type = int; };
template <> struct VecType<2> { using type = short; };

// The row copies (Row::operator()(src, dst, lane, p): one warp, one token).
template <int kVec>
struct CopyRow {
  __device__ __forceinline__ void operator()(const char* src, char* dst, int lane,
                                             const GatherCacheParams& p) const {
    using V = typename VecType<kVec>::type;
    const V* s = reinterpret_cast<const V*>(src);
    V* d = reinterpret_cast<V*>(dst);
    for (int64_t i = lane; i < p.entry_bytes / kVec; i += 32) d[i] = s[i];
  }
};

// Two fp8 values (the low byte first) as floats, exactly.
template <int kFmt>
__device__ __forceinline__ float2 fp8x2_to_float2(uint16_t v) {
  const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<__nv_fp8x2_storage_t>(v),
                                                   kFmt == kFp8E4m3 ? __NV_E4M3 : __NV_E5M2);
  return __half22float2(*reinterpret_cast<const __half2*>(&h));
}

// Eight fp8 values (two words) times `scale`, stored as eight kOut values at dst.
template <int kFmt, int kOut>
__device__ __forceinline__ void store_scaled8(uint32_t lo, uint32_t hi, float scale, char* dst) {
  float f[8];
  const uint32_t w[2] = {lo, hi};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 v = fp8x2_to_float2<kFmt>(static_cast<uint16_t>(w[i / 2] >> (16 * (i % 2))));
    f[2 * i] = v.x * scale;
    f[2 * i + 1] = v.y * scale;
  }
  if constexpr (kOut == kOutF32) {
    reinterpret_cast<float4*>(dst)[0] = make_float4(f[0], f[1], f[2], f[3]);
    reinterpret_cast<float4*>(dst)[1] = make_float4(f[4], f[5], f[6], f[7]);
  } else {
    uint32_t packed[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      if constexpr (kOut == kOutBf16) {
        const __nv_bfloat162 b = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
        packed[i] = *reinterpret_cast<const uint32_t*>(&b);
      } else {
        const __half2 h = __floats2half2_rn(f[2 * i], f[2 * i + 1]);
        packed[i] = *reinterpret_cast<const uint32_t*>(&h);
      }
    }
    *reinterpret_cast<uint4*>(dst) = make_uint4(packed[0], packed[1], packed[2], packed[3]);
  }
}

// kGatherDequant: 8 fp8 values (8 bytes) a lane per step; the launcher checks that rows are
// whole 8-byte groups at 8-byte (source) and 16-byte (destination) alignment.
template <int kFmt, int kOut>
struct DequantRow {
  __device__ __forceinline__ void operator()(const char* src, char* dst, int lane,
                                             const GatherCacheParams& p) const {
    constexpr int kOutBytes = kOut == kOutF32 ? 4 : 2;
    const float scale = __ldg(p.scale);
    for (int64_t i = lane; i < p.entry_bytes / 8; i += 32) {
      const uint2 v = *reinterpret_cast<const uint2*>(src + 8 * i);
      store_scaled8<kFmt, kOut>(v.x, v.y, scale, dst + 8 * i * kOutBytes);
    }
  }
};

// kGatherDsMla: lane l widens latent values 16 l .. 16 l + 15 (scale l / 8) and copies the
// rope's bytes 4 l .. 4 l + 3 (16-byte aligned rows: checked by the launcher).
struct DsMlaRow {
  __device__ __forceinline__ void operator()(const char* src, char* dst, int lane,
                                             const GatherCacheParams&) const {
    const uint4 v = *reinterpret_cast<const uint4*>(src + 16 * lane);
    const float scale = reinterpret_cast<const float*>(src + kDsMlaScaleOffset)[lane / 8];
    store_scaled8<kFp8E4m3, kOutBf16>(v.x, v.y, scale, dst + 32 * lane);
    store_scaled8<kFp8E4m3, kOutBf16>(v.z, v.w, scale, dst + 32 * lane + 16);
    reinterpret_cast<uint32_t*>(dst + 2 * 512)[lane] =
        reinterpret_cast<const uint32_t*>(src + kDsMlaRopeOffset)[lane];
  }
};

template <class Row>
__global__ void gather_cache_kernel(const GatherCacheParams p, const Row row) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / 32);
  const int64_t total =
      p.starts_only ? p.num_tokens
                    : min(p.num_tokens, static_cast<int64_t>(__ldg(p.cu_seq_lens + p.batch)));
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
    if (pos < 0) continue;  // (rows before the first start: left alone)
    const int64_t block = __ldg(p.block_table + b * p.block_table_stride + pos / p.block_size);
    row(p.src + block * p.src_stride_block + (pos % p.block_size) * p.src_stride_token,
        p.dst + t * p.dst_stride_token, lane, p);
  }
}

}  // namespace sparse
}  // namespace mlaw
