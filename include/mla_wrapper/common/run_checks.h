// Host-side checks of a planned launch (MlaPlan + MlaRunArgs) shared by the planner-driven
// kernel families (sm80, sm90): every pointer, count, alignment and stride the kernels rely on.
#pragma once

#include <stdint.h>

#include "mla_wrapper/common/plan.h"
#include "mla_wrapper/common/status.h"

namespace mlaw {

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// Returns 0 when a kernel with this tile (rows_per_tile, kv_tile) can run these arguments,
// else a mlaw::fail status naming the field.
inline int check_run_args(const MlaPlan* plan, const MlaRunArgs* a, const char* name,
                          int rows_per_tile, int kv_tile) {
  if (plan == nullptr) return fail("%s: plan is NULL", name);
  if (a == nullptr) return fail("%s: run args are NULL", name);
  if (!plan->cta_work_indptr || !plan->work_info || !plan->request_info || !plan->counts)
    return fail("%s: plan arrays (cta_work_indptr, work_info, request_info, counts) must not be NULL",
                name);
  if (plan->num_ctas < 0) return fail("%s: plan.num_ctas must be >= 0, got %d", name, plan->num_ctas);
  if (plan->rows_per_tile != rows_per_tile)
    return fail("%s: plan.rows_per_tile must be %d for this kernel, got %d (plan made for another "
                "backend?)", name, rows_per_tile, plan->rows_per_tile);
  if (plan->kv_tile <= 0 || plan->kv_tile % kv_tile != 0)
    return fail("%s: plan.kv_tile must be a positive multiple of %d, got %d", name, kv_tile,
                plan->kv_tile);
  if (plan->max_merge_items < 0)
    return fail("%s: plan.max_merge_items must be >= 0, got %d", name, plan->max_merge_items);
  if (plan->max_merge_items > 0 && (!plan->merge_info || !plan->partial_o || !plan->partial_lse))
    return fail("%s: plan.merge_info / partial_o / partial_lse must not be NULL when "
                "max_merge_items > 0", name);
  // kv_indices may be NULL (an empty page table: every request of the batch has kv_len 0);
  // the kernels read it only for tokens inside a request's range.
  if (!a->q_nope || !a->q_pe || !a->ckv || !a->kpe || !a->out)
    return fail("%s: q_nope, q_pe, ckv, kpe and out must not be NULL", name);
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
  if (a->lse_seq_tokens < 0)
    return fail("%s: lse_seq_tokens must be >= 0, got %d", name, a->lse_seq_tokens);
  return 0;
}

}  // namespace mlaw
