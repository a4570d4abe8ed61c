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

#include <algorithm>
#include <atomic>
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

// A tensor of 16-bit elements as a TMA map in the 128-byte swizzle of the kernel's shared-memory
// tiles (mla_kernel.cuh), or of bytes (elem_bytes 1: an e4m3 cache) as the stage's e4m3 area
// wants them (a latent box's 128-byte rows in the same swizzle, the rope's 64-byte rows
// unswizzled): kRank dimensions, dims[0] = 64 contiguous columns, the strides of dims 1.. in
// elements (in any order: a dimension may step inside another's row), box[0] = 64 (an e4m3
// latent: 128).
// False where TMA cannot express it (alignment, strides): the caller then leaves those loads to
// cp.async.
// The maps' L2 promotion (a miss fetches 256 bytes), except the KV maps of a stream that only
// few heads read (make_kv_maps).
#ifndef MLAW_SM90_L2_PROMOTION  // (A/B builds)
#define MLAW_SM90_L2_PROMOTION CU_TENSOR_MAP_L2_PROMOTION_L2_256B
#endif
template <int kRank>
inline bool encode_map(CUtensorMap* map, const void* base, const int64_t (&dims)[kRank],
                       const int64_t (&strides)[kRank - 1], const int (&box)[kRank],
                       int promotion = MLAW_SM90_L2_PROMOTION, int elem_bytes = 2) {
  PFN_cuTensorMapEncodeTiled_v12000 encode = tensor_map_encoder();
  if (encode == nullptr || reinterpret_cast<uintptr_t>(base) % 16 != 0) return false;
  cuuint64_t d[kRank], st[kRank - 1];
  cuuint32_t b[kRank], es[kRank];
  for (int i = 0; i < kRank; ++i) {
    d[i] = cuuint64_t(dims[i]);
    b[i] = cuuint32_t(box[i]);
    es[i] = 1;
    if (i == 0) continue;
    const int64_t bytes = strides[i - 1] * elem_bytes;
    if (bytes <= 0 || bytes % 16 != 0 || bytes >= (int64_t(1) << 40)) return false;
    st[i - 1] = cuuint64_t(bytes);
  }
  const CUtensorMapDataType type =
      elem_bytes == 1 ? CU_TENSOR_MAP_DATA_TYPE_UINT8 : CU_TENSOR_MAP_DATA_TYPE_UINT16;
  return encode(map, type, kRank, const_cast<void*>(base), d, st, b, es,
                CU_TENSOR_MAP_INTERLEAVE_NONE,
                box[0] * elem_bytes == 128 ? CU_TENSOR_MAP_SWIZZLE_128B
                                           : CU_TENSOR_MAP_SWIZZLE_NONE,
                CUtensorMapL2promotion(promotion),
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}
// [dim2][dim1][cols] with boxes of box0 (64) columns x box1 x 1.
inline bool encode_map_3d(CUtensorMap* map, const void* base, int cols, int dim1,
                          int64_t stride1, int dim2, int64_t stride2, int box1,
                          int promotion = MLAW_SM90_L2_PROMOTION, int elem_bytes = 2,
                          int box0 = kBlockCols) {
  return encode_map<3>(map, base, {cols, dim1, dim2}, {stride1, stride2}, {box0, box1, 1},
                       promotion, elem_bytes);
}

// One cache tensor [num_pages][page_size][cols]: boxes of 64 columns x box_rows tokens (an
// e4m3 latent, elem_bytes 1 and cols 512: 128 columns, config.h kRawBoxCols).
inline bool encode_kv_map(CUtensorMap* map, const void* base, int cols, int64_t stride_token,
                          int64_t stride_page, int page_size, int num_pages, int box_rows,
                          int promotion = MLAW_SM90_L2_PROMOTION, int elem_bytes = 2) {
  const int box0 = elem_bytes == 1 && cols == kHeadDimCkv ? kRawBoxCols : kBlockCols;
  return encode_map_3d(map, base, cols, page_size, stride_token, num_pages, stride_page,
                       box_rows, promotion, elem_bytes, box0);
}

// ckv [num_pages][page_size][512] as 4-D (64 columns, tokens, 8 column blocks 64 elements
// apart, pages): one box of 64 columns x 64 tokens x 8 blocks lands as the stage's first 8
// swizzled 64 x 64 blocks (block-major, as the 8 boxes of encode_kv_map would; an e4m3 cache:
// 128 columns x 64 tokens x 4 blocks, its area's 4 latent boxes), so a whole tile's latent goes
// in one TMA instruction instead of 8 (KvTensorMaps::wide).
#ifndef MLAW_SM90_WIDE_BOX
#define MLAW_SM90_WIDE_BOX 1  // 0: 9 boxes a tile (A/B builds)
#endif
inline bool encode_kv_wide_map(CUtensorMap* map, const void* base, int64_t stride_token,
                               int64_t stride_page, int page_size, int num_pages,
                               int promotion = MLAW_SM90_L2_PROMOTION, int elem_bytes = 2) {
  const int cols = elem_bytes == 1 ? kRawBoxCols : kBlockCols;
  return encode_map<4>(map, base, {cols, page_size, kHeadDimCkv / cols, num_pages},
                       {stride_token, cols, stride_page},
                       {cols, kKvTile, kHeadDimCkv / cols, 1}, promotion, elem_bytes);
}

// Whole-tile KV maps without L2 promotion where at most this many heads read the stream (each
// KV byte goes to one CTA, and the run is DRAM-bound); the paced maps and every other map keep
// 256-byte promotion. A tile's boxes walk each page 9 times, 128 bytes of every token a pass;
// with promotion, every miss also fetches the neighbouring 128 bytes ahead of their pass.
// A/B in one process (logs/sm90_s29_2026-11-27 runs 4-7), H=16 page 64 B=64/128 L=4096/16384:
// - H200, L2 flushed by reads (clean lines, as between a model's layers): 1.09-1.11x; after
//   do_bench's flush (50 MB of dirty lines) 1.01-1.04x; page 16 1.005-1.02x; the paced rows,
//   MTP rows and B=1 0.99-1.01x;
// - H100: 0.996-1.01x either way (its few-head streams go evict-normal, kKvNormalMaxHeads);
// - promotion off for every map instead: H=128 compute rows 0.96-1.005x and a paced H=16 B=64
//   L=1024 0.70x after do_bench's flush, hence the limits.
// - up to 64 heads together with the evict-normal stream (kv_evict_normal_heads): H=32 and
//   H=64 (one row tile per request, DRAM-bound there) B 32-128 L 4096-16384, H200
//   (logs/sm90_s31_2026-11-27 run 5): 1.02-1.05x after do_bench's flush and 1.04-1.07x after a
//   read flush (TP4 H=32 B=64 L=4096 1.03 / 1.06x, TP2 H=64 1.02 / 1.07x), H=32 B=128 L=16384
//   0.99-1.0x, short items, MTP and B=16 rows 0.98-1.03x; H100 (logs/sm90_s32_2026-11-27 run 2,
//   against evict-normal to 32 heads and promotion off to 16): H=64 1.002-1.034x after
//   do_bench's flush (B=128 L=8192 1.022x, B=32 L=16384 1.034x) and 0.998-1.005x after a read
//   flush, H=32 0.995-1.010x.
#ifndef MLAW_SM90_KV_PROMOTION_NONE_MAX_HEADS  // (A/B builds; 0: promotion everywhere)
#define MLAW_SM90_KV_PROMOTION_NONE_MAX_HEADS 64
#endif

// Paced KV loads. Where the grid is busy but each CTA's work is short (one work item of
// kPacedMinTiles..kPacedMaxTiles tiles, at least kPacedMinItemsPct % of the CTAs busy:
// work.cuh, producer.cuh) and num_heads <= MLAW_SM90_PACED_HEADS, the producer loads its
// tiles in boxes of paced_box_rows_for() tokens instead of whole pages or tiles. A TMA unit
// spends a while per box, so small boxes pace each SM's requests: when every SM asks for its Q
// and two 72 KB tiles at once, the memory system answers everything late (H100 trace, H=16
// B=16 L=4096: a tile arrives ~10200 clocks after its issue, a tile every ~6600 clocks); in 8-token
// boxes it arrives ~7350 clocks after, a tile every ~5900 (logs/sm90_s21_h100_2026-11-27).
// The box size: a TMA unit moves only ~13 bytes a clock per SM in 8-token boxes, about what an
// H100's DRAM gives each SM (12.8 at its peak) but well under an H200's (18.8):
// - H100, against whole boxes in one process: 8-token boxes 1.035-1.06x on H=16 B=16 L=4096
//   and B=64 L=1024, 1.05x MTP qo 4 (runs 9-13); 16-token boxes 0.96-0.99x of 8-token ones
//   (run 18), so ~1.01-1.04x whole boxes;
// - H200: 8-token boxes 0.84-0.92x unpaced loads, 16-token boxes 1.0-1.06x (run 17).
// So the size follows the device (paced_box_rows_for): 8 on an H100, 0.970-0.987x the time of
// 16-token boxes on the paced rows there (logs/sm90_s22_2026-11-27 run 1), 16 on an H200.
// Not everywhere: 8-token boxes on every tile ran long contexts 0.97x (the TMA unit bounds
// the stream), every H=128 case 0.6-0.7x (16-token boxes: 0.92-0.94x), a B=1 CTA of 1-4 tiles
// on an idle grid 0.81-0.91x from a CUDA graph (nothing to pace, the boxes only add time), and
// with up to 32 tiles the ragged H=16 B=64 case 0.93x (its paced CTAs, held to the TMA unit's
// rate, finished after unpaced ones); paced loads of a CTA's first 1-4 tiles gained 1.01x at
// most. L2 prefetches of the next tiles instead: 0.83-0.97x (run 15).
// 8-token boxes where the device's DRAM gives at most MLAW_SM90_PACED_ROWS8_MAX_BYTES per SM
// clock (an H100: 12.8), else 16 (an H200: 18.8); MLAW_SM90_PACED_ROWS > 0 forces a size.
#ifndef MLAW_SM90_PACED_ROWS
#define MLAW_SM90_PACED_ROWS 0
#endif
#ifndef MLAW_SM90_PACED_ROWS8_MAX_BYTES
#define MLAW_SM90_PACED_ROWS8_MAX_BYTES 14
#endif
// Peak DRAM bytes per SM per SM clock from a device's attributes (bus width in bits, memory
// and SM clocks in kHz, SM count; double data rate: two transfers a memory clock); 0 where one
// is unknown. An H100 SXM: 5120-bit bus, 2619 MHz, 1980 MHz, 132 SMs -> 13 (12.8); an H200:
// 6144 bits, 3201 MHz -> 19 (18.8).
inline int dram_bytes_per_sm_clock(int bus_bits, int mem_khz, int sm_khz, int sms) {
  if (bus_bits <= 0 || mem_khz <= 0 || sm_khz <= 0 || sms <= 0) return 0;
  return std::max(1, int(bus_bits / 8.0 * mem_khz * 2.0 / (double(sms) * sm_khz) + 0.5));
}
// Whether a device whose DRAM gives `bytes` per SM clock (0: unknown) is as DRAM-scarce as an
// H100: the paced boxes' size and how many of a paced CTA's tiles use them follow it.
inline bool dram_scarce(int bytes) {
  return bytes > 0 && bytes <= MLAW_SM90_PACED_ROWS8_MAX_BYTES;
}
// The paced boxes' tokens for a device whose DRAM gives `bytes` per SM clock (0: unknown).
inline int paced_box_rows_for(int bytes) {
  if (MLAW_SM90_PACED_ROWS > 0) return MLAW_SM90_PACED_ROWS;
  return dram_scarce(bytes) ? 8 : 16;
}
// Which of a paced CTA's tiles go in paced boxes (KvTensorMaps::paced_tile_mask, bit i: tile i;
// the others go whole) on a device whose DRAM gives `bytes` per SM clock: every tile on one as
// DRAM-scarce as an H100, only the second elsewhere. Paced boxes win after do_bench's flush
// (50 MB of dirty lines in L2) and lose after a read flush (clean lines, as between a model's
// layers), in one process each (logs/sm90_s32_2026-11-27 runs 5-8, sm90_s33_2026-11-27 runs
// 1-3; the paced rows: H=16, 1-128 requests of 1024-16384 tokens, MTP qo 4; the short ones are
// those that move):
// - no paced loads: H200 0.90-0.96x after do_bench's flush, 1.03-1.07x after a read flush;
//   H100 0.88-0.94x / 1.01-1.04x;
// - H200: the first two tiles paced 0.99-1.01x / 1.02-1.05x against every tile, the first one
//   only 0.97-1.01x / 0.985-1.05x, 32-token boxes 0.976-1.0x / 0.99-1.04x; the second tile only
//   (the first whole), against the first two: H=16 B=16 L=4096 1.010-1.012x / 1.008-1.015x, B=4
//   and B=8 1.01-1.03x, MTP qo 4 B=32 0.983-0.989x / 1.0x, the rest 0.99-1.01x; tiles 1-2 paced
//   0.97-1.02x / 0.99-1.015x;
// - H100: the first two or four tiles paced 0.97-0.98x / 0.98-1.02x, the first whole and the
//   rest paced 0.976-1.005x / 0.977-0.996x: an H100 keeps every tile paced.
// MLAW_SM90_PACED_TILE_MASK != 0 forces a mask (A/B builds).
#ifndef MLAW_SM90_PACED_TILE_MASK
#define MLAW_SM90_PACED_TILE_MASK 0
#endif
inline uint32_t paced_tile_mask_for(int bytes) {
  if (MLAW_SM90_PACED_TILE_MASK != 0) return uint32_t(MLAW_SM90_PACED_TILE_MASK);
  return dram_scarce(bytes) ? 0xffffffffu : 0x2u;
}
// The paged kernel's KV stream goes evict-normal up to this many heads (producer.cuh
// kKvNormalMaxHeads, which the kernel tests itself; 0 turns it off).
// It once followed the device (an H100 to 32 heads, with unpromoted maps to 16; an H200 to 64,
// sessions 30-31): the H100's A/B at 64 heads in session 32
// (MLAW_SM90_KV_PROMOTION_NONE_MAX_HEADS) made the two rules one.
// - H100, the four memory-bound rows: evict-normal 1.018-1.034x (logs/sm90_s23_2026-11-27
//   run 5).
// - H200: with 256-byte promotion, evict-normal ran those rows 0.88-0.97x (s23 run 7); without
//   promotion, 1.025-1.060x after do_bench's dirty flush in two rounds and 0.986-1.001x after a
//   read flush; at H=128 0.95-0.97x (logs/sm90_s30_2026-11-27 run 3).
inline int kv_evict_normal_heads() { return kKvNormalMaxHeads > 0 ? kKvNormalMaxHeads : 0; }
// The whole-tile KV maps' head limit for going without L2 promotion (see
// MLAW_SM90_KV_PROMOTION_NONE_MAX_HEADS).
inline int kv_promotion_none_heads() { return MLAW_SM90_KV_PROMOTION_NONE_MAX_HEADS; }
inline int kv_map_promotion(const MlaRunArgs& a) {
  return a.num_heads <= kv_promotion_none_heads() ? int(CU_TENSOR_MAP_L2_PROMOTION_NONE)
                                                  : int(MLAW_SM90_L2_PROMOTION);
}
// dram_bytes_per_sm_clock of the current device (its attributes read once per device), 0 where
// unknown.
inline int device_dram_bytes_per_sm_clock() {
  static std::atomic<int> cache[64];  // per device: 0 not read yet, -1 unavailable
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0 || dev >= 64) return 0;
  int v = cache[dev].load(std::memory_order_relaxed);
  if (v == 0) {
    int bus_bits = 0, mem_khz = 0, sm_khz = 0, sms = 0;
    const bool ok =
        cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&sm_khz, cudaDevAttrClockRate, dev) == cudaSuccess &&
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess;
    v = ok ? dram_bytes_per_sm_clock(bus_bits, mem_khz, sm_khz, sms) : 0;
    if (v == 0) v = -1;
    cache[dev].store(v, std::memory_order_relaxed);
  }
  return v > 0 ? v : 0;
}
#ifndef MLAW_SM90_PACED_HEADS
#define MLAW_SM90_PACED_HEADS 64
#endif
// The paced box rows of this run on a device whose DRAM gives `dram_bytes` per SM clock, 0
// where no CTA is paced.
inline int kv_paced_rows(const MlaRunArgs& a, int dram_bytes) {
  if (kPacedMaxTiles <= 0 || a.num_heads > MLAW_SM90_PACED_HEADS) return 0;
  const int rows = paced_box_rows_for(dram_bytes);
  return tma_box_tokens(a.page_size) > rows ? rows : 0;
}

