// Probe (session 12): how fast can 132 SMs each take 72 KB KV tiles (9 TMA boxes of 64 x 128 B,
// 128-byte swizzle) into a 2-stage ring, and does a 2-CTA cluster with multicast (each CTA
// issues half the boxes to both) beat two CTAs that read the same tiles on their own (the
// planner's lockstep pairs, served by L2)? A consumer warp "computes" for C clocks per tile.
// Modes: 0 every CTA its own stream; 1 CTAs 2v, 2v+1 read the same stream (no cluster);
// 2 cluster of 2, multicast halves. Build: nvcc -O3 -arch=sm_90a -std=c++17 mc_probe.cu -o mc_probe
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdint>
#include <vector>
#include <chrono>
#include <cstdlib>

constexpr int kStages = 2, kBoxes = 9, kBoxBytes = 8192, kTileBytes = kBoxes * kBoxBytes;
constexpr int kRowsPerTile = kBoxes * 64;  // tensor rows of 128 bytes

__device__ __forceinline__ uint32_t sa(const void* p) { return (uint32_t)__cvta_generic_to_shared(p); }
__device__ __forceinline__ void mbar_init(uint64_t* b, int n) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(sa(b)), "r"(n));
}
__device__ __forceinline__ void mbar_wait(uint64_t* b, uint32_t par) {
  uint32_t done = 0;
  while (!done)
    asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\nselp.u32 %0,1,0,p;\n}\n"
                 : "=r"(done) : "r"(sa(b)), "r"(par) : "memory");
}
__device__ __forceinline__ void arrive_expect(uint64_t* b, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(sa(b)), "r"(bytes) : "memory");
}
// arrive on the barrier at the same offset in CTA `rank` of the cluster
__device__ __forceinline__ void arrive_cluster(uint64_t* b, uint32_t rank) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(sa(b)), "r"(rank));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}
__device__ __forceinline__ uint64_t evict_first() {
  uint64_t p; asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p)); return p;
}
__device__ __forceinline__ void tma2d(uint32_t dst, const CUtensorMap* m, uint64_t* bar, int c0, int c1, uint64_t pol) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1, {%3, %4}], [%2], %5;"
               ::"r"(dst), "l"((uint64_t)m), "r"(sa(bar)), "r"(c0), "r"(c1), "l"(pol) : "memory");
}
__device__ __forceinline__ void tma2d_mc(uint32_t dst, const CUtensorMap* m, uint64_t* bar, int c0, int c1, uint16_t mask, uint64_t pol) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes.multicast::cluster.L2::cache_hint [%0], [%1, {%3, %4}], [%2], %5, %6;"
               ::"r"(dst), "l"((uint64_t)m), "r"(sa(bar)), "r"(c0), "r"(c1), "h"(mask), "l"(pol) : "memory");
}
__device__ __forceinline__ uint32_t cluster_rank() { uint32_t r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

struct Stats { unsigned long long wait, cycles; };

template <int kMode>
__global__ void __launch_bounds__(64, 1) probe(const __grid_constant__ CUtensorMap map, int tiles, int compute, Stats* st) {
  extern __shared__ __align__(1024) char smem_raw[];
  char* smem = smem_raw + ((1024 - sa(smem_raw) % 1024) % 1024);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + kStages * kTileBytes);
  uint64_t* empty = full + kStages;
  const uint32_t rank = kMode == 2 ? cluster_rank() : 0;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) { mbar_init(&full[s], 1); mbar_init(&empty[s], kMode == 2 ? 2 : 1); }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (kMode == 2) cluster_sync();
  const int stream = kMode == 0 ? blockIdx.x : blockIdx.x / 2;
  const long long t0 = clock64();
  if (threadIdx.x == 0) {  // producer
    const uint64_t pol = evict_first();
    for (int i = 0; i < tiles; ++i) {
      const int s = i % kStages;
      if (i >= kStages) mbar_wait(&empty[s], ((i / kStages) - 1) & 1);
      arrive_expect(&full[s], kTileBytes);
      const int row0 = (stream * tiles + i) * kRowsPerTile;
      const uint32_t dst = sa(smem + s * kTileBytes);
      if (kMode == 2) {
        const int b0 = rank == 0 ? 0 : 5, b1 = rank == 0 ? 5 : 9;
        for (int b = b0; b < b1; ++b) tma2d_mc(dst + b * kBoxBytes, &map, &full[s], 0, row0 + b * 64, 0x3, pol);
      } else {
        for (int b = 0; b < kBoxes; ++b) tma2d(dst + b * kBoxBytes, &map, &full[s], 0, row0 + b * 64, pol);
      }
    }
  } else if (threadIdx.x == 32) {  // consumer
    unsigned long long waited = 0;
    for (int i = 0; i < tiles; ++i) {
      const int s = i % kStages;
      const long long w0 = clock64();
      mbar_wait(&full[s], (i / kStages) & 1);
      waited += clock64() - w0;
      const long long c0 = clock64();
      while (clock64() - c0 < compute) {}
      if (kMode == 2) { arrive_cluster(&empty[s], 0); arrive_cluster(&empty[s], 1); }
      else asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(sa(&empty[s])) : "memory");
    }
    st[blockIdx.x].wait = waited;
    st[blockIdx.x].cycles = clock64() - t0;
  }
  __syncthreads();
  if (kMode == 2) cluster_sync();  // no CTA leaves while its partner may still signal it
}

