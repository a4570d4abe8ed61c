// A plan made on the GPU for the page-table API (cutlass_mla_decode routed to our kernels).
//
// sgl-kernel's cutlass_mla_decode gets seq_lens and the page table on the device and must
// stay capturable in a CUDA graph, so the host cannot read the lengths. Instead the host picks
// the split count S from sizes alone (batch, heads, the page table's width, SM count) and this
// kernel writes a uniform split plan in plan.h's format: request r, row tile t, split s covers
// kv tokens [s * chunk_r, min((s + 1) * chunk_r, L_r)) with chunk_r = ceil(L_r / S) rounded up
// to the kernel's kv tile; work items are dealt to the persistent CTAs in equal counts.
#pragma once

#include <stdint.h>

#include "mla_wrapper/common/plan.h"

namespace mlaw {

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
  int64_t page_table_stride;    // entries per page-table row
};

__global__ void device_plan_kernel(DevicePlanArgs a) {
  const int64_t num_work = int64_t(a.batch) * a.tiles_per_request * a.num_splits;
  const int64_t num_merge = a.num_splits > 1 ? int64_t(a.batch) * a.tiles_per_request : 0;
  const int64_t n = max(max(num_work, num_merge), max(int64_t(a.num_ctas) + 1, int64_t(a.batch)));
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    if (i < a.batch) {
      int32_t* req = a.request_info + i * kRequestFields;
      req[kRequestQoStart] = int32_t(i);
      req[kRequestQoLen] = 1;
      req[kRequestKvLen] = max(a.seq_lens[i], 0);
      req[kRequestPageStart] = int32_t(i * a.page_table_stride);
    }
    if (i <= a.num_ctas) a.cta_work_indptr[i] = int32_t(i * num_work / a.num_ctas);
    if (i < num_work) {
      const int32_t split = int32_t(i % a.num_splits);
      const int64_t tile_id = i / a.num_splits;
      const int32_t r = int32_t(tile_id / a.tiles_per_request);
      const int32_t len = max(a.seq_lens[r], 0);
      int32_t chunk = (len + a.num_splits - 1) / a.num_splits;
      chunk = (chunk + a.kv_tile - 1) / a.kv_tile * a.kv_tile;
      int32_t* w = a.work_info + i * kWorkFields;
      w[kWorkRequest] = r;
      w[kWorkRowTile] = int32_t(tile_id % a.tiles_per_request);
      w[kWorkKvStart] = min(split * chunk, len);
      w[kWorkKvEnd] = min((split + 1) * chunk, len);
      w[kWorkPartialSlot] = a.num_splits > 1 ? int32_t(i) : -1;
      w[kWorkQoStart] = r;  // (request r's fields, as request_info above)
      w[kWorkQoLen] = 1;
      w[kWorkKvLen] = len;
      w[kWorkPageStart] = int32_t(r * a.page_table_stride);
    }
    if (i < num_merge) {
      int32_t* m = a.merge_info + i * kMergeFields;
      m[kMergeRequest] = int32_t(i / a.tiles_per_request);
      m[kMergeRowTile] = int32_t(i % a.tiles_per_request);
      m[kMergeFirstSlot] = int32_t(i * a.num_splits);
      m[kMergeNumSlots] = a.num_splits;
    }
    if (i == 0) {
      a.counts[0] = int32_t(num_work);
      a.counts[1] = int32_t(num_merge);
      a.counts[2] = a.batch;
      a.counts[3] = 0;
    }
  }
}

}  // namespace mlaw
