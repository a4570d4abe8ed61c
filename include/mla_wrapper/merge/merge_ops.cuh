// Attention-state merge kernels behind merge_state / merge_state_v2 (sgl-kernel) and
// merge_attn_states (vLLM).
//
// The problem is N x H rows of D elements (token n, head h). Each output row is
//     o = c_a * v_a + c_b * v_b,   c_x = w_x / (w_a + w_b),   w_x = base^(s_x - max(s_a, s_b)),
//     s = max + log_base(w_a + w_b).
// Each thread derives (c_a, c_b, s) for its row once, in float32, with mlaw::MergeState
// (merge/state.cuh): -inf and +inf LSEs are empty sides (weight 0), both empty gives o = 0 and
// s = -inf, never NaN. Rows whose token index is >= tokens_with_context (vLLM's
// prefill_tokens_with_context) copy side b (the suffix) and its LSE bit for bit.
//
// Schedule. The kernel is bandwidth-bound (about 2 flops per byte), so it only has to keep
// enough bytes in flight. A block has kBlockThreads threads arranged as blockDim.y rows times
// blockDim.x threads per row (a power of two, at most one warp: 32 threads for D = 512 bf16,
// 8 for D = 128 bf16). A thread owns kItems vectors of kVec elements, blockDim.x vectors
// apart, and issues all their loads (2 * kItems 16-byte loads: 8 bf16/fp16 or 4 fp32 each)
// before any math; the first chunk's loads go out before the row's LSEs arrive, so no load
// waits on another. The 16-byte path takes 48 registers on sm_90a (no spills), so 5 blocks
// (1280 threads) are resident per SM: ~80 KB in flight, well above what hides DRAM latency.
// Values of an empty side are loaded (the LSE is not known yet) but never used, so garbage or
// NaN there cannot leak into the result. Thread x = 0 of a row writes the LSE after all the
// row's threads have read the input LSEs, so in-place merges (outputs = inputs) are safe.
// Loads and stores are plain (cached): although every byte is touched once, the streaming
// hints (ld/st.global.cs, SASS LDG/STG.E.EF) measured ~85% of the copy ceiling on H200 at 64M
// elements against ~95% plain (bf16 D = 512 and D = 128; fp32 ~98%); L1::no_allocate loads
// ~89%. kItems = 4 (128 B per thread in flight, 64 registers) did not help D = 512 and lost
// at D = 128, and neither did 128/512-thread blocks or a grid-stride persistent loop.
//
// Vector width. The launcher picks the widest kVec (16, 8, 4, 2 bytes, then one element)
// that divides head_dim, every token/head stride and every base pointer's alignment, so any
// head size and any view whose last dim is contiguous works without a copy; D = 512 / 128
// contiguous rows always get 16-byte accesses, D = 100 bf16 gets 8-byte ones, D = 3 scalars.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "mla_wrapper/common/status.cuh"
#include "mla_wrapper/merge/state.cuh"

