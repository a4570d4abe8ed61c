// Cold instruction fetch after an L2 flush, and whether prefetching a kernel's own code lines
// into L2 (prefetch.global.L2 at the address the kernel reads for itself) removes it.
// Kernel: N dependent FFMAs of straight-line code (16 bytes each), timed by %globaltimer.
// nvcc -arch=sm_90a -O3 code_prefetch.cu -o code_prefetch
// Result (H200, session 65, logs/sm90_s65_2026-11-29/micro_runs.txt): 99 KB of straight-line
// code runs as fast after the flush as before (12.99 against 12.86 us): sequential fetch keeps
// up. A kernel cannot prefetch its own code: `&body` in device code reads 0 (a relocation the
// loader leaves empty), and a load from a code address faults, so the prefetch modes here
// prefetch garbage (and cost ~2.5 us).
#include <cstdio>
#include <cstdint>
#include <vector>
#include <algorithm>
#ifndef NFMA
#define NFMA 6144
#endif
__device__ __forceinline__ unsigned long long gtimer() {
  unsigned long long t; asm volatile("mov.u64 %0, %globaltimer;" : "=l"(t)); return t; }
__global__ void __launch_bounds__(128, 1) body(float* out, unsigned long long* t, float a, float b,
                                               int prefetch_lines, int code_bytes) {
  unsigned long long t0 = gtimer();
  if (prefetch_lines > 0) {
    unsigned long long self = (unsigned long long)(const void*)&body;
    asm volatile("mov.b64 %0, %0;" : "+l"(self));
    // CTA c, thread i: lines (c * blockDim + i) * k ... spread over the grid
    for (int l = blockIdx.x * blockDim.x + threadIdx.x; l * 128 < code_bytes;
         l += gridDim.x * blockDim.x)
      asm volatile("prefetch.global.L2 [%0];" :: "l"(self + (unsigned long long)l * 128));
  }
  float x = out[threadIdx.x];
#pragma unroll
  for (int i = 0; i < NFMA; ++i) asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x) : "f"(a), "f"(b));
  out[threadIdx.x] = x;
  __syncthreads();
  if (threadIdx.x == 0) { t[2 * blockIdx.x] = t0; t[2 * blockIdx.x + 1] = gtimer(); }
}
__global__ void self_words(unsigned long long* o) {
  unsigned long long s = (unsigned long long)(const void*)&body;
  asm volatile("mov.b64 %0, %0;" : "+l"(s));
  o[0] = s; o[1] = 0; o[2] = 0;  // (reading there faults: run 2)
}
int main() {
  int ctas = 132;
  float* out; unsigned long long* t; char* flush;
  cudaMalloc(&out, 4096); cudaMemset(out, 0, 4096);
  cudaMalloc(&t, ctas * 16); cudaMalloc(&flush, 256 << 20);
  unsigned long long h3[3];
  unsigned long long* d3; cudaMalloc(&d3, 24);
  self_words<<<1, 1>>>(d3);
  cudaError_t e = cudaDeviceSynchronize();
  cudaMemcpy(h3, d3, 24, cudaMemcpyDeviceToHost);
  printf("self_words: %s addr %llx words %016llx %016llx\n", cudaGetErrorString(e), h3[0], h3[1], h3[2]);
  cudaFuncAttributes fa; cudaFuncGetAttributes(&fa, body);
  int code = NFMA * 16 + 2048;
  const char* names[] = {"warm", "cold", "cold+prefetch", "warm+prefetch"};
  for (int rep = 0; rep < 3; ++rep)
  for (int mode = 0; mode < 4; ++mode) {
    std::vector<double> spans;
    for (int it = 0; it < 5; ++it) {
      body<<<ctas, 128>>>(out, t, 1.0001f, 0.5f, 0, code);  // warm-up: code in L2
      if (mode == 1 || mode == 2) cudaMemset(flush, it, 256 << 20);
      cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
      cudaEventRecord(e0);
      body<<<ctas, 128>>>(out, t, 1.0001f, 0.5f, (mode == 2 || mode == 3) ? 1 : 0, code);
      cudaEventRecord(e1);
      cudaDeviceSynchronize();
      std::vector<unsigned long long> h(2 * ctas);
      cudaMemcpy(h.data(), t, ctas * 16, cudaMemcpyDeviceToHost);
      unsigned long long mn = ~0ull, mx = 0;
      for (int c = 0; c < ctas; ++c) { mn = std::min(mn, h[2 * c]); mx = std::max(mx, h[2 * c + 1]); }
      spans.push_back((mx - mn) / 1e3);
    }
    std::sort(spans.begin(), spans.end());
    printf("%-14s code %d B: first start to last end median %.2f us (min %.2f max %.2f)\n",
           names[mode], code, spans[2], spans[0], spans[4]);
  }
  printf("err %s\n", cudaGetErrorString(cudaDeviceSynchronize()));
  return 0;
}
