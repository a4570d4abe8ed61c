// Online merge of attention states (o, lse) in float32, shared by the merge ops
// (merge_state / merge_state_v2 / merge_attn_states) and by every attention family's
// split-KV combine kernel.
//
// A state is (v, s): v is a normalized partial output row, s its log-sum-exp in base 2
// (kBaseE = false, FlashInfer's convention) or natural log (kBaseE = true, vLLM's).
// Merging keeps a running max m, the sum d of exp(s_i - m) and the weighted sum of v_i.
// Empty sides: s = -inf contributes nothing; s = +inf is treated as empty too (vLLM does so
// for partials that saw no token). All sides empty: v = 0, s = -inf, never NaN.
#pragma once

#include <cuda_runtime.h>

#include <cmath>

namespace mlaw {

template <bool kBaseE>
__device__ __forceinline__ float lse_exp(float x) {
  if constexpr (kBaseE) {
    return __expf(x);
  } else {
    return exp2f(x);
  }
}

template <bool kBaseE>
__device__ __forceinline__ float lse_log(float x) {
  if constexpr (kBaseE) {
    return __logf(x);
  } else {
    return log2f(x);
  }
}

// Running merge of kVec consecutive elements of one row.
template <int kVec>
struct MergeState {
  float m;            // running max of the LSEs seen (-inf while empty)
  float d;            // sum of exp(s_i - m)
  float acc[kVec];    // sum of exp(s_i - m) * v_i

  __device__ __forceinline__ void init() {
    m = -INFINITY;
    d = 0.f;
#pragma unroll
    for (int i = 0; i < kVec; ++i) acc[i] = 0.f;
  }

  // Adds kN states (v[j], s[j]); an s of +/-inf is an empty state (-inf: nothing seen; +inf:
  // empty by vLLM's convention) and adds nothing. Their max comes first, then every weight
  // independently (one rescale of the running sums per batch), so the dependent chain is a few
  // instructions, not kN exp / FMA rounds.
  template <bool kBaseE, int kN>
  __device__ __forceinline__ void add_batch(const float (&v)[kN][kVec], const float (&s)[kN]) {
    float sj[kN];
    float m_batch = -INFINITY;
#pragma unroll
    for (int j = 0; j < kN; ++j) {
      sj[j] = isinf(s[j]) ? -INFINITY : s[j];  // +/-inf: empty
      m_batch = fmaxf(m_batch, sj[j]);
    }
    if (m_batch == -INFINITY) return;  // nothing in this batch
    const float m_new = fmaxf(m, m_batch);
    const float scale_old = lse_exp<kBaseE>(m - m_new);  // 0 when m was -inf
    float w[kN];
#pragma unroll
    for (int j = 0; j < kN; ++j) w[j] = lse_exp<kBaseE>(sj[j] - m_new);  // 0 for empty ones
    d *= scale_old;
#pragma unroll
    for (int i = 0; i < kVec; ++i) acc[i] *= scale_old;
#pragma unroll
    for (int j = 0; j < kN; ++j) {
      d += w[j];
#pragma unroll
      for (int i = 0; i < kVec; ++i) acc[i] = fmaf(w[j], v[j][i], acc[i]);
    }
    m = m_new;
  }

  // Writes the merged row and LSE. Empty (nothing added): v = 0, s = -inf.
  template <bool kBaseE>
  __device__ __forceinline__ void finish(float (&v)[kVec], float& s) const {
    if (d == 0.f) {
#pragma unroll
      for (int i = 0; i < kVec; ++i) v[i] = 0.f;
      s = -INFINITY;
      return;
    }
    float inv = 1.f / d;
#pragma unroll
    for (int i = 0; i < kVec; ++i) v[i] = acc[i] * inv;
    s = m + lse_log<kBaseE>(d);
  }
};

}  // namespace mlaw
