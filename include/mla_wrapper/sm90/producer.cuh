// The sm90 kernel's producer warpgroup (mla_kernel.cuh's schedule): a CTA's KV tiles into the
// ring, by TMA or cp.async through the page table, widened there for an e4m3 cache
// (dequant.cuh).
// Its code follows the consumers' in each kernel function (~52 KB in, ~87 KB in the e4m3 narrow
// instance), and after an L2 flush it comes from DRAM as it first runs: in the narrow instance
// the first stage passes ~5.2 us after the CTA's start (16-bit kernel ~1.9 us; warm ~1.8 in
// both) and the first tile lands ~9 us in, ~4 us after the consumers are ready (H200, H=16 B=64
// L=4096 after do_bench's flush). Measured and not kept (logs/sm90_s64_2026-11-29): the
// producer's code laid out first (first stage ~2.1 us, but every CTA ended ~4.5 us later; B <=
// 32 0.92-0.97x the speed), and the first item's first tiles loaded by the consumer thread that
// issues Q (0.97-1.01x the speed: its page-id load holds warp 0, which the Q conversion waits for).
// Session 65 (logs/sm90_s65_2026-11-29): the plain e4m3 instance (producer ~68 KB in) starts as
// late (H=128: first stage ~6.6 us cold); a smaller function alone is no remedy (Q's conversion
// in one pass of stores and dequant_tile as one subroutine, 123 -> 108 KB: 0.92-1.03x), while
// the narrow instance without the wgmma path (kNarrowPlans, work.cuh) runs decode B=1-16
// 1.00-1.09x faster than the 64-row plans' (B=32 L=2048 0.98x; runs 3-4). The micro tests there
// put the cold start in what the previous launch evicted from the instruction caches, not in the
// code's offset in the function.
#pragma once

#include <type_traits>
#include "mla_wrapper/common/kv_access.cuh"
#include "mla_wrapper/common/pdl.cuh"
#include "mla_wrapper/common/plan.h"
#include "mla_wrapper/sm90/config.h"
#include "mla_wrapper/sm90/dequant.cuh"
#include "mla_wrapper/sm90/dev.cuh"
#include "mla_wrapper/sm90/traits.cuh"
#include "mla_wrapper/sm90/work.cuh"

