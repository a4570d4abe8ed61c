// Session 27 probe: an SM's bulk-copy intake (global -> shared, 2 x 64 KB in flight) with and
// without wgmma running beside it, by wgmma kind. One CTA per SM, 256 threads: thread 0 loads,
// warpgroup 1 multiplies operands that never change (results unused).
#include <cstdio>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>
#include "mla_wrapper/sm90/launcher.cuh"
using namespace mlaw::sm90;

constexpr int kBuf = 64 * 1024;
constexpr int kOpA = 8192, kOpB = 16384;  // one 64-column block of A; two of B (N = 128)
constexpr int kSmem = 2 * kBuf + kOpA + kOpB + 64;  // 2 load buffers, A, B, 2 barriers

__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               ::"r"(dst), "l"(src), "r"(bytes), "r"(smem_addr(bar)) : "memory");
}

// mode: 0 loads only; 1 + SS m64n64k16 (the score GEMM); 2 + RS m64n64k16; 3 + SS m64n256k16
// (the P V); 4 wgmma SS n64 only; 5 + SS n64 from one warpgroup only
template <int mode, int kDepth = 2>
__global__ void __launch_bounds__(256, 1) probe(const char* src, size_t src_bytes, int loads,
                                                unsigned long long* out) {
  extern __shared__ __align__(1024) char smem_raw[];
  char* smem = smem_raw + ((1024 - smem_addr(smem_raw) % 1024) % 1024);
  uint64_t* bar = reinterpret_cast<uint64_t*>(smem + 2 * kBuf + kOpA + kOpB);
  volatile int* stop = reinterpret_cast<volatile int*>(bar + 2);
  const int tid = threadIdx.x;
  if (tid == 0) { mbar_init(&bar[0], 1); mbar_init(&bar[1], 1); *stop = 0;
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
  __syncthreads();
  const uint32_t a_smem = smem_addr(smem + 2 * kBuf), b_smem = a_smem + kOpA;
  if (tid < 128) {
    if (tid == 0 && mode != 4) {
      // small source: 16 regions of 1 MB read round and round (L2-resident); large source: CTAs
      // 2k and 2k + 1 stream the same region once (the lockstep pairs' sharing through L2)
      const bool small = src_bytes <= (64ull << 20);
      const size_t region = small ? (1 << 20) : size_t(loads) * kBuf;
      const size_t base = small ? size_t(blockIdx.x % 16) * region : size_t(blockIdx.x / 2) * region;
      long long t0 = clock64();
      unsigned long long g0; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
      size_t off = 0;
      for (int k = 0; k < loads + kDepth; ++k) {
        const int s = k % kDepth;
        if (k >= kDepth) mbar_wait(&bar[s], ((k / kDepth) - 1) & 1);
        if (k < loads) {
          mbar_arrive_expect_tx(&bar[s], kBuf);
#pragma unroll
          for (int c = 0; c < 4; ++c)
            bulk_load(smem_addr(smem + s * kBuf + c * 16384), src + base + off + c * 16384, 16384, &bar[s]);
          off = (off + kBuf) % region;
        }
      }
      long long t1 = clock64();
      unsigned long long g1; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
      *stop = 1;
      out[blockIdx.x * 4 + 0] = t1 - t0;
      out[blockIdx.x * 4 + 1] = g1 - g0;
    }
    if (tid == 0 && mode == 4) {
      long long t0 = clock64();
      while (clock64() - t0 < 2000000) {}
      *stop = 1;
    }
  } else {
    const int g = (tid - 128) / 128;
    if constexpr (mode == 0) return;
    float s32[32];
    float acc[64];
#pragma unroll
    for (int i = 0; i < 32; ++i) s32[i] = 0.f;
#pragma unroll
    for (int i = 0; i < 64; ++i) acc[i] = 0.f;
    const uint64_t da = make_desc(a_smem, 16, 1024), db = make_desc(b_smem, 16, 1024);
    const uint64_t dv = make_desc(b_smem, 8192, 1024);
    uint32_t ra[4] = {0x3c003c00u, 0x3c003c00u, 0x3c003c00u, 0x3c003c00u};
    long long n = 0;
    long long t0 = clock64();
    while (!*stop) {
      uint64_t da_, db_, dv_;  // (re-read each round: 72 hoisted descriptors spilled)
      asm volatile("mov.b64 %0, %1;" : "=l"(da_) : "l"(da));
      asm volatile("mov.b64 %0, %1;" : "=l"(db_) : "l"(db));
      asm volatile("mov.b64 %0, %1;" : "=l"(dv_) : "l"(dv));
      if constexpr (mode == 1 || mode == 4 || mode == 5) {
        using Mma = gmma::MMA_64x64x16_F32BF16BF16_SS<gmma::Major::K, gmma::Major::K>;
        fence_operands(s32);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < 36; ++kk)  // (one block's 4 k-steps, 9 times: the same bytes read)
          wgmma<Mma>(desc_add(da_, (kk % 4) * 32), desc_add(db_, (kk % 4) * 32), s32);
        wgmma_commit();
        wgmma_wait<0>();
        fence_operands(s32);
        n += 36;
      } else if constexpr (mode == 2) {
        using Mma = gmma::MMA_64x64x16_F32BF16BF16_RS<gmma::Major::K, gmma::Major::K>;
        fence_operands(s32);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < 36; ++kk) wgmma_rs<Mma>(ra, desc_add(db_, (kk % 4) * 32), s32);
        wgmma_commit();
        wgmma_wait<0>();
        fence_operands(s32);
        n += 36;
      } else {
        using Mma = gmma::MMA_64x128x16_F32BF16BF16_SS<gmma::Major::K, gmma::Major::MN>;
        fence_operands(acc);
        wgmma_fence();
#pragma unroll
        for (int ks = 0; ks < 4; ++ks) wgmma<Mma>(desc_add(da_, ks * 32), desc_add(dv_, ks * 16 * 128), acc);
        wgmma_commit();
        wgmma_wait<0>();
        fence_operands(acc);
        n += 4;
      }
    }
    long long t1 = clock64();
    float x = 0.f;
#pragma unroll
    for (int i = 0; i < 64; ++i) x += acc[i];
#pragma unroll
    for (int i = 0; i < 32; ++i) x += s32[i];
    if (tid % 128 == 0) {
      out[blockIdx.x * 4 + 2 + g] = (unsigned long long)((t1 - t0) * 1000 / (n > 0 ? n : 1));
    }
    if (x == 12345.f) out[0] = 1;
  }
}


