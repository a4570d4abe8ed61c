// Split-KV combine of the planned families: merges the partials (base-2 LSE) that the
// attention kernel wrote for split work items into out / lse. sm80 writes float32 partials,
// sm90 partials of the output's 16-bit type (half the bytes on the latency-bound path).
//
// combine_rows() is the merge itself; it runs either at the end of the sm80 attention kernel
// (fused: the attention grid is launched cooperatively, waits at a grid barrier once every
// work item is done, then every CTA merges; see mla_kernel.cuh) or in the separate
// mla_combine_kernel (launcher.cuh of both families). Every warp grid-strides over (row of a
// tile, merge item, column part) units, row slowest, the number of merge items being read from
// plan.counts[1] on the device: a tile's rows past qo_len x num_heads (48 of 64 at H=16) are the
// last units. The separate kernel deals the units out to the CTAs in turn (unit u: CTA
// u % grid, warp u / grid), so the rows that exist are merged by every CTA of the grid, on
// every SM, and the warps without one exit after their lookups (H100, against units by CTA,
// kCombineWarps consecutive ones each: H=16 B=1..8 1.02-1.06x faster, B=1 from CUDA graphs
// 1.04-1.06x, H=16 B=16 L=4096 1.015x; logs/sm90_s37_2026-11-27 run 3). The lanes of a warp
// read consecutive 8- or 16-byte pieces of a partial row (coalesced, through L2: the partials
// were written by other SMs). The separate
// kernel splits a row into kCombineParts parts and loads kCombineSlotBatch slots at once, so a
// small batch's few rows still keep many loads in flight (H200, B=1: one warp per row walking
// one slot at a time took 10-17 us under ncu). A batch is merged with its max first and
// independent weights (MergeState::add_batch): as one dependent exp / FMA chain per slot the
// merge itself was ~2.3 us of a B=1 launch's time (logs/sm90_narrow_h200_2026-11-23). The unit
// lookups read only the plan, so the separate kernel does them before waiting for attention.
// What the combine costs after the attention grid (H100, sm90, logs/sm90_s17_h100_2026-11-26):
// ~2.6-3.7 us at B=1 (12.9 us from a CUDA graph, 10.3 without it) and ~4 us in the middle
// regime. Per-slot readiness flags in place of the grid-dependency wait (attention releasing a
// flag per written half slot, the combine polling only its slots' flags) ran 0.90-0.97x at B=1:
// the release fence held each attention CTA until its stores had landed, and the polls cost
// the round trips the wait did.
#pragma once

#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>

#include <type_traits>

#include "mla_wrapper/common/pdl.cuh"
#include "mla_wrapper/common/plan.h"
#include "mla_wrapper/common/q_rows.cuh"
#include "mla_wrapper/common/status.cuh"
#include "mla_wrapper/merge/state.cuh"
#include "mla_wrapper/sm80/config.h"
#include "mla_wrapper/sm80/traits.cuh"