int main(int argc, char** argv) {
  const int only_mode = argc > 1 ? atoi(argv[1]) : -1;      // sustained run of one mode
  const int only_compute = argc > 2 ? atoi(argv[2]) : 0;
  const double seconds = argc > 3 ? atof(argv[3]) : 0.0;
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  int clk; cudaDeviceGetAttribute(&clk, cudaDevAttrClockRate, 0);
  cudaDeviceProp prop; cudaGetDeviceProperties(&prop, 0);
  const int grid = sms / 2 * 2;
  const int tiles = 300;
  const size_t rows = (size_t)grid * tiles * kRowsPerTile;  // mode 0 needs a stream per CTA
  const size_t bytes = rows * 128;
  char* buf; cudaMalloc(&buf, bytes); cudaMemset(buf, 1, bytes);
  char* flush; const size_t fl = 256 << 20; cudaMalloc(&flush, fl);
  Stats* st; cudaMalloc(&st, grid * sizeof(Stats));
  void* fn = nullptr; cudaDriverEntryPointQueryResult q;
  cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &q);
  auto encode = (PFN_cuTensorMapEncodeTiled_v12000)fn;
  CUtensorMap map;
  cuuint64_t dims[2] = {64, rows}; cuuint64_t strides[1] = {128};
  cuuint32_t box[2] = {64, 64}; cuuint32_t es[2] = {1, 1};
  if (encode(&map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 2, buf, dims, strides, box, es, CU_TENSOR_MAP_INTERLEAVE_NONE,
             CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) != CUDA_SUCCESS) {
    printf("encode failed\n"); return 1;
  }
  const int smem = kStages * kTileBytes + 4 * 8 + 1024;
  cudaFuncSetAttribute(probe<0>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaFuncSetAttribute(probe<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaFuncSetAttribute(probe<2>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  cudaFuncSetAttribute(probe<2>, cudaFuncAttributeNonPortableClusterSizeAllowed, 0);
  printf("%s, %d SMs, clock %d MHz; %d CTAs x %d tiles of %d bytes, 2 stages\n", prop.name, sms, clk / 1000, grid, tiles, kTileBytes);
  printf("mode compute  us     smem_TB/s  dram_TB/s(unique)  B/clk/SM  mean_wait/tile(clk)  cycles/tile\n");
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  const char* names[3] = {"own", "pair", "mcast"};
  for (int compute : {0, 1500, 2400, 3000}) {
    for (int mode = 0; mode < 3; ++mode) {
      if (only_mode >= 0 && (mode != only_mode || compute != only_compute)) continue;
      float best = 1e30f; std::vector<Stats> h(grid);
      int reps = 3;
      if (only_mode >= 0) {  // calibrate: as many launches as fill `seconds`
        reps = 1000000;
      }
      auto wall0 = std::chrono::steady_clock::now();
      for (int rep = 0; rep < reps; ++rep) {
        if (only_mode >= 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count() > seconds) break;
        if (only_mode < 0) cudaMemsetAsync(flush, rep, fl);
        cudaEventRecord(e0);
        if (mode == 0) probe<0><<<grid, 64, smem>>>(map, tiles, compute, st);
        else if (mode == 1) probe<1><<<grid, 64, smem>>>(map, tiles, compute, st);
        else {
          cudaLaunchConfig_t cfg = {}; cfg.gridDim = grid; cfg.blockDim = 64; cfg.dynamicSmemBytes = smem;
          cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeClusterDimension;
          at[0].val.clusterDim.x = 2; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
          cfg.attrs = at; cfg.numAttrs = 1;
          cudaLaunchKernelEx(&cfg, probe<2>, map, tiles, compute, st);
        }
        cudaEventRecord(e1); cudaEventSynchronize(e1);
        float ms; cudaEventElapsedTime(&ms, e0, e1);
        if (ms < best) { best = ms; cudaMemcpy(h.data(), st, grid * sizeof(Stats), cudaMemcpyDeviceToHost); }
      }
      cudaError_t err = cudaGetLastError();
      if (err != cudaSuccess) { printf("error %s\n", cudaGetErrorString(err)); return 1; }
      double wait = 0, cyc = 0;
      for (auto& s : h) { wait += s.wait; cyc += s.cycles; }
      wait /= grid * (double)tiles; cyc /= grid * (double)tiles;
      const double smem_bytes = (double)grid * tiles * kTileBytes;
      const double uniq = mode == 0 ? smem_bytes : smem_bytes / 2;
      printf("%-5s %6d %8.1f %9.2f %12.2f %14.1f %16.0f %14.0f\n", names[mode], compute, best * 1e3,
             smem_bytes / best / 1e9, uniq / best / 1e9, kTileBytes / cyc, wait, cyc);
    }
  }
  return 0;
}