// Encoding costs ~3 us of host time per map (H200 host, 2026-11-23), and a serving engine calls
// run() with the same tensors again and again (every layer's cache in turn, q buffers the
// allocator or a CUDA graph hands back at the same addresses). So each thread keeps the maps
// of its last kSlots tensor pairs, direct-mapped by the first tensor's address (bits from
// `shift` up), keyed by both addresses, four strides and two extents; thread-local, so
// concurrent callers never share an entry. encode(maps) fills a miss's maps.
template <typename Maps, int kSlots, typename Encode>
inline Maps cached_maps(const void* t0, const void* t1, const int64_t (&strides)[4], int32_t n0,
                        int32_t n1, int shift, Encode encode) {
  struct Entry {
    const void* t0 = nullptr;
    const void* t1 = nullptr;
    int64_t strides[4] = {0, 0, 0, 0};
    int32_t n0 = 0, n1 = 0;
    Maps maps;
  };
  static thread_local Entry cache[kSlots];
  Entry& e = cache[(reinterpret_cast<uintptr_t>(t0) >> shift) % kSlots];
  if (e.t0 == t0 && e.t1 == t1 && e.strides[0] == strides[0] && e.strides[1] == strides[1] &&
      e.strides[2] == strides[2] && e.strides[3] == strides[3] && e.n0 == n0 && e.n1 == n1)
    return e.maps;
  encode(e.maps);
  e.t0 = t0;
  e.t1 = t1;
  for (int i = 0; i < 4; ++i) e.strides[i] = strides[i];
  e.n0 = n0;
  e.n1 = n1;
  return e.maps;
}

