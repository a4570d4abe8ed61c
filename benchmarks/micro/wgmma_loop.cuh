// The issue loop the wgmma probes share (wgmma_rates.cu, fp8_gemm_power.cu): one warpgroup
// issues `iters` groups of kWgmmaGroup wgmmas of Op (k-steps of 32 bytes over a 128-byte-swizzled
// K-major A [64 rows][128 bytes] at smem and B [N rows][128 bytes] right after it; RS: A from
// `a`), commits each group and waits for all but the last, into one accumulator; mutate(a, it)
// after each group (RS: a new A operand). Returns the clocks around the loop.
#pragma once

#include "mla_wrapper/sm90/traits.cuh"

constexpr int kWgmmaGroup = 8;

template <typename Op, int N, bool kRS, typename Mutate>
__device__ __forceinline__ long long wgmma_loop(const char* smem, uint32_t (&a)[4], int iters,
                                                float* sink, Mutate mutate) {
  using namespace mlaw::sm90;
  const uint64_t da = make_desc(smem_addr(smem), 16, 1024);
  const uint64_t db = make_desc(smem_addr(smem + 8192), 16, 1024);
  float d[N / 2];
#pragma unroll
  for (int i = 0; i < N / 2; ++i) d[i] = 0.f;
  fence_operands(d);
  const long long t0 = clock64();
  for (int it = 0; it < iters; ++it) {
    wgmma_fence();
#pragma unroll
    for (int k = 0; k < kWgmmaGroup; ++k) {
      const uint32_t off = (k % 4) * 32;
      if constexpr (kRS)
        wgmma_rs<Op>(a, desc_add(db, off), d);
      else
        wgmma<Op>(desc_add(da, off), desc_add(db, off), d);
    }
    wgmma_commit();
    wgmma_wait<1>();
    fence_operands(d);
    mutate(a, it);
  }
  wgmma_wait<0>();
  fence_operands(d);
  const long long t1 = clock64();
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) s += d[i];
  if (s == 12345.f) sink[threadIdx.x] = s;  // (keeps the GEMMs)
  return t1 - t0;
}
