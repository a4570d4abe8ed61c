// Sparse (top-k) MLA: the per-call arguments that the gather mode of the sm80 attention kernel
// reads on top of MlaPlan / MlaRunArgs (common/plan.h). Plain C layout, mirrored by
// mla_wrapper/sparse.py (MlaSparseArgsStruct).
//
// How a sparse call maps onto the paged plan: every query token is one "request" of the plan
// with qo_len 1 and kv_len = topk; its kv "page table" is its row of slot ids
// (MlaRunArgs.kv_indices + request_info[kRequestPageStart]), page_size is 1, and
// ckv/kpe_stride_page are the strides of one cache slot (the latent cache viewed flat:
// slot = page id * page_size + offset). All heads of a token share its slot list, so a row tile
// holds heads of one token, and the planner's split-KV cuts the top-k list of a token.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
namespace mlaw {
#endif

typedef struct MlaSparseArgs {
  const int32_t* topk_length;       // [num_tokens] or NULL: only the first n slot ids are valid
  float* max_logits;                // [num_tokens, num_heads] or NULL: max of sm_scale * q.k
                                    // (natural units, -inf for a row with no valid slot);
                                    // written by work items that cover a whole row (no split)
  int64_t max_logits_stride_token;  // max_logits[token * stride + head]
  int64_t num_slots;                // slot ids outside [0, num_slots) are skipped like -1
  int32_t l2_prefetch_rows;         // sm90: the consumers prefetch tile i + 2's rows into L2 (1)
  int32_t reserved;
} MlaSparseArgs;

#ifdef __cplusplus
}  // namespace mlaw
#endif
