// Intake under the real score GEMM: 36 distinct k-steps (A = a 64 x 576 Q tile, B = a 64 x 576 K
// tile in 128-byte swizzled blocks), one or two warpgroups, beside one 72 KB kernel tile load at
// a time (4-D box + rope box, shuffled 576-wide pages).
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include "mla_wrapper/sm90/launcher.cuh"
using namespace mlaw::sm90;
constexpr int kTile = 73728;

template <int kMma>
__global__ void __launch_bounds__(128 * (1 + kMma), 1) probe(const __grid_constant__ CUtensorMap wide,
    const __grid_constant__ CUtensorMap kpe, const int* order, int loads, unsigned long long* out) {
  extern __shared__ __align__(1024) char smem_raw[];
  char* smem = smem_raw + ((1024 - smem_addr(smem_raw) % 1024) % 1024);
  // [load tile 72 KB][A 72 KB][B 72 KB (shared by the warpgroups)]
  uint64_t* bar = reinterpret_cast<uint64_t*>(smem + 3 * kTile);
  volatile int* stop = reinterpret_cast<volatile int*>(bar + 2);
  if (threadIdx.x == 0) { mbar_init(&bar[0], 1); *stop = 0;
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
  __syncthreads();
  if (threadIdx.x < 128) {
    if (threadIdx.x != 0) return;
    const uint64_t policy = evict_first_policy();
    const int* my = order + (blockIdx.x / 2) * loads;
    long long t0 = clock64();
    unsigned long long g0; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
    for (int k = 0; k < loads; ++k) {
      const int pg = __ldg(my + k);
      mbar_arrive_expect_tx(&bar[0], kTile);
      tma_load_4d(smem_addr(smem), &wide, &bar[0], 0, 0, 0, pg, policy);
      tma_load_3d(smem_addr(smem + 65536), &kpe, &bar[0], 0, 0, pg, policy);
      mbar_wait(&bar[0], k & 1);
    }
    long long t1 = clock64();
    unsigned long long g1; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
    *stop = 1;
    out[blockIdx.x * 4 + 0] = t1 - t0;
    out[blockIdx.x * 4 + 1] = g1 - g0;
    return;
  }
  if constexpr (kMma > 0) {
    using Mma = gmma::MMA_64x64x16_F32BF16BF16_SS<gmma::Major::K, gmma::Major::K>;
    const uint32_t a_smem = smem_addr(smem + kTile), b_smem = a_smem + kTile;
    float s32[32];
#pragma unroll
    for (int i = 0; i < 32; ++i) s32[i] = 0.f;
    long long n = 0;
    const long long c0 = clock64();
    while (!*stop) {
      fence_operands(s32);
      wgmma_fence();
#pragma unroll
      for (int b = 0; b < 9; ++b) {
        uint32_t ab, bb;  // (re-made each block: hoisted descriptors of 36 k-steps spill)
        asm volatile("add.u32 %0, %1, %2;" : "=r"(ab) : "r"(a_smem), "r"(b * 8192));
        asm volatile("add.u32 %0, %1, %2;" : "=r"(bb) : "r"(b_smem), "r"(b * 8192));
        const uint64_t da = make_desc(ab, 16, 1024), db = make_desc(bb, 16, 1024);
#pragma unroll
        for (int k = 0; k < 4; ++k) wgmma<Mma>(desc_add(da, k * 32), desc_add(db, k * 32), s32);
      }
      wgmma_commit();
      wgmma_wait<0>();
      fence_operands(s32);
      n += 36;
    }
    const long long c1 = clock64();
    float x = 0.f;
#pragma unroll
    for (int i = 0; i < 32; ++i) x += s32[i];
    if (threadIdx.x % 128 == 0) out[blockIdx.x * 4 + 1 + threadIdx.x / 128] = (c1 - c0) * 10 / (n ? n : 1);  // (wg1 -> [2], wg2 -> [3])
    if (x == 12345.f) out[0] = 1;
  }
}

int main() {
  int sms = 0; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int loads = 1000, pairs = (sms + 1) / 2, pages = pairs * loads;
  char* cache; cudaMalloc(&cache, size_t(pages) * kTile); cudaMemset(cache, 1, size_t(pages) * kTile);
  CUtensorMap wide, kpe;
  if (!encode_kv_wide_map(&wide, cache, 576, 64 * 576, 64, pages) ||
      !encode_kv_map(&kpe, cache + 1024, 64, 576, 64 * 576, 64, pages, 64)) { printf("encode failed\n"); return 1; }
  std::vector<int> rnd(pages);
  for (int i = 0; i < pages; ++i) rnd[i] = i;
  unsigned x = 12345u;
  for (int i = pages - 1; i > 0; --i) { x = x * 1664525u + 1013904223u; std::swap(rnd[i], rnd[x % (i + 1)]); }
  int* order; cudaMalloc(&order, pages * 4); cudaMemcpy(order, rnd.data(), pages * 4, cudaMemcpyHostToDevice);
  unsigned long long* out; cudaMalloc(&out, sms * 4 * 8);
  std::vector<unsigned long long> h(sms * 4);
  const int smem = 3 * kTile + 2048;
  cudaFuncSetAttribute(probe<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaFuncSetAttribute(probe<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaFuncSetAttribute(probe<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  for (int mma : {0, 1, 2}) {
    for (int rep = 0; rep < 3; ++rep) {
      cudaMemset(out, 0, sms * 4 * 8);
      if (mma == 0) probe<0><<<sms, 128, smem>>>(wide, kpe, order, loads, out);
      else if (mma == 1) probe<1><<<sms, 256, smem>>>(wide, kpe, order, loads, out);
      else probe<2><<<sms, 384, smem>>>(wide, kpe, order, loads, out);
      cudaError_t e = cudaGetLastError(); if (e == cudaSuccess) e = cudaDeviceSynchronize();
      if (e != cudaSuccess) { printf("error %s\n", cudaGetErrorString(e)); return 1; }
    }
    cudaMemcpy(h.data(), out, sms * 4 * 8, cudaMemcpyDeviceToHost);
    std::vector<double> bpc, ghz, m1, m2;
    for (int i = 0; i < sms; ++i) {
      if (h[i * 4]) bpc.push_back(double(loads) * kTile / h[i * 4]);
      if (h[i * 4 + 2]) m1.push_back(h[i * 4 + 2] / 10.0);
      if (h[i * 4 + 3]) m2.push_back(h[i * 4 + 3] / 10.0);
    }
    // the globaltimer slot is overwritten by wg1's figure when mma > 0: clock from the loads alone
    auto med = [](std::vector<double> v) { if (v.empty()) return 0.0; std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
    printf("%d score-GEMM warpgroup(s) beside one 72 KB tile at a time: a tile lands %.0f clocks after issue; wgmma %.1f / %.1f clocks each\n",
           mma, kTile / med(bpc), med(m1), med(m2));
  }
  return 0;
}
