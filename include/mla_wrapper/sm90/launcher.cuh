// Host side of the sm90 family: argument checks (common/run_checks.h), one-time per-device
// kernel setup, the attention launch, then the split-KV combine (sm80's combine kernel: the
// plan and partial layout are shared) with programmatic dependent launch.
// Nothing here reads device memory, allocates or synchronizes: run() can be captured in a
// CUDA graph (the grids depend only on plan->num_ctas and plan->max_merge_items).
#pragma once

#include <cuda_runtime.h>
#include <stdint.h>

#include "mla_wrapper/common/plan.h"
#include "mla_wrapper/common/run_checks.h"
#include "mla_wrapper/common/status.cuh"
#include "mla_wrapper/sm80/combine_kernel.cuh"
#include "mla_wrapper/sm90/config.h"
#include "mla_wrapper/sm90/mla_kernel.cuh"

namespace mlaw {
namespace sm90 {

static_assert(kRowsPerTile == sm80::kRowsPerTile && kHeadDimCkv == sm80::kHeadDimCkv,
              "the sm80 combine kernel merges this family's partials: same tile and width");

struct DeviceSetup {
  bool ready = false;
  int sm_count = 0;
};

// Kv: how KV tokens are found (PagedKv: the page table; sparse/gather.cuh: per-token slot ids).
template <typename T, typename Kv = PagedKv>
int run(const MlaPlan* plan, const MlaRunArgs* args, cudaStream_t stream, const char* name,
        const Kv& kvm = Kv()) {
  if (int st = check_run_args(plan, args, name, kRowsPerTile, kKvTile)) return st;
  int device = 0;
  MLAW_CUDA_TRY(cudaGetDevice(&device));
  static DeviceSetup setup[64];  // one per instantiation (T, Kv)
  if (device < 0 || device >= 64) return fail("%s: device ordinal %d out of range", name, device);
  DeviceSetup& ds = setup[device];
  if (!ds.ready) {  // racing first calls from two threads both do this: harmless
    int major = 0;
    MLAW_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    if (major != 9)
      return fail("%s: this kernel is built for Hopper (sm_90a), device %d is sm_%d0; use the "
                  "sm80 backend", name, device, major);
    int smem_optin = 0;
    MLAW_CUDA_TRY(
        cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    if (smem_optin < kSmemAlloc)
      return fail("%s: needs %d bytes of shared memory per block, device %d allows %d", name,
                  kSmemAlloc, device, smem_optin);
    MLAW_CUDA_TRY(cudaFuncSetAttribute(mla_sm90_kernel<T, Kv>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemAlloc));
    int sms = 0;
    MLAW_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    ds.sm_count = sms;
    ds.ready = true;
  }
  if (plan->num_ctas > 0) {
    mla_sm90_kernel<T, Kv><<<plan->num_ctas, kThreads, kSmemAlloc, stream>>>(*plan, *args, kvm);
    if (int st = launch_status()) return st;
  }
  return sm80::launch_combine<T>(plan, args, stream, ds.sm_count, /*pdl=*/true);
}

}  // namespace sm90
}  // namespace mlaw
