// The Hopper (sm_90a) MLA attention kernel: persistent CTAs walking the plan's work list (the
// plan of common/plan.h, made by the CPU planner for 64-row tiles split at 64 KV tokens).
//
// Schedule of one CTA (384 threads = 3 warpgroups, one CTA per SM, ~226 KB of shared memory):
//   warpgroup 0, producer (setmaxnreg 48): for every KV tile of every work item, in order,
//     waits until the ring stage is free (mbarrier `empty`), then loads the tile into the
//     128-byte-swizzled wgmma layout (L2 evict-first, or evict-normal where few heads make a
//     long stream: kKvNormalMaxHeads):
//     - a whole tile inside one page (page size a multiple of 64): one thread issues 2 TMA
//       boxes, the latent's 8 column blocks in one (64 tokens x 8 x 64 columns, the 4-D map
//       ckv_wide) and the rope block (64 x 64), with expect_tx on `full`; the other threads
//       just arrive (9 boxes of 64 x 64 where the 4-D map cannot be encoded: H200, same
//       tensors, 0.97-0.985x the time of 9 boxes at H=128 B=64 L=4096; H100 0.97-1.0x at
//       H=128, both neutral at H=16; logs/sm90_s25_2026-11-27); 16- and 32-token pages: 9
//       boxes per page, each page's issued by its own warp's lane 0 (tma_box_tokens);
//     - otherwise (pages tma_box_tokens leaves out, a request's last partial tile, the sparse
//       gather mode):
//       16-byte cp.async through the page table (8 threads per token; the next tile's page
//       ids are loaded while it waits), zero-filling tokens past the item's range, arriving
//       on `full` when the copies land (cp.async.mbarrier.arrive.noinc).
//     Either way the producer does not wait for its copies, so both stages can be in flight.
//     Paced loads (launcher.cuh kv_paced_rows): where the grid is busy and a CTA's only item is
//     short (2-16 tiles), its TMA tiles go in 8- (H100) or 16-token (H200) boxes, which pace
//     its requests (1.01-1.06x there); on an H200 only its second tile (paced_tile_mask_for).
//     Only warp 0 polls `empty`; the others wait at a named barrier (kBarStageFree).
//   Both roles read a work item's one record (it carries its request's fields, plan.h), so a
//     B=1 CTA starts its Q and page-id loads after two plan loads (cta_work_indptr, the record)
//     instead of three. The dense kernel also guesses a CTA's first record at index
//     blockIdx.x and loads it with cta_work_indptr, so a one-item CTA starts after one
//     dependent plan load (H100, same tensors: B=1 from a CUDA graph 1.01-1.02x, H=128 L=1024
//     12.0 -> 11.8 us; logs/sm90_s20_h100_2026-11-26 run 1); these are the kernel's first
//     instructions, one word per lane, before either role's code (CtaStart).
//   warpgroups 1 and 2, consumers g = 0, 1 (setmaxnreg 224), per work item:
//     load Q (64 rows x 576, rows = (query token, head)): in the kQTma instance (the
//     launcher's choice where the heads tile by whole tokens and q's strides suit TMA) one
//     consumer warp issues 9 TMA boxes per query token onto an mbarrier (rows past the valid
//     ones keep stale bytes; their scores are masked); otherwise cp.async with zeros past the
//     valid rows. H100, B=1 H=128 L=1024 trace: Q lands ~2000 clocks after the item starts
//     with TMA, ~8000 with cp.async (logs/sm90_s16_h100_2026-11-26); then for KV tile i:
//       wait for the tile (mbarrier `full`, then fence.proxy.async); the scoring warpgroup
//         (g = 0; kScorers = 1, config.h) computes S_i = Q K_i^T for all 64 tokens (36 x wgmma
//         m64n64k16, Q and K from shared memory) while the other waits at a named barrier
//         (kScorers = 2 splits the tokens, m64n32 each: 1-5% slower on an H200, 2026-11-23);
//       softmax of S_i in registers: mask (item end, causal limit per row; only in a tile
//         that crosses a limit), row max of the raw scores scaled to log2 units (a warp vote
//         instead of the rows' shuffles while every score stays within the slack), running max
//         m, alpha = exp2(m_old - m), P = exp2(S * scale - m) (one FFMA + ex2) written as
//         16-bit to the swizzled P tile and alpha to shared memory for the other warpgroup
//         (with two scorers the row maxima are exchanged instead); both rescale their O half
//         by alpha (skipped when no row max of the warp moved). m is rescaled lazily: it
//         moves only when a tile's max passes it by more than kRescaleSlack = 8 (P <= 256),
//         so after an item's first tiles O is almost never rescaled (same result: O / l and
//         m + log2(l) use one max); the gather mode tracks the exact max apart (it reports it);
//       P goes over in two 32-token halves (split roles; one piece with two scorers): named
//         barrier "this half of P written" (fence.proxy.async first), then
//         O[64 rows, 256 columns of g] += P[64 x 32] V[32 x 256] (2 x wgmma m64n256k16 per half,
//         V = the first 512 columns of the same KV stage, read MN-major: no transpose copy), so
//         the first half's P V runs while the scorer computes the second half's exponentials;
//         wait, release the stage (mbarrier `empty`): the producer refills it while tile i+1
//         (already in flight) is computed.
//     Why not compute S_{i+1} during the softmax of tile i: that needs tiles i and i+1
//     resident while i+2 loads, three 72 KB stages next to the 72 KB Q tile (> 227 KB).
//     epilogue: row sums of the scorers added through shared memory; O / l as 16-bit rows
//       staged in the Q tile, then copied with 16-byte stores to out or to the item's partial
//       slot (16-bit: at B=1 a CTA's output is as many bytes as a KV tile, and an SM moves
//       only ~24 bytes per clock in or out: H200 trace, logs/sm90_latency_h200_2026-11-23);
//       lse = m + log2(l) (base 2 for partials).
//     A CTA of several items (large batches of short requests; the compute rows' two): the
//       next item's Q goes in by TMA during this item's last tile, as soon as its score GEMM is
//       done with the Q tile, and this item's rows are staged in its last tile's KV stage
//       instead (released after the copy-out), so the next item starts on a landed Q
//       (kEarlyQ, the instance launcher.cuh early_q_for picks: H200, H=128 B=256-512
//       L=512-1024 1.02-1.05x, compute rows 1.003-1.011x; H100 1.0-1.027x and 1.006-1.036x;
//       logs/sm90_s38_2026-11-27 runs 8, 10; the copy-out as bulk copies gained nothing
//       more, run 9). Where the current item has >= 32 tiles, the next item's Q boxes are
//       prefetched into L2 three tiles before its last (kPrefetchQTiles), so that load reads L2:
//       H100, H=128 B=128 L=4096 (two 64-tile items a CTA) 1.015-1.03x faster in five A/Bs;
//       on short items (8-16 tiles) the prefetch ran 1.02-1.08x slower, whatever its lead
//       (logs/sm90_s39_2026-11-27 runs 2-4, 7).
//   A cluster pair's half (plan.h mlaw_pair_slot; the paged kernel runs in clusters of two):
//     the two CTAs merge their states on chip before that epilogue (consumer_steps.cuh
//     pair_merge), and each writes 256 of the 512 columns (to out or to the pair's partial
//     slot).
//   As it starts, every CTA runs griddepcontrol.launch_dependents, so the split-KV combine
//   kernel (sm80/combine_kernel.cuh, launched with programmatic dependent launch) is resident
//   and waiting when attention ends, and prefetches a line of the combine's plan into L2
//   (prefetch_combine_plan). Launched itself with programmatic dependent launch (launcher.cuh
//   MLAW_SM90_PDL), it starts while the stream's previous kernel finishes: both roles read only
//   the plan (uploaded before that kernel ran) until grid_dependency_wait(), then the page
//   table, Q, the cache and every store.
// The two consumer roles run separate copies of the tile loop (consume's `tiles`, kRole), so
// ptxas schedules each role's wgmma pipeline on its own (1.055x at H=128 over one run-time-
// branching loop); an item's prologue and epilogue are one copy for both (see consume).
// What bounds it (sm90_history.md and the logs name each run; H200, H=128 B=64 L=4096):
// - Clock by clock, its chain: a tile takes ~3420-3480 clocks (score GEMM ~1360-1450, 36
//   m64n64k16 at ~38 clocks each, the tensor pipe's rate at N = 64 wherever Q comes from;
//   softmax ~540; P V ~1030; loop and waits ~430), and its tile has landed ~700-900 clocks
//   before the scorer needs it (session 27).
// - At H=128 (and at H=16 with long contexts) every kernel here runs throttled at the 700 W cap,
//   so the time is the energy of a call, not its clocks: score GEMM 30%, P V 24%, loads and the
//   rest 45% (session 28). A build that saves clocks per tile runs at a lower clock instead.
// - Measured and not kept (each correct; sm90_history.md has the figures and reasons): both of
//   FlashMLA's seesaws and its dense schedule rebuilt (0.45-0.97x), S_{i+1} issued early with or
//   without per-stage P and half-stage releases (0.69-1.0x), the other P V one tile late
//   (0.87-0.98x), Q in a scorer's registers with three stages (0.79-0.91x), fixed roles without
//   a producer (0.59-0.81x), narrow consumers for <= 16 rows on wgmma or mma.sync (<= 1.02x),
//   per-block `full` barriers (0.83-0.90x), a 2-CTA TMA multicast (0.74-0.83x), the gather mode
//   through per-token TMA boxes (1.2-2.1x slower), 32-token tiles in four stages (0.80-1.00x),
//   zeros in Q's unused rows (0.97-1.01x), items of <= 32 rows scored transposed (S^T = K Q^T
//   as m64n32: the score GEMM 1015 clocks instead of 1403, but the scorer's per-row state left
//   it ~4 free registers and its max exchange ran serialized: 0.64-0.88x; session 56).
// A fourth warpgroup is not an option: past 384 threads ptxas gives every role 128 registers
// whatever setmaxnreg says (C7602 for the 64 x 256 accumulator, nvcc 13.0).
// An FP8 (e4m3) cache (TKv = KvE4m3; dequant.cuh, producer.cuh, consumer_steps.cuh q_to_f16): a
// tile's 36 KB of e4m3 bytes land (TMA boxes of 128-byte rows, or cp.async) in the upper half of
// its 72 KB stage, on the stage's `raw` mbarrier; the producer waits for them and widens them in
// place to f16 in the swizzled layout (one cvt a pair, exact; named barriers between the phases),
// then arrives on `full`. Both GEMMs run in f16 whatever the query's element: the consumers convert
// each item's Q tile in place to f16 (its rope columns first times kpe_scale / ckv_scale), as it is
// where its rows fit f16, else each row times a power of two (q_to_f16), and write P in f16; the
// cache's scales fold into the score scale (per row, over its power of two) and the output
// (launcher.cuh run). The ring and the plan are the 16-bit kernel's. A tile is widened just before
// the producer waits for the next free stage, so the next tile's loads go out only after it; that
// tile's TMA boxes are prefetched into L2 before the widening (kE4m3PrefetchL2). The gather mode
// (sparse top-k) reads an e4m3 cache too: its slots' bytes come by cp.async, skipped slots
// zero-filled (session 45), and FlashMLA's 656-byte fp8 rows (TKv = KvDsMla, session 46:
// dequant_tile_ds multiplies each value by its row's scale of its 128 columns; the scales of the
// run are 1).
// The widening's measured history: dequant.cuh.
// With <= 16 heads (TP8) the e4m3 kernel is a narrow instance (work.cuh kNarrowMixed, or for
// decode's 16-row plans kNarrowPlans, which has no wgmma path): an item's tiles on mma.sync
// over its 16 rows (narrow.cuh; H=16 rows 1.04-1.10x faster, session 51; Q's fragments
// in registers and a pairwise exchange of partial scores 1.04-1.10x more, session 52), which
// read the e4m3 bytes as they land and widen their fragments in registers: no widening in
// shared memory for those tiles (session 53, 1.10-1.20x more), with Q's fragments staged into
// the register quads the mma reads (session 54, 1.04-1.15x more). With 17-32 heads (TP4) and
// plans of 32-row tiles, the e4m3 kernel's tall instance (tall.cuh) runs both GEMMs transposed
// with their A operands widened in registers from the landed e4m3 bytes (wgmma RS): no widening
// in shared memory for its tiles either (session 60, 1.035-1.08x faster at B >= 16).
// A ring wait that lasts ~30 s (MLAW_SM90_WAIT_TIMEOUT_CYCLES, traits.cuh) traps: a protocol
// bug surfaces as a launch error, not a hung GPU.
// Rows past the request's rows and tokens past a row's limit are masked; a row that sees
// nothing ends with l = 0 and writes o = 0, lse = -inf. The 64 x 512 fp32 output lives in
// registers (128 per consumer thread); P never leaves shared memory.
// Where the pieces live (this folder): work.cuh (a work item and a CTA's start, which both roles
// read; the TMA descriptors), producer.cuh (the producer warpgroup) with dequant.cuh (an e4m3
// tile's widening), consumer.cuh (the consumers: an item's Q, tile loop and epilogue) with
// consumer_steps.cuh (GEMM issue, Q loads and conversion, the lazy max, a cluster pair's merge),
// narrow.cuh and tall.cuh (the e4m3 narrow and tall instances' tiles), dev.cuh (trace and
// probe builds); config.h has the shared-memory layout and the named barrier ids; this file
// has the kernel's entry.
// launcher.cuh picks an instance and launches.
#pragma once

