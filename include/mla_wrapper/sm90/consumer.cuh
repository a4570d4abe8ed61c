// The sm90 kernel's two consumer warpgroups (mla_kernel.cuh's schedule): per work item, Q, the
// tile loop (score GEMM, softmax, P V; narrow.cuh for the narrow instance's items) and the
// epilogue.
#pragma once

#include <math.h>
#include <type_traits>
#include "mla_wrapper/common/kv_access.cuh"
#include "mla_wrapper/common/pdl.cuh"
#include "mla_wrapper/common/plan.h"
#include "mla_wrapper/common/q_rows.cuh"
#include "mla_wrapper/sm90/config.h"
#include "mla_wrapper/sm90/consumer_steps.cuh"
#include "mla_wrapper/sm90/dev.cuh"
#include "mla_wrapper/sm90/narrow.cuh"
#include "mla_wrapper/sm90/tall.cuh"
#include "mla_wrapper/sm90/traits.cuh"
#include "mla_wrapper/sm90/work.cuh"

namespace mlaw {
namespace sm90 {

// The tile loop is compiled once per role (kRole: 1 this warpgroup computes the scores, 0 it
// does not, 2 decided at run time with two scorers; each role's wgmma pipeline scheduled on its
// own: 1.06-1.08x at H=128 on an H200, logs/sm90_pipe_h200_2026-11-23), the rest of consume()
// once. Whole-function role instances (sessions 7-15) made the kernel 14600 SASS instructions
// (10400 now): a launch after other work had evicted it from L2 fetched that code from DRAM,
// and B=1 ran 1.16-1.25x slower after an L2 flush by reads (H100, 2026-11-26, run 20; equal
// from a hot L2 and 1.0-1.035x faster at H=128).
// kQTma: Q by TMA (load_q_tma; the launcher picks the kernel instance with it where make_q_maps
// made maps), else cp.async (load_q). Separate instances: with both paths in one body the code
// between an item's start and its first score GEMM grew, and every launch that starts with a
// cold L2 (instructions fetched from DRAM) ran 1-3 us longer at B=1, on either path
// (H100, 2026-11-26, logs/sm90_s16_h100_2026-11-26 runs 2-4).
// kE4m3: an e4m3 cache (launcher.cuh run): the GEMMs in f16 (TG) on the Q tile q_to_f16
// converts, the output rows times args.ckv_scale.
// kDsRows: FlashMLA's rows (KvDsMla; kE4m3 too): the gather mode's L2 prefetch takes their
// 128-byte rope.
// kTall: the tall instance (tall.cuh): a plan of kTallRows-row items, each run by tall_item.
// kNarrow: the narrow instances (work.cuh kNarrowMixed / kNarrowPlans; narrow.cuh).
template <typename T, bool kQTma, bool kEarlyQ, bool kE4m3, bool kDsRows, int kNarrow,
          bool kTall, typename Kv>
__device__ __forceinline__ void consume(const MlaPlan& plan, const MlaRunArgs& args, const Kv& kvm,
                                        const QTensorMaps& qm, const CtaStart<Kv>& start,
                                        char* smem,
                                        uint64_t* full, uint64_t* empty) {
  using TG = std::conditional_t<kE4m3, __half, T>;  // the GEMMs' operand element
  constexpr int kRows = kPlanRows<kNarrow, kTall>;  // the plan's rows per tile (work.cuh)
  const int ctid = threadIdx.x - 128;  // 0..255
  const int w_begin = start.w_begin(), w_end = start.w_end();
  // (a shuffle from lane 0 tells the compiler g is warp-uniform: what derives from it, like the
  // wgmma descriptors, can stay in uniform registers)
  const int g = __shfl_sync(0xffffffffu, ctid / 128, 0);  // consumer warpgroup
  const int warp = (ctid % 128) / 32;  // warp of the warpgroup: rows 16 warp .. 16 warp + 15
  const int lane = ctid % 32;
  const int rows[2] = {16 * warp + lane / 4, 16 * warp + lane / 4 + 8};
  const uint32_t q_smem = smem_addr(smem + kSmemQ);
  const uint32_t kv_smem = smem_addr(smem + kSmemKv);
  const uint32_t p_smem = smem_addr(smem + kSmemP);
  char* p_ptr = smem + kSmemP;
  float* red_max = reinterpret_cast<float*>(smem + kSmemRedMax);
  float* red_sum = reinterpret_cast<float*>(smem + kSmemRedSum);
  const float scale_log2 = args.sm_scale * 1.4426950408889634f;
  const int num_heads = args.num_heads;
  const FastDiv heads(num_heads);  // row -> (query token, head) without an integer division
  int seq = 0;
  uint64_t* q_bar = full + 2 * kStages + 2;  // Q by TMA landed
  uint32_t q_phase = 0;

  // A cluster pair's half (its CTA's only item) needs clusters of two (launcher.cuh): checked
  // here, in the consumer, reading the plan only without clusters.
  if (kPairs<Kv> && ctid == 0 && cluster_size() % 2 != 0 && w_end == w_begin + 1 &&
      plan.work_info[w_begin * kWorkFields + kWorkPartialSlot] <= kSlotPairLow)
    __trap();
  grid_dependency_wait();  // (as in produce: q, out, lse and the partials come after it)
  bool q_issued = false;  // this item's Q went in during the previous item (q_next)
  for (int w = w_begin; w < w_end; ++w) {
    const WorkItem item = start.template at<kRows>(plan, w, num_heads, kvm);
    [[maybe_unused]] const int seq0 = seq;  // trace: the item's events go with its first tile
    if (kQTma) fence_proxy_async();  // the epilogue's staging stores come before the TMA's Q writes
    named_barrier(kBarQ, kConsumerThreads);  // the previous item is done with Q and red_sum
    // The next item's Q goes in during this item's last tile (kEarlyQ): issued by
    // warpgroup 1's first warp once every score GEMM of that tile is done with the Q tile.
    const bool q_next = kQTma && kEarlyQ && w + 1 < w_end && item.num_tiles > 0;
    int nx_row0 = 0, nx_qo_start = 0, nx_valid_rows = 0;  // (read by that warp only)
    if (q_next && g == 1 && warp == 0) {
      const WorkItem nx = start.at(plan, w + 1, num_heads, kvm);
      nx_row0 = nx.row0, nx_qo_start = nx.qo_start, nx_valid_rows = nx.valid_rows;
    }
    if (item.num_tiles > 0 || q_issued) {
      MLAW_TRACE(seq0, 16 + g);
      if constexpr (kQTma) {
        if (ctid < 32 && !q_issued)
          load_q_tma(qm, item.row0, item.qo_start, item.valid_rows, num_heads, heads, q_smem,
                     q_bar, lane);
        mbar_wait(q_bar, q_phase);
        q_phase ^= 1;
      } else {
        load_q<T>(args, item, q_smem, ctid);
        named_barrier(kBarQ, kConsumerThreads);
      }
      MLAW_TRACE(seq0, 18);
      if (g == 0 && w == w_begin) MLAW_SPAN(7, global_timer());
    }
    // the score scale of this thread's rows (an e4m3 cache: over their power of two, q_to_f16)
    float sl[2] = {scale_log2, scale_log2};
    // (kNarrow: this item's tiles on mma.sync over its rows 0-15, narrow_tiles)
    const bool narrow = kNarrow && narrow_item<kNarrow>(item);
    if (kE4m3 && item.num_tiles > 0) {
      if (!MLAW_SM90_PROBE_NO_QF16)
        q_to_f16<T, kNarrow != 0, kTall>(smem + kSmemQ, red_sum, rows, item.valid_rows,
                                         args.kpe_scale, scale_log2, g, lane, sl, narrow);
      if (g == 0) MLAW_TRACE(seq0, 29);
    }
    q_issued = q_next;
    int limit[2];  // exclusive kv limit of this thread's two rows in this item
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = narrow ? lane / 4 + 8 * r : rows[r];  // (narrow_tiles: rows 0-15)
      if (row < item.valid_rows) {
        const int i = heads.div(item.row0 + row);
        const int lim = args.causal ? item.kv_len - item.qo_len + i + 1 : item.kv_len;
        limit[r] = min(lim, item.kv_end);
      } else {
        limit[r] = 0;
      }
    }
    float m_run[2] = {-INFINITY, -INFINITY};
    [[maybe_unused]] float m_max[2] = {-INFINITY, -INFINITY};  // gather mode: exact row max
    float l_run[2] = {0.f, 0.f};
    // O: the item's first P V overwrites it (issue_pv's first), so only an item without tiles
    // zeroes it. At B=1 the ~130 zeroing instructions ran from a cold instruction cache before
    // the first tile's wait (an e4m3 cache: after the Q conversion, the wait ~400 clocks
    // later); H200 A/B (logs/sm90_s44_2026-11-28 run 6): 16-bit B=1 1.01-1.04x faster (CUDA
    // graphs 1.01-1.02x at L=1024), H=128 B=64 L=4096 1.02x, the other grid rows equal.
    float o[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) {
      if (item.num_tiles == 0)
        o[i] = 0.f;
      else
        asm volatile("" : "=f"(o[i]));  // (defined here: not the previous item's, still live)
    }
    constexpr int kNb = kScoreTokens / 8;  // n8 blocks of this thread's scores
    const bool scorer = g < kScorers;
    // Gather mode: the scorer's slot ids (lane l: tokens l and l + 32) of the tiles it (cur),
    // it + 1 (nx1) and it + 2 (nx2), each looked up three tiles before its own and checked
    // (kvm.checked) only where used: a check right after the load put the load's latency
    // before the score GEMM's wait (H100, 2026-11-25: ~1200 clocks a tile;
    // logs/sm90_s13_h100_2026-11-25).
    int cur_lo = 0, cur_hi = 0, nx1_lo = 0, nx1_hi = 0, nx2_lo = 0, nx2_hi = 0;
    auto lookup_slots = [&](int it, int& lo, int& hi) {
      const int t = item.kv_start + it * kKvTile + g * kScoreTokens + lane;
      lo = kvm.fetch(args, item.page_start, t, item.kv_end);
      if (kScoreTokens > 32) hi = kvm.fetch(args, item.page_start, t + 32, item.kv_end);
    };
    if constexpr (Kv::kMaskInvalid) {
      if (scorer && item.num_tiles > 0) lookup_slots(0, cur_lo, cur_hi);
      if (scorer && item.num_tiles > 1) lookup_slots(1, nx1_lo, nx1_hi);
      if (scorer && item.num_tiles > 2) lookup_slots(2, nx2_lo, nx2_hi);
    }
    // The tile loop, one copy per role (kRole: 1 this warpgroup computes the scores, 0 it does
    // not, 2 decided at run time with two scorers), each scheduled by ptxas on its own; the
    // item's prologue and epilogue are shared (see the comment above consume).
    auto tiles = [&](auto role_const) {
      constexpr int kRole = decltype(role_const)::value;
      const bool scorer = kRole == 2 ? g < kScorers : kRole == 1;
      float s[kScoreTokens / 2];
      for (int it = 0; it < item.num_tiles; ++it, ++seq) {
        const int stage = __shfl_sync(0xffffffffu, seq % kStages, 0);  // (warp-uniform: see g)
        MLAW_TRACE(seq, 0 + 7 * g);
        mbar_wait(&full[stage], (seq / kStages) & 1);
        MLAW_TRACE(seq, 1 + 7 * g);
        if (kRole == 1 && seq == 0) MLAW_SPAN(2, global_timer());
        fence_proxy_async();  // the producer's cp.async writes, acquired above, feed wgmma
#if MLAW_SM90_PROBE_NO_MATH  // probe (wrong results): the ring released as each tile lands
        if (lane == 0) mbar_arrive(&empty[stage], kNarrow ? 32 : 1);
        continue;
#endif
        const int tok0 = item.kv_start + it * kKvTile + g * kScoreTokens + 2 * (lane % 4);
        float mx[2] = {-INFINITY, -INFINITY};
        if (scorer) {
          fence_operands(s);
          if (!MLAW_SM90_PROBE_NO_S) {
            issue_scores<TG>(s, q_smem, kv_smem + stage * kKvStageBytes, g);
          } else {
#pragma unroll
            for (int i = 0; i < kScoreTokens / 2; ++i) s[i] = 0.f;
          }
          // Gather mode: lane l's slot ids of this scorer's tokens l and l + 32 were looked up
          // three tiles ahead (the L2 prefetch below needs tile it + 2's, and a read of the index
          // list can come from DRAM); a ballot then gives the whole warp the tile's 64-bit
          // validity mask (two registers a thread, not one per token it holds).
          const int slot_lo = kvm.checked(cur_lo), slot_hi = kvm.checked(cur_hi);
          if constexpr (Kv::kMaskInvalid) {  // shift: cur = it + 1, nx1 = it + 2, nx2 = it + 3
            cur_lo = nx1_lo, cur_hi = nx1_hi, nx1_lo = nx2_lo, nx1_hi = nx2_hi;
            if (it + 3 < item.num_tiles) lookup_slots(it + 3, nx2_lo, nx2_hi);
          }
          wgmma_wait<0>();
          MLAW_TRACE(seq, 2 + 7 * g);
          fence_operands(s);
          if constexpr (Kv::kMaskInvalid) {
            // Tile it + 2's rows go to L2 now, a tile period before the producer copies them
            // into this tile's stage (once it is released): those copies then wait for L2, not
            // DRAM. Random rows from DRAM held the gather to ~18 bytes a clock per SM, the
            // consumers waiting ~1000 clocks a tile for their tile (H100 trace, H=128 B=128; the
            // prefetch: 1.06x there, 1.2x at H=64 B=128 and H=64 prefill, 0.93-0.97x at B=1;
            // logs/sm90_s12_h100_2026-11-25). 128-byte line prefetches, warp w: lines 0-3 (w
            // even) or 4-7 and the kpe line (w odd) of token 32 (w / 2) + lane. Not kept:
            // cp.async.bulk.prefetch.L2 of whole rows (two per lane) held the scorer ~2000 clocks
            // a tile; the same line prefetches issued by warpgroup 1 as the tile starts (the
            // concurrent score GEMM grew 1408 -> 2110 clocks) or by the producer before its wait
            // for a free stage: 0.95-1.0x this placement (H100, logs/sm90_s13_h100_2026-11-25).
            // A slot is a page of one token: its rows start at slot x the page stride.
            // Where the cache is 16-bit and the GPU an H200 the wrapper turns it off
            // (MlaSparseArgs.l2_prefetch_rows, sparse.py gather_l2_prefetch): there the copies
            // keep up from DRAM, and the prefetch held the scorer ~400 clocks a tile between its
            // score GEMM and the max barrier (H200 traces, tile 3900 clocks against 3560 without
            // it; sparse decode H=128 1.02-1.05x, prefill H=128 1.10x without it, H=64
            // 1.0-1.03x, B=1 equal; logs/sm90_s47_2026-11-28 run 7). An fp8 cache's producer
            // waits for its copies before it widens them: there it stays (run 9, fp8_ds_mla
            // 1.01-1.05x faster with it, e4m3 0.99-1.01x).
            const int slot = kvm.checked(warp < 2 ? nx1_lo : nx1_hi);  // tile it + 2's
            if (kvm.a.l2_prefetch_rows && it + 2 < item.num_tiles && slot >= 0 &&
                (kScoreTokens > 32 || warp < 2)) {
              if constexpr (kE4m3) {
                // An fp8 cache's strides count bytes: the latent's 512 bytes (4-5 lines) and
                // the rope's 64 (e4m3) or 128 (FlashMLA's rows: with the scales before them).
                // Session 45-46 builds used the 16-bit rows' offsets here (twice the slot's
                // byte offset): lines of other slots.
                const char* row =
                    static_cast<const char*>(args.ckv) + int64_t(slot) * args.ckv_stride_page;
                const char* kpe_row =
                    static_cast<const char*>(args.kpe) + int64_t(slot) * args.kpe_stride_page;
                if (warp % 2 == 0) {
#pragma unroll
                  for (int b = 0; b < 4; ++b) prefetch_line_l2(row + b * kRawBoxCols);
                } else {
                  prefetch_line_l2(row + kHeadDimCkv - 1);
                  prefetch_line_l2(kpe_row);
                  prefetch_line_l2(kpe_row + (kDsRows ? 2 : 1) * kHeadDimKpe - 1);
                }
              } else {
                const T* ckv_row =
                    static_cast<const T*>(args.ckv) + int64_t(slot) * args.ckv_stride_page;
                if (warp % 2 == 0) {
#pragma unroll
                  for (int b = 0; b < 4; ++b) prefetch_line_l2(ckv_row + b * kBlockCols);
                } else {
#pragma unroll
                  for (int b = 4; b < 8; ++b) prefetch_line_l2(ckv_row + b * kBlockCols);
                  prefetch_line_l2(static_cast<const T*>(args.kpe) +
                                   int64_t(slot) * args.kpe_stride_page);
                }
              }
            }
          }
          // ---- softmax of S_i (this scorer's tokens) ----
          // Raw scores: the max is taken unscaled (sm_scale > 0) and the scale is folded into the
          // exponent below (one FFMA per element); masking only where the tile crosses a limit.
          uint64_t valid = ~0ull;  // bit i: this scorer's token i has a slot (gather mode)
          if constexpr (Kv::kMaskInvalid)
            valid = __ballot_sync(0xffffffffu, slot_lo >= 0) |
                    (uint64_t(__ballot_sync(0xffffffffu, slot_hi >= 0)) << 32);
          // (A tile whose slots are all valid, the gather mode's usual case, skips the loop: it
          // cost the scorer ~500 clocks a tile, H100 trace, logs/sm90_s12_h100_2026-11-25.)
          if (tok0 + kScoreTokens > min(limit[0], limit[1]) ||
              (Kv::kMaskInvalid && valid != ~0ull)) {
#pragma unroll
            for (int j = 0; j < kNb; ++j)
#pragma unroll
              for (int e = 0; e < 4; ++e) {
                const int r = e / 2;
                if (tok0 + 8 * j + (e % 2) >= limit[r]) s[4 * j + e] = -INFINITY;
                if (Kv::kMaskInvalid && !((valid >> (8 * j + 2 * (lane % 4) + e % 2)) & 1))
                  s[4 * j + e] = -INFINITY;
              }
          }
          // Each row's max over this thread's 2 kNb scores as a tree (4 dependent FMNMX, not 16).
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            float v[kNb];
#pragma unroll
            for (int j = 0; j < kNb; ++j) v[j] = fmaxf(s[4 * j + 2 * r], s[4 * j + 2 * r + 1]);
#pragma unroll
            for (int w = kNb / 2; w >= 1; w /= 2)
#pragma unroll
              for (int j = 0; j < w; ++j) v[j] = fmaxf(v[j], v[j + w]);
            mx[r] = v[0] * sl[r];
          }
          // With one scorer and no exact max to report, a warp whose scores all stay within
          // kRescaleSlack of their rows' running max (after an item's first tiles, nearly every
          // tile) keeps m as it is (below) without the rows' exact maxima: one vote instead of
          // two dependent shuffle rounds.
          constexpr bool kVoteMax = MLAW_SM90_VOTE_MAX && kScorers == 1 && !Kv::kMaskInvalid;
          if (!kVoteMax || !__all_sync(0xffffffffu, mx[0] <= m_run[0] + kRescaleSlack &&
                                                        mx[1] <= m_run[1] + kRescaleSlack)) {
#pragma unroll
            for (int r = 0; r < 2; ++r) {
              mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
              mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
              if (kScorers > 1 && lane % 4 == 0) red_max[g * kRowsPerTile + rows[r]] = mx[r];
            }
          }
        }
        // Both scorers' row maxima are in red_max; both warpgroups' P V reads of the last P (and,
        // with one scorer, of its rescale factors) are done.
        named_barrier(kBarMax, kConsumerThreads);
        MLAW_TRACE(seq, 3 + 7 * g);
        const bool last = it == item.num_tiles - 1;
        if (q_next && last && g == 1 && warp == 0)  // the score GEMMs are done with Q
          load_q_tma(qm, nx_row0, nx_qo_start, nx_valid_rows, num_heads, heads, q_smem, q_bar,
                     lane);
        // ... after its boxes came into L2 a few tiles before (kPrefetchQTiles; the tile test
        // leaves out the last tile)
        if (kPrefetchQTiles > 0 && q_next && g == 1 && warp == 0 &&
            item.num_tiles >= kPrefetchQMinTiles && it == item.num_tiles - 1 - kPrefetchQTiles)
          load_q_tma<true>(qm, nx_row0, nx_qo_start, nx_valid_rows, num_heads, heads, 0, nullptr,
                           lane);
        float alpha[2] = {1.f, 1.f};
        float m_use[2];
        if (scorer) {
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            const float other =
                kScorers > 1 ? red_max[(1 - g) * kRowsPerTile + rows[r]] : -INFINITY;
            const float m_tile = fmaxf(mx[r], other);
            // Lazy rescaling: the running max moves only when a tile's max passes it by more than
            // kRescaleSlack (log2 units), so P stays <= 2^kRescaleSlack and O is rarely
            // rescaled; the result is the same (O / l and m + log2(l) use one max). The gather
            // mode reports the exact row max (max_logits), kept apart.
            if constexpr (Kv::kMaskInvalid) m_max[r] = fmaxf(m_max[r], m_tile);
            m_use[r] = lazy_max(m_tile, m_run[r], l_run[r], alpha[r]);
            if (kScorers == 1 && lane % 4 == 0) red_max[rows[r]] = alpha[r];  // for the other
          }
        }
        // P in kHalves token halves: with split roles the P V of the first 32 tokens runs while the
        // scorer computes the second half's exponentials (H200, 2026-11-23: 1.05x at B=1 L=1024
        // H=128, 1.02x at B=128 L=16384, neutral elsewhere; logs/sm90_split_p_h200_2026-11-23).
        constexpr int kHalves = kRole != 2 ? 2 : 1;
        auto half = [&](auto h_const) {
          constexpr int h = decltype(h_const)::value;
          if (scorer) {
            // P (16-bit) into the swizzled [64 rows][64 tokens] tile: token column
            // kScoreTokens g + 8 j
#pragma unroll
            for (int j = h * kNb / kHalves; j < (h + 1) * kNb / kHalves; ++j) {
              const int col_chunk = (g * kScoreTokens) / 8 + j;
#pragma unroll
              for (int r = 0; r < 2; ++r) {
                const float p0 = fast_exp2(fmaf(s[4 * j + 2 * r], sl[r], -m_use[r]));
                const float p1 = fast_exp2(fmaf(s[4 * j + 2 * r + 1], sl[r], -m_use[r]));
                l_run[r] += p0 + p1;
                *reinterpret_cast<uint32_t*>(p_ptr + rows[r] * kRowBytes +
                                             ((col_chunk ^ (rows[r] % 8)) << 4) + 4 * (lane % 4)) =
                    ElementTraits<TG>::pack(p0, p1);
              }
            }
            fence_proxy_async();
          }
          if (h == 0) MLAW_TRACE(seq, 4 + 7 * g);
          named_barrier(h == 0 ? kBarP : kBarP2, kConsumerThreads);  // this half of P written
          if (h == 0) {
            MLAW_TRACE(seq, 5 + 7 * g);
            if (!scorer) {  // the rescale factors came with the first half
#pragma unroll
              for (int r = 0; r < 2; ++r) alpha[r] = red_max[rows[r]];
            }
            if (__any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) {
#pragma unroll
              for (int i = 0; i < 128; ++i) o[i] *= alpha[(i % 4) / 2];
            }
          }
          fence_operands(o);
          if (!MLAW_SM90_PROBE_NO_PV)
            issue_pv<TG, h * kKvTile / 16 / kHalves, (h + 1) * kKvTile / 16 / kHalves>(
                o, p_smem, kv_smem + stage * kKvStageBytes, g, h == 0 && it == 0);
        };
        half(std::integral_constant<int, 0>{});
        if constexpr (kHalves == 2) half(std::integral_constant<int, 1>{});
        wgmma_wait<0>();
        MLAW_TRACE(seq, 6 + 7 * g);
        if (kRole == 1) MLAW_SPAN(3, global_timer());
        fence_operands(o);
        // one arrival per consumer warp (with q_next, the last tile's after the epilogue)
        if (lane == 0 && !(q_next && last)) {
          if constexpr (kNarrow)  // (its `empty` counts threads: narrow_tiles)
            mbar_arrive(&empty[stage], 32);
          else
            mbar_arrive(&empty[stage]);
        }
      }
    };
    if constexpr (kTall) {
      static_assert(!kEarlyQ && !kNarrow && kScorers == 1 && !Kv::kMaskInvalid,
                    "the tall instance: no early Q, one scorer, the paged cache");
      if (g == 0)
        tall_item<T, TG, kE4m3, true>(plan, args, item, heads, rows, limit, sl, o, smem, full,
                                      empty, seq, g, warp, lane);
      else
        tall_item<T, TG, kE4m3, false>(plan, args, item, heads, rows, limit, sl, o, smem, full,
                                       empty, seq, g, warp, lane);
      continue;  // (tall_item stored the rows)
    }
    if (narrow) {
      narrow_tiles<TG>(item, limit, sl, smem, full, empty, seq, m_run, l_run, o, g, warp, lane);
    } else if constexpr (kScorers == 2) {
      tiles(std::integral_constant<int, 2>{});
    } else if (g == 0) {
      tiles(std::integral_constant<int, 1>{});
    } else {
      tiles(std::integral_constant<int, 0>{});
    }