namespace mlaw {
namespace merge {

// Tuning knobs: compile-time, -D overrides are for benchmarking variants only.
#ifndef MLAW_MERGE_BLOCK_THREADS
#define MLAW_MERGE_BLOCK_THREADS 256
#endif
#ifndef MLAW_MERGE_ITEMS
#define MLAW_MERGE_ITEMS 2
#endif
#ifndef MLAW_MERGE_STREAMING  // 1: ld.global.cs / st.global.cs (evict-first); 0: plain
#define MLAW_MERGE_STREAMING 0
#endif

constexpr int kBlockThreads = MLAW_MERGE_BLOCK_THREADS;  // threads per block (rows x per row)
constexpr int kMaxThreadsPerRow = 32;  // one warp at most per (token, head) row
constexpr int kItems = MLAW_MERGE_ITEMS;  // vectors per thread whose loads are in flight together

// Everything one launch needs. Strides are in elements (not bytes); the last dim of the three
// value tensors is contiguous. out_lse may be null (LSE not written).
struct MergeParams {
  void* out;             // [N, H, D] merged values
  float* out_lse;        // merged LSE, element (n, h) at n * out_lse_stride_token + h * ..._head
  const void* a;         // [N, H, D] side a (sgl: v_a, vLLM: prefix_output)
  const float* a_lse;
  const void* b;         // [N, H, D] side b (sgl: v_b, vLLM: suffix_output)
  const float* b_lse;
  int64_t num_tokens;    // N
  int64_t num_heads;     // H
  int64_t head_dim;      // D
  int64_t out_stride_token, out_stride_head;
  int64_t a_stride_token, a_stride_head;
  int64_t b_stride_token, b_stride_head;
  int64_t out_lse_stride_token, out_lse_stride_head;
  int64_t a_lse_stride_token, a_lse_stride_head;
  int64_t b_lse_stride_token, b_lse_stride_head;
  int64_t tokens_with_context;  // rows with token < this merge; the others copy side b
};

// A kBytes-wide register type, loaded and stored with one instruction.
template <int kBytes> struct RawVec;
template <> struct RawVec<16> { using type = uint4; };
template <> struct RawVec<8> { using type = uint2; };
template <> struct RawVec<4> { using type = unsigned int; };
template <> struct RawVec<2> { using type = unsigned short; };

__device__ __forceinline__ float to_float(float x) { return x; }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T from_float(float x);
template <> __device__ __forceinline__ float from_float<float>(float x) { return x; }
template <> __device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half_rn(x);
}
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16_rn(x);
}

template <typename T, int kVec, typename Raw>
__device__ __forceinline__ void unpack(const Raw& raw, float (&v)[kVec]) {
  const T* e = reinterpret_cast<const T*>(&raw);
#pragma unroll
  for (int i = 0; i < kVec; ++i) v[i] = to_float(e[i]);
}

template <typename T, int kVec, typename Raw>
__device__ __forceinline__ Raw pack(const float (&v)[kVec]) {
  Raw raw;
  T* e = reinterpret_cast<T*>(&raw);
#pragma unroll
  for (int i = 0; i < kVec; ++i) e[i] = from_float<T>(v[i]);
  return raw;
}

// Value loads and stores. Plain (cached) accesses by default: the evict-first hints cost
// about 10% of the bandwidth on H200 (see the schedule comment).
template <typename Raw>
__device__ __forceinline__ Raw ld_value(const Raw* ptr) {
#if MLAW_MERGE_STREAMING
  return __ldcs(ptr);
#else
  return *ptr;
#endif
}
template <typename Raw>
__device__ __forceinline__ void st_value(Raw* ptr, const Raw& v) {
#if MLAW_MERGE_STREAMING
  __stcs(ptr, v);
#else
  *ptr = v;
#endif
}

