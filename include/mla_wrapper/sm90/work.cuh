// What both roles of the sm90 kernel (mla_kernel.cuh) read from the plan and the launch: a work
// item, a CTA's first words, the TMA descriptors, and the tile rules the launcher shares
// (tma_box_tokens, the paced loads' limits).
#pragma once

#include <type_traits>
#include "mla_wrapper/common/kv_access.cuh"
#include "mla_wrapper/common/plan.h"
#include "mla_wrapper/sm90/config.h"
#include "mla_wrapper/sm90/traits.cuh"

namespace mlaw {
namespace sm90 {

// One work item's record as loaded from the plan (plan.h), nothing derived yet.
struct WorkRecord {
  int row_tile, kv_start, slot, qo_start, kv_end, qo_len, kv_len, page_start;

  WorkRecord() = default;
  __device__ __forceinline__ WorkRecord(const MlaPlan& plan, int w) {
    const int* wi = plan.work_info + w * kWorkFields;
    row_tile = wi[kWorkRowTile];
    kv_start = wi[kWorkKvStart];
    slot = wi[kWorkPartialSlot];
    qo_start = wi[kWorkQoStart];  // the request's fields, carried by the item (plan.h)
    kv_end = wi[kWorkKvEnd];
    qo_len = wi[kWorkQoLen];
    kv_len = wi[kWorkKvLen];
    page_start = wi[kWorkPageStart];
  }
};

// Facts of one work item that both roles derive from the plan.
struct WorkItem {
  int row0, kv_start, kv_end, slot, qo_start, qo_len, kv_len, page_start, valid_rows;
  int num_tiles;

  WorkItem() = default;
  // kRows: the plan's rows per tile (kRowsPerTile, or kTallRows in the tall instance)
  template <int kRows, typename Kv>
  __device__ __forceinline__ WorkItem(const WorkRecord& r, int num_heads, const Kv& kvm,
                                      std::integral_constant<int, kRows>) {
    row0 = r.row_tile * kRows;
    kv_start = r.kv_start;
    slot = r.slot;
    qo_start = r.qo_start;
    kv_end = kvm.clamp_kv_end(qo_start, r.kv_end);
    qo_len = r.qo_len;
    kv_len = r.kv_len;
    page_start = r.page_start;
    valid_rows = min(kRows, qo_len * num_heads - row0);
    num_tiles = kv_end > kv_start ? (kv_end - kv_start + kKvTile - 1) / kKvTile : 0;
  }
  template <int kRows, typename Kv>
  __device__ __forceinline__ WorkItem(const MlaPlan& plan, int w, int num_heads, const Kv& kvm,
                                      std::integral_constant<int, kRows> rows)
      : WorkItem(WorkRecord(plan, w), num_heads, kvm, rows) {}
};

// The e4m3 kernel's narrow instances (kNarrow, launcher.cuh): which items run their tiles on
// mma.sync over their rows 0-15 (narrow.cuh), for both roles: the producer leaves those tiles'
// e4m3 bytes as they land, the consumers read them as they are.
// - kNarrowMixed (plans of 64-row tiles with <= 16 heads): items of <= 16 valid rows and at
//   least kNarrowMinTiles tiles; the others (MTP's rows past 16, one-tile items) take the wgmma
//   path over tiles widened in shared memory.
// - kNarrowPlans (plans of kNarrowRows-row tiles: sm90.py rows_per_tile_for, decode batches of
//   8 or 16 heads): every item, so the instance has no wgmma path and no widening. H200 A/B
//   of that build against kNarrowMixed on the same 64-row decode plans (session 65,
//   logs/sm90_s65_2026-11-29 runs 1-2, the probe MLAW_SM90_PROBE_NARROW_ONLY): after do_bench's
//   flush H=8-16 B=1-8 L=4096 1.03-1.075x faster, B=16-128 1.01-1.04x, CUDA graphs 1.0-1.05x;
//   but B=1 L=1024 (one-tile items) 0.96x, which rows_per_tile_for leaves to 64-row plans
//   where it knows the lengths.
constexpr int kNarrowMixed = 1, kNarrowPlans = 2;
#ifndef MLAW_SM90_NARROW  // 0: the launcher never picks the narrow instance (A/B builds)
#define MLAW_SM90_NARROW 1
#endif
// Items of fewer tiles keep the wgmma path. While narrow tiles were widened in shared memory
// too (sessions 51-52) the threshold was 8 tiles: at B=1 (items of 2-4 tiles) the narrow code,
// run once from a cold instruction cache, cost more than its tiles saved. Since their tiles
// skip the widening (session 53, H200, against 8 on the same tensors,
// logs/sm90_s53_2026-11-28 run 3): 2 tiles ran H=16 B=1 L=4096 1.10x faster at page 64 and
// 1.12x at page 1 (CUDA graphs 1.02x / 1.05x), B=4-8 L=1024 1.03-1.05x, B=1 L=1024 0.96x
// after an L2 flush (graphs equal); 4 tiles 1.0x; 12 or 16 tiles 0.80-0.83x at H=16 B=16
// L=4096 and B=64 L=1024 (run 2).
#ifndef MLAW_SM90_NARROW_MIN_TILES
#define MLAW_SM90_NARROW_MIN_TILES 2
#endif
constexpr int kNarrowRows = 16;
constexpr int kNarrowMinTiles = MLAW_SM90_NARROW_MIN_TILES;
template <int kNarrow>
__device__ __forceinline__ bool narrow_item(const WorkItem& item) {
  if constexpr (kNarrow == kNarrowPlans) return true;  // (every item has <= kNarrowRows rows)
  return item.valid_rows <= kNarrowRows && item.num_tiles >= kNarrowMinTiles;
}
// The rows per tile of the plans an instance runs (the item's row0 = row_tile x this, and its
// partial slot's rows): the tall instance's kTallRows, kNarrowPlans' kNarrowRows, else 64.
template <int kNarrow, bool kTall>
constexpr int kPlanRows = kTall ? kTallRows : kNarrow == kNarrowPlans ? kNarrowRows : kRowsPerTile;

// CTA c's first item, guessed to be at index c, as in a plan of at most one item per busy CTA
// (B=1's pieces, batches cut into cluster pairs): each role uses that record without waiting
// for cta_work_indptr[c] when the guess holds, which saves one dependent load before Q and the
// first KV tile. Any index below num_ctas - 1 lies inside work_info (plan.h: at least
// num_ctas - 1 records). The gather mode (sparse) does not guess.
// The kernel's first instructions load these words, one per lane of every warp: lane l < 9
// field l of the guessed record, lanes 9 and 10 cta_work_indptr[c] and [c + 1], lane 11 the
// plan's item count; the roles read them by shuffles. After an L2 flush the roles' code comes
// from DRAM too, and its fetch now overlaps the loads' latency (the record came ~2.0 us after
// a CTA's start, ~1.2 us with the code in L2; logs/sm90_s36_2026-11-27). One word per lane,
// not the record in every lane: ptxas moved uniform values into uniform registers at once, and
// every thread waited for the loads at the entry.
// Cluster pairs are made for the paged (dense) kernel only: the gather mode's plans have none
// and its launch has no clusters (launcher.cuh), so its code leaves them out.
template <typename Kv>
constexpr bool kPairs = std::is_same<Kv, PagedKv>::value;

template <typename Kv>
struct CtaStart {
  static constexpr bool kGuess = std::is_same<Kv, PagedKv>::value;
  static constexpr int kIndptr = kWorkFields, kCount = kWorkFields + 2;  // lanes
  int guess;  // the guessed first item (kGuess)
  int word;   // this lane's word (above)