// The paged cache's TMA maps for this run (host only: the descriptors travel as a kernel
// parameter, so a captured CUDA graph replays with the ones of its capture), cached for the
// last 64 caches.
#ifndef MLAW_SM90_TMA
#define MLAW_SM90_TMA 1  // 0: cp.async for every tile (A/B builds)
#endif
// Programmatic dependent launch of the attention kernel where MlaRunArgs::enable_pdl says the
// plan did not come from the stream's previous kernel (the wrapper's plans: a host upload): its
// CTAs start, read the plan and set up while that kernel finishes, and wait for it
// (griddepcontrol.wait in both roles) before the page table, Q, the cache and any store. H100,
// with a copy kernel writing Q right before each call (check_sm90_dev.py --preceded, as a
// model's projection does; logs/sm90_s33_2026-11-27 runs 13-14): eager 1.002-1.04x on the
// memory and middle rows, 0.98-1.23x at B=1, CUDA-graph replays of copy + run() 1.013-1.04x at
// B=1; the compute rows 0.994-1.009x; without a kernel right before, 0.99-1.01x. The combine
// (sm80/combine_kernel.cuh) lets the next launch start as it begins, so the next call's attention
// may start while this one ends. enable_pdl 2 (the GPU plans of ops.py: the routed
// cutlass_mla_decode and FlashMLA's dense call's first call a step, where the stream's previous
// kernel writes the plan) launches the same way, but the kernel waits for that grid before it
// reads the plan; the plan kernels let it start as they begin (and are launched the same way
// themselves, waiting for the kernel before them first). H200, session 73: the routed call
// 0.92-0.99x the time of ordinary launches on the grid's rows (run 1), B=1 CUDA-graph replays
// 0.94-0.96x (run 2). 0 turns it off (MLA_WRAPPER_PDL=0 at run time).
#ifndef MLAW_SM90_PDL
#define MLAW_SM90_PDL 1
#endif
// Probes (timing only): -DMLAW_SM90_PROBE_NO_COMBINE=1 launches no combine (split rows are
// left unmerged: wrong results); -DMLAW_SM90_PROBE_CLUSTER=N launches the paged kernel in
// clusters of N (the grid rounded down to a multiple: CTAs past it do not run).
#ifndef MLAW_SM90_PROBE_NO_COMBINE
#define MLAW_SM90_PROBE_NO_COMBINE 0
#endif
#ifndef MLAW_SM90_PROBE_CLUSTER
#define MLAW_SM90_PROBE_CLUSTER 0
#endif
template <typename Kv, typename TKv = void>
inline KvTensorMaps make_kv_maps(const MlaRunArgs& a) {
  const int eb = kWidenedKv<TKv> ? 1 : 2;  // bytes an element
  KvTensorMaps none;
  none.enabled = 0;
  none.paced_rows = 0;
  none.paced_tile_mask = 0;
  none.wide = 0;
  none.promotion_none = 0;
  if (!std::is_same<Kv, PagedKv>::value) return none;
  if (!MLAW_SM90_TMA || a.num_pages <= 0 || tma_box_tokens(a.page_size) == 0) return none;
  const int64_t strides[4] = {a.ckv_stride_token, a.ckv_stride_page, a.kpe_stride_token,
                              a.kpe_stride_page};
  const int dram_bytes = device_dram_bytes_per_sm_clock();
  const int paced = kv_paced_rows(a, dram_bytes);
  const int whole = tma_box_tokens(a.page_size);
  const int promotion = kv_map_promotion(a);
  const int promotion_none = promotion == int(CU_TENSOR_MAP_L2_PROMOTION_NONE);
  // (whether there are paced maps and the promotion are part of the key: page sizes stay
  // below 2^16)
  return cached_maps<KvTensorMaps, 64>(
      a.ckv, a.kpe, strides, a.page_size | (paced > 0) << 16 | promotion_none << 17,
      a.num_pages, 10, [&](KvTensorMaps& m) {
        m.paced_rows = paced;
        m.paced_tile_mask = paced > 0 ? paced_tile_mask_for(dram_bytes) : 0;
        m.promotion_none = promotion_none;
        m.enabled =
            encode_kv_map(&m.ckv, a.ckv, kHeadDimCkv, a.ckv_stride_token, a.ckv_stride_page,
                          a.page_size, a.num_pages, whole, promotion, eb) &&
            encode_kv_map(&m.kpe, a.kpe, kHeadDimKpe, a.kpe_stride_token, a.kpe_stride_page,
                          a.page_size, a.num_pages, whole, promotion, eb);
        if (m.enabled && paced > 0)
          m.enabled =
              encode_kv_map(&m.ckv_paced, a.ckv, kHeadDimCkv, a.ckv_stride_token,
                            a.ckv_stride_page, a.page_size, a.num_pages, paced,
                            MLAW_SM90_L2_PROMOTION, eb) &&
              encode_kv_map(&m.kpe_paced, a.kpe, kHeadDimKpe, a.kpe_stride_token,
                            a.kpe_stride_page, a.page_size, a.num_pages, paced,
                            MLAW_SM90_L2_PROMOTION, eb);
        m.wide = m.enabled && MLAW_SM90_WIDE_BOX && whole == kKvTile &&
                 encode_kv_wide_map(&m.ckv_wide, a.ckv, a.ckv_stride_token, a.ckv_stride_page,
                                    a.page_size, a.num_pages, promotion, eb);
      });
}