// The same loads as the kernel's KV tiles: one 4-D TMA box of 64 columns x 64 tokens x 8 column
// blocks (a whole page of a [pages][64][512] 16-bit cache, 64 KB) into the 128-byte swizzled
// layout; CTAs 2k and 2k + 1 stream the same pages.
template <int kDepth>
__global__ void __launch_bounds__(256, 1) probe_tma(const __grid_constant__ CUtensorMap map,
                                                    int loads, unsigned long long* out) {
  extern __shared__ __align__(1024) char smem_raw[];
  char* smem = smem_raw + ((1024 - smem_addr(smem_raw) % 1024) % 1024);
  uint64_t* bar = reinterpret_cast<uint64_t*>(smem + 2 * kBuf + kOpA + kOpB);
  if (threadIdx.x == 0) { mbar_init(&bar[0], 1); mbar_init(&bar[1], 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
  __syncthreads();
  if (threadIdx.x != 0) return;
  const uint64_t policy = evict_first_policy();
  const int page0 = (blockIdx.x / 2) * loads;
  long long t0 = clock64();
  unsigned long long g0; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
  for (int k = 0; k < loads + kDepth; ++k) {
    const int s = k % kDepth;
    if (k >= kDepth) mbar_wait(&bar[s], ((k / kDepth) - 1) & 1);
    if (k < loads) {
      mbar_arrive_expect_tx(&bar[s], kBuf);
      tma_load_4d(smem_addr(smem + s * kBuf), &map, &bar[s], 0, 0, 0, page0 + k, policy);
    }
  }
  long long t1 = clock64();
  unsigned long long g1; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
  out[blockIdx.x * 4 + 0] = t1 - t0;
  out[blockIdx.x * 4 + 1] = g1 - g0;
}

// The kernel's tile exactly: a fused [pages][64][576] 16-bit cache, the latent in one 4-D box
// (64 KB) and the rope block in a 3-D box (8 KB), pages in the order `order` (CTAs 2k, 2k + 1
// share a stream of pages).
template <int kDepth>
__global__ void __launch_bounds__(256, 1) probe_tile(const __grid_constant__ CUtensorMap wide,
                                                     const __grid_constant__ CUtensorMap kpe,
                                                     const int* order, int loads,
                                                     unsigned long long* out) {
  extern __shared__ __align__(1024) char smem_raw[];
  char* smem = smem_raw + ((1024 - smem_addr(smem_raw) % 1024) % 1024);
  constexpr int kTile = 73728;
  uint64_t* bar = reinterpret_cast<uint64_t*>(smem + 2 * kTile);
  if (threadIdx.x == 0) { mbar_init(&bar[0], 1); mbar_init(&bar[1], 1);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
  __syncthreads();
  if (threadIdx.x != 0) return;
  const uint64_t policy = evict_first_policy();
  const int* my = order + (blockIdx.x / 2) * loads;
  long long t0 = clock64();
  unsigned long long g0; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g0));
  for (int k = 0; k < loads + kDepth; ++k) {
    const int s = k % kDepth;
    if (k >= kDepth) mbar_wait(&bar[s], ((k / kDepth) - 1) & 1);
    if (k < loads) {
      const int pg = __ldg(my + k);
      mbar_arrive_expect_tx(&bar[s], kTile);
      tma_load_4d(smem_addr(smem + s * kTile), &wide, &bar[s], 0, 0, 0, pg, policy);
      tma_load_3d(smem_addr(smem + s * kTile + 65536), &kpe, &bar[s], 0, 0, pg, policy);
    }
  }
  long long t1 = clock64();
  unsigned long long g1; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g1));
  out[blockIdx.x * 4 + 0] = t1 - t0;
  out[blockIdx.x * 4 + 1] = g1 - g0;
}