template <typename T, bool kBaseE, int kVec>
__device__ __forceinline__ void merge_row(const MergeParams& p, uint32_t row) {
  using Raw = typename RawVec<static_cast<int>(sizeof(T)) * kVec>::type;
  const uint32_t num_heads = static_cast<uint32_t>(p.num_heads);
  const int64_t token = row / num_heads;
  const int64_t head = row - static_cast<uint32_t>(token) * num_heads;

  const bool merge = token < p.tokens_with_context;  // else: copy b
  const float s_b = p.b_lse[token * p.b_lse_stride_token + head * p.b_lse_stride_head];
  const float s_a =
      merge ? p.a_lse[token * p.a_lse_stride_token + head * p.a_lse_stride_head] : -INFINITY;

  const Raw* a_row = reinterpret_cast<const Raw*>(
      static_cast<const T*>(p.a) + token * p.a_stride_token + head * p.a_stride_head);
  const Raw* b_row = reinterpret_cast<const Raw*>(
      static_cast<const T*>(p.b) + token * p.b_stride_token + head * p.b_stride_head);
  Raw* out_row = reinterpret_cast<Raw*>(static_cast<T*>(p.out) + token * p.out_stride_token +
                                        head * p.out_stride_head);
  const int num_vecs = static_cast<int>(p.head_dim / kVec);
  const int step = static_cast<int>(blockDim.x);

  // Loads of one chunk: kItems vectors of a (merged rows only) and b, blockDim.x apart. They
  // do not wait for the LSEs: the first chunk is in flight while the weights are computed.
  Raw va[kItems], vb[kItems];
  auto load_chunk = [&](int first) {
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int i = first + k * step;
      if (i < num_vecs) {
        if (merge) va[k] = ld_value(a_row + i);
        vb[k] = ld_value(b_row + i);
      }
    }
  };
  int first = threadIdx.x;
  load_chunk(first);

  // Per-row weights. MergeState<2> fed the unit vectors (1, 0) with s_a and (0, 1) with s_b
  // finishes to (w_a, w_b) / (w_a + w_b) and the merged LSE, with its empty-side rules (an
  // empty side gets weight 0; both empty: weights 0, LSE -inf). A copied row takes b as is.
  float weight_a = 0.f, weight_b = 1.f, s_out = s_b;
  if (merge) {
    const float units[2][2] = {{1.f, 0.f}, {0.f, 1.f}};
    const float lses[2] = {s_a, s_b};
    MergeState<2> state;
    state.init();
    state.template add_batch<kBaseE>(units, lses);
    float weights[2];
    state.template finish<kBaseE>(weights, s_out);
    weight_a = weights[0];
    weight_b = weights[1];
  }
  if (p.out_lse != nullptr) {
    // out_lse may alias an input LSE (in-place merge): every thread of the row has read it
    // before lane 0 of the row writes. A row's threads are one aligned power-of-two group of
    // lanes of one warp (see launch_with_vec).
    const unsigned lane = (threadIdx.y * blockDim.x + threadIdx.x) % 32;
    const unsigned group = blockDim.x == 32 ? 0xffffffffu : ((1u << blockDim.x) - 1u);
    __syncwarp(group << (lane & ~(blockDim.x - 1)));
    if (threadIdx.x == 0) {
      p.out_lse[token * p.out_lse_stride_token + head * p.out_lse_stride_head] = s_out;
    }
  }
  // A side of weight 0 (empty, or negligible) is not used: its values may be garbage or NaN.
  const bool use_a = weight_a != 0.f;
  const bool use_b = weight_b != 0.f;

  while (first < num_vecs) {
#pragma unroll
    for (int k = 0; k < kItems; ++k) {
      const int i = first + k * step;
      if (i >= num_vecs) continue;
      Raw vo;
      if (!merge) {
        vo = vb[k];  // bit-exact copy
      } else {
        float o[kVec], v[kVec];
#pragma unroll
        for (int j = 0; j < kVec; ++j) o[j] = 0.f;
        if (use_a) {
          unpack<T, kVec>(va[k], v);
#pragma unroll
          for (int j = 0; j < kVec; ++j) o[j] = fmaf(weight_a, v[j], o[j]);
        }
        if (use_b) {
          unpack<T, kVec>(vb[k], v);
#pragma unroll
          for (int j = 0; j < kVec; ++j) o[j] = fmaf(weight_b, v[j], o[j]);
        }
        vo = pack<T, kVec, Raw>(o);
      }
      st_value(out_row + i, vo);
    }
    first += kItems * step;
    load_chunk(first);
  }
}

template <typename T, bool kBaseE, int kVec>
__global__ void __launch_bounds__(kBlockThreads) merge_states_kernel(const MergeParams p) {
  // The launcher guarantees N * H < 2^31, so 32-bit row arithmetic is exact.
  const uint32_t num_rows = static_cast<uint32_t>(p.num_tokens * p.num_heads);
  const uint32_t row = blockIdx.x * blockDim.y + threadIdx.y;
  if (row >= num_rows) return;
  merge_row<T, kBaseE, kVec>(p, row);
}

