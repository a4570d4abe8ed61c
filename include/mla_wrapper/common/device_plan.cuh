// A uniform split plan made on the GPU for the page-table API (cutlass_mla_decode routed to our
// kernels): its plan for one request, and for a workspace too small for the balanced plan
// (device_plan/balanced.cuh, which serves every other routed call; mla_wrapper/ops.py).
//
// sgl-kernel's cutlass_mla_decode gets seq_lens and the page table on the device and must
// stay capturable in a CUDA graph, so the host cannot read the lengths. Instead the host picks
// the split count S from sizes alone (batch, heads, the page table's width, SM count) and this
// kernel writes a uniform split plan in plan.h's format: request r, row tile t, split s covers
// kv tokens [s * chunk_r, min((s + 1) * chunk_r, L_r)) with chunk_r = ceil(L_r / S) rounded up
// to the kernel's kv tile; work items are dealt to the persistent CTAs in equal counts. A
// request's merge reads only its first ceil(L_r / chunk_r) slots, the splits holding tokens (the
// rest are empty items), so a page table far wider than the request costs no combine traffic.
#pragma once

#include <stdint.h>

#include "mla_wrapper/common/pdl.cuh"
#include "mla_wrapper/common/plan.h"

namespace mlaw {

// plan.h's records as the GPU plans (this kernel, device_plan/balanced.cuh) write them: a
// request's fields, repeated in each of its work records.
struct PlanRequest {
  int32_t qo_start, qo_len, kv_len, page_start;
};

__device__ __forceinline__ void write_request(int32_t* request_info, int64_t r,
                                              const PlanRequest& q) {
  int32_t* req = request_info + r * kRequestFields;
  req[kRequestQoStart] = q.qo_start;
  req[kRequestQoLen] = q.qo_len;
  req[kRequestKvLen] = q.kv_len;
  req[kRequestPageStart] = q.page_start;
}

__device__ __forceinline__ void write_work(int32_t* work_info, int64_t item, int32_t r,
                                           int32_t row_tile, int32_t kv_start, int32_t kv_end,
                                           int32_t slot, const PlanRequest& q) {
  int32_t* w = work_info + item * kWorkFields;
  w[kWorkRequest] = r;
  w[kWorkRowTile] = row_tile;
  w[kWorkKvStart] = kv_start;
  w[kWorkKvEnd] = kv_end;
  w[kWorkPartialSlot] = slot;
  w[kWorkQoStart] = q.qo_start;
  w[kWorkQoLen] = q.qo_len;
  w[kWorkKvLen] = q.kv_len;
  w[kWorkPageStart] = q.page_start;
}

__device__ __forceinline__ void write_merge(int32_t* merge_info, int64_t m, int32_t r,
                                            int32_t row_tile, int32_t first_slot,
                                            int32_t num_slots) {
  int32_t* mi = merge_info + m * kMergeFields;
  mi[kMergeRequest] = r;
  mi[kMergeRowTile] = row_tile;
  mi[kMergeFirstSlot] = first_slot;
  mi[kMergeNumSlots] = num_slots;
}

__device__ __forceinline__ void write_counts(int32_t* counts, int32_t work_items,
                                             int32_t merge_items, int32_t batch) {
  counts[0] = work_items;
  counts[1] = merge_items;
  counts[2] = batch;
  counts[3] = 0;
}

struct DevicePlanArgs {
  const int32_t* seq_lens;      // [batch]
  int32_t* cta_work_indptr;     // [num_ctas + 1]
  int32_t* work_info;           // [batch * tiles * splits * kWorkFields]
  int32_t* request_info;        // [batch * kRequestFields]
  int32_t* merge_info;          // [batch * tiles * kMergeFields]
  int32_t* counts;              // [4]
  int32_t batch;
  int32_t tiles_per_request;    // ceil(num_heads / rows_per_tile) (qo_len is 1)
  int32_t num_splits;           // S >= 1
  int32_t num_ctas;
  int32_t kv_tile;
  int32_t min_piece_tiles;      // a request's pieces hold at least min(ceil(kv_len / 16) tokens,
                                // this many kv tiles), in whole kv tiles (1: no floor)
  int64_t page_table_stride;    // entries per page-table row
};

__global__ void device_plan_kernel(DevicePlanArgs a) {
  launch_dependents();     // (attention, launched with enable_pdl 2, waits for this grid)
  grid_dependency_wait();  // (launched programmatically: the stream's previous kernel first)
  const int64_t num_work = int64_t(a.batch) * a.tiles_per_request * a.num_splits;
  const int64_t num_merge = a.num_splits > 1 ? int64_t(a.batch) * a.tiles_per_request : 0;
  const int64_t n = max(max(num_work, num_merge), max(int64_t(a.num_ctas) + 1, int64_t(a.batch)));
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    // request r: its one query token, its length, its page-table row
    auto request = [&](int64_t r) {
      return PlanRequest{int32_t(r), 1, max(a.seq_lens[r], 0), int32_t(r * a.page_table_stride)};
    };
    // a request's split: ceil(kv_len / S) rounded up to whole kv tiles, and at least
    // min(ceil(kv_len / 16), min_piece_tiles tiles) (one request on the sm90 family: pieces of
    // two tiles from L=1025 on, as the CPU planner's sm90 cost model cuts B=1; one-tile pieces
    // over half the GPU or more ran slower there)
    auto chunk_of = [&](int32_t L) {
      const int32_t chunk = max((L + a.num_splits - 1) / a.num_splits,
                                min((L + 15) / 16, a.min_piece_tiles * a.kv_tile));
      return (chunk + a.kv_tile - 1) / a.kv_tile * a.kv_tile;
    };
    if (i < a.batch) write_request(a.request_info, i, request(i));
    if (i <= a.num_ctas) a.cta_work_indptr[i] = int32_t(i * num_work / a.num_ctas);
    if (i < num_work) {
      const int32_t split = int32_t(i % a.num_splits);
      const int64_t tile_id = i / a.num_splits;
      const int32_t r = int32_t(tile_id / a.tiles_per_request);
      const PlanRequest q = request(r);
      const int32_t chunk = chunk_of(q.kv_len);
      write_work(a.work_info, i, r, int32_t(tile_id % a.tiles_per_request),
                 min(split * chunk, q.kv_len), min((split + 1) * chunk, q.kv_len),
                 a.num_splits > 1 ? int32_t(i) : kSlotDirect, q);
    }
    if (i < num_merge) {
      // (only the request's splits that hold kv tokens: its first ceil(kv_len / chunk); the
      // rest are empty items, whose slots the merge skips)
      const int32_t r = int32_t(i / a.tiles_per_request);
      const int32_t L = max(a.seq_lens[r], 0), chunk = chunk_of(L);
      write_merge(a.merge_info, i, r, int32_t(i % a.tiles_per_request),
                  int32_t(i * a.num_splits), chunk > 0 ? max((L + chunk - 1) / chunk, 1) : 1);
    }
    if (i == 0) write_counts(a.counts, int32_t(num_work), int32_t(num_merge), a.batch);
  }
}

}  // namespace mlaw