// A 72 KB kernel tile at a time (depth 1) while two warpgroups run the score GEMM's wgmma
// (SS m64n64k16) back to back: the load's latency under the kernel's full tensor load.
__global__ void __launch_bounds__(384, 1) probe_tile_busy(const __grid_constant__ CUtensorMap wide,
                                                          const __grid_constant__ CUtensorMap kpe,
                                                          const int* order, int loads, int busy,
                                                          unsigned long long* out) {
  extern __shared__ __align__(1024) char smem_raw[];
  char* smem = smem_raw + ((1024 - smem_addr(smem_raw) % 1024) % 1024);
  constexpr int kTile = 73728;
  uint64_t* bar = reinterpret_cast<uint64_t*>(smem + kTile + 16384);
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
  if (!busy) return;
  using Mma = gmma::MMA_64x64x16_F32BF16BF16_SS<gmma::Major::K, gmma::Major::K>;
  const uint32_t a_smem = smem_addr(smem + kTile), b_smem = a_smem + 8192;
  const uint64_t da = make_desc(a_smem, 16, 1024), db = make_desc(b_smem, 16, 1024);
  float s32[32];
#pragma unroll
  for (int i = 0; i < 32; ++i) s32[i] = 0.f;
  while (!*stop) {
    uint64_t da_, db_;
    asm volatile("mov.b64 %0, %1;" : "=l"(da_) : "l"(da));
    asm volatile("mov.b64 %0, %1;" : "=l"(db_) : "l"(db));
    fence_operands(s32);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < 36; ++kk)
      wgmma<Mma>(desc_add(da_, (kk % 4) * 32), desc_add(db_, (kk % 4) * 32), s32);
    wgmma_commit();
    wgmma_wait<0>();
    fence_operands(s32);
  }
  float x = 0.f;
