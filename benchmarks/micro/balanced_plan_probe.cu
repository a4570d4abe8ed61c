// The balanced GPU plan kernel (device_plan/balanced.cuh) with phase timestamps (clock64 on
// thread 0 at MLAW_PLAN_STAMP(i)), for benchmarks/micro/balanced_plan_probe.py. Build:
//   nvcc -O3 -std=c++17 -shared -Xcompiler -fPIC -Iinclude -gencode arch=compute_90a,code=sm_90a \
//        benchmarks/micro/balanced_plan_probe.cu -o .cache/probe/balanced_plan_probe.so
#include <cuda_runtime.h>
#include <stdint.h>

__device__ long long mlaw_balanced_probe[32];
#define MLAW_BALANCED_PROBE 1
#include "mla_wrapper/device_plan/balanced.cuh"

// The plan twice in one CTA: pass 1's stamps (cold instruction cache on this SM) go to slots
// 16..25, pass 2's (warm) to 0..9.
__global__ void __launch_bounds__(mlaw::kBalancedThreads) probe_twice(mlaw::BalancedPlanArgs a) {
  mlaw::balanced_plan(a);
  __syncthreads();
  if (threadIdx.x == 0)
    for (int i = 0; i < 10; ++i) mlaw_balanced_probe[16 + i] = mlaw_balanced_probe[i];
  __syncthreads();
  mlaw::balanced_plan(a);
}

extern "C" int probe_plan(const int32_t* seq_lens, int32_t* cta_work_indptr, int32_t* work_info,
                          int32_t* request_info, int32_t* merge_info, int32_t* counts,
                          int64_t* scratch, int32_t* memo, int32_t batch, int32_t qo_len, int32_t num_heads,
                          int32_t rows_per_tile, int32_t kv_tile, int32_t num_ctas,
                          int32_t causal, int32_t fixed_units, int32_t allow_pairs,
                          int64_t page_table_stride, cudaStream_t stream) {
  mlaw::BalancedPlanArgs a{seq_lens, cta_work_indptr, work_info, request_info, merge_info,
                           counts, scratch, memo, batch, qo_len, num_heads, rows_per_tile, kv_tile,
                           num_ctas, causal, fixed_units, allow_pairs, page_table_stride};
  probe_twice<<<1, mlaw::kBalancedThreads, 0, stream>>>(a);
  return int(cudaGetLastError());
}

extern "C" int probe_reset() {
  const long long zeros[32] = {};
  return int(cudaMemcpyToSymbol(mlaw_balanced_probe, zeros, sizeof(zeros)));
}

extern "C" int probe_read(long long* out) {
  return int(cudaMemcpyFromSymbol(out, mlaw_balanced_probe, sizeof(long long) * 32));
}