// One query tensor [tokens][heads][cols]: boxes of 64 columns x box_heads heads x 1 token
// (load_q_tma).
inline bool encode_q_map(CUtensorMap* map, const void* base, int cols, int64_t stride_token,
                         int64_t stride_head, int heads, int tokens, int box_heads) {
  return encode_map_3d(map, base, cols, heads, stride_head, tokens, stride_token, box_heads);
}

// The query rows' TMA maps for this run (box_heads 0: load_q's cp.async). A row tile is whole
// tokens' heads when 64 % heads == 0 or heads % 64 == 0; heads >= 8 keeps every box on a
// 1024-byte swizzle atom of the Q tile. Cached for the last 8 query tensors (a miss costs two
// encodes of host time).
inline QTensorMaps make_q_maps(const MlaRunArgs& a) {
  QTensorMaps none;
  none.box_heads = 0;
  const int h = a.num_heads;
  if (!MLAW_SM90_TMA_Q || a.num_q_tokens <= 0 || h < MLAW_SM90_TMA_Q_MIN_HEADS ||
      (kRowsPerTile % h != 0 && h % kRowsPerTile != 0))
    return none;
  const int64_t strides[4] = {a.q_nope_stride_token, a.q_nope_stride_head,
                              a.q_pe_stride_token, a.q_pe_stride_head};
  return cached_maps<QTensorMaps, 8>(
      a.q_nope, a.q_pe, strides, h, a.num_q_tokens, 8, [&](QTensorMaps& m) {
        const int bh = h < kRowsPerTile ? h : kRowsPerTile;
        m.box_heads = encode_q_map(&m.nope, a.q_nope, kHeadDimCkv, a.q_nope_stride_token,
                                   a.q_nope_stride_head, h, a.num_q_tokens, bh) &&
                              encode_q_map(&m.pe, a.q_pe, kHeadDimKpe, a.q_pe_stride_token,
                                           a.q_pe_stride_head, h, a.num_q_tokens, bh)
                          ? bh
                          : 0;
      });
}

