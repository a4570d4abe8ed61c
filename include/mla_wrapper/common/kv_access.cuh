// How a planned attention kernel (sm80, sm90) finds KV token t of a work item: a template
// parameter of both kernels, so the sparse (top-k) gather mode reuses them unchanged.
#pragma once

#include <stdint.h>

#include "mla_wrapper/common/plan.h"

namespace mlaw {

// Page id of kv token t of the current request, or -1 past kv_end.
__device__ __forceinline__ int page_of(const MlaRunArgs& args, int page_start, int t, int kv_end) {
  return t < kv_end ? __ldg(args.kv_indices + page_start + t / args.page_size) : -1;
}
// The same with t / page_size from `pages` (pages.div(t); sm90's FastDiv: no integer division
// per token, which held the sm90 producer's page-1 loads back).
template <typename Div>
__device__ __forceinline__ int page_of(const MlaRunArgs& args, int page_start, int t, int kv_end,
                                       const Div& pages) {
  return t < kv_end ? __ldg(args.kv_indices + page_start + pages.div(t)) : -1;
}

// PagedKv, the default: token t of a request is in page kv_indices[page_start + t / page_size].
// The gather mode (include/mla_wrapper/sparse/gather.cuh, SlotGather) supplies the same hooks:
// its own lookup (an id that checks < 0: the token is skipped), kMaskInvalid = true (scores
// of skipped tokens are masked), a per-token clamp of kv_end, and the store of each row's max
// logit.
// A lookup comes in two halves, fetch (the load) and checked (the id the kernel may use, or
// -1): the kernels load ids ahead of their use and apply checked only at the use, so that no
// instruction waits for the load before then (a check right after the load held the sm90
// producer's arrival on `full` and the scorer's wgmma wait for the load's latency:
// logs/sm90_s13_h100_2026-11-25).
struct PagedKv {
  static constexpr bool kMaskInvalid = false;
  __device__ __forceinline__ int fetch(const MlaRunArgs& args, int page_start, int t,
                                       int kv_end) const {
    return page_of(args, page_start, t, kv_end);
  }
  template <typename Div>  // (t / page_size from the caller's divider, see page_of)
  __device__ __forceinline__ int fetch(const MlaRunArgs& args, int page_start, int t, int kv_end,
                                       const Div& pages) const {
    return page_of(args, page_start, t, kv_end, pages);
  }
  __device__ __forceinline__ int checked(int page) const { return page; }
  __device__ __forceinline__ int clamp_kv_end(int /*qo_start*/, int kv_end) const { return kv_end; }
  __device__ __forceinline__ void store_max_logit(int64_t, int64_t, float) const {}
};

}  // namespace mlaw
