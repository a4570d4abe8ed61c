// Clocks per mma.sync of the narrow tiles' shapes (sm90/narrow.cuh) on an SM's sub-partitions:
// f16 and bf16 m16n8k16 (the narrow tiles' form) against e4m3 m16n8k32 (an e4m3 cache's K or V
// fragments read as they land, without their cvt to f16), all with f32 accumulation. One CTA
// per SM of 1 or 2 warps per sub-partition, each thread running kChains independent
// accumulators kIters times (kChains = 1: the latency of a dependent chain). Prints clocks per
// mma per sub-partition (throughput) and per dependent mma (latency).
//   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a benchmarks/micro/mma_sync_rates.cu \
//     -o mma_rates
#include <cstdint>
#include <cstdio>
#include <cuda_runtime.h>

constexpr int kIters = 4096;

template <int kOp>
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                    uint32_t b1) {
  if constexpr (kOp == 0)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  if constexpr (kOp == 1)
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  if constexpr (kOp == 2)
    asm volatile(
        "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

template <int kOp, int kChains>
__global__ void rate(uint32_t seed, unsigned long long* clocks, float* sink) {
  uint32_t a[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = (seed * (threadIdx.x + 7 * i)) & 0x3b3b3b3bu;
  const uint32_t b0 = (seed ^ threadIdx.x) & 0x3a3a3a3au, b1 = b0 ^ 0x01010101u;
  float d[kChains][4];
#pragma unroll
  for (int i = 0; i < kChains; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) d[i][e] = 0.f;
  __syncthreads();
  const long long t0 = clock64();
  for (int it = 0; it < kIters; ++it) {
#pragma unroll
    for (int i = 0; i < kChains; ++i) mma<kOp>(d[i], a, b0, b1);
  }
  const long long t1 = clock64();
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < kChains; ++i) s += d[i][0] + d[i][1] + d[i][2] + d[i][3];
  sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
  if (threadIdx.x % 32 == 0) clocks[blockIdx.x * 8 + threadIdx.x / 32] = t1 - t0;
}

template <int kOp, int kChains>
void run(const char* name, int warps, int sms, unsigned long long* clocks, float* sink) {
  rate<kOp, kChains><<<sms, 32 * warps>>>(12345u, clocks, sink);  // warm the code
  rate<kOp, kChains><<<sms, 32 * warps>>>(12345u, clocks, sink);
  cudaDeviceSynchronize();
  unsigned long long h[8];
  cudaMemcpy(h, clocks, sizeof(h), cudaMemcpyDeviceToHost);
  double mean = 0;
  for (int w = 0; w < warps; ++w) mean += h[w];
  mean /= warps;
  const double per_mma = mean / (double(kIters) * kChains);  // one warp's dependent issue
  printf("%-28s warps/SM %d chains %d: %.2f clocks a warp's mma, %.2f per mma per "
         "sub-partition\n",
         name, warps, kChains, per_mma, per_mma / (warps / 4));
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  unsigned long long* clocks;
  float* sink;
  cudaMalloc(&clocks, sms * 8 * sizeof(unsigned long long));
  cudaMalloc(&sink, sms * 256 * sizeof(float));
  for (int warps : {4, 8}) {
    run<0, 1>("f16 m16n8k16", warps, sms, clocks, sink);
    run<0, 8>("f16 m16n8k16", warps, sms, clocks, sink);
    run<1, 8>("bf16 m16n8k16", warps, sms, clocks, sink);
    run<2, 1>("e4m3 m16n8k32", warps, sms, clocks, sink);
    run<2, 8>("e4m3 m16n8k32", warps, sms, clocks, sink);
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