    // ---- epilogue ----
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = l_run[r];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      if (lane % 4 == 0) red_sum[g * kRowsPerTile + rows[r]] = l;
    }
    named_barrier(kBarMax, kConsumerThreads);  // (also: the score GEMMs are done with Q)
    if (g == 0) MLAW_TRACE(seq0, 20);
    // A cluster pair's half: merged with the partner's on chip; this CTA then writes the
    // columns of warpgroup `keep` (and, the low half, the lse) to out or to the pair's partial
    // slot, and the other warpgroup is done.
    const bool pair = kPairs<Kv> && item.slot <= kSlotPairLow;
    const int keep = pair ? mlaw_pair_high(item.slot) : 0;
    const int out_slot = pair ? mlaw_pair_out_slot(item.slot) : item.slot;  // < 0: out
    float* pair_lse = red_max;  // [64]: the merged lse of a pair's rows (the loop is done with it)
    if (pair)
      pair_merge<T>(o, pair_lse, smem, full + 2 * kStages, full + 2 * kStages + 1, red_sum,
                    m_run, rows, g, keep, item.valid_rows, seq0);
    // Staged in the Q tile, or with q_next (the next item's Q landing there) in the KV stage
    // of this item's last tile.
    const int last_stage = (seq - 1) % kStages;
    char* staged = (q_next ? smem + kSmemKv + last_stage * kKvStageBytes : smem + kSmemQ) +
                   g * kRowsPerTile * kEpiPitch;
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = rows[r];
      const float l = red_sum[row] + red_sum[kRowsPerTile + row];
      inv[r] = pair ? 1.f : l > 0.f ? 1.f / l : 0.f;
      if constexpr (kE4m3) inv[r] *= args.ckv_scale;  // (lse stays: the scores were scaled)
      if (g == 0 && keep == 0 && lane % 4 == 0 && row < item.valid_rows) {
        const int grow = item.row0 + row;
        const int64_t token = item.qo_start + heads.div(grow);
        const int64_t head = heads.mod(grow, num_heads);
        const float lse2 = pair ? pair_lse[row] : l > 0.f ? m_run[r] + log2f(l) : -INFINITY;
        store_row_lse<kRows>(plan, args, out_slot, row, token, head, lse2);
        if constexpr (Kv::kMaskInvalid) {
          if (out_slot < 0) kvm.store_max_logit(token, head, m_max[r]);
        }
      }
    }
    if (g == 0) MLAW_TRACE(seq0, 24);
    // The rows as 16-bit, through stmatrix: lanes 8i .. 8i + 7 address matrix i's rows (i = 0, 1:
    // rows 0-7 / 8-15 of the warp's 16, column block 2jj; i = 2, 3: block 2jj + 1). 16 stmatrix
    // in place of 64 STS.32 and their addresses (straight-line code, cold at B=1); at B=1 the
    // staging takes ~400 clocks, after ~1300 for the row scales and lse above (H100 trace, H=128
    // L=1024, logs/sm90_s15_h100_2026-11-25). (A pair's other warpgroup stages its rows too,
    // and stores none below: skipping the staging for it made ptxas spill the item loop's counter.)
    const uint32_t stage_lane = smem_addr(staged) + lane / 16 * 16 +
                                (16 * warp + (lane / 8 % 2) * 8 + lane % 8) * kEpiPitch;
