// Device building blocks of the sm80 MLA family: the CuTe SM80 atoms per element type
// (mma.sync m16n8k16 with float32 accumulators, ldmatrix, cp.async 16-byte zero-fill) and the
// swizzled shared-memory addressing of the Q / KV / P tiles.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <cute/arch/copy_sm75.hpp>
#include <cute/arch/copy_sm80.hpp>
#include <cute/arch/mma_sm80.hpp>

#include "mla_wrapper/sm80/config.h"

namespace mlaw {
namespace sm80 {

template <typename T>
struct ElementTraits;

template <>
struct ElementTraits<__nv_bfloat16> {
  using Mma = cute::SM80_16x8x16_F32BF16BF16F32_TN;
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  }
  static __device__ __forceinline__ float2 unpack(uint32_t w) {
    return __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w));
  }
};

template <>
struct ElementTraits<__half> {
  using Mma = cute::SM80_16x8x16_F32F16F16F32_TN;
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) {
    __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&v);
  }
  static __device__ __forceinline__ float2 unpack(uint32_t w) {
    return __half22float2(*reinterpret_cast<const __half2*>(&w));
  }
};

// D += A (16x16, row) * B (16x8, col), float32 accumulators.
template <typename T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                          uint32_t b1) {
  ElementTraits<T>::Mma::fma(d[0], d[1], d[2], d[3], a[0], a[1], a[2], a[3], b0, b1, d[0], d[1],
                             d[2], d[3]);
}

// ldmatrix.x4: lane l supplies the address of one 16-byte row of the four 8x8 matrices.
__device__ __forceinline__ void ldsm_x4(const char* smem, uint32_t (&r)[4]) {
  cute::SM75_U32x4_LDSM_N::copy(*reinterpret_cast<const cute::uint128_t*>(smem), r[0], r[1],
                                r[2], r[3]);
}

__device__ __forceinline__ void ldsm_x4_trans(const char* smem, uint32_t (&r)[4]) {
  cute::SM75_U16x8_LDSM_T::copy(*reinterpret_cast<const cute::uint128_t*>(smem), r[0], r[1],
                                r[2], r[3]);
}

// 16-byte cp.async (L2 only: the KV stream is read once per CTA); pred = false writes zeros.
__device__ __forceinline__ void cp_async_16(char* smem, const void* gmem, bool pred) {
  cute::SM80_CP_ASYNC_CACHEGLOBAL_ZFILL<cute::uint128_t>::copy(
      *reinterpret_cast<const cute::uint128_t*>(gmem), *reinterpret_cast<cute::uint128_t*>(smem),
      pred);
}

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// Named barrier over `threads` threads (ids 1..15; 0 is __syncthreads).
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Byte offset of 16-byte chunk `chunk` of row `row` in a [rows][576] 16-bit tile (Q, KV).
// The chunk's low 3 bits are XORed with the row's, so the 8 rows an ldmatrix reads at one
// column land in 8 different bank groups (a plain 1152-byte row pitch would hit one).
__device__ __forceinline__ int qkv_offset(int row, int chunk) {
  return row * kRowBytes + ((chunk ^ (row & 7)) << 4);
}

// Byte offset of chunk `chunk` of row `row` in the [64][kPChunks * 8] 16-bit P tile. Rows of
// 8 chunks XOR with row & 7; shorter rows (4 or 2 chunks, 32- and 16-token tiles) share a
// 128-byte line between 2 or 4 rows and XOR with the row's line index instead, so 8
// consecutive rows at one chunk still hit 8 different bank groups.
template <int kPChunks>
__device__ __forceinline__ int p_offset(int row, int chunk) {
  constexpr int kRowsPerLine = 8 / kPChunks;
  return row * (kPChunks * 16) + ((chunk ^ ((row / kRowsPerLine) & (kPChunks - 1))) << 4);
}

}  // namespace sm80
}  // namespace mlaw
