// Host side of the sm80 family: argument validation (can_implement), one-time per-device
// kernel setup, and the launch.
//
// One launch: without merge items (max_merge_items == 0) the attention kernel is launched
// plainly; with them it is launched cooperatively (all CTAs co-resident) and merges the
// split-KV partials itself after a grid barrier (fused combine, mla_kernel.cuh). Fallback,
// when the grid cannot be co-resident (plan.num_ctas > CTAs per SM x SMs, or no cooperative
// launch support): the attention kernel followed by the separate combine kernel (launched
// with programmatic dependent launch on SM90+).
// Nothing here reads device memory, allocates or synchronizes: run() can be captured in a
// CUDA graph (the grids depend only on plan->num_ctas and plan->max_merge_items).
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "mla_wrapper/common/plan.h"
#include "mla_wrapper/common/status.cuh"
#include "mla_wrapper/sm80/combine_kernel.cuh"
#include "mla_wrapper/sm80/config.h"
#include "mla_wrapper/sm80/mla_kernel.cuh"

namespace mlaw {
namespace sm80 {

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// Returns 0 when the kernel can run these arguments, else a mlaw::fail status naming the field.
template <typename Cfg>
int can_implement(const MlaPlan* plan, const MlaRunArgs* a, const char* name) {
  if (plan == nullptr) return fail("%s: plan is NULL", name);
  if (a == nullptr) return fail("%s: run args are NULL", name);
  if (!plan->cta_work_indptr || !plan->work_info || !plan->request_info || !plan->counts)
    return fail("%s: plan arrays (cta_work_indptr, work_info, request_info, counts) must not be NULL",
                name);
  if (plan->num_ctas < 0) return fail("%s: plan.num_ctas must be >= 0, got %d", name, plan->num_ctas);
  if (plan->rows_per_tile != kRowsPerTile)
    return fail("%s: plan.rows_per_tile must be %d for this kernel, got %d (plan made for another "
                "backend?)", name, kRowsPerTile, plan->rows_per_tile);
  if (plan->kv_tile <= 0 || plan->kv_tile % Cfg::kKvTile != 0)
    return fail("%s: plan.kv_tile must be a positive multiple of %d, got %d", name, Cfg::kKvTile,
                plan->kv_tile);
  if (plan->max_merge_items < 0)
    return fail("%s: plan.max_merge_items must be >= 0, got %d", name, plan->max_merge_items);
  if (plan->max_merge_items > 0 && (!plan->merge_info || !plan->partial_o || !plan->partial_lse))
    return fail("%s: plan.merge_info / partial_o / partial_lse must not be NULL when "
                "max_merge_items > 0", name);
  if (!a->q_nope || !a->q_pe || !a->ckv || !a->kpe || !a->out || !a->kv_indices)
    return fail("%s: q_nope, q_pe, ckv, kpe, out and kv_indices must not be NULL", name);
  if (a->num_heads < 1) return fail("%s: num_heads must be >= 1, got %d", name, a->num_heads);
  if (a->page_size < 1) return fail("%s: page_size must be >= 1, got %d", name, a->page_size);
  if (!aligned16(a->q_nope) || !aligned16(a->q_pe) || !aligned16(a->ckv) || !aligned16(a->kpe) ||
      !aligned16(a->out))
    return fail("%s: q_nope, q_pe, ckv, kpe and out must be 16-byte aligned", name);
  const int64_t strides[] = {a->q_nope_stride_token, a->q_nope_stride_head, a->q_pe_stride_token,
                             a->q_pe_stride_head,    a->ckv_stride_page,    a->ckv_stride_token,
                             a->kpe_stride_page,     a->kpe_stride_token,   a->out_stride_token,
                             a->out_stride_head};
  const char* names[] = {"q_nope.stride(0)", "q_nope.stride(1)", "q_pe.stride(0)",
                         "q_pe.stride(1)",   "ckv.stride(0)",    "ckv.stride(1)",
                         "kpe.stride(0)",    "kpe.stride(1)",    "out.stride(0)",
                         "out.stride(1)"};
  for (int i = 0; i < 10; ++i)
    if (strides[i] < 0 || strides[i] % 8 != 0)
      return fail("%s: %s must be a non-negative multiple of 8 elements (16 bytes), got %lld",
                  name, names[i], static_cast<long long>(strides[i]));
  if (!(a->sm_scale > 0.f)) return fail("%s: sm_scale must be > 0, got %g", name, a->sm_scale);
  return 0;
}

struct DeviceSetup {
  bool ready = false;
  bool pdl = false;  // SM90+: the combine kernel launches early (programmatic dependent launch)
  int combine_grid = 0;
  int max_coop_ctas = 0;  // most co-resident attention CTAs (0: no cooperative launch)
};

// Kv: how KV tokens are found (PagedKv: the page table; sparse/gather.cuh: per-token slot ids).
template <typename T, typename Cfg, typename Kv = PagedKv>
int run(const MlaPlan* plan, const MlaRunArgs* args, cudaStream_t stream, const char* name,
        const Kv& kvm = Kv()) {
  if (int st = can_implement<Cfg>(plan, args, name)) return st;
  constexpr int kSmemBytes = Cfg::kSmemBytes;
  int device = 0;
  MLAW_CUDA_TRY(cudaGetDevice(&device));
  static DeviceSetup setup[64];  // one per instantiation (T, Cfg, Kv)
  if (device < 0 || device >= 64) return fail("%s: device ordinal %d out of range", name, device);
  DeviceSetup& ds = setup[device];
  if (!ds.ready) {  // racing first calls from two threads both do this: harmless
    int smem_optin = 0;
    MLAW_CUDA_TRY(
        cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    if (smem_optin < kSmemBytes)
      return fail("%s: this kernel (KV tile %d x %d stages) needs %d bytes of shared memory "
                  "per block, device %d allows %d (build the config sm80.config_for_smem() "
                  "picks for this device)",
                  name, Cfg::kKvTile, Cfg::kStages, kSmemBytes, device, smem_optin);
    MLAW_CUDA_TRY(cudaFuncSetAttribute(mla_attention_kernel<T, Cfg, Kv>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
    int sms = 0;
    MLAW_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    ds.combine_grid = sms * 4;
    int major = 0;
    MLAW_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    ds.pdl = major >= 9;
    int coop = 0;
    MLAW_CUDA_TRY(cudaDeviceGetAttribute(&coop, cudaDevAttrCooperativeLaunch, device));
    int per_sm = 0;
    MLAW_CUDA_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(
        &per_sm, mla_attention_kernel<T, Cfg, Kv>, kThreads, kSmemBytes));
    ds.max_coop_ctas = coop ? per_sm * sms : 0;
    ds.ready = true;
  }
  // Fuse only when the merge is small next to the grid: the fused merge runs on the grid's
  // kWarps warps per CTA, while the combine kernel spreads rows over 4 CTAs per SM; past about
  // kFusedCombineMaxRowsPerWarp rows per warp the second launch is cheaper than the slower
  // merge (H200: a ragged batch with 89 merge items was 11% slower fused). CUDA graphs plan
  // for the capacity (max_merge_items = num_ctas - 1), so they keep the two-kernel path.
  const bool fused = plan->max_merge_items > 0 && plan->num_ctas > 0 &&
                     plan->num_ctas <= ds.max_coop_ctas &&
                     static_cast<int64_t>(plan->max_merge_items) * kRowsPerTile <=
                         static_cast<int64_t>(kFusedCombineMaxRowsPerWarp) * kWarps * plan->num_ctas;
  if (fused) {  // attention + combine in one cooperative launch
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(plan->num_ctas);
    cfg.blockDim = dim3(kThreads);
    cfg.dynamicSmemBytes = kSmemBytes;
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeCooperative;
    attr[0].val.cooperative = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    MLAW_CUDA_TRY(cudaLaunchKernelEx(&cfg, mla_attention_kernel<T, Cfg, Kv>, *plan, *args, 1, kvm));
    return launch_status();
  }
  if (plan->num_ctas > 0) {
    mla_attention_kernel<T, Cfg, Kv>
        <<<plan->num_ctas, kThreads, kSmemBytes, stream>>>(*plan, *args, 0, kvm);
    if (int st = launch_status()) return st;
  }
  if (plan->max_merge_items > 0) {
    const int64_t warps_needed = static_cast<int64_t>(plan->max_merge_items) * kRowsPerTile;
    const int64_t blocks_needed = (warps_needed + kCombineWarps - 1) / kCombineWarps;
    const int grid = static_cast<int>(blocks_needed < ds.combine_grid ? blocks_needed : ds.combine_grid);
    // Programmatic dependent launch: the attention CTAs allow it as they start, so the
    // combine grid is launched (and parks in griddepcontrol.wait on free SMs) while attention
    // runs, instead of after it; the wait returns once attention's writes are visible.
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(kCombineWarps * 32);
    cfg.dynamicSmemBytes = 0;
    cfg.stream = stream;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = attr;
    cfg.numAttrs = ds.pdl ? 1 : 0;
    MLAW_CUDA_TRY(cudaLaunchKernelEx(&cfg, mla_combine_kernel<T>, *plan, *args));
    if (int st = launch_status()) return st;
  }
  return 0;
}

}  // namespace sm80
}  // namespace mlaw
