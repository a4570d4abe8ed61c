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
#include "mla_wrapper/common/run_checks.h"
#include "mla_wrapper/common/status.cuh"
#include "mla_wrapper/sm80/combine_kernel.cuh"
#include "mla_wrapper/sm80/config.h"
#include "mla_wrapper/sm80/mla_kernel.cuh"

namespace mlaw {
namespace sm80 {

// Returns 0 when the kernel can run these arguments, else a mlaw::fail status naming the field.
template <typename Cfg>
int can_implement(const MlaPlan* plan, const MlaRunArgs* a, const char* name) {
  return check_run_args(plan, a, name, kRowsPerTile, Cfg::kKvTile);
}

struct DeviceSetup {
  bool ready = false;
  bool pdl = false;  // SM90+: the combine kernel launches early (programmatic dependent launch)
  int sm_count = 0;
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
    ds.sm_count = sms;
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
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeCooperative;
    attr.val.cooperative = 1;
    const cudaLaunchConfig_t cfg =
        launch_config(plan->num_ctas, kThreads, kSmemBytes, stream, &attr, true);
    MLAW_CUDA_TRY(cudaLaunchKernelEx(&cfg, mla_attention_kernel<T, Cfg, Kv>, *plan, *args, 1, kvm));
    return launch_status();
  }
  if (plan->num_ctas > 0) {
    mla_attention_kernel<T, Cfg, Kv>
        <<<plan->num_ctas, kThreads, kSmemBytes, stream>>>(*plan, *args, 0, kvm);
    if (int st = launch_status()) return st;
  }
  return launch_combine<T, float>(plan, args, stream, ds.sm_count, ds.pdl);
}

}  // namespace sm80
}  // namespace mlaw