#include "mla_wrapper/common/pdl.cuh"
#include "mla_wrapper/common/plan.h"
#include "mla_wrapper/sm90/config.h"
#include "mla_wrapper/sm90/consumer.cuh"
#include "mla_wrapper/sm90/dev.cuh"
#include "mla_wrapper/sm90/producer.cuh"
#include "mla_wrapper/sm90/traits.cuh"
#include "mla_wrapper/sm90/work.cuh"

namespace mlaw {
namespace sm90 {

// The combine kernel's first, dependent reads (its merge items, then their requests) prefetched
// into L2 as attention starts, one 128-byte line per CTA: merge_info's lines, then request_info's
// (the int workspace holds request_info right before merge_info, workspace.py). The combine's
// CTAs mostly start as attention CTAs leave their SMs, and after an L2 flush those reads went
// to DRAM. B=1 from a CUDA graph, against no prefetch: H200 1.006-1.027x, H100 1.009-1.032x
// (H=128 L=1024 12.2 -> 11.8 us); split batches 0.99-1.01x (logs/sm90_s33_2026-11-27 runs 1-3).
__device__ __forceinline__ void prefetch_combine_plan(const MlaPlan& plan) {
  if (plan.max_merge_items <= 0) return;
  const uintptr_t m0 = reinterpret_cast<uintptr_t>(plan.merge_info) & ~uintptr_t(127);
  const uintptr_t m1 =
      reinterpret_cast<uintptr_t>(plan.merge_info + int64_t(plan.max_merge_items) * kMergeFields);
  const uintptr_t r0 = reinterpret_cast<uintptr_t>(plan.request_info) & ~uintptr_t(127);
  const uintptr_t merge_lines = (m1 - m0 + 127) / 128;
  const uintptr_t c = blockIdx.x;
  const uintptr_t line = c < merge_lines ? m0 + c * 128 : r0 + (c - merge_lines) * 128;
  if (c < merge_lines || line < m0) prefetch_line_l2(reinterpret_cast<const void*>(line));
}

// Kv: how KV tokens are found (common/kv_access.cuh: PagedKv, the page table;
// sparse/gather.cuh: SlotGather, per-token slot ids of the top-k gather mode). TKv: the cache's
// element, T or KvE4m3 (an e4m3 cache, paged or the gather mode's slots: produce /
// dequant_tile).
template <typename T, typename Kv = PagedKv, bool kQTma = false, bool kEarlyQ = false,
          typename TKv = T, int kNarrow = 0, bool kTall = false>
__global__ void __launch_bounds__(kThreads, 1)
    mla_sm90_kernel(const MlaPlan plan, const MlaRunArgs args, const Kv kvm,
                    const __grid_constant__ KvTensorMaps maps,
                    const __grid_constant__ QTensorMaps qmaps) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(1024) char smem_raw[];
  // (enable_pdl 2: the stream's previous kernel wrote the plan: wait for it first)
  if (args.enable_pdl == 2) grid_dependency_wait();
  const CtaStart<Kv> start(plan);  // the plan's first loads, before the roles' code (CtaStart)
  launch_dependents();  // the combine kernel (it waits for this grid before reading)
  // Aligned by offsetting the shared array itself (not through an integer cast), so that every
  // access through `smem` stays a shared-memory instruction (LDS / STS), not a generic one.
  char* smem = smem_raw + ((kSmemAlign - smem_addr(smem_raw) % kSmemAlign) % kSmemAlign);
  if (threadIdx.x == 0) MLAW_TRACE(0, 26);
  if (threadIdx.x == 0) MLAW_SPAN(0, global_timer());
  if (kQTma && threadIdx.x == 32) {  // Q's maps are used first
    prefetch_tensor_map(&qmaps.nope);
    prefetch_tensor_map(&qmaps.pe);
  }
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + kSmemBarriers);
  uint64_t* empty = full + kStages;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) {
      mbar_init(&full[s], kProducerThreads);
      // one arrival a consumer warp (the narrow and tall instances: a thread, narrow_tiles and
      // tall_item, whose consumers read the stage's bytes with ld.shared)
      mbar_init(&empty[s], kNarrow || kTall ? kConsumerThreads : kConsumerThreads / 32);
    }
    if (kPairs<Kv>) {  // a cluster pair's `ready` and `xchg` (pair_merge)
      mbar_init(empty + kStages, 1);
      mbar_init(empty + kStages + 1, 1);
    }
    if (kQTma) mbar_init(empty + kStages + 2, 1);  // Q by TMA landed
    if (kWidenedKv<TKv>)
      for (int s = 0; s < kStages; ++s) mbar_init(empty + kStages + 3 + s, kProducerThreads);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x < 128) {
    setmaxnreg_dec<kWidenedKv<TKv> ? kProducerRegsE4m3 : kProducerRegs>();
    if (threadIdx.x == 0 && maps.enabled) {
      prefetch_tensor_map(maps.wide ? &maps.ckv_wide : &maps.ckv);
      prefetch_tensor_map(&maps.kpe);
    }
    if (threadIdx.x == 64) prefetch_combine_plan(plan);
    produce<T, TKv, kNarrow, kPlanRows<kNarrow, kTall>>(
        plan, args, kvm, maps, start, smem_addr(smem + kSmemKv), full, empty, empty + kStages + 3);
  } else {
    setmaxnreg_inc<kWidenedKv<TKv> ? kConsumerRegsE4m3 : kConsumerRegs>();
    consume<T, kQTma, kEarlyQ, kWidenedKv<TKv>, std::is_same<TKv, KvDsMla>::value, kNarrow,
            kTall>(plan, args, kvm, qmaps, start, smem, full, empty);
  }
#endif
}

}  // namespace sm90
}  // namespace mlaw
