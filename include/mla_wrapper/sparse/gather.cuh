// Gather mode of the planned MLA attention kernels (sm80, sm90; their template parameter Kv):
// each query token reads its own list of cache slot ids instead of a page table. The kernel's
// 16-byte cp.async loads of a token's 576 values (ckv and kpe rows with their own strides) are
// unchanged; a slot id < 0, >= num_slots or past the token's topk_length is skipped: its row is
// zero-filled and its scores are masked to -inf, so a duplicated slot id counts once per
// occurrence (gather-then-attend semantics).
#pragma once

#include <stdint.h>

#include "mla_wrapper/common/plan.h"
#include "mla_wrapper/sparse/sparse.h"

namespace mlaw {
namespace sparse {

struct SlotGather {
  static constexpr bool kMaskInvalid = true;
  MlaSparseArgs a;

  // Slot id of the token's t-th index (page_size is 1: a slot is a "page"), or -1: the index
  // as loaded (fetch), then -1 unless it is a slot (checked; common/kv_access.cuh says why apart).
  __device__ __forceinline__ int fetch(const MlaRunArgs& args, int page_start, int t,
                                       int kv_end) const {
    return t < kv_end ? __ldg(args.kv_indices + page_start + t) : -1;
  }
  template <typename Div>  // (PagedKv's hook with a page divider: slots need none)
  __device__ __forceinline__ int fetch(const MlaRunArgs& args, int page_start, int t, int kv_end,
                                       const Div&) const {
    return fetch(args, page_start, t, kv_end);
  }
  __device__ __forceinline__ int checked(int s) const {
    return s >= 0 && s < a.num_slots ? s : -1;
  }
  // A work item's kv range ends at the token's topk_length (qo_start is the token).
  __device__ __forceinline__ int clamp_kv_end(int qo_start, int kv_end) const {
    return a.topk_length != nullptr ? min(kv_end, max(__ldg(a.topk_length + qo_start), 0))
                                    : kv_end;
  }
  __device__ __forceinline__ void store_max_logit(int64_t token, int64_t head,
                                                  float m_log2) const {
    if (a.max_logits != nullptr)
      a.max_logits[token * a.max_logits_stride_token + head] = m_log2 * 0.6931471805599453f;
  }
};

}  // namespace sparse
}  // namespace mlaw