// Both the paged kernel and the gather mode have a Q-by-TMA instance (mla_kernel.cuh kQTma),
// picked per run where make_q_maps made maps (MlaRunArgs.num_q_tokens > 0).
constexpr bool kQTmaKernel = MLAW_SM90_TMA_Q;
// The paged kernel's Q-by-TMA instance with early Q (consumer_steps.cuh MLAW_SM90_EARLY_Q) where
// the run may give CTAs several items: more row tiles than CTAs at most (q rows x row tiles a
// token: decode's requests are one token each; in a CUDA graph, the capacity's), so B=1 and
// other one-item grids keep the instance without its code. H100 / H200, against no early Q:
// H=128 B=256-512 L=512-1024 1.01-1.05x, compute rows 1.003-1.036x (logs/sm90_s38_2026-11-27
// runs 8, 10).
inline bool early_q_for(const MlaPlan& plan, const MlaRunArgs& a) {
  const int64_t tiles_per_token = (a.num_heads + kRowsPerTile - 1) / kRowsPerTile;
  return MLAW_SM90_EARLY_Q && int64_t(a.num_q_tokens) * tiles_per_token > plan.num_ctas;
}

// The paged e4m3 kernel's narrow instances (work.cuh kNarrow), whose items run their tiles on
// mma.sync over 16 rows (narrow.cuh narrow_tiles) where the heads are that few; neither has
// early Q (its exchange of partial scores uses the Q tile), and both load Q by TMA. kNarrowMixed
// runs 64-row plans, whose items of more rows (MTP) or one tile take the wgmma path in it;
// kNarrowPlans runs plans of kNarrowRows-row tiles (sm90.py rows_per_tile_for: decode batches
// of 8 or 16 heads), all narrow. (A run whose query gets no TMA map, which checked inputs of 8
// or 16 heads always do, is refused for such a plan: run.)
template <typename Kv, typename TKv>
constexpr bool kNarrowKernel =
    MLAW_SM90_NARROW && kQTmaKernel && std::is_same<Kv, PagedKv>::value &&
    std::is_same<TKv, KvE4m3>::value;