namespace mlaw {
namespace sm90 {

// ---------------------------------------------------------------------------------- producer
// kBarStageFree (config.h; 128 threads): warp 0 has seen a stage free. Only warp 0 polls the
// stage's `empty` mbarrier; the other three warps wait at this barrier, which costs no issue
// slots. With all four polling, the waits were ~11% of the kernel's warp instructions at H=128
// (H100 ncu, ~61 tries a tile: a suspended try wakes on the CTA's other mbarrier traffic;
// logs/sm90_s22_2026-11-27 run 6).

// page[p] for a run-time p in [0, kLoadPasses) through selects (an indexed load would put the
// array on the stack).
__device__ __forceinline__ int page_of_pass(const int (&page)[kLoadPasses], int p) {
  static_assert(kLoadPasses == 4, "page_of_pass selects among 4 passes");
  const int lo = p & 1 ? page[1] : page[0];
  const int hi = p & 1 ? page[3] : page[2];
  return p & 2 ? hi : lo;
}

// The KV stream's L2 policy: evict-first, except in the paged kernel where few heads read the
// stream (at most kKvNormalMaxHeads, launcher.cuh kv_evict_normal_heads; one row tile per
// request: the memory-bound decode) and the CTA's item is not short (kKvFirstShort) or paced.
// H100 (logs/sm90_s23_2026-11-27): evict-normal ran 1.018-1.034x faster on the four
// memory-bound rows (H=16, B 64 / 128, L 4096 / 16384; 1.02x at H=32 and MTP; do_bench after its
// dirty flush, reproduced in one run; run 5); at H=128 (two CTAs of a lockstep pair read each
// tile) 0.91-0.96x, and on paced CTAs 0.89x (run 4). H200, and 33-64 heads (with unpromoted
// maps): see launcher.cuh kv_evict_normal_heads and MLAW_SM90_KV_PROMOTION_NONE_MAX_HEADS.
#ifndef MLAW_SM90_KV_NORMAL_MAX_HEADS  // (A/B builds; 0: evict-first everywhere)
#define MLAW_SM90_KV_NORMAL_MAX_HEADS 64
#endif
constexpr int kKvNormalMaxHeads = MLAW_SM90_KV_NORMAL_MAX_HEADS;
// Short items on a busy grid (the paced test's, also where no paced maps exist: pages of 1-16
// tokens) stay evict-first. H200, evict-normal there: H=16 B=16 L=4096 and B=64 L=1024 at
// page 1 0.89-0.90x, at page 16 0.92x (logs/sm90_s30_2026-11-27 run 4).
#ifndef MLAW_SM90_KV_FIRST_SHORT  // (A/B builds; 0: only paced CTAs stay evict-first)
#define MLAW_SM90_KV_FIRST_SHORT 1
#endif
constexpr bool kKvFirstShort = MLAW_SM90_KV_FIRST_SHORT != 0;
// Items of a request whose rows fill two or more whole row tiles (MTP rows at 16-64 heads: CTAs
// of a lockstep group read each KV tile, as at H=128) stay evict-first. H200, against
// evict-normal there (logs/sm90_s31_2026-11-27 run 7): H=64 qo 2 and H=32 qo 4, B 16-64,
// 1.004-1.034x; a request of 96 rows (H=32 qo 3: a full tile and a partial one) keeps
// evict-normal, which ran it 1.03-1.08x faster (runs 6-7). (A/B builds: 0 turns this off.)
#ifndef MLAW_SM90_KV_FIRST_MULTI_TILE
#define MLAW_SM90_KV_FIRST_MULTI_TILE 1
#endif
constexpr bool kKvFirstMultiTile = MLAW_SM90_KV_FIRST_MULTI_TILE != 0;

// An e4m3 tile's TMA boxes prefetched into L2 before the previous tile's widening (1), or not.
// H200 (logs/sm90_s42_2026-11-28 run 7, A/B against 0): the memory rows H=16 B=64 / 128 1.09 /
// 1.11x, the compute rows 1.017-1.030x, H=16 B=16 and B=1 equal (0.99-1.0x). Session 56 (run 8,
// both prefetches off for every tile): the wide instance's H=32 / 64 rows 0.91-0.94x at
// B >= 32, H=128 0.99-1.03x.
#ifndef MLAW_SM90_E4M3_PREFETCH
#define MLAW_SM90_E4M3_PREFETCH 1
#endif
constexpr bool kE4m3PrefetchL2 = MLAW_SM90_E4M3_PREFETCH != 0;
// The same for a paged e4m3 tile loaded by cp.async (pages without maps, partial tiles): each
// producer thread's source lines, prefetch.global.L2 (1), or not. H200, A/B against 0
// (logs/sm90_s45_2026-11-28 runs 3-4): page 1, H=16 B=64 / 128 1.05x, B=16 1.02x, H=128
// 0.99x; the gather mode's slots 0.92-0.93x at 128 tokens (equal at 1-32): not there.
#ifndef MLAW_SM90_E4M3_PREFETCH_LINES
#define MLAW_SM90_E4M3_PREFETCH_LINES 1
#endif
constexpr bool kE4m3PrefetchLines = MLAW_SM90_E4M3_PREFETCH_LINES != 0;
// Neither prefetch for the narrow instance's items of more tiles than this (their tiles are
// read as they land, and the stream runs near the copy rate: the prefetch's L2 requests come on
// top of the loads' own). H200, A/B of both prefetches off for every e4m3 tile
// (logs/sm90_s55_2026-11-28 run 8): H=16 rows 1.04x faster at page 64 (B=64-128, L=4096-16384;
// B=64 L=4096 1.01x) and 1.02-1.07x at page 1, but after do_bench's L2 flush B=1 and B=16
// L=4096 0.94-0.97x (their short items start on a cold L2; CUDA graphs 1.00-1.015x). This
// rule keeps each side's measured choice (long items: off; B=1 and B=16 L=4096 items of <= 16
// tiles: on). A/B'd as a rule (logs/sm90_s56_2026-11-28 run 1, H200): against every tile
// prefetched, H=16 rows 1.03-1.06x faster at page 64 (B=64-128) and 1.03-1.10x at page 1,
// short and split rows 0.99-1.03x; against a limit of 8 tiles, B=64 L=1024 (16-tile items)
// 1.02-1.03x, the rest equal; against 32, the long rows 1.01-1.02x.
#ifndef MLAW_SM90_NARROW_PREFETCH_MAX_TILES
#define MLAW_SM90_NARROW_PREFETCH_MAX_TILES 16
#endif
constexpr int kNarrowPrefetchMaxTiles = MLAW_SM90_NARROW_PREFETCH_MAX_TILES;

// TKv: the cache's element (T, or KvE4m3: bytes land on `raw`, dequant_tile widens them; the
// tile issued last is widened just before the producer waits for the next free stage, so that
// a tile is widened while the consumers compute the one before it). kRows: the plan's rows per
// tile (kTallRows in the tall instance).
template <typename T, typename TKv, int kNarrow, int kRows, typename Kv>
__device__ __forceinline__ void produce(const MlaPlan& plan, const MlaRunArgs& args, const Kv& kvm,
                                        const KvTensorMaps& maps, const CtaStart<Kv>& start,
                                        uint32_t kv_smem, uint64_t* full, uint64_t* empty,
                                        uint64_t* raw) {
  constexpr bool kE4m3 = std::is_same<TKv, KvE4m3>::value;
  constexpr bool kDsMla = std::is_same<TKv, KvDsMla>::value;  // (the gather mode only)
  static_assert(!kDsMla || !std::is_same<Kv, PagedKv>::value,
                "FlashMLA's fp8 rows are read by the gather mode (cp.async) only");
  constexpr bool kWiden = kWidenedKv<TKv>;
  constexpr uint32_t kLoadOffset = kE4m3 ? kRawOffset : 0;
  uint64_t* landed = kWiden ? raw : full;  // the barrier a tile's loads complete on
  const int tid = threadIdx.x;  // 0..127
  const bool normal_heads =
      std::is_same<Kv, PagedKv>::value && args.num_heads <= kKvNormalMaxHeads;
  const int num_items = start.num_items();  // the plan's work items, for the busy-grid test
  const int w_begin = start.w_begin(), w_end = start.w_end();
  const int chunk = tid % 8;    // 16-byte chunk of each 128-byte column block this thread copies
  // KV is read once: L2 evict-first (or evict-normal: kKvNormalMaxHeads), the gather mode's rows
  // too (evict-normal / evict-last there measured 0.96-1.04x, logs/sm90_gather_h200_2026-11-23
  // and sm90_s12_h100_2026-11-25).
  const uint64_t first_policy = evict_first_policy();
  const uint64_t normal_policy = evict_normal_policy();
  uint64_t policy = first_policy;
  const T* ckv = static_cast<const T*>(args.ckv);
  const T* kpe = static_cast<const T*>(args.kpe);
  // TMA (maps.enabled): a whole tile inside one page, or made of whole pages of 16 / 32 tokens
  // (tma_box_tokens; t0 is then a multiple of the page), goes as 9 boxes per page, all of a
  // page's boxes issued by one lane: lane 0 of warp q issues page q's (kKvTile / box pages).
  // Its token 4 q + 16 p lies in page q for p = q box / 16, so page[p] is that page's id. The
  // other threads only arrive. Partial tiles (a request's last) keep cp.async, which
  // zero-fills past the end. Everything that depends only on the page size is worked out here,
  // and a tile's page, offset and cp.async sources before its wait for a free stage: after that
  // wait a load is on the critical path. With four integer divisions after it (~100 SASS
  // instructions before the first TMA issue, ~140 before the first cp.async) the kernel ran
  // 0.93-0.96x session 8's at H=128 (H100 2026-11-25, logs/sm90_s10_h100_2026-11-25); now
  // ~22 / ~25 instructions follow the wait.
  const int box = maps.enabled ? tma_box_tokens(args.page_size) : 0;
  const int box_pages = box > 0 ? kKvTile / box : 0;  // pages (and issuing lanes) per tile
  const bool tma_issuer = tid % 32 == 0 && tid / 32 < box_pages;
  const int issuer_pass = box > 0 ? (tid / 32) * box / (kProducerThreads / 8) : 0;
  const uint32_t issuer_bytes = box_pages > 0 ? (kE4m3 ? kRawBytes : kKvStageBytes) / box_pages : 0;
  const int issuer_tok = (tid / 32) * box;  // the issuing lane's first token in a tile
  const uint32_t issuer_dst = issuer_tok * kRowBytes;
  int seq = 0;  // KV tiles issued by this CTA so far (the ring position)
  int pending = -1;  // e4m3: the tile issued last, not widened yet
  // The narrow instance keeps a flag instead (a pending tile is always the one issued last,
  // seq - 1: every tile widens the pending one before it is issued): with `pending` and the
  // paced test's per-CTA terms held across the loops, its producer's 72 registers spilled 16
  // bytes (the CtaStart word, w_end and those terms, reloaded per item; session 53, nvcc 13.0).
  // Every instance folds those terms into one flag (lone_busy below; session 57: the other
  // instances' producers only renamed registers, same instruction count).
  bool has_pending = false;  // (kNarrow)
  static_assert(!kNarrow || kE4m3, "the narrow instance widens KvE4m3 tiles (dequant_tile)");
  auto widen_pending = [&]() {
    // (the tall instance's consumers widen their fragments of the e4m3 bytes themselves, in
    // registers: tall.cuh)
    if constexpr (kWiden && kRows != kTallRows) {
      // (the narrow instance's pending tile is always the one issued last: see has_pending)
      const int t = kNarrow ? seq - 1 : pending;
      if (kNarrow ? has_pending : t >= 0) {
        const int st = t % kStages;
        const uint32_t dst = kv_smem + st * kKvStageBytes;
        if constexpr (kDsMla)
          dequant_tile_ds(dst, &raw[st], (t / kStages) & 1, &full[st], tid, t);
        else
          dequant_tile(dst, &raw[st], (t / kStages) & 1, &full[st], tid, t);
        pending = -1;
        has_pending = false;
      }
    }
  };
  const FastDiv pages(args.page_size);  // token -> page, offset in the page
  constexpr bool kThreadAcquire = kNarrow || kRows == kTallRows;  // (wait_stage)
  // Everything above reads the plan only (uploaded before the previous kernel ran); the page
  // table, the cache and the gather mode's indices may come from the previous kernel.
  grid_dependency_wait();
  bool paced = false;  // this CTA's tiles go through the paced maps
  // the CTA's only item, on a busy grid (short_item's per-CTA terms as one flag: see has_pending)
  const bool lone_busy =
      w_end == w_begin + 1 && num_items * 100 >= int(gridDim.x) * kPacedMinItemsPct;
  for (int w = w_begin; w < w_end; ++w) {
    const WorkItem item = start.template at<kRows>(plan, w, args.num_heads, kvm);
    if (w == w_begin) MLAW_SPAN(6, global_timer_after(item.num_tiles + item.page_start));
    // Page ids of the tokens this thread copies in tile `it` (-1: past the item), loaded one
    // tile ahead so that their latency hides behind the wait for a free stage; checked (kvm's
    // validity test, the gather mode's slot range) only as the tile starts: a test right after
    // the loads waited for them before the arrival on `full` (H100, 2026-11-25: the gather
    // mode's tiles reached the consumers ~1000 clocks late; logs/sm90_s13_h100_2026-11-25).
    int page[kLoadPasses];
    auto load_pages = [&](int it) {
#pragma unroll
      for (int p = 0; p < kLoadPasses; ++p) {
        const int t = item.kv_start + it * kKvTile + tid / 8 + (kProducerThreads / 8) * p;
        page[p] = kvm.fetch(args, item.page_start, t, item.kv_end, pages);
      }
    };
    if (item.num_tiles > 0) load_pages(0);  // (before the item's other work: see CtaStart)
    // a short item on a busy grid (the CTA's only one): paced where paced maps exist
    const bool short_item =
        lone_busy && item.num_tiles >= kPacedMinTiles && item.num_tiles <= kPacedMaxTiles;
    paced = maps.paced_rows > 0 && short_item;
    // (narrow_tiles reads this item's e4m3 bytes as they land, on `raw`: no widening)
    const bool narrow = kNarrow && narrow_item<kNarrow>(item);
    // whether this item's e4m3 tiles go to L2 before their stage wait (kE4m3PrefetchL2,
    // kE4m3PrefetchLines): not a narrow item's of more than kNarrowPrefetchMaxTiles tiles
    const bool prefetch_item = !narrow || item.num_tiles <= kNarrowPrefetchMaxTiles;
    const int rows = item.qo_len * args.num_heads;  // (the request's)
    const bool multi_tile = kKvFirstMultiTile && rows > kRows && rows % kRows == 0;
    policy = normal_heads && !multi_tile && !paced && !(kKvFirstShort && short_item)
                 ? normal_policy
                 : first_policy;
    // Waits until the ring stage of tile `seq` is free (its previous tile consumed).
    auto wait_stage = [&]() {
      MLAW_TRACE(seq, 14);
      if (seq >= kStages) {
        // (the narrow and tall instances: each thread acquires the consumers' ld.shared reads
        // itself, narrow_tiles and tall_item)
        if (kThreadAcquire || tid < 32)
          mbar_wait(&empty[seq % kStages], ((seq / kStages) - 1) & 1);
        if constexpr (!kThreadAcquire) named_barrier(kBarStageFree, kProducerThreads);
      }
      MLAW_TRACE(seq, 15);
      if (seq == 0) MLAW_SPAN(1, global_timer());
    };
    // Two loops: the item's leading TMA tiles, then the rest (a request's last partial tile, or
    // every tile of pages without maps) by cp.async, so that the TMA path runs straight from
    // the page ids to the issue. With one loop the cp.async blocks sat between them, and after
    // an L2 flush each jump over code not fetched yet waited for DRAM (session 36).
    int it = 0;
    if constexpr (!kDsMla)  // (FlashMLA's rows: the gather mode, cp.async only)
    for (; it < item.num_tiles; ++it, ++seq) {
      const int t0 = item.kv_start + it * kKvTile;
      const int tile_off = pages.mod(t0, args.page_size);  // (0 when a tile is whole pages)
      const bool tma = box > 0 && t0 + kKvTile <= item.kv_end &&
                       (box < kKvTile || tile_off + kKvTile <= args.page_size);
      if (!tma) break;
#pragma unroll
      for (int p = 0; p < kLoadPasses; ++p) page[p] = kvm.checked(page[p]);
      const int stage = seq % kStages;
      const int pg = page_of_pass(page, issuer_pass);
      if (kE4m3 && kE4m3PrefetchL2 && tma_issuer && prefetch_item) {
        // (e4m3: this tile's boxes into L2 now, so that they come from L2, not DRAM, once the
        // previous tile is widened and this one's stage is free)
        if (maps.wide) {
          tma_prefetch_4d(&maps.ckv_wide, 0, tile_off, 0, pg);
        } else {
#pragma unroll
          for (int b = 0; b < kRawLatentBoxes; ++b)
            tma_prefetch_3d(&maps.ckv, b * kRawBoxCols, tile_off, pg);
        }
        tma_prefetch_3d(&maps.kpe, 0, tile_off, pg);
      }
      widen_pending();
      wait_stage();
      const uint32_t dst_stage = kv_smem + stage * kKvStageBytes + kLoadOffset;
      if (tma_issuer) {
        mbar_arrive_expect_tx(&landed[stage], issuer_bytes);
        // A paced CTA's boxes hold maps.paced_rows tokens, all 9 column blocks of a group
        // before the next group (see launcher.cuh kv_paced_rows).
        // (a paced item has it < kPacedMaxTiles <= 32 tiles: one bit each)
        const bool paced_tile = paced && (maps.paced_tile_mask >> it & 1u);
        const CUtensorMap* ckv_map = paced_tile ? &maps.ckv_paced : &maps.ckv;
        const CUtensorMap* kpe_map = paced_tile ? &maps.kpe_paced : &maps.kpe;
        const int rows = paced_tile ? maps.paced_rows : box;
        if (maps.wide && !paced_tile) {  // the latent's 8 (e4m3: 4) blocks in one box, then rope
          tma_load_4d(dst_stage, &maps.ckv_wide, &landed[stage], 0, tile_off, 0, pg, policy);
          tma_load_3d(dst_stage + (kE4m3 ? kRawRopeOffset : (kColBlocks - 1) * kKvBlockBytes),
                      kpe_map, &landed[stage], 0, tile_off, pg, policy);
        } else if constexpr (kE4m3) {
          for (int r0 = 0; r0 < box; r0 += rows) {
            const int tok = issuer_tok + r0;
#pragma unroll
            for (int b = 0; b < kRawLatentBoxes; ++b)
              tma_load_3d(dst_stage + b * kRawBlockBytes + tok * kRawRowBytes, ckv_map,
                          &landed[stage], b * kRawBoxCols, tile_off + r0, pg, policy);
            tma_load_3d(dst_stage + kRawRopeOffset + tok * kRawRopeRowBytes, kpe_map,
                        &landed[stage], 0, tile_off + r0, pg, policy);
          }
        } else {
          for (int r0 = 0; r0 < box; r0 += rows) {
            const uint32_t dst = dst_stage + issuer_dst + r0 * kRowBytes;
#pragma unroll
            for (int b = 0; b < kColBlocks - 1; ++b)
              tma_load_3d(dst + b * kKvBlockBytes, ckv_map, &landed[stage], b * kBlockCols,
                          tile_off + r0, pg, policy);
            tma_load_3d(dst + (kColBlocks - 1) * kKvBlockBytes, kpe_map, &landed[stage], 0,
                        tile_off + r0, pg, policy);
          }
        }
      } else {
        mbar_arrive(&landed[stage]);
      }
      if constexpr (kNarrow) has_pending = !narrow;
      else if (kE4m3) pending = seq;
#if MLAW_SM90_TRACE >= 2  // the producer waits for each tile it issued, so the consumers wait
                          // for loads: "issue -> scorer has tile" then bounds a load's latency
                          // (the producer's own wake-up, event 12, comes later still)
      if (!kE4m3 && tid == 0) {
        mbar_wait(&full[stage], (seq / kStages) & 1);
        MLAW_TRACE(seq, 12);
      }
#endif
      if (it + 1 < item.num_tiles) load_pages(it + 1);
    }
    for (; it < item.num_tiles; ++it, ++seq) {
#pragma unroll
      for (int p = 0; p < kLoadPasses; ++p) page[p] = kvm.checked(page[p]);
      const int stage = seq % kStages;
      const int t0 = item.kv_start + it * kKvTile;
      // This thread's source rows, before the wait (their offsets take an integer division
      // each). An e4m3 token's 576 bytes are 36 16-byte pieces: this thread copies bytes
      // 16 chunk .. of each 128-column latent box and, for chunk < 4, of the rope.
      const T* ckv_row[kLoadPasses];
      const T* kpe_row[kLoadPasses];
      const int elem_off = kWiden ? chunk * 16 : chunk * 8;
#pragma unroll
      for (int p = 0; p < kLoadPasses; ++p) {
        const int j = tid / 8 + (kProducerThreads / 8) * p;  // token of the tile
        const bool valid = page[p] >= 0;
        const int64_t pgp = valid ? page[p] : 0;
        const int64_t off = valid ? pages.mod(t0 + j, args.page_size) : 0;
        const int64_t ckv_e = pgp * args.ckv_stride_page + off * args.ckv_stride_token + elem_off;
        const int64_t kpe_e = pgp * args.kpe_stride_page + off * args.kpe_stride_token +
                              elem_off;
        // (an e4m3 element is one byte: its offsets index bytes)
        ckv_row[p] = kWiden ? reinterpret_cast<const T*>(static_cast<const char*>(args.ckv) + ckv_e)
                            : ckv + ckv_e;
        kpe_row[p] = kWiden ? reinterpret_cast<const T*>(static_cast<const char*>(args.kpe) + kpe_e)
                            : kpe + kpe_e;
      }
      if constexpr (kE4m3 && kE4m3PrefetchLines && std::is_same<Kv, PagedKv>::value) {
        // (e4m3: this tile's lines into L2 before the previous tile's widening, as the TMA
        // path's box prefetch above: its copies go out only after that widening)
#pragma unroll
        for (int p = 0; p < kLoadPasses; ++p) {
          if (page[p] < 0 || !prefetch_item) continue;
          const char* src = reinterpret_cast<const char*>(ckv_row[p]);
#pragma unroll
          for (int b = 0; b < kRawLatentBoxes; ++b) prefetch_line_l2(src + b * kRawBoxCols);
          if (chunk < 4) prefetch_line_l2(kpe_row[p]);
        }
      }
      widen_pending();
      wait_stage();
      const uint32_t dst_stage = kv_smem + stage * kKvStageBytes + kLoadOffset;
#pragma unroll
      for (int p = 0; p < kLoadPasses; ++p) {
        const int j = tid / 8 + (kProducerThreads / 8) * p;  // token of the tile
        if constexpr (kDsMla) {
          // (a row's 41 16-byte pieces: this thread's of each latent box, of the rope (into
          // its swizzled place in block 8) and, for chunk 0, the 4 scales)
          const char* src = reinterpret_cast<const char*>(ckv_row[p]);  // (+ 16 chunk)
          const uint32_t base = kv_smem + stage * kKvStageBytes;
          const uint32_t dst = base + kDsRawOffset + j * kRawRowBytes +
                               ((chunk ^ ((j % 2) << 2)) << 4);  // (halves swapped: odd j)
          const bool valid = page[p] >= 0;
#pragma unroll
          for (int b = 0; b < kRawLatentBoxes; ++b)
            cp_async_16(dst + b * kRawBlockBytes, src + b * kRawBoxCols, valid, policy);
          cp_async_16(base + (kColBlocks - 1) * kKvBlockBytes + j * kRowBytes +
                          ((chunk ^ (j % 8)) << 4),
                      src + kDsRopeByte, valid, policy);
          // (without the L2 policy: nvcc 13.0's ptxas gave this predicated copy's policy an
          // unset descriptor register, desc[UR1], and the copy trapped: illegal instruction,
          // H200, logs/sm90_s46_2026-11-28 run 1)
          if (chunk == 0) cp_async_16(base + kDsScaleOffset + j * 16, src + kDsScaleByte, valid);
        } else if constexpr (kE4m3) {
          // (token j's chunk `chunk` of each latent box at chunk ^ (j % 8): j = tid / 8 + 16 p,
          // so j 128 + chunk 16 is tid 16 + 2048 p)
          const char* src = reinterpret_cast<const char*>(ckv_row[p]);
          const uint32_t dst = dst_stage + (kProducerThreads / 8) * p * kRawRowBytes +
                               ((tid * 16) ^ ((tid / 8 % 8) << 4));
#pragma unroll
          for (int b = 0; b < kRawLatentBoxes; ++b)
            cp_async_16(dst + b * kRawBlockBytes, src + b * kRawBoxCols, page[p] >= 0, policy);
          if (chunk < 4)
            cp_async_16(dst_stage + kRawRopeOffset + j * kRawRopeRowBytes + chunk * 16,
                        kpe_row[p], page[p] >= 0, policy);
        } else {
          const uint32_t dst = dst_stage + j * kRowBytes + ((chunk ^ (j % 8)) << 4);
#pragma unroll
          for (int b = 0; b < kColBlocks; ++b) {
            const T* src = b < kColBlocks - 1 ? ckv_row[p] + b * kBlockCols : kpe_row[p];
            cp_async_16(dst + b * kKvBlockBytes, src, page[p] >= 0, policy);
          }
        }
      }
      if (it + 1 < item.num_tiles) load_pages(it + 1);
      // Arrives on `full` (e4m3: `raw`) once this thread's copies of the tile have landed
      // (asynchronously: the producer goes on to the next tile, so both stages can be in
      // flight).
      cp_async_mbar_arrive(&landed[stage]);
      if constexpr (kNarrow) has_pending = !narrow;
      else if (kWiden) pending = seq;
    }
  }
  widen_pending();
  cp_async_wait<0>();
}

}  // namespace sm90
}  // namespace mlaw
