// Query rows of a planned MLA kernel (sm80, sm90): row r of a request's row space is (token
// r / num_heads, head r % num_heads); its 576 columns are q_nope (512) then q_pe (64). Its
// output row and lse go to the same (token, head), or to a partial slot of the plan.
#pragma once

#include <math.h>
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

// lse2 (a row's lse in base 2) in the base args.lse asks for: natural where args.lse_base_e;
// with lse_base_e == 2 (FlashMLA's convention) a row that sees no key (lse2 = -inf) gets +inf.
__device__ __forceinline__ float lse_out_base(const MlaRunArgs& args, float lse2) {
  if (!args.lse_base_e) return lse2;
  return args.lse_base_e == 2 && lse2 == -INFINITY ? INFINITY : lse2 * 0.6931471805599453f;
}

// Where (token, head)'s lse goes in args.lse (plan.h MlaRunArgs lse_seq_tokens).
__device__ __forceinline__ int64_t lse_index(const MlaRunArgs& args, int64_t token,
                                             int64_t head) {
  const int32_t n = args.lse_seq_tokens, t = static_cast<int32_t>(token);  // (tokens: int32)
  if (n <= 1) return token * args.lse_stride_token + head;
  return static_cast<int64_t>(t / n) * args.lse_stride_token + head * n + t % n;
}

// Row `row` of a work item's lse (base 2) where its rows go: its partial slot (slot >= 0, kRows
// rows a slot, in base 2 for the combine), else args.lse at (token, head) where it is given.
template <int kRows>
__device__ __forceinline__ void store_row_lse(const MlaPlan& plan, const MlaRunArgs& args,
                                              int slot, int row, int64_t token, int64_t head,
                                              float lse2) {
  if (slot >= 0) {
    plan.partial_lse[static_cast<int64_t>(slot) * kRows + row] = lse2;
  } else if (args.lse != nullptr) {
    args.lse[lse_index(args, token, head)] = lse_out_base(args, lse2);
  }
}

}  // namespace mlaw