// The widest vector (in elements, at most 16 bytes) that every row of every value tensor can
// be accessed with: it divides head_dim, the strides of dims longer than 1 and the alignment
// of the base pointers.
template <typename T>
inline int pick_vec_width(const MergeParams& p) {
  auto fits = [&](int vec) {
    const uintptr_t bytes = static_cast<uintptr_t>(vec) * sizeof(T);
    if (p.head_dim % vec != 0) return false;
    const void* ptrs[3] = {p.out, p.a, p.b};
    for (const void* ptr : ptrs) {
      if (reinterpret_cast<uintptr_t>(ptr) % bytes != 0) return false;
    }
    const int64_t token_strides[3] = {p.out_stride_token, p.a_stride_token, p.b_stride_token};
    const int64_t head_strides[3] = {p.out_stride_head, p.a_stride_head, p.b_stride_head};
    for (int t = 0; t < 3; ++t) {
      if (p.num_tokens > 1 && token_strides[t] % vec != 0) return false;
      if (p.num_heads > 1 && head_strides[t] % vec != 0) return false;
    }
    return true;
  };
  int vec = 16 / static_cast<int>(sizeof(T));
  while (vec > 1 && !fits(vec)) vec /= 2;
  return vec;
}

// Launches the instantiation for `vec` (a power of two <= kVec): recursion down the widths.
template <typename T, bool kBaseE, int kVec>
int launch_with_vec(const MergeParams& p, int vec, cudaStream_t stream) {
  if constexpr (kVec > 1) {
    if (vec < kVec) return launch_with_vec<T, kBaseE, kVec / 2>(p, vec, stream);
  }
  const int64_t num_vecs = p.head_dim / kVec;
  // A power of two <= 32, so a row's threads are an aligned group of lanes in one warp.
  int64_t threads_per_row = 1;
  while (threads_per_row < kMaxThreadsPerRow && threads_per_row * kItems < num_vecs) {
    threads_per_row *= 2;
  }
  const int64_t rows_per_block = kBlockThreads / threads_per_row;
  const int64_t num_rows = p.num_tokens * p.num_heads;
  const dim3 block(static_cast<unsigned>(threads_per_row), static_cast<unsigned>(rows_per_block));
  const dim3 grid(static_cast<unsigned>((num_rows + rows_per_block - 1) / rows_per_block));
  merge_states_kernel<T, kBaseE, kVec><<<grid, block, 0, stream>>>(p);
  return launch_status();
}

// Host entry point: validates p and launches. `name` is the export's name for messages.
template <typename T, bool kBaseE>
int launch_merge_states(const MergeParams& p, cudaStream_t stream, const char* name) {
  if (p.num_tokens < 0 || p.num_heads < 0 || p.head_dim < 0) {
    return fail("%s: sizes must be >= 0, got num_tokens=%lld num_heads=%lld head_dim=%lld", name,
                static_cast<long long>(p.num_tokens), static_cast<long long>(p.num_heads),
                static_cast<long long>(p.head_dim));
  }
  if (p.tokens_with_context < 0 || p.tokens_with_context > p.num_tokens) {
    return fail("%s: tokens_with_context must be in [0, num_tokens=%lld], got %lld", name,
                static_cast<long long>(p.num_tokens),
                static_cast<long long>(p.tokens_with_context));
  }
  const int64_t num_rows = p.num_tokens * p.num_heads;
  if (p.num_heads > 0 && num_rows / p.num_heads != p.num_tokens) {
    return fail("%s: num_tokens * num_heads overflows", name);
  }
  if (num_rows >= (int64_t{1} << 31)) {
    return fail("%s: num_tokens * num_heads must be < 2^31, got %lld", name,
                static_cast<long long>(num_rows));
  }
  if (num_rows == 0) return 0;
  const bool has_values = p.head_dim > 0;
  if ((has_values && (p.out == nullptr || p.b == nullptr)) || p.b_lse == nullptr ||
      (p.tokens_with_context > 0 && ((has_values && p.a == nullptr) || p.a_lse == nullptr))) {
    return fail("%s: null value or LSE pointer", name);
  }
  return launch_with_vec<T, kBaseE, 16 / static_cast<int>(sizeof(T))>(
      p, pick_vec_width<T>(p), stream);
}

}  // namespace merge
}  // namespace mlaw
