// Issue cost of the instructions an e4m3 -> 16-bit widening can use, on one warp per SM
// sub-partition (128 threads a block, one block per SM): each thread runs kChains independent
// chains of one instruction kIters times; clock64 around the loop gives clocks per warp
// instruction (throughput where kChains covers the latency). Development probe for the sm90
// fp8 cache (sm90/dequant.cuh dequant_tile); nvcc -arch=sm_90a -O3 pipe_rates.cu -o pipe_rates
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>

constexpr int kChains = 8, kIters = 4096;

template <int kOp>
__device__ __forceinline__ uint32_t op(uint32_t x) {
  uint32_t d;
  if constexpr (kOp == 0) asm volatile("prmt.b32 %0, %1, 0, 0x9180;" : "=r"(d) : "r"(x));
  if constexpr (kOp == 1) asm volatile("mul.rn.bf16x2 %0, %1, %2;" : "=r"(d) : "r"(x), "r"(0x3f803f80u));
  if constexpr (kOp == 2) asm volatile("mul.rn.f16x2 %0, %1, %2;" : "=r"(d) : "r"(x), "r"(0x3c003c00u));
  if constexpr (kOp == 3) {
    float f;
    asm volatile("fma.rn.f32 %0, %1, 0f3f800000, 0f00000000;" : "=f"(f) : "f"(__uint_as_float(x)));
    d = __float_as_uint(f);
  }
  if constexpr (kOp == 4)
    asm volatile("{\n .reg .b16 lo, hi;\n mov.b32 {lo, hi}, %1;\n cvt.rn.f16x2.e4m3x2 %0, lo;\n}"
                 : "=r"(d) : "r"(x));
  if constexpr (kOp == 5) asm volatile("cvt.rn.bf16x2.f32 %0, %1, %1;" : "=r"(d) : "f"(__uint_as_float(x)));
  if constexpr (kOp == 6)
  {
    float f;
    asm volatile("{\n .reg .b16 lo, hi;\n mov.b32 {lo, hi}, %1;\n cvt.f32.f16 %0, lo;\n}"
                 : "=f"(f) : "r"(x));
    d = __float_as_uint(f);
  }
  if constexpr (kOp == 7) asm volatile("lop3.b32 %0, %1, 0x87f087f0, 0x1234, 0xea;" : "=r"(d) : "r"(x));
  if constexpr (kOp == 8) asm volatile("shl.b32 %0, %1, 4;" : "=r"(d) : "r"(x));
  if constexpr (kOp == 9) asm volatile("add.u32 %0, %1, 0x01010101;" : "=r"(d) : "r"(x));
  if constexpr (kOp == 10) asm volatile("mul.lo.u32 %0, %1, 16;" : "=r"(d) : "r"(x));
  if constexpr (kOp == 11) asm volatile("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(d) : "r"(x), "r"(0x3f803f80u), "r"(0x80008000u));
  return d;
}

template <int kOp>
__global__ void rate(uint32_t seed, unsigned long long* clocks, uint32_t* sink) {
  uint32_t x[kChains];
#pragma unroll
  for (int i = 0; i < kChains; ++i) x[i] = seed * (threadIdx.x + i) | 0x3c003c00u;
  __syncthreads();
  const long long t0 = clock64();
  for (int it = 0; it < kIters; ++it) {
#pragma unroll
    for (int i = 0; i < kChains; ++i) x[i] = op<kOp>(x[i]);
  }
  const long long t1 = clock64();
  uint32_t s = 0;
#pragma unroll
  for (int i = 0; i < kChains; ++i) s ^= x[i];
  sink[blockIdx.x * blockDim.x + threadIdx.x] = s;
  if (threadIdx.x % 32 == 0) clocks[blockIdx.x * 4 + threadIdx.x / 32] = t1 - t0;
}

template <int kOp>
void run(const char* name, int sms, unsigned long long* clocks, uint32_t* sink) {
  rate<kOp><<<sms, 128>>>(12345u, clocks, sink);
  cudaDeviceSynchronize();
  rate<kOp><<<sms, 128>>>(12345u, clocks, sink);
  cudaDeviceSynchronize();
  unsigned long long h[4];
  cudaMemcpy(h, clocks, sizeof(h), cudaMemcpyDeviceToHost);
  printf("%-28s %6.2f clocks a warp instruction (one warp per sub-partition)\n", name,
         double(h[0]) / (double(kIters) * kChains));
}

int main() {
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  unsigned long long* clocks;
  uint32_t* sink;
  cudaMalloc(&clocks, sms * 4 * sizeof(unsigned long long));
  cudaMalloc(&sink, sms * 128 * sizeof(uint32_t));
  run<0>("prmt.b32", sms, clocks, sink);
  run<1>("mul.rn.bf16x2", sms, clocks, sink);
  run<11>("fma.rn.bf16x2", sms, clocks, sink);
  run<2>("mul.rn.f16x2", sms, clocks, sink);
  run<3>("fma.rn.f32", sms, clocks, sink);
  run<4>("cvt.rn.f16x2.e4m3x2", sms, clocks, sink);
  run<5>("cvt.rn.bf16x2.f32", sms, clocks, sink);
  run<6>("cvt.f32.f16", sms, clocks, sink);
  run<7>("lop3.b32", sms, clocks, sink);
  run<8>("shl.b32", sms, clocks, sink);
  run<9>("add.u32", sms, clocks, sink);
  run<10>("mul.lo.u32 (x16)", sms, clocks, sink);
  printf("%s\n", cudaGetErrorString(cudaGetLastError()));
  return 0;
}