namespace mlaw {
namespace sm80 {

// Loads kN consecutive partial elements (float32 or 16-bit) as floats, through L2.
template <typename P, int kN>
__device__ __forceinline__ void load_partial(const P* src, float (&v)[kN]) {
  if constexpr (sizeof(P) == 4) {
    static_assert(kN % 4 == 0, "float32 partials load as float4");
#pragma unroll
    for (int i = 0; i < kN; i += 4) {
      const float4 x = __ldcg(reinterpret_cast<const float4*>(src + i));
      v[i] = x.x, v[i + 1] = x.y, v[i + 2] = x.z, v[i + 3] = x.w;
    }
  } else {
    static_assert(kN == 4 || kN == 8, "16-bit partials load as 8 or 16 bytes");
    uint32_t w[kN / 2];
    if constexpr (kN == 8) {
      const uint4 x = __ldcg(reinterpret_cast<const uint4*>(src));
      w[0] = x.x, w[1] = x.y, w[2] = x.z, w[3] = x.w;
    } else {
      const uint2 x = __ldcg(reinterpret_cast<const uint2*>(src));
      w[0] = x.x, w[1] = x.y;
    }
#pragma unroll
    for (int i = 0; i < kN / 2; ++i) {
      const float2 f = ElementTraits<P>::unpack(w[i]);
      v[2 * i] = f.x, v[2 * i + 1] = f.y;
    }
  }
}

// Merges (merge item, row, column part) units gw = first_warp, first_warp + warp_stride, ...
// (one per warp), loading kSlotBatch partial slots at a time. Partials are P (float32, or the
// output's 16-bit type); a row's 512 columns are split into kParts parts, lane l of a part
// merging kVec consecutive columns (kParts = 4: one 16-byte float32 or 8-byte 16-bit load per
// lane and slot, so one row's slots are read by four warps in parallel).
// wait() runs once in every thread before its first partial is read, after the warp's first
// unit lookups (the plan itself was uploaded before attention ran): the separate kernel's
// griddepcontrol.wait, so the lookups overlap the attention grid's tail.
struct NoWait {
  __device__ void operator()() const {}
};
// kRows: the plan's rows per tile (kRowsPerTile; the sm90 tall instance's plans: 32).
template <typename T, typename P, int kSlotBatch, int kParts, typename Wait = NoWait,
          int kRows = kRowsPerTile>
__device__ __forceinline__ void combine_rows(const MlaPlan& plan, const MlaRunArgs& args,
                                             int first_warp, int warp_stride,
                                             Wait wait = Wait()) {
  constexpr int kVec = kHeadDimCkv / 32 / kParts;       // columns per lane
  constexpr int kLoad = kVec < 16 / int(sizeof(P)) ? kVec : 16 / int(sizeof(P));  // per load
  static_assert(kVec % kLoad == 0 && kLoad % 4 == 0, "a lane's columns come in 4-wide loads");
  const int lane = threadIdx.x % 32;
  const P* partial_o = static_cast<const P*>(plan.partial_o);
  const int num_merges = plan.counts[1];
  const int total = num_merges * kRows * kParts;
  // The lanes first look up 32 of the warp's units at once (merge item, request, whether the
  // row exists: a tile's rows past qo_len x num_heads, e.g. 48 of 64 at H=16, cost one lookup
  // round per 32 units instead of a chain of dependent loads each), then the warp merges the
  // valid ones.
  bool waited = false;
  for (int base = first_warp; base < total; base += 32 * warp_stride) {
    const int mine = base + lane * warp_stride;
    int first_slot_l = 0, num_slots_l = 0, qo_start_l = 0, row_l = -1;
    if (mine < total) {
      const int tile_row = mine / kParts / num_merges;  // row of the merge item's tile
      const int* mi = plan.merge_info + (mine / kParts - tile_row * num_merges) * kMergeFields;
      const int* ri = plan.request_info + mi[kMergeRequest] * kRequestFields;
      const int row = mi[kMergeRowTile] * kRows + tile_row;
      if (row < ri[kRequestQoLen] * args.num_heads) {
        row_l = row;
        first_slot_l = mi[kMergeFirstSlot];
        num_slots_l = mi[kMergeNumSlots];
        qo_start_l = ri[kRequestQoStart];
      }
    }
    const unsigned valid = __ballot_sync(0xffffffffu, row_l >= 0);
    if (valid != 0 && !waited) {
      wait();
      waited = true;
    }
    for (unsigned todo = valid; todo; todo &= todo - 1) {
      const int owner = __ffs(todo) - 1;  // the lane that looked this unit up
      const int gw = base + owner * warp_stride;
      const int part = gw % kParts;
      const int row = __shfl_sync(0xffffffffu, row_l, owner);
      const int r = row % kRows;
      const int first_slot = __shfl_sync(0xffffffffu, first_slot_l, owner);
      const int num_slots = __shfl_sync(0xffffffffu, num_slots_l, owner);
      const int qo_start = __shfl_sync(0xffffffffu, qo_start_l, owner);
      // column of load q of this lane: col0 + 32 kLoad q
      const int col0 = part * (kHeadDimCkv / kParts) + kLoad * lane;

      MergeState<kVec> state;
      state.init();
      // kBatch slots at a time: their LSE and rows are loaded before any is merged.
      auto merge_slots = [&](auto batch_const) {
        constexpr int kBatch = decltype(batch_const)::value;
        for (int k0 = 0; k0 < num_slots; k0 += kBatch) {
          float s[kBatch];
          float v[kBatch][kVec];
#pragma unroll
          for (int j = 0; j < kBatch; ++j) {
            s[j] = -INFINITY;  // past num_slots: empty (MergeState skips it)
#pragma unroll
            for (int e = 0; e < kVec; ++e) v[j][e] = 0.f;
            if (k0 + j < num_slots) {
              const int64_t prow = static_cast<int64_t>(first_slot + k0 + j) * kRows + r;
              s[j] = __ldcg(plan.partial_lse + prow);
              const P* src = partial_o + prow * kHeadDimCkv + col0;
#pragma unroll
              for (int q = 0; q < kVec / kLoad; ++q)
                load_partial<P, kLoad>(src + 32 * kLoad * q,
                                       *reinterpret_cast<float(*)[kLoad]>(&v[j][kLoad * q]));
            }
          }
          state.template add_batch<false>(v, s);
        }
      };
      // A batch wider than kCombineSlotBatch (the few-merges instance) serves only merges of
      // more slots than that: the others merge no empty slots (warp-uniform branch).
      if (kSlotBatch > kCombineSlotBatch && num_slots <= kCombineSlotBatch)
        merge_slots(std::integral_constant<int, kCombineSlotBatch>{});
      else
        merge_slots(std::integral_constant<int, kSlotBatch>{});
      float v[kVec];
      float s;
      state.template finish<false>(v, s);

      const int64_t token = qo_start + row / args.num_heads;
      const int64_t head = row % args.num_heads;
      T* dst = static_cast<T*>(args.out) + token * args.out_stride_token +
               head * args.out_stride_head + col0;
#pragma unroll
      for (int q = 0; q < kVec / kLoad; ++q)
#pragma unroll
        for (int e = 0; e < kLoad; e += 4) {
          uint2 packed;
          packed.x = ElementTraits<T>::pack(v[kLoad * q + e], v[kLoad * q + e + 1]);
          packed.y = ElementTraits<T>::pack(v[kLoad * q + e + 2], v[kLoad * q + e + 3]);
          *reinterpret_cast<uint2*>(dst + 32 * kLoad * q + e) = packed;
        }
      if (lane == 0 && part == 0 && args.lse != nullptr)
        args.lse[lse_index(args, token, head)] = lse_out_base(args, s);
    }
  }
  // A warp without rows to merge exits without waiting for the attention grid, except the
  // grid's first warp: this grid must not complete before the attention grid (a programmatic
  // launch after it, the next call's attention, waits only for this one).
  if (!waited && first_warp == 0) wait();
}

// Probe (timing only, wrong results): -DMLAW_PROBE_COMBINE_WAIT_ONLY=1 makes the separate
// combine wait for the attention grid and exit (what its launch and the wait cost).
#ifndef MLAW_PROBE_COMBINE_WAIT_ONLY
#define MLAW_PROBE_COMBINE_WAIT_ONLY 0
#endif

// combine_rows' wait for the attention grid (common/pdl.cuh; a no-op for an ordinary launch).
struct GridDependencyWait {
  __device__ void operator()() const { grid_dependency_wait(); }
};

// CTAs an SM of an instance (config.h); without the bound the unit lookups by row put the
// default instance at 90 registers, two CTAs an SM.
template <int kSlotBatch, int kParts>
constexpr int combine_ctas_per_sm() {
  return kSlotBatch > kCombineSlotBatch ? kCombineFewCtasPerSm
         : kParts == kCombineManyParts  ? kCombineManyCtasPerSm
                                        : kCombineCtasPerSm;
}

template <typename T, typename P, int kSlotBatch = kCombineSlotBatch, int kParts = kCombineParts,
          int kRows = kRowsPerTile>
__global__ void __launch_bounds__(kCombineWarps * 32, combine_ctas_per_sm<kSlotBatch, kParts>())
    mla_combine_kernel(const MlaPlan plan, const MlaRunArgs args) {
  // A kernel launched after this one with programmatic dependent launch (sm90's attention of
  // the next call) may start now: it waits for this grid before reading what it wrote.
  launch_dependents();
  if (MLAW_PROBE_COMBINE_WAIT_ONLY) {  // probe (wrong results): the launch and the wait alone
    grid_dependency_wait();
    return;
  }
  // Launched programmatically (see launch_combine): the unit lookups read only the plan, so
  // they run before the wait for the attention grid.
  // Units dealt to the CTAs in turn (above; whole rows, a row's kParts units in one CTA, ran
  // 0.99-1.03x: logs/sm90_s37_2026-11-27 run 12).
  combine_rows<T, P, kSlotBatch, kParts, GridDependencyWait, kRows>(
      plan, args, threadIdx.x / 32 * gridDim.x + blockIdx.x, gridDim.x * kCombineWarps,
      GridDependencyWait());
}

// One instance of the combine kernel with what its launch needs: column parts a row and CTAs
// an SM (combine_ctas_per_sm).
struct CombineInstance {
  void (*kernel)(const MlaPlan, const MlaRunArgs);
  int parts;
  int ctas_per_sm;
};
template <typename T, typename P, int kSlotBatch, int kParts, int kRows>
CombineInstance combine_instance() {
  return {mla_combine_kernel<T, P, kSlotBatch, kParts, kRows>, kParts,
          combine_ctas_per_sm<kSlotBatch, kParts>()};
}

// Launches the combine kernel (partials of type P) after an attention launch on `stream` when
// the plan has merge capacity. kRows: the plan's rows per tile, a compile-time constant (read
// from the plan at run time, the kernel's SASS grew ~25%; logs/sm90_s58_2026-11-28 runs 1-2).
// Grid: enough warps for max_merge_items x max(kRows, 64) rows x column parts (kCombineParts,
// or kCombineManyParts for 16-bit partials of many merges), at least one CTA and at most the CTAs
// that fit at once (combine_ctas_per_sm) per SM: a grid past that ran in two waves (sized at
// four an SM with three fitting, H=16 B=16's 512 CTAs left a second wave to start after
// attention's end). 16-bit partials of a few merges, B=1,
// load kCombineFewSlotBatch slots at once. pdl: programmatic dependent launch (SM90+): the
// attention CTAs allow it as they start, so the combine grid is launched (and parks in
// griddepcontrol.wait on free SMs) while attention runs, instead of after it; the wait returns
// once attention's writes are visible. Returns 0 or a CUDA error status.
template <typename T, typename P, int kRows = kRowsPerTile>
int launch_combine(const MlaPlan* plan, const MlaRunArgs* args, cudaStream_t stream,
                   int sm_count, bool pdl) {
  if (plan->max_merge_items <= 0) return 0;
  // 16-bit partials with many merge items: the configuration for merges of a few slots.
  const bool many = sizeof(P) == 2 &&
                    static_cast<int64_t>(plan->max_merge_items) * kCombineManyMergesDiv > plan->num_ctas;
  // 16-bit partials of at most kCombineFewMerges merges (B=1..8): 16 slots at a time.
  const bool few = sizeof(P) == 2 && !many && plan->max_merge_items <= kCombineFewMerges;
  const CombineInstance inst =
      many  ? combine_instance<T, P, kCombineManySlotBatch, kCombineManyParts, kRows>()
      : few ? combine_instance<T, P, kCombineFewSlotBatch, kCombineParts, kRows>()
            : combine_instance<T, P, kCombineSlotBatch, kCombineParts, kRows>();
  // Sized for 64-row tiles whatever kRows: sm90's 16- and 32-row plans (narrow, tall) then deal
  // their rows' units over as many CTAs, on every SM, as a 64-row plan's valid rows. Sized for
  // their own rows (e.g. 132 CTAs of ~8 busy warps at H=16 B=32), the combine ended ~0.4 us
  // later (H200, logs/sm90_s65_2026-11-29 run 5); sized for 64, H=16 B=32 L=2048 ran
  // 1.021-1.026x faster (logs/sm90_s66_2026-11-29 run 4, next to A/A sets at 1.000-1.003x
  // there), the other narrow rows and the tall plans' rows equal within the A/A sets' spread.
  constexpr int kGridRows = kRows > kRowsPerTile ? kRows : kRowsPerTile;
  const int64_t warps_needed =
      static_cast<int64_t>(plan->max_merge_items) * kGridRows * inst.parts;
  const int64_t blocks_needed = (warps_needed + kCombineWarps - 1) / kCombineWarps;
  const int max_grid = inst.ctas_per_sm * sm_count;
  // At least one CTA an SM: the units dealt to the CTAs in turn then put B=1's merging warps
  // on every SM (H=128 B=1, 64 CTAs of 8 merging warps before: 1.02-1.04x faster eagerly and
  // from CUDA graphs, H100, logs/sm90_s37_2026-11-27 run 6; two CTAs an SM gained no more).
  const int64_t blocks = blocks_needed > sm_count ? blocks_needed : sm_count;
  const int grid = static_cast<int>(blocks < max_grid ? blocks : max_grid);
  cudaLaunchAttribute attr;
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  const cudaLaunchConfig_t cfg = launch_config(grid, kCombineWarps * 32, 0, stream, &attr, pdl);
  const cudaError_t err = cudaLaunchKernelEx(&cfg, inst.kernel, *plan, *args);
  if (err != cudaSuccess) return static_cast<int>(err);
  return launch_status();
}

}  // namespace sm80
}  // namespace mlaw