#pragma unroll
  for (int i = 0; i < 32; ++i) x += s32[i];
  if (x == 12345.f) out[0] = 1;
}

int main() {
  int sms = 0; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  int sms0 = 0; cudaDeviceGetAttribute(&sms0, cudaDevAttrMultiProcessorCount, 0);
  const size_t small = 16ull << 20, big = size_t((sms0 + 1) / 2) * 2000 * kBuf;
  char* src; cudaMalloc(&src, big); cudaMemset(src, 1, big);
  unsigned long long* out; cudaMalloc(&out, sms * 4 * 8);
  cudaFuncSetAttribute(probe<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem + 1024);
  cudaFuncSetAttribute(probe<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem + 1024);
  cudaFuncSetAttribute(probe<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem + 1024);
  cudaFuncSetAttribute(probe<3>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem + 1024);
  cudaFuncSetAttribute(probe<4>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem + 1024);
  std::vector<unsigned long long> h(sms * 4);
  const char* names[] = {"loads only", "loads + SS n64 (scores)", "loads + RS n64", "loads + SS n128 (P V-like)",
                         "SS n64 only", "loads + SS n64, one warpgroup"};
  {
    // the kernel's tiles: fused 576-wide pages, sequential or randomly permuted
    const int loads = 1000;
    const int pairs = (sms + 1) / 2;
    const int pages = pairs * loads;  // 72 KB each: ~4.8 GB
    char* cache; if (cudaMalloc(&cache, size_t(pages) * 73728) != cudaSuccess) { printf("alloc failed\n"); return 1; }
    cudaMemset(cache, 1, size_t(pages) * 73728);
    CUtensorMap wide, kpe;
    const char* ck = cache;
    if (!mlaw::sm90::encode_kv_wide_map(&wide, ck, 576, 64 * 576, 64, pages) ||
        !mlaw::sm90::encode_kv_map(&kpe, ck + 1024, 64, 576, 64 * 576, 64, pages, 64)) { printf("encode failed\n"); return 1; }
    std::vector<int> seq(pages), rnd(pages);
    for (int i = 0; i < pages; ++i) seq[i] = rnd[i] = i;
    unsigned x = 12345u;
    for (int i = pages - 1; i > 0; --i) { x = x * 1664525u + 1013904223u; std::swap(rnd[i], rnd[x % (i + 1)]); }
    int* order; cudaMalloc(&order, pages * 4);
    cudaFuncSetAttribute(probe_tile<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, 2 * 73728 + 2048);
    cudaFuncSetAttribute(probe_tile<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, 2 * 73728 + 2048);
    for (int r = 0; r < 2; ++r) {
      cudaMemcpy(order, (r ? rnd : seq).data(), pages * 4, cudaMemcpyHostToDevice);
      for (int depth : {1, 2}) {
        for (int rep = 0; rep < 2; ++rep) {
          cudaMemset(out, 0, sms * 4 * 8);
          if (depth == 1) probe_tile<1><<<sms, 256, 2 * 73728 + 2048>>>(wide, kpe, order, loads, out);
          else probe_tile<2><<<sms, 256, 2 * 73728 + 2048>>>(wide, kpe, order, loads, out);
          cudaError_t e = cudaGetLastError(); if (e == cudaSuccess) e = cudaDeviceSynchronize();
          if (e != cudaSuccess) { printf("error %s\n", cudaGetErrorString(e)); return 1; }
        }
        cudaMemcpy(h.data(), out, sms * 4 * 8, cudaMemcpyDeviceToHost);
        std::vector<double> bpc, ghz;
        for (int i = 0; i < sms; ++i)
          if (h[i * 4]) { bpc.push_back(double(loads) * 73728 / h[i * 4]); ghz.push_back(double(h[i * 4]) / h[i * 4 + 1]); }
        std::sort(bpc.begin(), bpc.end()); std::sort(ghz.begin(), ghz.end());
        const double b = bpc[bpc.size() / 2], gz = ghz[ghz.size() / 2];
        printf("kernel tile (576-wide pages, %s order), depth %d | intake %5.1f B/clk per SM (%5.1f GB/s at %.2f GHz)%s\n",
               r ? "random" : "sequential", depth, b, b * gz, gz,
               depth == 1 ? "" : "");
        if (depth == 1) printf("    a 72 KB tile lands %.0f clocks (%.2f us) after issue\n", 73728 / b, 73728 / b / gz / 1000);
      }
    }
    {
      cudaMemcpy(order, rnd.data(), pages * 4, cudaMemcpyHostToDevice);
      cudaFuncSetAttribute(probe_tile_busy, cudaFuncAttributeMaxDynamicSharedMemorySize, 73728 + 16384 + 2048);
      for (int busy : {0, 1}) {
        for (int rep = 0; rep < 3; ++rep) {
          cudaMemset(out, 0, sms * 4 * 8);
          probe_tile_busy<<<sms, 384, 73728 + 16384 + 2048>>>(wide, kpe, order, loads, busy, out);
          cudaError_t e = cudaGetLastError(); if (e == cudaSuccess) e = cudaDeviceSynchronize();
          if (e != cudaSuccess) { printf("error %s\n", cudaGetErrorString(e)); return 1; }
        }
        cudaMemcpy(h.data(), out, sms * 4 * 8, cudaMemcpyDeviceToHost);
        std::vector<double> bpc, ghz;
        for (int i = 0; i < sms; ++i)
          if (h[i * 4]) { bpc.push_back(double(loads) * 73728 / h[i * 4]); ghz.push_back(double(h[i * 4]) / h[i * 4 + 1]); }
        std::sort(bpc.begin(), bpc.end()); std::sort(ghz.begin(), ghz.end());
        const double b = bpc[bpc.size() / 2], gz = ghz[ghz.size() / 2];
        printf("kernel tile, random order, depth 1, %s | %5.1f GB/s at %.2f GHz: a 72 KB tile lands %.0f clocks (%.2f us) after issue\n",
               busy ? "two warpgroups of SS n64 wgmma beside it" : "no math", b * gz, gz, 73728 / b, 73728 / b / gz / 1000);
      }
    }
    cudaFree(cache);
  }
  {
    // the TMA tensor path: big source as [pages][64 tokens][512] 16-bit
    const int pages = int(big / kBuf);
    CUtensorMap map;
    if (!mlaw::sm90::encode_kv_wide_map(&map, src, 512, 64 * 512, 64, pages)) { printf("encode failed\n"); return 1; }
    cudaFuncSetAttribute(probe_tma<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem + 1024);
    cudaFuncSetAttribute(probe_tma<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem + 1024);
    for (int depth : {1, 2}) {
      for (int rep = 0; rep < 2; ++rep) {
        cudaMemset(out, 0, sms * 4 * 8);
        if (depth == 1) probe_tma<1><<<sms, 256, kSmem + 1024>>>(map, 2000, out);
        else probe_tma<2><<<sms, 256, kSmem + 1024>>>(map, 2000, out);
        cudaError_t e = cudaGetLastError(); if (e == cudaSuccess) e = cudaDeviceSynchronize();
        if (e != cudaSuccess) { printf("error %s\n", cudaGetErrorString(e)); return 1; }
      }
      cudaMemcpy(h.data(), out, sms * 4 * 8, cudaMemcpyDeviceToHost);
      std::vector<double> bpc, ghz;
      for (int i = 0; i < sms; ++i)
        if (h[i * 4]) { bpc.push_back(2000.0 * kBuf / h[i * 4]); ghz.push_back(double(h[i * 4]) / h[i * 4 + 1]); }
      std::sort(bpc.begin(), bpc.end()); std::sort(ghz.begin(), ghz.end());
      const double b = bpc[bpc.size() / 2], gz = ghz[ghz.size() / 2];
      printf("TMA 4-D box (the kernel's tile), depth %d | intake %5.1f B/clk per SM (%5.1f GB/s at %.2f GHz): a load lands %.0f clocks after issue (depth 1)\n",
             depth, b, b * gz, gz, depth == 1 ? kBuf / b : 0.0);
    }
  }
  for (int depth : {1}) {
    for (int mode : {0, 1}) {
      cudaFuncSetAttribute(probe<0, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem + 1024);
      cudaFuncSetAttribute(probe<1, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem + 1024);
      for (int rep = 0; rep < 2; ++rep) {
        cudaMemset(out, 0, sms * 4 * 8);
        if (mode == 0) probe<0, 1><<<sms, 256, kSmem + 1024>>>(src, big, 2000, out);
        else probe<1, 1><<<sms, 256, kSmem + 1024>>>(src, big, 2000, out);
        cudaDeviceSynchronize();
      }
      cudaMemcpy(h.data(), out, sms * 4 * 8, cudaMemcpyDeviceToHost);
      std::vector<double> bpc, ghz;
      for (int i = 0; i < sms; ++i)
        if (h[i * 4]) { bpc.push_back(2000.0 * kBuf / h[i * 4]); ghz.push_back(double(h[i * 4]) / h[i * 4 + 1]); }
      std::sort(bpc.begin(), bpc.end()); std::sort(ghz.begin(), ghz.end());
      const double b = bpc[bpc.size() / 2], gz = ghz[ghz.size() / 2];
      printf("depth %d (one 64 KB load in flight) | %-24s | intake %5.1f B/clk per SM (%5.1f GB/s at %.2f GHz): a load lands %.0f clocks after issue\n",
             depth, mode ? "+ SS n64 (scores)" : "loads only", b, b * gz, gz, kBuf / b);
    }
  }
  for (size_t sb : {small, big}) {
    for (int mode : {0, 1, 2, 3, 4}) {
      for (int rep = 0; rep < 2; ++rep) {
        cudaMemset(out, 0, sms * 4 * 8);
        switch (mode) {
          case 0: probe<0><<<sms, 256, kSmem + 1024>>>(src, sb, 2000, out); break;
          case 1: probe<1><<<sms, 256, kSmem + 1024>>>(src, sb, 2000, out); break;
          case 2: probe<2><<<sms, 256, kSmem + 1024>>>(src, sb, 2000, out); break;
          case 3: probe<3><<<sms, 256, kSmem + 1024>>>(src, sb, 2000, out); break;
          default: probe<4><<<sms, 256, kSmem + 1024>>>(src, sb, 2000, out); break;
        }
        cudaError_t e = cudaGetLastError();
        if (e == cudaSuccess) e = cudaDeviceSynchronize();
        if (e != cudaSuccess) { printf("error %s\n", cudaGetErrorString(e)); return 1; }
      }
      cudaMemcpy(h.data(), out, sms * 4 * 8, cudaMemcpyDeviceToHost);
      std::vector<double> bpc, mma0, mma1, ghz;
      for (int i = 0; i < sms; ++i) {
        if (h[i * 4] && mode != 4) { bpc.push_back(2000.0 * kBuf / h[i * 4]); ghz.push_back(double(h[i * 4]) / h[i * 4 + 1]); }
        if (h[i * 4 + 2]) mma0.push_back(h[i * 4 + 2] / 1000.0);
        if (h[i * 4 + 3]) mma1.push_back(h[i * 4 + 3] / 1000.0);
      }
      auto med = [](std::vector<double> v) { if (v.empty()) return 0.0; std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
      printf("src %4zu MB | %-32s | intake %5.1f B/clk per SM (%5.1f GB/s at %.2f GHz) | wgmma clk/instr wg1 %6.1f wg2 %6.1f\n",
             sb >> 20, names[mode], med(bpc), med(bpc) * med(ghz), med(ghz), med(mma0), med(mma1));
    }
  }
  return 0;
}
