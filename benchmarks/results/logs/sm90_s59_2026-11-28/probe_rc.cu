// racecheck's model of subset named barriers: warpgroup 0 writes s[i], all 256 threads sync on
// barrier 2, warpgroup 1 reads, all sync on barrier 3; with SUBSET, warpgroup 0 also syncs on a
// 128-thread barrier 15 each iteration. As written, the plain variant has a race of its own
// (thread i reads t[i + 1] with no barrier after thread i + 1 wrote it): run 1's racecheck
// reported exactly that (rc.cu:14 / :16) and nothing in the variant with the 128-thread
// barrier, so racecheck follows a barrier of one warpgroup between two of both here.
#include <cstdio>
__device__ __forceinline__ void bar(int id, int n) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory"); }
template <bool kSubset>
__global__ void k(float* out, int iters) {
  __shared__ float s[64];
  __shared__ float t[128];
  const int g = threadIdx.x / 128, i = threadIdx.x % 128;
  float acc = 0.f;
  for (int it = 0; it < iters; ++it) {
    if (g == 0) {
      t[i] = it + i;
      if (kSubset) bar(15, 128);
      if (i < 64) s[i] = t[(i + 1) % 128] + 1.f;
    }
    bar(2, 256);
    if (g == 1 && i < 64) acc += s[i];
    bar(3, 256);
  }
  out[threadIdx.x] = acc;
}
int main() {
  float* d; cudaMalloc(&d, 256 * 4);
  k<false><<<1, 256>>>(d, 8); cudaDeviceSynchronize(); printf("plain done\n");
  k<true><<<1, 256>>>(d, 8); cudaDeviceSynchronize(); printf("subset done\n");
  return 0;
}
