// Epilogue of one SM100 MLA call, after CUTLASS's attention (+ split reduction) kernels.
//
// CUTLASS's MLA kernel always computes a 128-row head tile and leaves three things to us:
//   * heads: with H < 128 the caller padded q to 128 rows; rows [0, H) are copied from the
//     kernel's 128-row output into the caller's out[:, :H] (any 16-byte aligned strides);
//   * LSE: the kernel writes the natural-log LSE of the scaled logits, [B, 128] contiguous;
//     it is rescaled here (lse_scale = log2(e) gives the base-2 LSE this library returns);
//   * empty requests: for seq_len == 0 the kernel writes nothing (compute returns early), so
//     o = 0 and lse = -inf are written here (the design's contract: never NaN).
// One block per request; blocks of non-empty requests with nothing to copy exit at once.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace mlaw::sm100 {

struct FinalizeParams {
  const int* seq_lens = nullptr;   // [batch] int32
  int batch = 0;
  int num_heads = 0;               // rows written to dst / lse_dst (<= 128)
  const void* src = nullptr;       // kernel output rows, element strides below
  int64_t src_stride_b = 0, src_stride_h = 0;
  void* dst = nullptr;             // caller's out (may equal src)
  int64_t dst_stride_b = 0, dst_stride_h = 0;
  int copy = 0;                    // 1: copy src -> dst for non-empty requests
  const float* lse_src = nullptr;  // [batch, 128] natural-log LSE from the kernel
  float* lse_dst = nullptr;        // caller's lse rows (may equal lse_src), or null
  int64_t lse_dst_stride_b = 0;
  float lse_scale = 1.0f;          // multiplies lse_src (log2(e) for base 2)
};

template <int kElemBytes, int kHeadDim>
__global__ void __launch_bounds__(256) finalize_kernel(FinalizeParams p) {
  const int b = blockIdx.x;
  const bool empty = p.seq_lens[b] <= 0;
  if (!empty && !p.copy && p.lse_dst == nullptr) return;

  constexpr int kVecPerRow = kHeadDim * kElemBytes / 16;
  static_assert(kHeadDim * kElemBytes % 16 == 0, "rows must be whole 16-byte vectors");
  if (empty || p.copy) {
    const int total = p.num_heads * kVecPerRow;
    char* dst = static_cast<char*>(p.dst) + b * p.dst_stride_b * kElemBytes;
    const char* src = static_cast<const char*>(p.src) + b * p.src_stride_b * kElemBytes;
    for (int i = threadIdx.x; i < total; i += blockDim.x) {
      const int h = i / kVecPerRow;
      const int v = i - h * kVecPerRow;
      uint4 val = make_uint4(0u, 0u, 0u, 0u);  // +0.0 in fp16 / bf16
      if (!empty) {
        val = *reinterpret_cast<const uint4*>(src + h * p.src_stride_h * kElemBytes + v * 16);
      }
      *reinterpret_cast<uint4*>(dst + h * p.dst_stride_h * kElemBytes + v * 16) = val;
    }
  }
  if (p.lse_dst != nullptr) {
    for (int h = threadIdx.x; h < p.num_heads; h += blockDim.x) {
      // Read before write: lse_dst may alias lse_src (same element, same thread).
      const float v = empty ? -INFINITY : p.lse_src[static_cast<int64_t>(b) * 128 + h] * p.lse_scale;
      p.lse_dst[b * p.lse_dst_stride_b + h] = v;
    }
  }
}

template <int kElemBytes, int kHeadDim>
inline cudaError_t launch_finalize(FinalizeParams const& p, cudaStream_t stream) {
  if (p.batch <= 0) return cudaSuccess;
  finalize_kernel<kElemBytes, kHeadDim><<<p.batch, 256, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace mlaw::sm100
