// Split-KV combine of the sm80 family: merges the float32 partials (base-2 LSE) that the
// attention kernel wrote for split work items into out / lse.
//
// combine_rows() is the merge itself; it runs either at the end of the attention kernel
// (fused: the attention grid is launched cooperatively, waits at a grid barrier once every
// work item is done, then every CTA merges; see mla_kernel.cuh) or in the separate
// mla_combine_kernel (fallback when the attention grid cannot be co-resident, see
// launcher.cuh). Every warp grid-strides over (merge item, row of its tile) pairs, the number
// of merge items being read from plan.counts[1] on the device. Lane l merges columns
// 4 l + 128 k + e (k, e < 4), so each partial row is read with fully coalesced 512-byte float4
// transactions (through L2: the partials were written by other SMs in the same grid).
#pragma once

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include "mla_wrapper/common/plan.h"
#include "mla_wrapper/merge/state.cuh"
#include "mla_wrapper/sm80/config.h"
#include "mla_wrapper/sm80/traits.cuh"

namespace mlaw {
namespace sm80 {

// Merges (merge item, row) pairs gw = first_warp, first_warp + warp_stride, ... (one per warp),
// loading kSlotBatch partial slots of a row at a time.
template <typename T, int kSlotBatch>
__device__ __forceinline__ void combine_rows(const MlaPlan& plan, const MlaRunArgs& args,
                                             int first_warp, int warp_stride) {
  const int lane = threadIdx.x % 32;
  const int total = plan.counts[1] * kRowsPerTile;
  for (int gw = first_warp; gw < total; gw += warp_stride) {
    const int m = gw / kRowsPerTile;
    const int r = gw % kRowsPerTile;
    const int* mi = plan.merge_info + m * kMergeFields;
    const int req = mi[kMergeRequest];
    const int row_tile = mi[kMergeRowTile];
    const int first_slot = mi[kMergeFirstSlot];
    const int num_slots = mi[kMergeNumSlots];
    const int* ri = plan.request_info + req * kRequestFields;
    const int row = row_tile * kRowsPerTile + r;
    if (row >= ri[kRequestQoLen] * args.num_heads) continue;

    MergeState<kCombineVec> state;
    state.init();
    // kSlotBatch slots at a time: their LSE and rows are loaded before any is merged, so a
    // warp keeps kSlotBatch x 2 KB in flight (the fused combine runs 8 warps per SM).
    for (int k0 = 0; k0 < num_slots; k0 += kSlotBatch) {
      float s[kSlotBatch];
      float v[kSlotBatch][kCombineVec];
#pragma unroll
      for (int j = 0; j < kSlotBatch; ++j) {
        s[j] = -INFINITY;  // past num_slots: empty (MergeState skips it)
#pragma unroll
        for (int e = 0; e < kCombineVec; ++e) v[j][e] = 0.f;
        if (k0 + j < num_slots) {
          const int64_t prow = static_cast<int64_t>(first_slot + k0 + j) * kRowsPerTile + r;
          s[j] = __ldcg(plan.partial_lse + prow);
          const float* src = plan.partial_o + prow * kHeadDimCkv + 4 * lane;
#pragma unroll
          for (int q = 0; q < kCombineVec / 4; ++q) {
            const float4 x = __ldcg(reinterpret_cast<const float4*>(src + 128 * q));
            v[j][4 * q] = x.x;
            v[j][4 * q + 1] = x.y;
            v[j][4 * q + 2] = x.z;
            v[j][4 * q + 3] = x.w;
          }
        }
      }
#pragma unroll
      for (int j = 0; j < kSlotBatch; ++j) state.template add<false>(v[j], s[j]);
    }
    float v[kCombineVec];
    float s;
    state.template finish<false>(v, s);

    const int64_t token = ri[kRequestQoStart] + row / args.num_heads;
    const int64_t head = row % args.num_heads;
    T* dst = static_cast<T*>(args.out) + token * args.out_stride_token +
             head * args.out_stride_head + 4 * lane;
#pragma unroll
    for (int q = 0; q < kCombineVec / 4; ++q) {
      uint2 packed;
      packed.x = ElementTraits<T>::pack(v[4 * q], v[4 * q + 1]);
      packed.y = ElementTraits<T>::pack(v[4 * q + 2], v[4 * q + 3]);
      *reinterpret_cast<uint2*>(dst + 128 * q) = packed;
    }
    if (lane == 0 && args.lse != nullptr)
      args.lse[token * args.lse_stride_token + head] =
          args.lse_base_e ? s * 0.6931471805599453f : s;
  }
}

template <typename T>
__global__ void __launch_bounds__(kCombineWarps * 32)
    mla_combine_kernel(const MlaPlan plan, const MlaRunArgs args) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  // Launched programmatically (see launcher.cuh): wait until the attention grid is complete
  // and its partials are visible. A no-op for an ordinary launch.
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  combine_rows<T, 1>(plan, args, blockIdx.x * kCombineWarps + threadIdx.x / 32,
                  gridDim.x * kCombineWarps);
}

// Launches the combine kernel after an attention launch on `stream` when the plan has merge
// capacity (grid: enough warps for max_merge_items x kRowsPerTile rows, at most
// kCombineCtasPerSm CTAs per SM of the device). pdl: programmatic dependent launch (SM90+): the
// attention CTAs allow it as they start, so the combine grid is launched (and parks in griddepcontrol.wait on free SMs) while
// attention runs, instead of after it; the wait returns once attention's writes are visible.
// Returns 0 or a CUDA error status.
template <typename T>
int launch_combine(const MlaPlan* plan, const MlaRunArgs* args, cudaStream_t stream,
                   int sm_count, bool pdl) {
  if (plan->max_merge_items <= 0) return 0;
  const int64_t warps_needed = static_cast<int64_t>(plan->max_merge_items) * kRowsPerTile;
  const int64_t blocks_needed = (warps_needed + kCombineWarps - 1) / kCombineWarps;
  const int max_grid = kCombineCtasPerSm * sm_count;
  const int grid = static_cast<int>(blocks_needed < max_grid ? blocks_needed : max_grid);
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(grid);
  cfg.blockDim = dim3(kCombineWarps * 32);
  cfg.dynamicSmemBytes = 0;
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl ? 1 : 0;
  const cudaError_t err = cudaLaunchKernelEx(&cfg, mla_combine_kernel<T>, *plan, *args);
  if (err != cudaSuccess) return static_cast<int>(err);
  const cudaError_t last = cudaGetLastError();
  return last == cudaSuccess ? 0 : static_cast<int>(last);
}

}  // namespace sm80
}  // namespace mlaw
