// Clocks per mma.sync of the narrow tiles' shapes (sm90/narrow.cuh) on an SM's sub-partitions:
// f16 and bf16 m16n8k16 (the narrow tiles' form) against e4m3 m16n8k32 (an e4m3 cache's K or V
// fragments read as they land, without their cvt to f16), all with f32 accumulation. One CTA
// per SM of 1 or 2 warps per sub-partition, each thread running kChains independent
// accumulators kIters times (kChains = 1: the latency of a dependent chain). Prints clocks per
// mma per sub-partition (throughput) and per dependent mma (latency).
// Also (session 67) the narrow tiles' own operand paths, f16 m16n8k16 with B widened from e4m3
// bytes read from shared memory as the loop runs: `scores` (one 16-byte read a token row, four
// mmas of it, two cvt each: narrow_tiles' score GEMM) and `P V` (two 8-byte reads of two
// tokens, two prmt + four cvt per two mmas: its P V), so that the tile's phases (session 55's
// trace: scores ~930 clocks, P V ~800 a tile, 36 and 32 mmas a warp, 2 warps a sub-partition)
// can be set against what the pipes allow.
// H200 (logs/sm90_s67_2026-11-29 runs 1-2), clocks an mma per sub-partition with 2 warps there
// (1 warp): f16 / bf16 m16n8k16 6.0 (6.2), a dependent one 24; e4m3 m16n8k32 4.4 (4.7); the
// scores path 8.47 (10.6); the P V path 12.0 (16.1).
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

// four e4m3 bytes as two f16 pairs (sm90/traits.cuh widen_e4m3x4's instructions)
__device__ __forceinline__ void widen4(uint32_t w, uint32_t& lo, uint32_t& hi) {
  asm("{\n .reg .b16 lo, hi;\n mov.b32 {lo, hi}, %2;\n cvt.rn.f16x2.e4m3x2 %0, lo;\n"
      " cvt.rn.f16x2.e4m3x2 %1, hi;\n}"
      : "=r"(lo), "=r"(hi)
      : "r"(w));
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

// The narrow tiles' operand paths (see the top): kPv = 0 scores, 1 P V; 8 accumulators.
// Shared memory holds finite e4m3 bytes; the read address moves every iteration.
template <int kPv>
__global__ void widened(uint32_t seed, unsigned long long* clocks, float* sink) {
  __shared__ uint4 buf[512];  // 8 KB: the reads reach 4095 + 2 x 1152 + 8 bytes
  for (int i = threadIdx.x; i < 512; i += blockDim.x)
    buf[i] = make_uint4((seed * (i + 1)) & 0x3b3b3b3bu, (seed * (i + 3)) & 0x3a3a3a3au,
                        (seed * (i + 5)) & 0x393939b9u, (seed * (i + 7)) & 0x3b3bbb3bu);
  uint32_t a[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = (seed * (threadIdx.x + 7 * i)) & 0x3b3b3b3bu;
  float d[8][4];
#pragma unroll
  for (int i = 0; i < 8; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) d[i][e] = 0.f;
  __syncthreads();
  const int lane = threadIdx.x % 32;
  const long long t0 = clock64();
  for (int it = 0; it < kIters; ++it) {
    // one moving base a loop, constant offsets from it (as the kernel's reads: st + offsets)
    const char* st = reinterpret_cast<const char*>(buf) + ((it * 64 + 16 * lane) & 4095);
    if constexpr (kPv == 0) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {  // two 16-byte reads, four mmas each
        const uint4 w = *reinterpret_cast<const uint4*>(st + 576 * r);
        const uint32_t wj[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          uint32_t b0, b1;
          widen4(wj[j], b0, b1);
          mma<0>(d[4 * r + j], a, b0, b1);
        }
      }
    } else {
      uint2 v[2][2];
#pragma unroll
      for (int x = 0; x < 2; ++x)
#pragma unroll
        for (int t = 0; t < 2; ++t)
          v[x][t] = *reinterpret_cast<const uint2*>(st + 1152 * x + 576 * t);
      uint32_t b[2][8];
#pragma unroll
      for (int x = 0; x < 2; ++x)
#pragma unroll
        for (int y = 0; y < 2; ++y) {
          const uint32_t u = y ? v[x][0].y : v[x][0].x, w = y ? v[x][1].y : v[x][1].x;
          widen4(__byte_perm(u, w, 0x5140), b[x][4 * y], b[x][4 * y + 1]);
          widen4(__byte_perm(u, w, 0x7362), b[x][4 * y + 2], b[x][4 * y + 3]);
        }
#pragma unroll
      for (int j = 0; j < 8; ++j) mma<0>(d[j], a, b[0][j], b[1][j]);
    }
  }
  const long long t1 = clock64();
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) s += d[i][0] + d[i][1] + d[i][2] + d[i][3];
  sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
  if (threadIdx.x % 32 == 0) clocks[blockIdx.x * 8 + threadIdx.x / 32] = t1 - t0;
}

// Launches `kernel` twice on every SM (the first warms its code) and prints its clocks per mma
// (kChains a loop iteration, kIters iterations) for one warp and per sub-partition.
void run(const char* name, void (*kernel)(uint32_t, unsigned long long*, float*), int chains,
         int warps, int sms, unsigned long long* clocks, float* sink) {
  kernel<<<sms, 32 * warps>>>(12345u, clocks, sink);
  kernel<<<sms, 32 * warps>>>(12345u, clocks, sink);
  cudaDeviceSynchronize();
  unsigned long long h[8];
  cudaMemcpy(h, clocks, sizeof(h), cudaMemcpyDeviceToHost);
  double mean = 0;
  for (int w = 0; w < warps; ++w) mean += h[w];
  mean /= warps;
  const double per_mma = mean / (double(kIters) * chains);  // one warp's dependent issue
  printf("%-28s warps/SM %d chains %d: %.2f clocks a warp's mma, %.2f per mma per "
         "sub-partition\n",
         name, warps, chains, per_mma, per_mma / (warps / 4));
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  unsigned long long* clocks;
  float* sink;
  cudaMalloc(&clocks, sms * 8 * sizeof(unsigned long long));
  cudaMalloc(&sink, sms * 256 * sizeof(float));
  for (int warps : {4, 8}) {
    run("f16 m16n8k16", rate<0, 1>, 1, warps, sms, clocks, sink);
    run("f16 m16n8k16", rate<0, 8>, 8, warps, sms, clocks, sink);
    run("bf16 m16n8k16", rate<1, 8>, 8, warps, sms, clocks, sink);
    run("e4m3 m16n8k32", rate<2, 1>, 1, warps, sms, clocks, sink);
    run("e4m3 m16n8k32", rate<2, 8>, 8, warps, sms, clocks, sink);
    run("f16 m16n8k16 scores path", widened<0>, 8, warps, sms, clocks, sink);
    run("f16 m16n8k16 P V path", widened<1>, 8, warps, sms, clocks, sink);
  }
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