inline bool narrow_for(const MlaRunArgs& a) { return a.num_heads <= kNarrowRows; }

// The paged e4m3 kernel's tall instance (tall.cuh), for plans made with rows_per_tile =
// kTallRows (the sm90 backend's for 17-32 heads): its Q maps' boxes are a token's heads, at most
// kTallRows of them, so that every item is whole tokens.
#ifndef MLAW_SM90_TALL  // 0: no tall instance (plans with 32-row tiles are refused)
#define MLAW_SM90_TALL 1
#endif
template <typename Kv, typename TKv>
constexpr bool kTallKernel = MLAW_SM90_TALL && std::is_same<Kv, PagedKv>::value &&
                             std::is_same<TKv, KvE4m3>::value;

// Sets a function attribute on every instance of the kernel the launch below may pick.
template <typename T, typename Kv, typename TKv = T>
inline cudaError_t set_kernel_attribute(cudaFuncAttribute attr, int value) {
  cudaError_t err = cudaFuncSetAttribute(mla_sm90_kernel<T, Kv, false, false, TKv>, attr, value);
  if constexpr (kQTmaKernel) {
    if (err == cudaSuccess)
      err = cudaFuncSetAttribute(mla_sm90_kernel<T, Kv, true, false, TKv>, attr, value);
    if constexpr (std::is_same<Kv, PagedKv>::value)
      if (err == cudaSuccess)
        err = cudaFuncSetAttribute(mla_sm90_kernel<T, Kv, true, true, TKv>, attr, value);
    if constexpr (kNarrowKernel<Kv, TKv>) {
      if (err == cudaSuccess)
        err = cudaFuncSetAttribute(mla_sm90_kernel<T, Kv, true, false, TKv, kNarrowMixed>, attr,
                                   value);
      if (err == cudaSuccess)
        err = cudaFuncSetAttribute(mla_sm90_kernel<T, Kv, true, false, TKv, kNarrowPlans>, attr,
                                   value);
    }
  }
  if constexpr (kTallKernel<Kv, TKv>) {
    if (err == cudaSuccess)
      err = cudaFuncSetAttribute(mla_sm90_kernel<T, Kv, false, false, TKv, 0, true>, attr,
                                 value);
    if (kQTmaKernel && err == cudaSuccess)
      err = cudaFuncSetAttribute(mla_sm90_kernel<T, Kv, kQTmaKernel, false, TKv, 0, true>,
                                 attr, value);
  }
  return err;
}

