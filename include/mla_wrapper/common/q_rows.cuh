// Query rows of a planned MLA kernel (sm80, sm90): row r of a request's row space is (token
// r / num_heads, head r % num_heads); its 576 columns are q_nope (512) then q_pe (64).
#pragma once

#include <stdint.h>

#include "mla_wrapper/common/plan.h"

namespace mlaw {

// Global address of 16-byte chunk c (0..71) of query row `row` of the request whose first
// query token is qo_start.
template <typename T>
__device__ __forceinline__ const T* q_chunk_ptr(const MlaRunArgs& args, int qo_start, int row,
                                                int c) {
  const int64_t token = qo_start + row / args.num_heads;
  const int64_t head = row % args.num_heads;
  return c < 64 ? static_cast<const T*>(args.q_nope) + token * args.q_nope_stride_token +
                      head * args.q_nope_stride_head + c * 8
                : static_cast<const T*>(args.q_pe) + token * args.q_pe_stride_token +
                      head * args.q_pe_stride_head + (c - 64) * 8;
}

}  // namespace mlaw