#pragma unroll
    for (int jj = 0; jj < 16; ++jj) {
      const int j = 2 * jj;
      stmatrix_x4(stage_lane + 32 * jj,
                  ElementTraits<T>::pack(o[4 * j] * inv[0], o[4 * j + 1] * inv[0]),
                  ElementTraits<T>::pack(o[4 * j + 2] * inv[1], o[4 * j + 3] * inv[1]),
                  ElementTraits<T>::pack(o[4 * j + 4] * inv[0], o[4 * j + 5] * inv[0]),
                  ElementTraits<T>::pack(o[4 * j + 6] * inv[1], o[4 * j + 7] * inv[1]));
    }
    if (g == 0) MLAW_TRACE(seq0, 25);
    named_barrier(kBarEpi + g, 128);  // this warpgroup's rows are staged
    if (g == 0) MLAW_TRACE(seq0, 21);
    // Warp w copies rows w, w + 4, ... (the valid rows of a small head count spread over all
    // four warps), 16 bytes per lane; none where the partner writes these columns. (Stores to
    // out with an L2 evict-first hint ran 0.97-1.0x; H100, logs/sm90_s39_2026-11-27 run 5.)
    for (int row = pair && g != keep ? kRowsPerTile : warp; row < item.valid_rows; row += 4) {
      const uint4 x = *reinterpret_cast<const uint4*>(staged + row * kEpiPitch + 16 * lane);
      T* dst;
      if (out_slot < 0) {
        const int grow = item.row0 + row;
        const int64_t token = item.qo_start + heads.div(grow);
        dst = static_cast<T*>(args.out) + token * args.out_stride_token +
              static_cast<int64_t>(heads.mod(grow, num_heads)) * args.out_stride_head;
      } else {
        dst = static_cast<T*>(plan.partial_o) +
              (static_cast<int64_t>(out_slot) * kRows + row) * kHeadDimCkv;
      }
      *reinterpret_cast<uint4*>(dst + g * kOutCols + 8 * lane) = x;
    }
    if (q_next) {  // this warp's staged rows are read: the last tile's stage goes back
      fence_proxy_async();  // (the producer's TMA writes come after these reads)
      __syncwarp();
      if (lane == 0) mbar_arrive(&empty[last_stage]);
    }
    if (g == 0) MLAW_TRACE(seq0, 19);
    if (g == 0) MLAW_SPAN(4, global_timer());
    if (g == 0) MLAW_SPAN(5, seq);
  }
}

}  // namespace sm90
}  // namespace mlaw