// An e4m3 cache's extra conditions: 16-byte rows of bytes (strides that are multiples of 16
// elements) and finite positive scales.
inline int check_e4m3_args(const MlaRunArgs* a, const char* name) {
  const int64_t strides[] = {a->ckv_stride_page, a->ckv_stride_token, a->kpe_stride_page,
                             a->kpe_stride_token};
  const char* names[] = {"ckv.stride(0)", "ckv.stride(1)", "kpe.stride(0)", "kpe.stride(1)"};
  for (int i = 0; i < 4; ++i)
    if (strides[i] % 16 != 0)
      return fail("%s: an fp8 (e4m3) cache's %s must be a multiple of 16 elements (16 bytes), "
                  "got %lld", name, names[i], static_cast<long long>(strides[i]));
  if (!(a->ckv_scale > 0.f && a->ckv_scale < INFINITY) ||
      !(a->kpe_scale > 0.f && a->kpe_scale < INFINITY))
    return fail("%s: ckv_scale and kpe_scale must be finite and > 0, got %g and %g", name,
                a->ckv_scale, a->kpe_scale);
  return 0;
}

struct DeviceSetup {
  bool ready = false;
  int sm_count = 0;
};

// Kv: how KV tokens are found (PagedKv: the page table; sparse/gather.cuh: per-token slot ids).
// TKv: the cache's element (T, KvE4m3: an e4m3 cache with args->ckv_scale / kpe_scale, or
// KvDsMla: FlashMLA's fp8 rows, args->ckv the first row's byte and args->kpe its rope's).
template <typename T, typename Kv = PagedKv, typename TKv = T>
int run(const MlaPlan* plan, const MlaRunArgs* args, cudaStream_t stream, const char* name,
        const Kv& kvm = Kv()) {
  // the tall instance's plans (tall.cuh): 32-row tiles; kNarrowPlans': 16-row tiles
  const bool tall = kTallKernel<Kv, TKv> && plan != nullptr && plan->rows_per_tile == kTallRows;
  const bool narrow_plan =
      kNarrowKernel<Kv, TKv> && plan != nullptr && plan->rows_per_tile == kNarrowRows;
  const int plan_rows = tall ? kTallRows : narrow_plan ? kNarrowRows : kRowsPerTile;
  if (int st = check_run_args(plan, args, name, plan_rows, kKvTile)) return st;
  if ((tall || narrow_plan) && args->num_heads > plan_rows)
    return fail("%s: a plan of %d-row tiles (the %s instance's) takes at most %d heads, got "
                "num_heads = %d; plan with rows_per_tile = %d", name, plan_rows,
                tall ? "tall" : "narrow", plan_rows, args->num_heads, kRowsPerTile);
  // An e4m3 cache: the kernel widens its values exactly (to f16) and leaves the scales to the
  // score scale (sm_scale x ckv_scale) and the output (x ckv_scale, consume's kE4m3); the
  // query's rope columns are multiplied by kpe_scale / ckv_scale (q_to_f16).
  // FlashMLA's fp8 rows (KvDsMla, the gather mode) carry their scales: ckv / kpe_scale are 1.
  MlaRunArgs folded;
  if constexpr (kWidenedKv<TKv>) {
    if (int st = check_e4m3_args(args, name)) return st;
    folded = *args;
    folded.sm_scale = args->sm_scale * args->ckv_scale;
    folded.kpe_scale = args->kpe_scale / args->ckv_scale;
    args = &folded;
  }
  int device = 0;
  MLAW_CUDA_TRY(cudaGetDevice(&device));
  static DeviceSetup setup[64];  // one per instantiation (T, Kv, TKv)
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
    MLAW_CUDA_TRY((set_kernel_attribute<T, Kv, TKv>(
        cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemAlloc)));
    if (MLAW_SM90_PROBE_CLUSTER > 8)  // (clusters past 8 CTAs are not portable)
      MLAW_CUDA_TRY((set_kernel_attribute<T, Kv, TKv>(
          cudaFuncAttributeNonPortableClusterSizeAllowed, 1)));
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
    cudaLaunchAttribute attrs[2];
    int num_attrs = 0;
    // (the probe MLAW_SM90_PROBE_CLUSTER: clusters of its size, the grid rounded down to them)
    const int cluster = MLAW_SM90_PROBE_CLUSTER ? MLAW_SM90_PROBE_CLUSTER : 2;
    const int grid = plan->num_ctas - (MLAW_SM90_PROBE_CLUSTER ? plan->num_ctas % cluster : 0);
    if (kPairs<Kv> && grid % cluster == 0) {
      attrs[num_attrs].id = cudaLaunchAttributeClusterDimension;
      attrs[num_attrs].val.clusterDim.x = cluster;
      attrs[num_attrs].val.clusterDim.y = 1;
      attrs[num_attrs].val.clusterDim.z = 1;
      ++num_attrs;
    }
    if (MLAW_SM90_PDL && args->enable_pdl) {
      attrs[num_attrs].id = cudaLaunchAttributeProgrammaticStreamSerialization;
      attrs[num_attrs].val.programmaticStreamSerializationAllowed = 1;
      ++num_attrs;
    }
    const cudaLaunchConfig_t cfg =
        launch_config(grid, kThreads, kSmemAlloc, stream, attrs, num_attrs);
    const QTensorMaps qmaps = kQTmaKernel ? make_q_maps(*args) : QTensorMaps{};
    auto kernel = mla_sm90_kernel<T, Kv, false, false, TKv>;
    if constexpr (kQTmaKernel)
      if (qmaps.box_heads > 0) {
        kernel = mla_sm90_kernel<T, Kv, true, false, TKv>;
        if constexpr (std::is_same<Kv, PagedKv>::value)
          if (early_q_for(*plan, *args)) kernel = mla_sm90_kernel<T, Kv, true, true, TKv>;
        if constexpr (kNarrowKernel<Kv, TKv>)  // (in place of early Q: see kNarrowKernel)
          if (narrow_for(*args)) kernel = mla_sm90_kernel<T, Kv, true, false, TKv, kNarrowMixed>;
      }
    if constexpr (kNarrowKernel<Kv, TKv>) {
      if (narrow_plan && qmaps.box_heads == 0)
        return fail("%s: a plan of %d-row tiles (the narrow instance's) loads the query by TMA, "
                    "and no TMA map could be made for q_nope / q_pe (num_heads = %d, strides "
                    "%lld / %lld elements); plan with MLA_WRAPPER_SM90_NARROW_PLANS=0 set",
                    name, kNarrowRows, args->num_heads,
                    static_cast<long long>(args->q_nope_stride_token),
                    static_cast<long long>(args->q_nope_stride_head));
      if (narrow_plan) kernel = mla_sm90_kernel<T, Kv, true, false, TKv, kNarrowPlans>;
    }
    if constexpr (kTallKernel<Kv, TKv>)
      if (tall)
        kernel = qmaps.box_heads > 0
                     ? mla_sm90_kernel<T, Kv, kQTmaKernel, false, TKv, 0, true>
                     : mla_sm90_kernel<T, Kv, false, false, TKv, 0, true>;
    const cudaError_t err = cudaLaunchKernelEx(&cfg, kernel, *plan, *args, kvm,
                                               make_kv_maps<Kv, TKv>(*args), qmaps);
    if (err != cudaSuccess) return static_cast<int>(err);
    if (int st = launch_status()) return st;
  }
  if (MLAW_SM90_PROBE_NO_COMBINE) return 0;
  if constexpr (kTallKernel<Kv, TKv>)
    if (tall)  // (the tall plans' partial slots: 32 rows)
      return sm80::launch_combine<T, T, kTallRows>(plan, args, stream, ds.sm_count, true);
  if constexpr (kNarrowKernel<Kv, TKv>)
    if (narrow_plan)  // (16 rows)
      return sm80::launch_combine<T, T, kNarrowRows>(plan, args, stream, ds.sm_count, true);
  return sm80::launch_combine<T, T>(plan, args, stream, ds.sm_count, /*pdl=*/true);
}

}  // namespace sm90
}  // namespace mlaw

