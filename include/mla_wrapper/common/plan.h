// The split-KV plan: what the CPU planner (mla_wrapper/planner.py) writes into the int
// workspace and what the attention + combine kernels read. Plain C layout; the Python side
// (mla_wrapper/workspace.py) mirrors the field order and offsets.
//
// Vocabulary
//   request r     one sequence of the batch: qo_len[r] query tokens, kv_len[r] KV tokens.
//   query row     (query token i, head h) of a request; row index = i * num_heads + h, so a
//                 request has qo_len * num_heads rows (decode: num_heads rows).
//   row tile t    rows [t * kRowsPerTile, min((t + 1) * kRowsPerTile, qo_len * num_heads)).
//   work item w   (request, row tile, kv token range [kv_start, kv_end)) done by one CTA pass.
//                 partial_slot kSlotDirect (-1): the item covers the whole visible range of its
//                 rows and writes out/lse directly; >= 0: it writes partials (float32 for sm80, the output's
//                 16-bit type for sm90; LSE float32) to that slot of the float workspace and a
//                 merge item combines the slots afterwards;
//                 <= kSlotPairLow (sm90 plans made with pair_merge only): the item is one half
//                 of a kv range run by the two CTAs of a cluster (2k, 2k + 1), each half the
//                 only item of its CTA; the pair merges its states on chip, the low half's CTA
//                 writing the first 256 columns and the lse, the other the last 256, to out
//                 (the range is the whole tile: kSlotPairLow / kSlotPairHigh, no merge item) or
//                 to partial slot s (the range is a piece of a split tile, merged with the
//                 tile's other pieces by its merge item): mlaw_pair_slot() encodes them.
//   merge item m  (request, row tile, first slot, number of slots): the combine kernel merges
//                 num_slots partials (consecutive slots) of that tile into out/lse.
//
// Causal masking (qo_len > 1): query token i of request r sees kv tokens
// [0, kv_len - qo_len + i], so rows of one tile may see different lengths; the planner gives
// a work item the union and the kernel masks per row. A row that sees no token in a work item
// writes lse = -inf and o = 0 for that item.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
namespace mlaw {
#endif

// Fields of one work item, int32, array-of-structs: work_info[w * kWorkFields + field].
// kWorkQoStart..kWorkPageStart repeat the request's request_info fields, so that a CTA
// starting an item reads one record before it can load Q and the first page ids (one
// dependent load less than through request_info; request_info stays for the merge items).
enum {
  kWorkRequest = 0,
  kWorkRowTile = 1,
  kWorkKvStart = 2,
  kWorkKvEnd = 3,
  kWorkPartialSlot = 4,
  kWorkQoStart = 5,    // request_info[kRequestQoStart] of kWorkRequest
  kWorkQoLen = 6,      // request_info[kRequestQoLen]
  kWorkKvLen = 7,      // request_info[kRequestKvLen]
  kWorkPageStart = 8,  // request_info[kRequestPageStart]
  kWorkFields = 9,
};

// Values of kWorkPartialSlot below 0 (>= 0: a partial slot).
enum {
  kSlotDirect = -1,    // writes out / lse itself
  kSlotPairLow = -2,   // cluster pair writing out, CTA 2k: output columns [0, 256) and lse
  kSlotPairHigh = -3,  // cluster pair writing out, CTA 2k + 1: output columns [256, 512)
};

// A cluster pair's slot value: high = 0 for CTA 2k, 1 for CTA 2k + 1; out_slot = -1 (the pair
// writes out) or the partial slot it writes. -2 - (2 (out_slot + 1) + high): -2 / -3 write
// out, -4 - 2 s / -5 - 2 s partial slot s.
#if defined(__CUDACC__)
#define MLAW_PLAN_HD __host__ __device__
#else
#define MLAW_PLAN_HD
#endif
static inline MLAW_PLAN_HD int32_t mlaw_pair_slot(int32_t out_slot, int32_t high) {
  return -2 - (2 * (out_slot + 1) + high);
}
static inline MLAW_PLAN_HD int32_t mlaw_pair_high(int32_t slot) { return (-2 - slot) & 1; }
static inline MLAW_PLAN_HD int32_t mlaw_pair_out_slot(int32_t slot) {
  return ((-2 - slot) >> 1) - 1;
}

// The kv tokens a row tile sees, the union of its rows' views: kv_len, or with causal masking
// up to where its last query token's view ends (query i sees [0, kv_len - qo_len + i]; row_end
// is one past the tile's last row, num_heads rows a query token). The CPU planner
// (planner/planner.h) and the GPU's balanced plan (device_plan/balanced.cuh) both cut by it.
static inline MLAW_PLAN_HD int64_t mlaw_tile_visible_len(int64_t kv_len, int64_t qo_len,
                                                         int64_t num_heads, int64_t row_end,
                                                         int32_t causal) {
  if (!causal) return kv_len;
  const int64_t end = kv_len - qo_len + (row_end - 1) / num_heads + 1;
  return end < 0 ? 0 : end > kv_len ? kv_len : end;
}

// Fields of one request, int32: request_info[r * kRequestFields + field].
enum {
  kRequestQoStart = 0,   // qo_indptr[r]: first query token of r in q_nope / q_pe / out
  kRequestQoLen = 1,     // qo_indptr[r + 1] - qo_indptr[r]
  kRequestKvLen = 2,     // kv_len_arr[r]
  kRequestPageStart = 3, // kv_indptr[r]: first entry of r's pages in kv_indices
  kRequestFields = 4,
};

// Fields of one merge item, int32: merge_info[m * kMergeFields + field].
enum {
  kMergeRequest = 0,
  kMergeRowTile = 1,
  kMergeFirstSlot = 2,
  kMergeNumSlots = 3,
  kMergeFields = 4,
};

// Device pointers into the int workspace and float workspace, plus the sizes they were laid
// out with. All counts that vary per step are read from device memory (counts[]), so the
// grids are fixed and the launch can be captured in a CUDA graph.
typedef struct MlaPlan {
  const int32_t* cta_work_indptr;  // [num_ctas + 1]: CTA c runs work items [indptr[c], indptr[c+1])
  const int32_t* work_info;        // [max_work_items * kWorkFields], max_work_items >= num_ctas - 1:
                                   // the sm90 kernel reads record blockIdx.x (< num_ctas - 1)
                                   // before cta_work_indptr, as a guess of its first item
  const int32_t* request_info;     // [max_batch * kRequestFields]
  const int32_t* merge_info;       // [max_merge_items * kMergeFields]
  const int32_t* counts;           // [4]: num_work_items, num_merge_items, batch_size, num_rows_total
  void* partial_o;                 // [max_partial_slots, rows_per_tile, head_dim_ckv]: float32
                                   // (sm80) or the output's 16-bit type (sm90)
  float* partial_lse;              // [max_partial_slots, rows_per_tile] float32, base 2
  int32_t num_ctas;                // grid size of the attention kernel (persistent)
  int32_t rows_per_tile;           // kRowsPerTile of the kernel the plan was made for
  int32_t kv_tile;                 // KV tokens per kernel iteration (granularity of splits)
  int32_t max_merge_items;         // capacity of merge_info (combine kernel grid-strides over it)
} MlaPlan;

// Per-call (run) arguments: the user's tensors. Strides are in elements.
typedef struct MlaRunArgs {
  const void* q_nope;       // [num_tokens, num_heads, 512]
  const void* q_pe;         // [num_tokens, num_heads, 64]
  const void* ckv;          // [num_pages, page_size, 512] (may be a view of a 576-wide cache)
  const void* kpe;          // [num_pages, page_size, 64]
  void* out;                // [num_tokens, num_heads, 512]
  float* lse;               // [num_tokens, num_heads] or NULL (see lse_seq_tokens)
  const int32_t* kv_indices;// page ids, indexed from request_info[kRequestPageStart]
  int64_t q_nope_stride_token, q_nope_stride_head;
  int64_t q_pe_stride_token, q_pe_stride_head;
  int64_t ckv_stride_page, ckv_stride_token;
  int64_t kpe_stride_page, kpe_stride_token;
  int64_t out_stride_token, out_stride_head;
  int64_t lse_stride_token; // lse[token * lse_stride_token + head]
  int32_t num_heads;
  int32_t page_size;
  float sm_scale;           // softmax scale applied to q.k (natural-log domain)
  int32_t causal;           // 1: per-row causal limit (see above)
  int32_t lse_base_e;       // 1: write lse in natural log instead of base 2; 2: natural log,
                            // +inf for a row that sees no key (FlashMLA's convention)
  int32_t num_pages;        // ckv.shape[0]: bounds of sm90's TMA tensor maps (0: no TMA)
  int32_t num_q_tokens;     // q_nope.shape[0]: bounds of sm90's Q tensor maps (0: Q by cp.async)
  int32_t enable_pdl;       // 1: sm90 launches attention with programmatic stream serialization
                            // (its start overlaps the stream's previous kernel): only where the
                            // plan was uploaded by a copy, not written by that kernel, since the
                            // kernel reads the plan before griddepcontrol.wait; 2: the same where
                            // the previous kernel wrote the plan (a GPU plan): attention waits
                            // for it before reading the plan; sm80 ignores it
  float ckv_scale;          // an e4m3 cache (sm90 only): real ckv value = stored value x ckv_scale
  float kpe_scale;          //   and real kpe value = stored value x kpe_scale; 16-bit caches: unused
  int32_t lse_seq_tokens;   // n > 1: lse in FlashMLA's [batch, num_heads, n] layout (requests of
                            // n query tokens each): (token, head) at
                            // (token / n) * lse_stride_token + head * n + token % n; else
                            // token * lse_stride_token + head
} MlaRunArgs;

#ifdef __cplusplus
}  // namespace mlaw
#endif