  __device__ __forceinline__ explicit CtaStart(const MlaPlan& plan) {
    const int lane = threadIdx.x % 32;
    const int c = blockIdx.x;
    guess = c + 1 < plan.num_ctas ? c : 0;
    const int* src = lane < kIndptr ? plan.work_info + guess * kWorkFields + lane
                     : lane < kCount ? plan.cta_work_indptr + c + (lane - kIndptr)
                                     : plan.counts;
    word = lane <= kCount && (kGuess || lane >= kIndptr) ? *src : 0;
  }
  __device__ __forceinline__ int get(int lane) const { return __shfl_sync(~0u, word, lane); }
  __device__ __forceinline__ int w_begin() const { return get(kIndptr); }
  __device__ __forceinline__ int w_end() const { return get(kIndptr + 1); }
  __device__ __forceinline__ int num_items() const { return get(kCount); }
  // Work item w (called by whole warps) of a plan of kRows rows per tile.
  template <int kRows = kRowsPerTile>
  __device__ __forceinline__ WorkItem at(const MlaPlan& plan, int w, int num_heads,
                                         const Kv& kvm) const {
    const std::integral_constant<int, kRows> rows;
    if (kGuess && w == guess) {
      WorkRecord r;
      r.row_tile = get(kWorkRowTile);
      r.kv_start = get(kWorkKvStart);
      r.slot = get(kWorkPartialSlot);
      r.qo_start = get(kWorkQoStart);
      r.kv_end = get(kWorkKvEnd);
      r.qo_len = get(kWorkQoLen);
      r.kv_len = get(kWorkKvLen);
      r.page_start = get(kWorkPageStart);
      return WorkItem(r, num_heads, kvm, rows);
    }
    return WorkItem(plan, w, num_heads, kvm, rows);
  }
};

// TMA descriptors of the paged cache (launcher.cuh encodes them per run): ckv as
// [num_pages][page_size][512] and kpe as [num_pages][page_size][64], boxes of
// tma_box_tokens(page_size) tokens x 64 columns in the 128-byte swizzle of the KV stage.
// enabled = 0 (gather mode, pages tma_box_tokens leaves to cp.async, strides TMA cannot
// express): every tile goes through cp.async.
struct KvTensorMaps {
  CUtensorMap ckv;
  CUtensorMap kpe;
  CUtensorMap ckv_paced;  // the same tensors in boxes of paced_rows tokens (launcher.cuh)
  CUtensorMap kpe_paced;
  CUtensorMap ckv_wide;  // ckv in one box of 8 column blocks per whole tile (launcher.cuh)
  int enabled;
  int wide;  // ckv_wide encoded (pages that are multiples of 64): unpaced tiles take 2 boxes
  int paced_rows;  // tokens per box of a paced CTA's tiles (a CTA whose only item has
                   // kPacedMinTiles..kPacedMaxTiles tiles loads them through the paced maps);
                   // 0: no CTA is paced
  uint32_t paced_tile_mask;  // bit i: a paced CTA's tile i goes in paced boxes, else whole
                             // (launcher.cuh paced_tile_mask_for)
  int promotion_none;  // host-side record: the whole-tile maps were encoded without L2
                       // promotion (launcher.cuh kv_map_promotion); the kernel does not read it
};

// TMA descriptors of the query rows (launcher.cuh make_q_maps): q_nope as [tokens][heads][512]
// and q_pe as [tokens][heads][64], boxes of 64 columns x box_heads heads x 1 token in the
// 128-byte swizzle of the Q tile. box_heads = min(num_heads, 64) where every row tile is whole
// tokens' heads in one box per token (64 % heads == 0 or heads % 64 == 0, heads >= 8 so that
// each box starts on a 1024-byte swizzle atom); 0: Q goes through cp.async (load_q).
struct QTensorMaps {
  CUtensorMap nope;
  CUtensorMap pe;
  int box_heads;
};

// Tokens of one TMA box along a page: whole 64-token tiles for pages that are multiples of 64,
// one box per page for 16- and 32-token pages (a tile is then 4 or 2 whole pages, 36 or 18
// boxes), 0 (cp.async) below. H100, 2026-11-25: with all boxes issued by one thread, 32-token
// pages through TMA ran 1.07-1.14x the cp.async gather at H=128 but 16-token pages only
// 0.80-0.98x (logs/sm90_page32_h100_2026-11-25); with each page's 9 boxes issued by its own
// warp 16-token pages run 1.07-1.15x cp.async at H=128 (B=64 L=4096, B=128 L=16384; ABBA
// run 1.09 / 1.15x) and 32-token pages gain
// another 1.03-1.06x; spreading a page's boxes over the four warps instead is slower (0.71x
// at page 16), and equal everywhere at H=16 (logs/sm90_tma_spread_h100_2026-11-25). 1-token
// boxes: 1.2-2.1x slower than cp.async (logs/sm90_gather_h200_2026-11-23).
#ifndef MLAW_SM90_TMA_MIN_PAGE
#define MLAW_SM90_TMA_MIN_PAGE 16
#endif
__host__ __device__ __forceinline__ constexpr int tma_box_tokens(int page_size) {
  return page_size % kKvTile == 0                                        ? kKvTile
         : (page_size >= MLAW_SM90_TMA_MIN_PAGE && kKvTile % page_size == 0) ? page_size
                                                                          : 0;
}

// Paced KV loads (launcher.cuh kv_paced_rows): the fewest tiles of a paced CTA's item.
#ifndef MLAW_SM90_PACED_MIN_TILES
#define MLAW_SM90_PACED_MIN_TILES 2
#endif
constexpr int kPacedMinTiles = MLAW_SM90_PACED_MIN_TILES;
#ifndef MLAW_SM90_PACED_MIN_ITEMS_PCT  // and the fewest work items, in % of the grid's CTAs
#define MLAW_SM90_PACED_MIN_ITEMS_PCT 75
#endif
constexpr int kPacedMinItemsPct = MLAW_SM90_PACED_MIN_ITEMS_PCT;
#ifndef MLAW_SM90_PACED_MAX_TILES  // and the most tiles (0: no paced loads)
#define MLAW_SM90_PACED_MAX_TILES 16
#endif
constexpr int kPacedMaxTiles = MLAW_SM90_PACED_MAX_TILES;
static_assert(kPacedMaxTiles <= 32, "KvTensorMaps::paced_tile_mask has a bit per tile");

}  // namespace sm90
}  // namespace mlaw
