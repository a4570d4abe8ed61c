// Host side of the sm90 family: argument checks (common/run_checks.h), one-time per-device
// kernel setup, the attention launch, then the split-KV combine (sm80's combine kernel: the
// plan and partial layout are shared) with programmatic dependent launch.
// Nothing here reads device memory, allocates or synchronizes: run() can be captured in a
// CUDA graph (the grids depend only on plan->num_ctas and plan->max_merge_items).
#pragma once

#include <cuda.h>
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled
#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>

#include "mla_wrapper/common/plan.h"
#include "mla_wrapper/common/run_checks.h"
#include "mla_wrapper/common/status.cuh"
#include "mla_wrapper/sm80/combine_kernel.cuh"
#include "mla_wrapper/sm90/config.h"
#include "mla_wrapper/sm90/mla_kernel.cuh"

namespace mlaw {
namespace sm90 {

static_assert(kRowsPerTile == sm80::kRowsPerTile && kHeadDimCkv == sm80::kHeadDimCkv,
              "the sm80 combine kernel merges this family's partials: same tile and width");

// cuTensorMapEncodeTiled through the runtime's driver entry point (no -lcuda); null when the
// driver does not offer it (every tile then goes through cp.async).
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      cudaGetLastError();
      return static_cast<PFN_cuTensorMapEncodeTiled_v12000>(nullptr);
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

// A 3-D tensor of 16-bit elements [dim2][dim1][cols] (strides in elements, innermost
// contiguous) as a TMA map with boxes of 64 columns x box1 x 1 in the 128-byte swizzle of the
// kernel's shared-memory tiles (mla_kernel.cuh). False where TMA cannot express it (alignment,
// strides): the caller then leaves those loads to cp.async.
inline bool encode_map_3d(CUtensorMap* map, const void* base, int cols, int dim1,
                          int64_t stride1, int dim2, int64_t stride2, int box1) {
  PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  if (encode == nullptr || reinterpret_cast<uintptr_t>(base) % 16 != 0 || stride1 <= 0 ||
      stride2 <= 0 || (stride1 * 2) % 16 != 0 || (stride2 * 2) % 16 != 0 ||
      stride1 * 2 >= (int64_t(1) << 40) || stride2 * 2 >= (int64_t(1) << 40))
    return false;
  const cuuint64_t dims[3] = {cuuint64_t(cols), cuuint64_t(dim1), cuuint64_t(dim2)};
  const cuuint64_t strides[2] = {cuuint64_t(stride1 * 2), cuuint64_t(stride2 * 2)};
  const cuuint32_t box[3] = {cuuint32_t(kBlockCols), cuuint32_t(box1), 1};
  const cuuint32_t elem_strides[3] = {1, 1, 1};
  return encode(map, CU_TENSOR_MAP_DATA_TYPE_UINT16, 3, const_cast<void*>(base), dims, strides,
                box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// One cache tensor [num_pages][page_size][cols]: boxes of 64 columns x tma_box_tokens(page_size)
// tokens.
inline bool encode_kv_map(CUtensorMap* map, const void* base, int cols, int64_t stride_token,
                          int64_t stride_page, int page_size, int num_pages) {
  return encode_map_3d(map, base, cols, page_size, stride_token, num_pages, stride_page,
                       tma_box_tokens(page_size));
}

// The paged cache's TMA maps for this run (host only: the descriptors travel as a kernel
// parameter, so a captured CUDA graph replays with the ones of its capture).
#ifndef MLAW_SM90_TMA
#define MLAW_SM90_TMA 1  // 0: cp.async for every tile (A/B builds)
#endif
// Encoding costs ~3 us of host time per map (H200 host, 2026-11-23), so each thread keeps the
// maps of its last 64 caches (a serving engine calls run() for every layer's cache in turn),
// direct-mapped by the ckv address; thread-local, so concurrent callers never share an entry.
struct KvMapsEntry {
  const void* ckv = nullptr;
  const void* kpe = nullptr;
  int64_t strides[4] = {0, 0, 0, 0};
  int32_t page_size = 0, num_pages = 0;
  KvTensorMaps maps;
};
template <typename Kv>
inline KvTensorMaps make_kv_maps(const MlaRunArgs& a) {
  KvTensorMaps maps;
  maps.enabled = 0;
  if (!MLAW_SM90_TMA || !std::is_same<Kv, PagedKv>::value || a.num_pages <= 0 ||
      tma_box_tokens(a.page_size) == 0)
    return maps;
  static thread_local KvMapsEntry cache[64];
  KvMapsEntry& e = cache[(reinterpret_cast<uintptr_t>(a.ckv) >> 10) % 64];
  if (e.ckv == a.ckv && e.kpe == a.kpe && e.strides[0] == a.ckv_stride_token &&
      e.strides[1] == a.ckv_stride_page && e.strides[2] == a.kpe_stride_token &&
      e.strides[3] == a.kpe_stride_page && e.page_size == a.page_size &&
      e.num_pages == a.num_pages)
    return e.maps;
  maps.enabled =
      encode_kv_map(&maps.ckv, a.ckv, kHeadDimCkv, a.ckv_stride_token, a.ckv_stride_page,
                    a.page_size, a.num_pages) &&
      encode_kv_map(&maps.kpe, a.kpe, kHeadDimKpe, a.kpe_stride_token, a.kpe_stride_page,
                    a.page_size, a.num_pages);
  e.ckv = a.ckv;
  e.kpe = a.kpe;
  e.strides[0] = a.ckv_stride_token;
  e.strides[1] = a.ckv_stride_page;
  e.strides[2] = a.kpe_stride_token;
  e.strides[3] = a.kpe_stride_page;
  e.page_size = a.page_size;
  e.num_pages = a.num_pages;
  e.maps = maps;
  return maps;
}

// One query tensor [tokens][heads][cols]: boxes of 64 columns x box_heads heads x 1 token
// (load_q_tma).
inline bool encode_q_map(CUtensorMap* map, const void* base, int cols, int64_t stride_token,
                         int64_t stride_head, int heads, int tokens, int box_heads) {
  return encode_map_3d(map, base, cols, heads, stride_head, tokens, stride_token, box_heads);
}

// The query rows' TMA maps for this run (box_heads 0: load_q's cp.async). A row tile is whole
// tokens' heads when 64 % heads == 0 or heads % 64 == 0; heads >= 8 keeps every box on a
// 1024-byte swizzle atom of the Q tile. Cached per thread like the cache's maps (a serving
// engine's q buffers come back at the same addresses: the allocator reuses them, a CUDA graph
// keeps them); a miss costs two encodes of host time.
struct QMapsEntry {
  const void* q_nope = nullptr;
  const void* q_pe = nullptr;
  int64_t strides[4] = {0, 0, 0, 0};
  int32_t heads = 0, tokens = 0;
  QTensorMaps maps;
};
inline QTensorMaps make_q_maps(const MlaRunArgs& a) {
  QTensorMaps maps;
  maps.box_heads = 0;
  const int h = a.num_heads;
  if (!MLAW_SM90_TMA_Q || a.num_q_tokens <= 0 || h < MLAW_SM90_TMA_Q_MIN_HEADS ||
      (kRowsPerTile % h != 0 && h % kRowsPerTile != 0))
    return maps;
  static thread_local QMapsEntry cache[8];
  QMapsEntry& e = cache[(reinterpret_cast<uintptr_t>(a.q_nope) >> 8) % 8];
  if (e.q_nope == a.q_nope && e.q_pe == a.q_pe && e.strides[0] == a.q_nope_stride_token &&
      e.strides[1] == a.q_nope_stride_head && e.strides[2] == a.q_pe_stride_token &&
      e.strides[3] == a.q_pe_stride_head && e.heads == h && e.tokens == a.num_q_tokens)
    return e.maps;
  const int bh = h < kRowsPerTile ? h : kRowsPerTile;
  if (encode_q_map(&maps.nope, a.q_nope, kHeadDimCkv, a.q_nope_stride_token,
                   a.q_nope_stride_head, h, a.num_q_tokens, bh) &&
      encode_q_map(&maps.pe, a.q_pe, kHeadDimKpe, a.q_pe_stride_token, a.q_pe_stride_head, h,
                   a.num_q_tokens, bh))
    maps.box_heads = bh;
  e.q_nope = a.q_nope;
  e.q_pe = a.q_pe;
  e.strides[0] = a.q_nope_stride_token;
  e.strides[1] = a.q_nope_stride_head;
  e.strides[2] = a.q_pe_stride_token;
  e.strides[3] = a.q_pe_stride_head;
  e.heads = h;
  e.tokens = a.num_q_tokens;
  e.maps = maps;
  return maps;
}

// Both the paged kernel and the gather mode have a Q-by-TMA instance (mla_kernel.cuh kQTma),
// picked per run where make_q_maps made maps (MlaRunArgs.num_q_tokens > 0).
constexpr bool kQTmaKernel = MLAW_SM90_TMA_Q;

struct DeviceSetup {
  bool ready = false;
  int sm_count = 0;
};

// Kv: how KV tokens are found (PagedKv: the page table; sparse/gather.cuh: per-token slot ids).
template <typename T, typename Kv = PagedKv>
int run(const MlaPlan* plan, const MlaRunArgs* args, cudaStream_t stream, const char* name,
        const Kv& kvm = Kv()) {
  if (int st = check_run_args(plan, args, name, kRowsPerTile, kKvTile)) return st;
  int device = 0;
  MLAW_CUDA_TRY(cudaGetDevice(&device));
  static DeviceSetup setup[64];  // one per instantiation (T, Kv)
  if (device < 0 || device >= 64) return fail("%s: device ordinal %d out of range", name, device);
  DeviceSetup& ds = setup[device];
  if (!ds.ready) {  // racing first calls from two threads both do this: harmless
    int major = 0;
    MLAW_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
    if (major != 9)
      return fail("%s: this kernel is built for Hopper (sm_90a), device %d is sm_%d0; use the "
                  "sm80 backend", name, device, major);
    int smem_optin = 0;
    MLAW_CUDA_TRY(
        cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    if (smem_optin < kSmemAlloc)
      return fail("%s: needs %d bytes of shared memory per block, device %d allows %d", name,
                  kSmemAlloc, device, smem_optin);
    MLAW_CUDA_TRY(cudaFuncSetAttribute(mla_sm90_kernel<T, Kv>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemAlloc));
    if constexpr (kQTmaKernel)
      MLAW_CUDA_TRY(cudaFuncSetAttribute(mla_sm90_kernel<T, Kv, true>,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemAlloc));
    int sms = 0;
    MLAW_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    ds.sm_count = sms;
    ds.ready = true;
  }
  if (plan->num_ctas > 0) {
    // The paged (dense) kernel runs in clusters of two CTAs whenever the grid allows, so that a
    // plan made with pair_merge (the sm90 family's, planner.h pair_merges) can merge a tile's
    // two pieces on chip; the choice depends only on num_ctas, so a captured launch suits every
    // later plan. With one ~226 KB CTA per SM, 66 clusters of two fill an H100's 132 SMs.
    cudaLaunchAttribute attr;
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = 2;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    const cudaLaunchConfig_t cfg = launch_config(plan->num_ctas, kThreads, kSmemAlloc, stream, &attr,
                                                 kPairs<Kv> && plan->num_ctas % 2 == 0);
    const QTensorMaps qmaps = kQTmaKernel ? make_q_maps(*args) : QTensorMaps{};
    auto kernel = mla_sm90_kernel<T, Kv>;
    if constexpr (kQTmaKernel)
      if (qmaps.box_heads > 0) kernel = mla_sm90_kernel<T, Kv, true>;
    const cudaError_t err =
        cudaLaunchKernelEx(&cfg, kernel, *plan, *args, kvm, make_kv_maps<Kv>(*args), qmaps);
    if (err != cudaSuccess) return static_cast<int>(err);
    if (int st = launch_status()) return st;
  }
  return sm80::launch_combine<T, T>(plan, args, stream, ds.sm_count, /*pdl=*/true);
}

}  // namespace sm90
}  // namespace mlaw

#if MLAW_SM90_TRACE
// The development trace (mla_kernel.cuh): dims[0..2] = CTAs, tiles, events of the buffer; with
// dst != NULL also copies it ([CTAs][tiles][events] clock64 values) to host memory. Returns a
// cudaError_t.
extern "C" __attribute__((visibility("default"))) int mlaw_sm90_trace_read(
    unsigned long long* dst, int32_t* dims) {
  dims[0] = mlaw::sm90::kTraceCtas;
  dims[1] = mlaw::sm90::kTraceTiles;
  dims[2] = mlaw::sm90::kTraceEvents;
  if (dst == nullptr) return 0;
  return cudaMemcpyFromSymbol(dst, mlaw::sm90::g_trace, sizeof(mlaw::sm90::g_trace));
}
#endif