#if MLAW_SM90_TRACE
// Zeroes a development buffer (a __device__ array) after it has been read out.
template <typename Buffer>
static int clear_device_buffer(Buffer& buffer) {
  void* p = nullptr;
  const int rc = cudaGetSymbolAddress(&p, buffer);
  return rc != 0 ? rc : cudaMemset(p, 0, sizeof(buffer));
}
// The development trace (dev.cuh): dims[0..2] = CTAs, tiles, events of the buffer; with
// dst != NULL also copies it ([CTAs][tiles][events] clock64 values) to host memory and clears
// it, so that the next launch's trace holds no tiles of an earlier, longer one (session 48's
// traces of later rows mixed in the first row's tiles). Returns a cudaError_t.
extern "C" __attribute__((visibility("default"))) int mlaw_sm90_trace_read(
    unsigned long long* dst, int32_t* dims) {
  dims[0] = mlaw::sm90::kTraceCtas;
  dims[1] = mlaw::sm90::kTraceTiles;
  dims[2] = mlaw::sm90::kTraceEvents;
  if (dst == nullptr) return 0;
  const int rc = cudaMemcpyFromSymbol(dst, mlaw::sm90::g_trace, sizeof(mlaw::sm90::g_trace));
  return rc != 0 ? rc : clear_device_buffer(mlaw::sm90::g_trace);
}
// The CTA spans (dev.cuh): dims[0..1] = CTAs, events; with dst != NULL also copies them
// ([CTAs][events]) to host memory and clears the buffer. Returns a cudaError_t.
extern "C" __attribute__((visibility("default"))) int mlaw_sm90_span_read(
    unsigned long long* dst, int32_t* dims) {
  dims[0] = mlaw::sm90::kSpanCtas;
  dims[1] = mlaw::sm90::kSpanEvents;
  if (dst == nullptr) return 0;
  const int rc = cudaMemcpyFromSymbol(dst, mlaw::sm90::g_span, sizeof(mlaw::sm90::g_span));
  return rc != 0 ? rc : clear_device_buffer(mlaw::sm90::g_span);
}
#endif
