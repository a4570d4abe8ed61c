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
//     the two CTAs merge their states on chip before that epilogue (pair_merge below), and
//     each writes 256 of the 512 columns (to out or to the pair's partial slot).
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
// An FP8 (e4m3) cache (TKv = KvE4m3; dequant_tile, produce and q_to_f16 below): a tile's 36 KB
// of e4m3 bytes land (TMA boxes of 128-byte rows, or cp.async) in the upper half of its 72 KB
// stage, on the stage's `raw` mbarrier; the producer waits for them and widens them in place
// to f16 in the swizzled layout (one cvt a pair, exact; named barriers between the phases),
// then arrives on `full`. Both GEMMs run in f16 whatever the query's element: the consumers
// convert each item's Q tile in place to f16 (its rope columns first times kpe_scale /
// ckv_scale), as it is where its rows fit f16, else each row times a power of two (q_to_f16),
// and write P in f16; the cache's scales fold into the
// score scale (per row, over its power of two) and the output (launcher.cuh run). The ring and
// the plan are the 16-bit kernel's. A tile is widened just before the producer waits for the
// next free stage, so the next tile's loads go out only after it; that tile's TMA boxes are
// prefetched into L2 before the widening (kE4m3PrefetchL2). The gather mode (sparse top-k) reads
// an e4m3 cache too: its slots' bytes come by cp.async, skipped slots zero-filled (session 45),
// and FlashMLA's 656-byte fp8 rows (TKv = KvDsMla, session 46: dequant_tile_ds multiplies each
// value by its row's scale of its 128 columns; the scales of the run are 1).
// History (sm90_history.md): sessions 41-42 widened to the query's type (bf16: cvt to f16, to
// f32, pack: ~34 issue clocks a 16-byte chunk) and multiplied the rope block; on the H200 a
// tile took 2565 clocks to widen (period 4521 at H=128 B=128 L=4096, 16-bit 3522), memory rows
// 0.95-1.02x fa3, compute 0.81-0.94x (logs/sm90_s42_2026-11-28). f16 GEMMs (session 43,
// logs/sm90_s43_2026-11-28, H200, A/B against that build on the same tensors): compute rows
// 1.09-1.10x faster, memory and middle rows 1.07-1.08x, B=1 0.92-0.96x from a CUDA graph (the
// Q conversion, ~4300 clocks an item then, ~3300 since session 44, outlasts the first tile's
// widening there; ~2800 at H=128 since session 50, ending before it); period 4040,
// widening 1930-2100 clocks (eight loads of a thread in flight, three barriers). Not kept: an
// mbarrier per TMA box (0.96-0.97x), a widening by bit moves (slower), the next tile's boxes
// issued between the widening's phases (0.93-0.97x), Q converted by the scorer alone or with
// its loop unrolled (~5700-6400 clocks an item); a cp.async tile's copies issued by each
// producer thread between the widening's phases once it saw the stage free (session 45: page
// 1 0.90-0.92x at B >= 64, the gather mode equal; logs/sm90_s45_2026-11-28 run 7), although its
// trace (run 6) showed the stage free ~1000-1350 clocks before the widening ended and a tile
// taking issue -> landed ~2440 + widening ~1700-2100 clocks.
// Nor (session 56, logs/sm90_s56_2026-11-28 run 2, e4m3_ldg.patch) the wide instance's tiles
// read by the producer's threads straight from global memory into registers (16-byte loads, no
// e4m3 bytes landing in shared memory, 8 or 4 of a thread in flight within its 72 registers;
// correct): 0.59-0.78x as fast at H=32-128 (4 in flight: 0.53-0.69x). ~16 KB in flight an SM
// is latency-bound where a TMA box has a whole tile in flight.
// With <= 16 heads (TP8) the e4m3 kernel is its narrow instance: an item's tiles on mma.sync
// over its 16 rows (narrow_tiles below; H=16 rows 1.04-1.10x faster, session 51; Q's fragments
// in registers and a pairwise exchange of partial scores 1.04-1.10x more, session 52), which
// read the e4m3 bytes as they land and widen their fragments in registers: no widening in
// shared memory for those tiles (session 53, 1.10-1.20x more), with Q's fragments staged into
// the register quads the mma reads (session 54, 1.04-1.15x more).
// A ring wait that lasts ~30 s (MLAW_SM90_WAIT_TIMEOUT_CYCLES, traits.cuh) traps: a protocol
// bug surfaces as a launch error, not a hung GPU.
// Rows past the request's rows and tokens past a row's limit are masked; a row that sees
// nothing ends with l = 0 and writes o = 0, lse = -inf. The 64 x 512 fp32 output lives in
// registers (128 per consumer thread); P never leaves shared memory.
#pragma once

#include <math.h>

#include <type_traits>

#include "mla_wrapper/common/kv_access.cuh"
#include "mla_wrapper/common/pdl.cuh"
#include "mla_wrapper/common/plan.h"
#include "mla_wrapper/common/q_rows.cuh"
#include "mla_wrapper/sm90/config.h"
#include "mla_wrapper/sm90/traits.cuh"

namespace mlaw {
namespace sm90 {

// Development trace (-DMLAW_SM90_TRACE=1, check_sm90_dev.py --trace): thread 0 of each
// warpgroup of the first kTraceCtas CTAs stores clock64() at the schedule's events of its
// first kTraceTiles KV tiles; mlaw_sm90_trace_read (launcher.cuh) copies the buffer out and
// clears it.
// Events 0-6 scorer, 7-13 P V warpgroup, 14-15 producer (per tile); 16-21 per work item, stored
// with its first tile: Q load started (16 scorer, 17 P V warpgroup), Q landed (18), epilogue
// row sums (20), rows staged (21), rows stored (19); a cluster pair's barrier passed (22) and
// exchange received or sent (23); the epilogue's row scales and lse done (24), its stmatrix
// issued (25, before the warpgroup's barrier); the CTA's start (26, thread 0, with tile 0); an
// e4m3 tile's bytes landed (27) and its widening done (28) (producer, per tile); an e4m3
// cache's Q tile converted (29, scorer, per item: q_to_f16).
#ifndef MLAW_SM90_TRACE
#define MLAW_SM90_TRACE 0
#endif
// Load-path probe (-DMLAW_SM90_PROBE_NO_MATH=1, check_sm90_dev.py --ab-only; results are
// wrong): the consumers release each stage as soon as its tile lands, with no score GEMM,
// softmax or P V, so the run takes what the loads alone take. H200 (logs/sm90_s24_2026-11-27
// run 6): H=128 1.51x (B=64 L=4096) to 1.75x (B=128 L=16384) faster than the kernel, so at
// H=128 the math chain, not the memory system, sets the tile period; H=16 with long contexts
// only 1.02-1.06x (the loads set it); B=1 H=128 L=1024 from a CUDA graph 8.7 us (12.0 with
// the math).
#ifndef MLAW_SM90_PROBE_NO_MATH
#define MLAW_SM90_PROBE_NO_MATH 0
#endif
// Probes (wrong results) of what Q in registers would buy: -DMLAW_SM90_PROBE_QREG=1, the score
// GEMM takes its A operand from four registers (wgmma RS) and reads only K from shared memory;
// with -DMLAW_SM90_PROBE_STAGES3=1 (config.h) the KV ring has a third stage over the Q tile.
// H200, H=128 B=64 L=4096 (logs/sm90_s25_2026-11-27 run 5): the score GEMM takes 1418 clocks
// instead of 1450 (36 m64n64k16 at ~39 clocks each from registers or shared memory alike: the
// tensor pipe at N = 64, not the shared-memory port, sets it), the tile period 3418-3425 instead
// of 3477 with two stages or three, the A/B 0.99-1.02x on the H=128 rows (three stages and the
// probe together 0.98-1.0x); three stages without the math load no faster than two (1.51x the
// kernel at B=64 L=4096, as with two). So at H=128 the scorer's chain (S GEMM, softmax, P V),
// not the ring's depth or Q's reads, sets the period.
#ifndef MLAW_SM90_PROBE_QREG
#define MLAW_SM90_PROBE_QREG 0
#endif
// Probes (wrong results) of where the in-kernel load latency comes from (session 27): the
// consumers skip their P V GEMMs (-DMLAW_SM90_PROBE_NO_PV=1) or the score GEMM
// (-DMLAW_SM90_PROBE_NO_S=1, zero scores); trace builds then time a tile from TMA issue to use.
#ifndef MLAW_SM90_PROBE_NO_PV
#define MLAW_SM90_PROBE_NO_PV 0
#endif
#ifndef MLAW_SM90_PROBE_NO_S
#define MLAW_SM90_PROBE_NO_S 0
#endif
// Probe (wrong results): an e4m3 cache's Q tile used as it lands, not converted (q_to_f16).
#ifndef MLAW_SM90_PROBE_NO_QF16
#define MLAW_SM90_PROBE_NO_QF16 0
#endif
#if MLAW_SM90_TRACE
constexpr int kTraceCtas = 4, kTraceTiles = 64, kTraceEvents = 30;
__device__ unsigned long long g_trace[kTraceCtas * kTraceTiles * kTraceEvents];
#define MLAW_TRACE(seq, e)                                                              \
  do {                                                                                  \
    if (blockIdx.x < kTraceCtas && (seq) < kTraceTiles && threadIdx.x % 128 == 0)       \
      g_trace[(blockIdx.x * kTraceTiles + (seq)) * kTraceEvents + (e)] = clock64();     \
  } while (0)
// CTA spans (same builds, check_sm90_dev.py --spans): for every CTA below kSpanCtas, the global
// timer (ns, comparable across SMs) at its entry (event 0), its producer's first stage wait
// passed (1), its first KV tile landed for the scorer (2), the scorer's last P V done (3), the
// scorer's last rows stored (4), and the scorer's KV tile count (5): where a grid's time goes
// before the first tile and after the last one, and how far apart CTAs finish; also the
// producer's first work record in hand (6) and the scorer's Q landed (7).
constexpr int kSpanCtas = 1024, kSpanEvents = 8;
__device__ unsigned long long g_span[kSpanCtas * kSpanEvents];
__device__ __forceinline__ unsigned long long global_timer() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
// The timer read after `v` arrived (a load's result: the add waits for it).
__device__ __forceinline__ unsigned long long global_timer_after(int v) {
  return global_timer() + (unsigned(v) >> 31);
}
#define MLAW_SPAN(e, v)                                                                 \
  do {                                                                                  \
    if (blockIdx.x < kSpanCtas && threadIdx.x % 128 == 0)                               \
      g_span[blockIdx.x * kSpanEvents + (e)] = (v);                                     \
  } while (0)
#else
#define MLAW_TRACE(seq, e) \
  do {                     \
  } while (0)
#define MLAW_SPAN(e, v) \
  do {                  \
  } while (0)
#endif

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
  template <typename Kv>
  __device__ __forceinline__ WorkItem(const WorkRecord& r, int num_heads, const Kv& kvm) {
    row0 = r.row_tile * kRowsPerTile;
    kv_start = r.kv_start;
    slot = r.slot;
    qo_start = r.qo_start;
    kv_end = kvm.clamp_kv_end(qo_start, r.kv_end);
    qo_len = r.qo_len;
    kv_len = r.kv_len;
    page_start = r.page_start;
    valid_rows = min(kRowsPerTile, qo_len * num_heads - row0);
    num_tiles = kv_end > kv_start ? (kv_end - kv_start + kKvTile - 1) / kKvTile : 0;
  }
  template <typename Kv>
  __device__ __forceinline__ WorkItem(const MlaPlan& plan, int w, int num_heads, const Kv& kvm)
      : WorkItem(WorkRecord(plan, w), num_heads, kvm) {}
};

// The e4m3 kernel's narrow instance (kNarrow: launcher.cuh narrow_for): which items run their
// tiles on mma.sync over their rows 0-15 (narrow_tiles below), for both roles: the producer
// leaves those tiles' e4m3 bytes as they land, the consumers read them as they are.
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
__device__ __forceinline__ bool narrow_item(const WorkItem& item) {
  return item.valid_rows <= kNarrowRows && item.num_tiles >= kNarrowMinTiles;
}

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
  // Work item w (called by whole warps).
  __device__ __forceinline__ WorkItem at(const MlaPlan& plan, int w, int num_heads,
                                         const Kv& kvm) const {
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
      return WorkItem(r, num_heads, kvm);
    }
    return WorkItem(plan, w, num_heads, kvm);
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

// ---------------------------------------------------------------------------------- producer
// Producer named barrier (128 threads): warp 0 has seen a stage free. Only warp 0 polls the
// stage's `empty` mbarrier; the other three warps wait at this barrier, which costs no issue
// slots. With all four polling, the waits were ~11% of the kernel's warp instructions at H=128
// (H100 ncu, ~61 tries a tile: a suspended try wakes on the CTA's other mbarrier traffic;
// logs/sm90_s22_2026-11-27 run 6).
constexpr int kBarStageFree = 8;
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
// An e4m3 cache (TKv = KvE4m3): the producer widens each tile in place once its bytes have
// landed (on `raw`): each 16-byte chunk of the tile (8 columns of a token) is read as 8 bytes
// from the stage's e4m3 area (config.h kRawOffset) and written as 8 16-bit values to its
// swizzled place, then every thread arrives on `full`. A half-warp reads one token's 128-byte
// row of a latent box (lanes 0-7 its first 64 columns, 8-15 the others: thread tid takes
// column block 2 k + (tid / 8) % 2 of box k, tokens tid / 16 + 8 m, m = 0..7), and two
// consecutive tokens' 64-byte rope rows: each 8-byte read one wavefront a half-warp. The
// values go over exactly (to f16: the GEMMs of an e4m3 cache run in f16, q_to_f16); the cache's
// scales are folded into the score scale, the query's rope columns and the output (launcher.cuh
// run). A block's 16-bit rows land only over e4m3 bytes that every thread has read (named
// barriers between the phases): 16-bit blocks 0-3 lie below the e4m3 bytes, blocks 4-5 cover
// the sources of blocks 0-3 (latent boxes 0-1), block 6 those of 2-5, block 7 those of 4-7,
// block 8 (the rope columns) those of 6-7 and its own.
constexpr int kBarWiden = 9;  // producer named barrier (128 threads): dequant_tile's phases
__device__ __forceinline__ uint2 lds64(uint32_t addr) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(addr) : "memory");
  return v;
}
__device__ __forceinline__ void sts128(uint32_t addr, uint4 v) {
  asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "r"(v.x), "r"(v.y),
               "r"(v.z), "r"(v.w)
               : "memory");
}
__device__ __forceinline__ void dequant_tile(uint32_t stage, uint64_t* raw, uint32_t parity,
                                             uint64_t* full, int tid, int seq) {
  if (tid < 32) mbar_wait(raw, parity);
  MLAW_TRACE(seq, 27);
  named_barrier(kBarWiden, kProducerThreads);  // (the others wait here: no polling)
  // Latent: box k's column block 2 k + h, tokens t + 8 m (a half-warp one 128-byte row; each
  // token's swizzle is c ^ t, as t + 8 m = t mod 8). Rope: tokens tr + 16 m, tr = 2 t + h (a
  // half-warp two consecutive 64-byte rows). Before session 49 a half-warp read the same half
  // of two tokens' box rows, 128 bytes apart: two wavefronts. H200, A/B against that
  // (logs/sm90_s49_2026-11-28 run 1): page 64 (TMA) 1.011-1.060x faster, page 1 (cp.async)
  // 1.012-1.040x, B=1 0.98-1.01x; the gather mode's fp8 rows 1.006-1.03x; the widening of an
  // H=16 B=128 tile 1872 -> 1636 clocks, the period 4104 -> 3943.
  // (a latent box's rows land in the 128-byte swizzle: 16-byte chunk x of token row r at
  // x ^ (r % 8), config.h kRawOffset)
  const int c = tid % 8, h = (tid / 8) % 2, t = tid / 16;
  const uint32_t src0 =
      stage + kRawOffset + t * kRawRowBytes + (((4 * h + c / 2) ^ t) << 4) + (c % 2) * 8;
  const uint32_t dst0 = stage + h * kKvBlockBytes + t * kRowBytes + ((c ^ t) << 4);
  auto src = [&](int k, int m) { return src0 + k * kRawBlockBytes + m * 8 * kRawRowBytes; };
  auto dst = [&](int k, int m) { return dst0 + 2 * k * kKvBlockBytes + m * 8 * kRowBytes; };
  // Eight loads of a thread in flight at a time (the asm's memory clobbers keep this order;
  // 72 registers hold no more): box 0, its stores (blocks 0-1), box 1, its stores (2-3), box 2
  // | (every thread has read boxes 0-1) its stores (4-5), box 3 | (boxes 2-3 read) its stores
  // (6-7), the rope's sources | (read) the rope's stores. (Four loads in flight and four
  // barriers: ~2400 clocks a tile on the H200.)
  uint2 r[8];
  auto load8 = [&](int k) {
#pragma unroll
    for (int m = 0; m < 8; ++m) r[m] = lds64(src(k, m));
  };
  auto store8 = [&](int k) {
#pragma unroll
    for (int m = 0; m < 8; ++m) sts128(dst(k, m), widen_e4m3x8(r[m]));
  };
  load8(0);
  store8(0);
  load8(1);
  store8(1);
  load8(2);
  named_barrier(kBarWiden, kProducerThreads);  // boxes 0-1 read by every thread
  store8(2);
  load8(3);
  named_barrier(kBarWiden, kProducerThreads);  // boxes 2-3 read
  store8(3);
  // (the rope's 64-byte rows, unswizzled: src0 without its swizzle, t 128 + h 64 + c 8, is
  // tr 64 + c 8)
  const int tr = 2 * t + h;
#pragma unroll
  for (int m = 0; m < 4; ++m)
    r[m] = lds64((src0 ^ (t << 4)) + kRawRopeOffset + m * 16 * kRawRopeRowBytes);
  named_barrier(kBarWiden, kProducerThreads);  // the rope block read
  const uint32_t rope0 = stage + (kColBlocks - 1) * kKvBlockBytes + tr * kRowBytes +
                         ((c ^ (tr % 8)) << 4);
#pragma unroll
  for (int m = 0; m < 4; ++m) sts128(rope0 + m * 16 * kRowBytes, widen_e4m3x8(r[m]));
  // (before the arrival: the consumers' wgmma reads and the stage's next TMA writes are
  // async-proxy accesses)
  fence_proxy_async();
  MLAW_TRACE(seq, 28);
  mbar_arrive(full);
}

// FlashMLA's fp8 rows (TKv = KvDsMla, config.h): the same widening with each value times its
// token's scale of its 128 columns, and the rope's bf16 values converted to f16 where they
// landed. A scale goes in as two f16 factors (f16_scale_pair) so that small scales keep their
// precision. Order (named barriers: a 16-bit block lands only over bytes every thread has
// read): the scales (block 3's end) and this thread's rope chunks; boxes 0-1 read, blocks 0-1
// stored | (scales and boxes 0-1 read) blocks 2-3, box 2 read, blocks 4-5 (over boxes 0-1),
// box 3 read | (boxes 2-3 read) blocks 6-7.
// Development builds: -DMLAW_SM90_DS_ONE_MUL=1 multiplies by the scale once (f16; scales under
// 2^-14 lose precision: wrong for small rows), -DMLAW_SM90_PROBE_DS_NO_WIDEN=1 skips the
// widening (wrong results: what the widening costs). H200 (session 46 run 2, bench_sparse
// --ds-mla): 0.98-0.998x and 0.79-0.92x the time.
// Not kept (session 46 runs 3-4, H200, A/B on the same tensors): a tile in halves of 32 tokens,
// the first half's copies issued as soon as the consumers' first P V half had freed its rows
// (an mbarrier per stage; the half's scales in block 3 rows 28-31 / 60-63) and each half
// widened once landed, so that the copies of tile i + 1 overlap the consumers' last P V half of
// tile i - 1 and half of the widening: 1.02-1.04x at B=32 and 1.0-1.02x at B=1, but 0.94-0.98x
// at B=128 (H 16-128), with the previous tile's second half widened before or after the wait.
// Correct (the sparse tests, memcheck and racecheck clean), two more barriers a tile. Nor a
// per-warp vote that multiplies once where all of a warp's scales are >= 2^-14 (run 10):
// 0.988-1.013x the time. Nor (session 47, H200, logs/sm90_s47_2026-11-28 runs 1-3; patches there;
// each correct and sanitizer-clean) a token's scales in its own row of block 3 so that tokens
// widen independently: in 4-token units claimed by the producer's and the consumers' warps from
// a per-stage counter (1.03-1.14x slower: a unit's latency, and the consumers' share lengthened
// their chain), or each producer warp its own 16 tokens without named barriers (0.97-1.03x).
// Nor (session 48, logs/sm90_s48_2026-11-28, ds_phases16.patch) two phases of 16 loads in
// flight instead of these four of 8 (80 producer registers): at H=128 the widening took ~1950
// clocks instead of ~2250-2390, but the concurrent score GEMM ~2150-2170 instead of ~1400
// (1.007-1.039x the time); and a third KV stage (probe over the Q tile) moved the copies a tile
// earlier but ran 0.99-1.06x the time. The landing copies, the widening and the consumers'
// wgmma operands share the SM's shared memory, which bounds this tile.
#ifndef MLAW_SM90_DS_ONE_MUL
#define MLAW_SM90_DS_ONE_MUL 0
#endif
#ifndef MLAW_SM90_PROBE_DS_NO_WIDEN
#define MLAW_SM90_PROBE_DS_NO_WIDEN 0
#endif
__device__ __forceinline__ uint32_t f16_scale_pair(float s) {
  // value x s1 x s2 with s1 a normal f16 (down to s = 2^-24): s < 2^-14 goes as (s 2^10, 2^-10)
  const bool small = s < 6.103515625e-05f;
  return ElementTraits<__half>::pack(small ? s * 1024.f : s, small ? 1.f / 1024.f : 1.f);
}
__device__ __forceinline__ uint4 widen_e4m3x8_scaled(uint2 v, uint32_t pair) {
  uint4 w = widen_e4m3x8(v);
  const __half2 p = *reinterpret_cast<const __half2*>(&pair);
  const __half2 s1 = __low2half2(p), s2 = __high2half2(p);
  uint32_t* h = reinterpret_cast<uint32_t*>(&w);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const __half2 x1 = __hmul2(*reinterpret_cast<const __half2*>(&h[i]), s1);
    const __half2 x = MLAW_SM90_DS_ONE_MUL ? x1 : __hmul2(x1, s2);
    h[i] = *reinterpret_cast<const uint32_t*>(&x);
  }
  return w;
}
__device__ __forceinline__ uint4 lds128(uint32_t addr) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "r"(addr)
               : "memory");
  return v;
}
// Eight bf16 values as f16 (round to nearest).
__device__ __forceinline__ uint4 bf16x8_to_f16(uint4 v) {
  uint32_t* h = reinterpret_cast<uint32_t*>(&v);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const __half2 x = __floats2half2_rn(__uint_as_float(h[i] << 16),
                                        __uint_as_float(h[i] & 0xffff0000u));
    h[i] = *reinterpret_cast<const uint32_t*>(&x);
  }
  return v;
}
__device__ __forceinline__ void dequant_tile_ds(uint32_t stage, uint64_t* raw, uint32_t parity,
                                                uint64_t* full, int tid, int seq) {
  if (tid < 32) mbar_wait(raw, parity);
  MLAW_TRACE(seq, 27);
  named_barrier(kBarWiden, kProducerThreads);  // (the others wait here: no polling)
  if (MLAW_SM90_PROBE_DS_NO_WIDEN) {
    fence_proxy_async();
    mbar_arrive(full);
    return;
  }
  const int c = tid % 8, t = tid / 8;
  uint32_t sc[4][kRawLatentBoxes];  // [token t + 16 m][box]: f16_scale_pair
#pragma unroll
  for (int m = 0; m < 4; ++m) {
    const uint4 f = lds128(stage + kDsScaleOffset + (t + 16 * m) * 16);
    sc[m][0] = f16_scale_pair(__uint_as_float(f.x));
    sc[m][1] = f16_scale_pair(__uint_as_float(f.y));
    sc[m][2] = f16_scale_pair(__uint_as_float(f.z));
    sc[m][3] = f16_scale_pair(__uint_as_float(f.w));
  }
  const uint32_t src0 = stage + kDsRawOffset + t * kRawRowBytes + c * 8;
  // An odd token's raw row lands with its two 64-byte halves swapped (the producer's copies;
  // address bit 6 is the half's), so that a half-warp's two tokens (8 lanes each, 8 bytes a
  // lane, rows 128 bytes apart) read different banks: without it each lds64 took two wavefronts
  // per half-warp. H200 (session 48 run 7, A/B on the same tensors, twice): H=16 B=128 / B=1
  // 1.017-1.021x / 1.014-1.021x faster, H=16 B=32, H=64 and H=128 0.99-1.006x; traces: tile
  // 5496 -> 4935 clocks at H=16 B=128, 4742 -> 4491 at H=128 B=128.
  const uint32_t flip = (t % 2) * kBlockCols;
  auto src = [&](int j) {  // (block b = j / 4 < 8: latent box b / 2, its columns from 64 (b % 2))
    const int b = j / 4, m = j % 4;
    return (src0 + (b / 2) * kRawBlockBytes + (b % 2) * kBlockCols + m * 16 * kRawRowBytes) ^
           flip;
  };
  const uint32_t dst0 = stage + t * kRowBytes + ((c ^ (t % 8)) << 4);
  auto dst = [&](int j) { return dst0 + (j / 4) * kKvBlockBytes + (j % 4) * 16 * kRowBytes; };
#pragma unroll
  for (int m = 0; m < 4; ++m) {  // this thread's rope chunks, in place (its own cp.async's)
    const uint32_t a = dst(32 + m);
    sts128(a, bf16x8_to_f16(lds128(a)));
  }
  uint2 r[8];
  auto load8 = [&](int j0) {
#pragma unroll
    for (int j = 0; j < 8; ++j) r[j] = lds64(src(j0 + j));
  };
  auto store8 = [&](int j0) {  // (the 8 chunks j0.. are of box j0 / 8)
#pragma unroll
    for (int j = 0; j < 8; ++j) sts128(dst(j0 + j), widen_e4m3x8_scaled(r[j], sc[j % 4][j0 / 8]));
  };
  load8(0);
  store8(0);
  load8(8);
  named_barrier(kBarWiden, kProducerThreads);  // the scales and boxes 0-1 read by every thread
  store8(8);
  load8(16);
  store8(16);
  load8(24);
  named_barrier(kBarWiden, kProducerThreads);  // boxes 2-3 read
  store8(24);
  fence_proxy_async();
  MLAW_TRACE(seq, 28);
  mbar_arrive(full);
}

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
// a tile is widened while the consumers compute the one before it).
template <typename T, typename TKv, bool kNarrow, typename Kv>
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
    if constexpr (kWiden) {
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
  // Everything above reads the plan only (uploaded before the previous kernel ran); the page
  // table, the cache and the gather mode's indices may come from the previous kernel.
  grid_dependency_wait();
  bool paced = false;  // this CTA's tiles go through the paced maps
  // the CTA's only item, on a busy grid (short_item's per-CTA terms as one flag: see has_pending)
  const bool lone_busy =
      w_end == w_begin + 1 && num_items * 100 >= int(gridDim.x) * kPacedMinItemsPct;
  for (int w = w_begin; w < w_end; ++w) {
    const WorkItem item = start.at(plan, w, args.num_heads, kvm);
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
    const bool narrow = kNarrow && narrow_item(item);
    // whether this item's e4m3 tiles go to L2 before their stage wait (kE4m3PrefetchL2,
    // kE4m3PrefetchLines): not a narrow item's of more than kNarrowPrefetchMaxTiles tiles
    const bool prefetch_item = !narrow || item.num_tiles <= kNarrowPrefetchMaxTiles;
    const int rows = item.qo_len * args.num_heads;  // (the request's)
    const bool multi_tile = kKvFirstMultiTile && rows > kRowsPerTile && rows % kRowsPerTile == 0;
    policy = normal_heads && !multi_tile && !paced && !(kKvFirstShort && short_item)
                 ? normal_policy
                 : first_policy;
    // Waits until the ring stage of tile `seq` is free (its previous tile consumed).
    auto wait_stage = [&]() {
      MLAW_TRACE(seq, 14);
      if (seq >= kStages) {
        // (the narrow instance: each thread acquires the consumers' reads, narrow_tiles)
        if (kNarrow || tid < 32) mbar_wait(&empty[seq % kStages], ((seq / kStages) - 1) & 1);
        if constexpr (!kNarrow) named_barrier(kBarStageFree, kProducerThreads);
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

// ---------------------------------------------------------------------------------- consumer
// S[64 rows, kScoreTokens tokens of scorer g] = Q K^T over the 576 columns (issued, not waited).
template <typename T>
__device__ __forceinline__ void issue_scores(float (&s)[kScoreTokens / 2], uint32_t q_smem,
                                             uint32_t kv_stage, int g) {
  using Mma = typename ElementTraits<T>::template MmaS<kScoreTokens>;
  // Each k-step's descriptors are the base descriptors plus a constant (desc_add): ~10 SASS
  // instructions an HGMMA fewer than one make_desc each (ncu source counters, H100
  // 2026-11-26: descriptor arithmetic was ~25% of the kernel's instructions).
  const uint64_t dq = make_desc(q_smem, 16, 1024);
  const uint64_t dk = make_desc(kv_stage + (kScorers > 1 ? g : 0) * kScoreTokens * kRowBytes, 16,
                                1024);
  wgmma_fence();
#if MLAW_SM90_PROBE_QREG  // probe (wrong results): A from 4 registers, K alone from shared memory
  using MmaRS = std::conditional_t<std::is_same<T, __half>::value,
                                   gmma::MMA_64x64x16_F32F16F16_RS<gmma::Major::K, gmma::Major::K>,
                                   gmma::MMA_64x64x16_F32BF16BF16_RS<gmma::Major::K, gmma::Major::K>>;
  uint32_t a[4];
#pragma unroll
  for (int i = 0; i < 4; ++i) a[i] = 0x3c003c00u ^ (threadIdx.x + i);
#pragma unroll
  for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(a[i])::"memory");
#pragma unroll
  for (int kk = 0; kk < kHeadDimQk / 16; ++kk) {
    const uint64_t db = desc_add(dk, (kk / 4) * kKvBlockBytes + (kk % 4) * 32);
    wgmma_rs<MmaRS>(a, db, s, kk == 0 ? gmma::ScaleOut::Zero : gmma::ScaleOut::One);
  }
  (void)dq;
#else
#pragma unroll
  for (int kk = 0; kk < kHeadDimQk / 16; ++kk) {
    const uint64_t da = desc_add(dq, (kk / 4) * kQBlockBytes + (kk % 4) * 32);
    const uint64_t db = desc_add(dk, (kk / 4) * kKvBlockBytes + (kk % 4) * 32);
    wgmma<Mma>(da, db, s, kk == 0 ? gmma::ScaleOut::Zero : gmma::ScaleOut::One);
  }
#endif
  wgmma_commit();
}

// O[64 rows, 256 columns of g] += P[64 x 64 tokens] V[64 tokens x 256 columns] (issued), over the
// 16-token k-steps kFirst .. kLast - 1; first: O = instead of += (an item's first k-step: O is
// not zeroed before it, see consume).
template <typename T, int kFirst = 0, int kLast = kKvTile / 16>
__device__ __forceinline__ void issue_pv(float (&o)[128], uint32_t p_smem, uint32_t kv_stage, int g,
                                         bool first) {
  using Mma = typename ElementTraits<T>::MmaO;
  const uint64_t dp = make_desc(p_smem, 16, 1024);
  const uint64_t dv = make_desc(kv_stage + g * (kOutCols / kBlockCols) * kKvBlockBytes,
                                kKvBlockBytes, 1024);
  wgmma_fence();
#pragma unroll
  for (int ks = kFirst; ks < kLast; ++ks)
    wgmma<Mma>(desc_add(dp, ks * 32), desc_add(dv, ks * 16 * kRowBytes), o,
               first && ks == kFirst ? gmma::ScaleOut::Zero : gmma::ScaleOut::One);
  wgmma_commit();
}

template <typename T>
__device__ __forceinline__ void load_q(const MlaRunArgs& args, const WorkItem& item, uint32_t q_smem,
                                       int ctid) {
  constexpr int kChunks = kHeadDimQk / 8;  // 72 per row
  for (int idx = ctid; idx < kRowsPerTile * kChunks; idx += kConsumerThreads) {
    const int r = idx / kChunks;
    const int c = idx % kChunks;
    const bool valid = r < item.valid_rows;
    const T* src = valid ? q_chunk_ptr<T>(args, item.qo_start, item.row0 + r, c)
                         : static_cast<const T*>(args.q_nope);
    cp_async_16(q_smem + tile_offset<kRowsPerTile>(r, c * 8), src, valid);
  }
  cp_async_commit();
  cp_async_wait<0>();
  fence_proxy_async();
}

// Q by TMA (qm.box_heads > 0) of the item with WorkItem's row0, qo_start and valid_rows: lane 0
// of the calling warp expects the item's bytes on `bar`, then lane k issues the 9 column-block
// boxes of the item's k-th query token (k < tokens: the row tile's valid rows rounded up to
// whole tokens). Rows past them keep stale bytes: those rows' scores are masked in every tile
// (limit 0) and never written. Q is read again by every piece of a split row tile: L2
// evict-last (evict-normal ran the compute rows 0.976-0.988x, evict-first the short-item rows
// 0.986-1.006x; H100, logs/sm90_s39_2026-11-27 run 5).
// kToL2: the same boxes prefetched into L2 only (tma_prefetch_3d; bar unused).
template <bool kToL2 = false>
__device__ __forceinline__ void load_q_tma(const QTensorMaps& qm, int row0, int qo_start,
                                           int valid_rows, int num_heads, const FastDiv& heads,
                                           uint32_t q_smem, uint64_t* bar, int lane) {
  const int bh = qm.box_heads;
  const int tokens = (valid_rows + bh - 1) / bh;
  const int token0 = qo_start + heads.div(row0);
  const int head0 = heads.mod(row0, num_heads);
  if (!kToL2 && lane == 0)
    mbar_arrive_expect_tx(bar, uint32_t(tokens * bh * kRowBytes * kColBlocks));
  __syncwarp();
  const uint64_t policy = evict_last_policy();
  // (not unrolled: ptxas made 14 copies of this loop, 126 TMA issues and ~4500 SASS
  // instructions, whose cold fetch slowed every short launch by 1-3 us; H100 2026-11-26)
#pragma unroll 1
  for (int k = lane; k < tokens; k += 32) {
    const uint32_t dst = q_smem + k * bh * kRowBytes;
#pragma unroll
    for (int b = 0; b < kColBlocks - 1; ++b) {
      if (kToL2)
        tma_prefetch_3d(&qm.nope, b * kBlockCols, head0, token0 + k);
      else
        tma_load_3d(dst + b * kQBlockBytes, &qm.nope, bar, b * kBlockCols, head0, token0 + k,
                    policy);
    }
    if (kToL2)
      tma_prefetch_3d(&qm.pe, 0, head0, token0 + k);
    else
      tma_load_3d(dst + (kColBlocks - 1) * kQBlockBytes, &qm.pe, bar, 0, head0, token0 + k,
                  policy);
  }
}

// An e4m3 cache's GEMMs run in f16 whatever the query's element, so that the producer's
// widening is one cvt a pair (dequant_tile). Both consumer warpgroups convert each item's
// landed Q tile in place: a valid row's values (its rope columns first times args.kpe_scale,
// the launcher's kpe_scale / ckv_scale) times a power of two that puts the row's largest
// |value| in [2^14, 2^15), rounded to f16 once (exact for a bf16 or f16 value unless it lies
// below ~2^-29 of the row's largest). Thread (g, warp w, lane l) converts 16-byte chunk
// 4 h + l % 4 (half h = g ^ (l / 4 % 2): the eight lanes of a quarter warp reach eight bank
// groups) of every column block of its softmax rows rows[0..1]. It loads its 18 chunks at once
// and keeps them in registers: the rows' largest |value| (as 16-bit magnitudes: the integer max
// of non-negative values is theirs) over the quad by shuffles and over the two warpgroups
// through `red` ([2][64] floats, red_sum: free until the epilogue), then each chunk scaled and
// stored. sl: each row's score scale (scale_log2) over its power of two. Rows past valid_rows
// stay as they are (their scores are masked) with the plain score scale. Fast path (session
// 50): where each thread's largest |value| of each of its valid rows (rope values times
// rope_scale) lies in [2^-4, 2^15), so that every row's values fit f16 as they are (rounded
// only below 2^-17, i.e. 2^-13 of the row's largest), one barrier that ANDs that over both
// warpgroups replaces the maxima's exchange, and the values go over without a power of two
// (an f16 query's latent columns are not touched). H200 A/B against the exchange on every tile
// (logs/sm90_s50_2026-11-28 run 1, same tensors): B=1 1.02-1.07x faster (CUDA graphs 1.0-1.04x
// with bf16 queries, 1.03-1.06x with fp16), CTAs of many items 1.002-1.022x, other rows equal.
// Measured at B=1 on the
// H200 (clocks from Q landed to converted): reading the tile twice, four and three loads in
// flight, ~4300 (H=128) and ~3800 (H=16); loading once with all 18 in flight ~3600 and ~3000,
// the launch 1.02-1.05x faster (logs/sm90_s44_2026-11-28 run 1; reading twice with 18 in
// flight ~4150). What bounds it at B=1 (runs 3-5): its ~700 SASS instructions a thread run
// once, straight from a cold instruction cache, at ~4-5 clocks each, and each dependent round
// trip to shared memory costs ~500 while the producer widens the first tiles. Probes (run 5):
// without its loads ~2000 (H=128) / ~3200 (H=16), without the fence or the first barrier the
// same as with them. Not kept: tiles of up to 32 valid rows spread over all 256 threads (4-5
// chunks a thread at H=16, but ~15 KB of code against ~11 KB: ~1000 clocks slower, run 3); a dry
// run of the conversion while Q was in flight (the real one then ~3000-3400 clocks, the launch
// 1.06-1.12x slower, run 4). Reading the maxima from global memory while Q's TMA was in flight
// delayed Q's landing by ~3300 clocks and ran B=1 1.04-1.07x slower (logs/sm90_s43_2026-11-28
// run 10).
constexpr int kBarQF16 = 10;  // consumer named barrier (256 threads): q_to_f16's phases
// The fast path's bounds on each thread's row maxima (see above).
constexpr float kQF16FastMin = 0.0625f;   // 2^-4
constexpr float kQF16FastMax = 32768.f;   // 2^15
// kNarrow and narrow (an item narrow_tiles runs): sl is the scale of rows lane / 4 and
// lane / 4 + 8 (every consumer warp scores rows 0-15 there), not of `rows`.
template <typename T, bool kNarrow = false>
__device__ __forceinline__ void q_to_f16(char* q_tile, float* red, const int (&rows)[2],
                                         int valid_rows, float rope_scale, float scale_log2,
                                         int g, int lane, float (&sl)[2], bool narrow = false) {
  const int u = 4 * (g ^ (lane / 4 % 2)) + lane % 4;  // this thread's chunk of a block's row
  auto chunk = [&](int row, int b) {
    return reinterpret_cast<uint4*>(q_tile + b * kQBlockBytes + row * kRowBytes +
                                    ((u ^ (row % 8)) << 4));
  };
  auto max_abs = [](uint32_t m, const uint4& v) {  // 16-bit magnitudes, two a word
    constexpr uint32_t kAbs = 0x7fff7fffu;
    m = __vmaxu2(m, __vmaxu2(v.x & kAbs, v.y & kAbs));
    return __vmaxu2(m, __vmaxu2(v.z & kAbs, v.w & kAbs));
  };
  auto to_float = [](uint32_t m) {  // the larger magnitude of a word's two, as a float
    return ElementTraits<T>::unpack(max(m & 0xffffu, m >> 16)).x;
  };
  // chunk v of block b of a row to f16 (its values times f where `scaled`), stored in place
  auto store_f16 = [&](int row, int b, const uint4& v, bool scaled, float f) {
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    uint32_t h[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 x = ElementTraits<T>::unpack(w[i]);
      h[i] = scaled ? ElementTraits<__half>::pack(x.x * f, x.y * f)
                    : ElementTraits<__half>::pack(x.x, x.y);
    }
    *chunk(row, b) = make_uint4(h[0], h[1], h[2], h[3]);
  };
  const bool valid[2] = {rows[0] < valid_rows, rows[1] < valid_rows};
  uint4 c[2][kColBlocks];
#pragma unroll
  for (int r = 0; r < 2; ++r)
#pragma unroll
    for (int b = 0; b < kColBlocks; ++b) c[r][b] = valid[r] ? *chunk(rows[r], b) : uint4{};
  float mx[2];
  bool fast = true;  // this thread's valid rows' values fit f16 as they are
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    uint32_t m = 0;  // the latent's
#pragma unroll
    for (int b = 0; b < kColBlocks - 1; ++b) m = max_abs(m, c[r][b]);
    mx[r] = fmaxf(to_float(m), to_float(max_abs(0u, c[r][kColBlocks - 1])) * rope_scale);
    // (false for a NaN maximum)
    fast = fast && (!valid[r] || (mx[r] >= kQF16FastMin && mx[r] < kQF16FastMax));
  }
  if (named_barrier_and(kBarQF16, kConsumerThreads, fast)) {
    // Every valid row's values as they are (no power of two): the latent's unchanged for an f16
    // query, the rope columns times rope_scale.
    sl[0] = sl[1] = scale_log2;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      if (valid[r]) {
#pragma unroll
        for (int b = 0; b < kColBlocks; ++b) {
          const bool rope = b == kColBlocks - 1;
          if (std::is_same<T, __half>::value && !rope) continue;
          store_f16(rows[r], b, c[r][b], rope, rope_scale);
        }
      }
    }
  } else {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    }
    if (lane % 4 == 0) {
      red[g * kRowsPerTile + rows[0]] = mx[0];
      red[g * kRowsPerTile + rows[1]] = mx[1];
    }
    named_barrier(kBarQF16, kConsumerThreads);  // both warpgroups' row maxima in red
    // 2^k with m 2^k in [2^14, 2^15): k = 14 - (m's exponent); 1 for a zero, subnormal or
    // non-finite maximum (a NaN's magnitude bits are the largest: so is its exponent)
    auto pow2_exponent = [](float m) {
      const int e = int(__float_as_uint(m) >> 23) & 0xff;  // biased exponent (m >= 0)
      return e == 0 || e == 255 ? 0 : min(max(141 - e, -100), 100);
    };
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = rows[r];
      const float m = fmaxf(mx[r], red[(1 - g) * kRowsPerTile + row]);
      const int k = pow2_exponent(m);
      const float pow2 = __uint_as_float(uint32_t(127 + k) << 23);
      if (kNarrow && narrow) {
        int n_row = lane / 4 + 8 * r;
        asm volatile("mov.b32 %0, %0;" : "+r"(n_row));  // (not hoisted: see narrow_tiles)
        const int kn = pow2_exponent(fmaxf(red[n_row], red[kRowsPerTile + n_row]));
        sl[r] = scale_log2 * __uint_as_float(uint32_t(127 - kn) << 23);
      } else {
        sl[r] = scale_log2 * __uint_as_float(uint32_t(127 - k) << 23);
      }
      if (valid[r]) {
#pragma unroll
        for (int b = 0; b < kColBlocks; ++b) {
          store_f16(row, b, c[r][b], true, b == kColBlocks - 1 ? pow2 * rope_scale : pow2);
        }
      }
    }
  }
  fence_proxy_async();  // (the score GEMMs read Q through the async proxy)
  named_barrier(kBarQF16, kConsumerThreads);
}

constexpr float kRescaleSlack = 8.f;  // log2 units: P <= 256 between rescales
// Lazy rescaling of a row (`tiles`, narrow_tiles): the running max m_run moves only when the
// tile's max m_tile passes it by more than kRescaleSlack; sets alpha, the factor O and l_run
// take (l_run already times it), and returns the max this tile's P use (0 while the row has
// seen nothing).
__device__ __forceinline__ float lazy_max(float m_tile, float& m_run, float& l_run,
                                          float& alpha) {
  const float m_new = m_tile > m_run + kRescaleSlack ? m_tile : m_run;
  const float m_use = m_new == -INFINITY ? 0.f : m_new;
  alpha = fast_exp2(m_run - m_use);
  m_run = m_new;
  l_run *= alpha;
  return m_use;
}
#ifndef MLAW_SM90_VOTE_MAX  // 0: every tile's row maxima through shuffles (A/B builds)
#define MLAW_SM90_VOTE_MAX 1
#endif

constexpr int kBarXchg = 7;  // consumer named barrier: a cluster pair's exchange written

// A CTA's next item's Q by TMA as soon as its current item's last score GEMM is done with the
// Q tile (kEarlyQ, an instance of the paged kernel with Q by TMA that the launcher picks for
// grids of several items a CTA: launcher.cuh early_q_for): that item's epilogue then stages
// its rows in the KV stage of its last tile, released after the copy-out, instead of in the Q
// tile (see the schedule above). The code costs one-item CTAs even where it does not run (B=1
// from CUDA graphs 1.02-1.03x slower, H100, logs/sm90_s38_2026-11-27 run 12), hence the
// instance. 0: never (A/B builds).
#ifndef MLAW_SM90_EARLY_Q
#define MLAW_SM90_EARLY_Q 1
#endif
// With early Q, the next item's Q boxes prefetched into L2 (tma_prefetch_3d) this many tiles
// before the current item's last tile, where that item has at least kPrefetchQMinTiles tiles
// (short items are bound by DRAM bytes, Q and out included, and the prefetch cost them
// 1.02-1.08x, issued 1, 3 or all their tiles ahead); 0: not (A/B builds).
#ifndef MLAW_SM90_PREFETCH_Q
#define MLAW_SM90_PREFETCH_Q 3
#endif
#ifndef MLAW_SM90_PREFETCH_Q_MIN_TILES
#define MLAW_SM90_PREFETCH_Q_MIN_TILES 32
#endif
constexpr int kPrefetchQTiles = MLAW_SM90_PREFETCH_Q;
constexpr int kPrefetchQMinTiles = MLAW_SM90_PREFETCH_Q_MIN_TILES;

// The on-chip merge of a cluster pair's two halves of one kv range (plan.h mlaw_pair_slot;
// CTAs 2k and 2k + 1, each running only its half). Each CTA tells the partner that its stages
// are free (a remote arrival on the partner's `ready`), writes its rows' running max and sum
// and the O half the partner writes (warpgroup g != keep: normalized, 16-bit) into its second
// stage, and one thread bulk-copies that into the partner's first stage once the partner is
// ready (only the warps with valid rows' part of O); the keeping warpgroup waits for the
// partner's copy (mbarrier `xchg`), then leaves the merged, normalized rows in o and the rows'
// merged log2-sum-exp in lse2[row]. Each CTA waits for everything that targets it (the
// partner's arrival and copy) and for its own copy's reads before it exits. Measured on the
// way (H100 trace, H=128 B=1, 2026-11-25): the keeping warpgroup loading the partner's fp32 O
// through distributed shared memory took ~9000 clocks for 64 KB, the sender storing it there
// ~7000, a bulk copy ~3500 (~18 bytes a clock) after a cluster barrier of ~1500. The planner
// makes pairs of a tile cut in two (then no merge item: a B = num_ctas / 2 batch, where the
// combine's launch and its round trip through L2 came after the whole attention grid) and of
// the items of a small batch (B=1: each CTA then loads half the tiles and writes half the
// bytes).
template <typename T>
__device__ __forceinline__ void pair_merge(float (&o)[128], float* lse2, char* smem,
                                           uint64_t* ready, uint64_t* xchg, const float* red_sum,
                                           const float (&m_run)[2], const int (&rows)[2], int g,
                                           int keep, int valid_rows, int seq0) {
  const int t = (threadIdx.x - 128) % 128;
  const int warp = t / 32, lane = t % 32;
  const int live_warps = min(4, (valid_rows + 15) / 16);  // warps with a valid row
  const uint32_t peer = cluster_rank() ^ 1;
  if (g == 0 && t == 0) mbar_arrive_cluster(map_to_rank(smem_addr(ready), peer));
  float* send = reinterpret_cast<float*>(smem + kXchgSend);  // [64] max, [64] sum, O
  const float* recv = reinterpret_cast<const float*>(smem + kXchgRecv);
  float l_own[2];
#pragma unroll
  for (int r = 0; r < 2; ++r) l_own[r] = red_sum[rows[r]] + red_sum[kRowsPerTile + rows[r]];
  if (g == 0 && lane % 4 == 0) {  // the scorer's lanes 4k hold the row state
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      send[rows[r]] = m_run[r];
      send[kRowsPerTile + rows[r]] = l_own[r];
    }
  }
  if (g != keep && warp < live_warps) {
    uint2* so = reinterpret_cast<uint2*>(smem + kXchgSend + kXchgOOffset + warp * kXchgWarpBytes);
    const float inv0 = l_own[0] > 0.f ? 1.f / l_own[0] : 0.f;
    const float inv1 = l_own[1] > 0.f ? 1.f / l_own[1] : 0.f;
#pragma unroll
    for (int i = 0; i < 32; ++i)
      so[i * 32 + lane] = make_uint2(ElementTraits<T>::pack(o[4 * i] * inv0, o[4 * i + 1] * inv0),
                                     ElementTraits<T>::pack(o[4 * i + 2] * inv1, o[4 * i + 3] * inv1));
  }
  fence_proxy_async();  // the copy (async proxy) reads what this thread wrote
  named_barrier(kBarXchg, kConsumerThreads);
  const uint32_t bytes = kXchgOOffset + live_warps * kXchgWarpBytes;
  if (g != keep && t == 0) {
    mbar_wait<true>(ready, 0);  // the partner's stages are free (and its arrival landed)
    if (g == 0) MLAW_TRACE(seq0, 22);
    bulk_copy_to_cluster(map_to_rank(smem_addr(smem + kXchgRecv), peer), smem_addr(send), bytes,
                         map_to_rank(smem_addr(xchg), peer));
    bulk_wait_read();  // this CTA may exit once its source is read
    if (g == 0) MLAW_TRACE(seq0, 23);
  }
  if (g == keep) {
    if (t == 0) mbar_arrive_expect_tx(xchg, bytes);
    mbar_wait(xchg, 0);
    if (g == 0) MLAW_TRACE(seq0, 23);
    float w_self[2], w_peer[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float mp = recv[rows[r]], lp = recv[kRowsPerTile + rows[r]];
      const float ms = send[rows[r]], ls = send[kRowsPerTile + rows[r]];
      const float mx = fmaxf(ms, mp);
      const float es = ms == -INFINITY ? 0.f : exp2f(ms - mx);
      const float ep = mp == -INFINITY ? 0.f : exp2f(mp - mx);
      const float l = ls * es + lp * ep;
      const float inv = l > 0.f ? 1.f / l : 0.f;
      w_self[r] = es * inv;       // on this CTA's unnormalized O
      w_peer[r] = ep * lp * inv;  // on the partner's normalized O
      if (lane % 4 == 0) lse2[rows[r]] = l > 0.f ? mx + log2f(l) : -INFINITY;
    }
    if (warp < live_warps) {
      const uint2* ro =
          reinterpret_cast<const uint2*>(smem + kXchgRecv + kXchgOOffset + warp * kXchgWarpBytes);
#pragma unroll
      for (int i = 0; i < 32; ++i) {
        const uint2 x = ro[i * 32 + lane];
        const float2 a = ElementTraits<T>::unpack(x.x), b = ElementTraits<T>::unpack(x.y);
        o[4 * i] = o[4 * i] * w_self[0] + a.x * w_peer[0];
        o[4 * i + 1] = o[4 * i + 1] * w_self[0] + a.y * w_peer[0];
        o[4 * i + 2] = o[4 * i + 2] * w_self[1] + b.x * w_peer[1];
        o[4 * i + 3] = o[4 * i + 3] * w_self[1] + b.y * w_peer[1];
      }
    }
  }
}

constexpr int kBarQ = 1;    // consumer named barriers (256 threads)
constexpr int kBarMax = 2;
constexpr int kBarP = 3;
constexpr int kBarP2 = 4;  // split roles: the second half of P written
constexpr int kBarEpi = 5;  // + g: warpgroup g's output rows staged (128 threads)
                            // (7: kBarXchg, 8: kBarStageFree, above)

// Narrow tiles (an e4m3 cache's kernel instance for <= 16 heads, kNarrow: launcher.cuh
// narrow_for): an item of at least kNarrowMinTiles tiles with at most kNarrowRows valid rows
// (H <= 16 decode) runs its tiles on mma.sync m16n8k16 over those 16 rows instead of wgmma's
// 64-row tile, 48 rows of which are padding there, and reads the tile's e4m3 bytes where they
// land (the `raw` barrier; the producer does not widen these tiles, produce): each warp widens
// the K and V fragments it needs in registers (cvt.rn.f16x2.e4m3x2, exact). Warp W = 4 g + q
// (q = warp) = 2 pm + ph:
//   scores: warp W takes tokens 16 pm .. 16 pm + 15 of the tile and half of the 576 columns
//     (latent boxes 2 ph, 2 ph + 1 and 32 rope columns, in a k order that lets one 16-byte read
//     of a token's e4m3 row feed four k-steps; Q's fragments, in the same order, held in 72
//     registers through the item), so it has partial scores of 16 tokens; warps W and W ^ 1
//     exchange the halves the other keeps through shared memory (rows 16-19 of the Q tile,
//     which holds 16 rows; a 64-thread named barrier), so that warp W ends with the scores of
//     tokens 8 W .. 8 W + 7;
//   softmax: P (16-bit) of its 8 tokens against the running max into the P tile (rows 0-15
//     or 16-31 by the tile's parity), then one 256-thread barrier (kBarP) that also votes
//     whether every row's tile max stayed within kRescaleSlack of the running max (the lazy
//     max would not move: past an item's first tiles, nearly always); otherwise the exact
//     path: the rows' maxima through shared memory (kBarMax), the lazy max of `tiles`, P
//     rewritten (kBarP2). P is double-buffered because no barrier separates a tile's P writes
//     from slower warps' P V of the tile before;
//   P V: O[16 rows, columns 64 W .. + 63] += P[16 x 64] V[64 x 64] (ldmatrix of P; V's
//     fragments from 8-byte reads of the e4m3 rows, two tokens' bytes interleaved by prmt, the
//     output's columns permuted), then the warp's arrival on `empty`.
// At the item's end the state moves into `tiles`' layout (warp 0 of warpgroup g holds rows 0-15
// of columns 256 g .. 256 g + 255 in o, the permutation undone; warpgroup 0's warp 0 the rows'
// l), so the epilogue and a cluster pair's merge run unchanged. (Session 27 measured the same
// mma.sync scheme on the 16-bit cache, whose H <= 16 rows the loads bound: 0.98-1.02x, not
// kept there.)
// History (H200, A/Bs on the same tensors; sm90_history.md has the rest):
// - session 51 (logs/sm90_s51_2026-11-28), on widened tiles read by ldmatrix: H=16 memory
//   rows 1.08-1.10x faster at page 64 and 1.05-1.06x at page 1 than the 64-row wgmma path,
//   middle rows 1.04-1.05x. Its trace: period 3667 clocks, each warpgroup waiting ~840 a tile
//   for its tile: the two-stage chain of the widening (a tile's bytes land ~1640 clocks after
//   the issue, are widened in ~1750) bound it.
// - session 52 (logs/sm90_s52_2026-11-28): ncu put that tile at 74% of the L1/shared-memory
//   throughput (a tile moved ~330 KB through shared memory); Q's fragments in registers
//   (1.01-1.06x) and the split into 4 token groups x 2 column halves, partial scores exchanged
//   between pairs of warps (1.01-1.05x more), cut ~61 KB of it.
// - session 53 (logs/sm90_s53_2026-11-28 runs 1-2): the tiles read as they land (no widening
//   in shared memory: ~130 KB a tile instead of ~270): H=16 rows 1.10-1.17x faster at page 64
//   and 1.07-1.20x at page 1 than session 52's build, H=128 unchanged; B=1's items (2 tiles)
//   were still widened then (1.02-1.07x slower from CUDA graphs: every e4m3 box now lands in
//   the 128-byte swizzle, config.h) until the threshold went to 2 tiles (run 3). Trace at
//   H=16 B=64 L=4096 (run 2): period 2942 clocks (3720 before), the scores with their
//   fragments' widening ~1210, P V ~820, the producer waiting ~1500 a tile for a free stage:
//   the consumers' chain bounds it now, not the loads.
// - session 54 (logs/sm90_s54_2026-11-28): Q's fragments staged so that each is born in its
//   register quad (below): H=16 rows 1.04-1.11x faster at page 64, 1.05-1.15x at page 1 (run
//   4); period 2650 clocks, scores ~940, P V ~800 (run 5); ncu: no stall reason dominant (run 6).
// - session 55 (logs/sm90_s55_2026-11-28 run 1): the vote (one barrier a tile in the usual
//   case instead of kBarMax + kBarP): H=16 rows 0.99-1.04x faster at page 64 (B=128 L=16384
//   1.04x) and 1.00-1.04x at page 1, B=1 from CUDA graphs 0.99-1.01x, H=128 unchanged.
// Not kept: the next tile's scores computed beside this tile's P V, the stage released after
// both (s53 run 8, narrow_pipe.patch there: 1.10-1.17x slower; ncu (run 7) finds the tile
// latency-bound, 0.55 eligible warps a scheduler, issue 38%, shared memory 32%); the same in a
// ring of four slots of one e4m3 tile, two to a stage, so that no refill waits for it (s54
// runs 1-3, ring4_pipe.patch there: 1.01-1.09x slower, the P V beside the next scores longer
// than the two apart); four accumulator chains a token block for the scores (s54 run 6: 0.99x);
// the refill's boxes issued between the widening's phases (s51 run 7: 0.97-1.01x); widened by
// both consumer warpgroups (s51 run 8: 0.88-0.98x); a spare raw buffer in the Q tile's free
// rows (s52 runs 1-3: 1.11-1.18x slower: 20 TMA boxes of 16 tokens held the issuing thread
// ~2200 clocks). A first build spilled ~250 bytes (s51 run 1: B=1 1.17-1.24x
// slower): its addresses, which derive from lane and warp only, were hoisted out of the item
// loop and stayed live through the wgmma path's items; the opaque moves below keep them in the
// item.
constexpr int kBarNarrowPair = 11;  // + pm: warps 2 pm, 2 pm + 1's partial scores written (64)

template <typename TG>
__device__ __forceinline__ void narrow_tiles(const WorkItem& item, const int (&limit)[2],
                                             const float (&sl)[2], char* smem, uint64_t* full,
                                             uint64_t* empty, int& seq, float (&m_run)[2],
                                             float (&l_run)[2], float (&o)[128], int g, int warp,
                                             int lane) {
  // (lane and warp through an opaque move: see the comment above)
  asm volatile("mov.b32 %0, %0;" : "+r"(lane));
  asm volatile("mov.b32 %0, %0;" : "+r"(warp));
  const int W = 4 * g + warp;
  uint64_t* raw = empty + kStages + 3;  // (the kernel's barriers: a stage's e4m3 bytes landed)
  char* q = smem + kSmemQ;
  char* p_tile = smem + kSmemP;
  float* red = reinterpret_cast<float*>(smem + kSmemRedMax);  // [16 rows][8 warps]
  // the 8 warps' values of row lane / 4 + 8 r in `red`, folded pairwise by op (the row maxima
  // during the tiles, the row sums at the end)
  auto red_row = [&](int r, auto op) {
    const float4 a = *reinterpret_cast<const float4*>(red + (lane / 4 + 8 * r) * 8);
    const float4 c = *reinterpret_cast<const float4*>(red + (lane / 4 + 8 * r) * 8 + 4);
    return op(op(op(a.x, a.y), op(a.z, a.w)), op(op(c.x, c.y), op(c.z, c.w)));
  };
  // m16n8k16 fragments: thread (gr, c) holds A's rows gr and gr + 8 and B's column gr, at
  // k = 2 c, 2 c + 1 (a0, a1, b0) and 2 c + 8, 2 c + 9 (a2, a3, b1).
  const int gr = lane / 4, c = lane % 4;
  // Scores: warp W = 2 pm + ph takes tokens 16 pm .. 16 pm + 15 of the tile and half of the
  // columns: latent boxes 2 ph and 2 ph + 1 (256 columns) and the rope's columns 32 ph .. + 31.
  // The k order of a step is ours to choose, as long as Q's fragments follow it: step (bb, s,
  // j) of box 2 ph + bb gives thread c the columns 32 c + 16 s + 4 j .. + 3 (k = 2 c, 2 c + 1,
  // 2 c + 8, 2 c + 9), so that one 16-byte read of a token's chunk 2 c + s is four steps' B
  // fragments (a word: b0 its bytes 0-1, b1 bytes 2-3); rope step u the columns
  // 32 ph + 8 c + 4 u .. + 3 (one 8-byte read, two steps). A half-warp's 16-byte reads (tokens
  // gr, chunks 2 c + s) land on 8 distinct chunks of the swizzle (x ^ gr): no bank conflict.
  // Q (rows 0-15, f16) is read in that order once per item (72 registers).
  const int pm = W / 2, ph = W % 2;
  constexpr int kSteps = 2 * kRawBoxCols / 16 + 2;  // 18: a warp's k-steps of 16
  // Q's fragments go through shared memory in fragment order, so that each is born in a
  // register quad (mma's A operand) by one 16-byte read: gathered from the Q tile straight into
  // registers (two 8-byte reads each), ptxas kept them in scattered registers and assembled every
  // score mma's A quad with four moves (~140 a tile; without them H=16 rows run 1.04-1.11x
  // faster at page 64 and 1.05-1.15x at page 1, logs/sm90_s54_2026-11-28 run 4). Each warp
  // stages kQStage of its fragments at a time in rows 32-55 of Q-tile block W (free until the
  // item-end exchange, xo below), so no barrier wider than the warp: staged by warps 0-1 for
  // all, behind a 256-thread barrier, H=16 B=16 L=4096 ran 1.05x slower (run 4).
  constexpr int kQStage = 6;
  char* q_stage = q + W * kQBlockBytes + 2 * kNarrowRows * kRowBytes + 16 * lane;
  uint32_t qf[kSteps][4];
#pragma unroll
  for (int i0 = 0; i0 < kSteps; i0 += kQStage) {
#pragma unroll
    for (int i = i0; i < i0 + kQStage; ++i) {
      const int bb = i / 8, s = (i / 4) % 2, j = i % 4, u = i % 2;
      const char* a =
          i < 16 ? q + (4 * ph + 2 * bb + c / 2) * kQBlockBytes + gr * kRowBytes +
                       (((4 * (c % 2) + 2 * s + j / 2) ^ gr) << 4) + 8 * (j % 2)
                 : q + (kColBlocks - 1) * kQBlockBytes + gr * kRowBytes +
                       (((4 * ph + c) ^ gr) << 4) + 8 * u;
      const uint2 lo = *reinterpret_cast<const uint2*>(a);
      const uint2 hi = *reinterpret_cast<const uint2*>(a + 8 * kRowBytes);
      *reinterpret_cast<uint4*>(q_stage + (i - i0) * 512) = make_uint4(lo.x, hi.x, lo.y, hi.y);
    }
    __syncwarp();
#pragma unroll
    for (int i = i0; i < i0 + kQStage; ++i) {
      const uint4 f = *reinterpret_cast<const uint4*>(q_stage + (i - i0) * 512);
      qf[i][0] = f.x, qf[i][1] = f.y, qf[i][2] = f.z, qf[i][3] = f.w;
    }
    __syncwarp();
  }
  const int k_lat = 2 * ph * kRawBlockBytes + (16 * pm + gr) * kRawRowBytes;
  const int k_chunk = ((2 * c) ^ gr) << 4;  // chunk 2 c + s lies at k_chunk ^ 16 s
  const int k_rope = kRawRopeOffset + (16 * pm + gr) * kRawRopeRowBytes + 32 * ph + 8 * c;
  // P V: warp W's columns 64 W .. + 63 (latent box W / 2, its half W % 2). B fragments of step
  // ks: tokens 16 ks + 2 c + d (+ 8 for b1), column gr of n-block jn = 64 W + 8 gr + jn (the
  // output's columns permuted; undone at the item's end): two 8-byte reads of each of the
  // thread's 4 tokens, pairs of tokens' bytes interleaved (prmt), then widened. A half-warp's
  // reads (tokens 2 c + d, chunk 4 (W % 2) + gr / 2) land on 8 distinct chunks. P (A
  // fragments, ldmatrix): matrices (rows 0-7 / 8-15) x (tokens 0-7 / 8-15).
  int v_off[2];
#pragma unroll
  for (int d = 0; d < 2; ++d)
    v_off[d] = (W / 2) * kRawBlockBytes + (2 * c + d) * kRawRowBytes +
               (((4 * (W % 2) + gr / 2) ^ (2 * c + d)) << 4) + 8 * (gr % 2);
  const int m8 = lane / 8, r8 = lane % 8;
  const char* p_lane = p_tile + ((m8 % 2) * 8 + r8) * kRowBytes;
  // Rows 16-63 of the Q tile are free (at most 16 valid rows): partial scores between a pair of
  // warps go there, warp W's [4][32 lanes] (the partner's 8 tokens) in rows 16-19 of column
  // block W.
  auto xs = [&](int sender) {
    return reinterpret_cast<float*>(q + sender * kQBlockBytes + kNarrowRows * kRowBytes);
  };
  float* xs_out = xs(W) + lane;
  float oc[8][4];
#pragma unroll
  for (int j = 0; j < 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) oc[j][e] = 0.f;
  for (int it = 0; it < item.num_tiles; ++it, ++seq) {
    const int stage = __shfl_sync(0xffffffffu, seq % kStages, 0);
    MLAW_TRACE(seq, 0 + 7 * g);
    mbar_wait(&raw[stage], (seq / kStages) & 1);
    // `full` completes once a tile, the producer's arrivals in the widening's stead, so that
    // its phases stay the ring's for the items that wait on it
    if (W == 0 && lane == 0) mbar_arrive(&full[stage], kProducerThreads);
    MLAW_TRACE(seq, 1 + 7 * g);
    const char* st = smem + kSmemKv + stage * kKvStageBytes + kRawOffset;
    // ---- partial scores of the warp's 16 tokens over its half of the columns ----
    float sp[2][2][4];  // [token block nb][chain s]: two accumulators a block, 9 steps each
#pragma unroll
    for (int nb = 0; nb < 2; ++nb)
#pragma unroll
      for (int s = 0; s < 2; ++s)
#pragma unroll
        for (int e = 0; e < 4; ++e) sp[nb][s][e] = 0.f;
#pragma unroll
    for (int nb = 0; nb < 2; ++nb) {
#pragma unroll
      for (int bb = 0; bb < 2; ++bb)
#pragma unroll
        for (int s = 0; s < 2; ++s) {
          const uint4 w = *reinterpret_cast<const uint4*>(
              st + k_lat + nb * 8 * kRawRowBytes + bb * kRawBlockBytes + (k_chunk ^ (16 * s)));
          const uint32_t wj[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            uint32_t b0, b1;
            widen_e4m3x4(wj[j], b0, b1);
            sm80::mma_16816<TG>(sp[nb][s], qf[8 * bb + 4 * s + j], b0, b1);
          }
        }
      const uint2 r = *reinterpret_cast<const uint2*>(st + k_rope + nb * 8 * kRawRopeRowBytes);
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        uint32_t b0, b1;
        widen_e4m3x4(u ? r.y : r.x, b0, b1);
        sm80::mma_16816<TG>(sp[nb][u], qf[16 + u], b0, b1);
      }
    }
    // tokens 8 (W ^ 1) .. + 7 to the partner warp, which sends this warp's (tokens 8 W .. + 7)
    float sn[2][4];  // [nb]: the scores of token block nb
#pragma unroll
    for (int nb = 0; nb < 2; ++nb)
#pragma unroll
      for (int e = 0; e < 4; ++e) sn[nb][e] = sp[nb][0][e] + sp[nb][1][e];
#pragma unroll
    for (int e = 0; e < 4; ++e) xs_out[e * 32] = ph ? sn[0][e] : sn[1][e];
    MLAW_TRACE(seq, 2 + 7 * g);
    named_barrier(kBarNarrowPair + pm, 64);
    float s[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) s[e] = (ph ? sn[1][e] : sn[0][e]) + xs(W ^ 1)[e * 32 + lane];
    // ---- softmax of this warp's 8 tokens ----
    const int tok0 = item.kv_start + it * kKvTile + 8 * W + 2 * c;
#pragma unroll
    for (int e = 0; e < 4; ++e)
      if (tok0 + (e % 2) >= limit[e / 2]) s[e] = -INFINITY;
    float mx[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      mx[r] = fmaxf(s[2 * r], s[2 * r + 1]) * sl[r];
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
      mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
    }
    // this tile's P in rows 16 (it % 2) .. of the P tile
    const int p_row0 = 16 * (it % 2);
    // P of this thread's row gr + 8 r against the max m_use, into the P tile; returns its sum
    auto write_p = [&](int r, float m_use) {
      const float p0 = fast_exp2(fmaf(s[2 * r], sl[r], -m_use));
      const float p1 = fast_exp2(fmaf(s[2 * r + 1], sl[r], -m_use));
      const int row = gr + 8 * r;
      *reinterpret_cast<uint32_t*>(p_tile + (p_row0 + row) * kRowBytes + ((W ^ (row % 8)) << 4) +
                                   4 * c) = ElementTraits<TG>::pack(p0, p1);
      return p0 + p1;
    };
    // the exact lazy max: the rows' maxima through shared memory, O rescaled where it moved
    auto exact_p = [&]() {
      if (c == 0) {
#pragma unroll
        for (int r = 0; r < 2; ++r) red[(gr + 8 * r) * 8 + W] = mx[r];
      }
      named_barrier(kBarMax, kConsumerThreads);
      MLAW_TRACE(seq, 3 + 7 * g);
      float alpha[2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float m_tile = red_row(r, [](float x, float y) { return fmaxf(x, y); });
        const float m_use = lazy_max(m_tile, m_run[r], l_run[r], alpha[r]);
        l_run[r] += write_p(r, m_use);
      }
      if (__any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) {
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) oc[j][e] *= alpha[e / 2];
      }
    };
    // P against the running max (0 while a row has seen nothing: then the lazy max's alpha,
    // 0, would scale an O and an l that are 0), kept if no row's tile max passed the slack
    float psum[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) psum[r] = write_p(r, m_run[r] == -INFINITY ? 0.f : m_run[r]);
    const bool fits = mx[0] <= m_run[0] + kRescaleSlack && mx[1] <= m_run[1] + kRescaleSlack;
    MLAW_TRACE(seq, 4 + 7 * g);
    if (named_barrier_and(kBarP, kConsumerThreads, fits)) {
      l_run[0] += psum[0], l_run[1] += psum[1];
    } else {
      exact_p();
      named_barrier(kBarP2, kConsumerThreads);
    }
    MLAW_TRACE(seq, 5 + 7 * g);
    // ---- O[16 rows, columns 64 W .. + 63] += P V ----
#pragma unroll
    for (int ks = 0; ks < kKvTile / 16; ++ks) {
      uint32_t pa[4];
      sm80::ldsm_x4(p_lane + p_row0 * kRowBytes + (((2 * ks + m8 / 2) ^ r8) << 4), pa);
      uint2 v[2][2];  // [b0 / b1][token 2 c / 2 c + 1]: columns 8 gr .. + 7
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int d = 0; d < 2; ++d)
          v[h][d] = *reinterpret_cast<const uint2*>(st + v_off[d] +
                                                    (16 * ks + 8 * h) * kRawRowBytes);
      uint32_t b[2][8];  // [b0 / b1][n-block jn]
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int x = 0; x < 2; ++x) {
          const uint32_t t0 = x ? v[h][0].y : v[h][0].x, t1 = x ? v[h][1].y : v[h][1].x;
          widen_e4m3x4(__byte_perm(t0, t1, 0x5140), b[h][4 * x], b[h][4 * x + 1]);
          widen_e4m3x4(__byte_perm(t0, t1, 0x7362), b[h][4 * x + 2], b[h][4 * x + 3]);
        }
#pragma unroll
      for (int jn = 0; jn < 8; ++jn) sm80::mma_16816<TG>(oc[jn], pa, b[0][jn], b[1][jn]);
    }
    MLAW_TRACE(seq, 6 + 7 * g);
    // Every thread releases its own reads of the stage (the narrow instance's `empty` counts
    // threads) and every producer thread acquires them itself before its copies (produce's
    // wait_stage). With one arrival a warp after __syncwarp and warp 0's wait + a named
    // barrier (the ring's protocol, which the wgmma path's async-proxy reads keep), racecheck
    // flagged these ld.shared reads against the next tile's cp.async writes (~2300 hazards,
    // logs/sm90_s53_2026-11-28 run 4; still with the arrivals alone, run 5; 0 with both, run
    // 6; the grid's timings equal within 2%, run 5).
    mbar_arrive(&empty[stage]);
  }
  // ---- into `tiles`' layout for the epilogue ----
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    float l = l_run[r];
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    if (c == 0) red[(gr + 8 * r) * 8 + W] = l;
  }
  // warp (g, w)'s [32 values][32 lanes] in rows 32-63 of column block 4 g + w (warp 0's too:
  // its o then fills from shared memory alone), in the order of warp 0's o: oc[jn][e] (row
  // gr + 8 (e / 2), column 64 W + 8 (2 c + e % 2) + jn) is o[32 w + 4 (2 c + e % 2) + 2 (e / 2)
  // + jn % 2] of lane 4 gr + jn / 2.
  auto xo = [&](int w) {
    return reinterpret_cast<float*>(q + (4 * g + w) * kQBlockBytes + 2 * kNarrowRows * kRowBytes);
  };
#pragma unroll
  for (int jn = 0; jn < 8; ++jn)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      xo(warp)[(4 * (2 * c + e % 2) + 2 * (e / 2) + jn % 2) * 32 + 4 * gr + jn / 2] = oc[jn][e];
  named_barrier(kBarQ, kConsumerThreads);
  if (warp == 0) {
#pragma unroll
    for (int w = 0; w < 4; ++w)
#pragma unroll
      for (int i = 0; i < 32; ++i) o[32 * w + i] = xo(w)[i * 32 + lane];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = 0.f;
      if (g == 0 && c == 0) l = red_row(r, [](float x, float y) { return x + y; });
      l_run[r] = l;
    }
  } else {
#pragma unroll
    for (int i = 0; i < 128; ++i) o[i] = 0.f;
    l_run[0] = l_run[1] = 0.f;
  }
}

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
template <typename T, bool kQTma, bool kEarlyQ, bool kE4m3, bool kDsRows, bool kNarrow,
          typename Kv>
__device__ __forceinline__ void consume(const MlaPlan& plan, const MlaRunArgs& args, const Kv& kvm,
                                        const QTensorMaps& qm, const CtaStart<Kv>& start,
                                        char* smem,
                                        uint64_t* full, uint64_t* empty) {
  using TG = std::conditional_t<kE4m3, __half, T>;  // the GEMMs' operand element
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
    const WorkItem item = start.at(plan, w, num_heads, kvm);
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
    const bool narrow = kNarrow && narrow_item(item);
    if (kE4m3 && item.num_tiles > 0) {
      if (!MLAW_SM90_PROBE_NO_QF16)
        q_to_f16<T, kNarrow>(smem + kSmemQ, red_sum, rows, item.valid_rows, args.kpe_scale,
                             scale_log2, g, lane, sl, narrow);
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
        if (out_slot >= 0) {
          plan.partial_lse[static_cast<int64_t>(out_slot) * kRowsPerTile + row] = lse2;
        } else {
          if (args.lse != nullptr)
            args.lse[token * args.lse_stride_token + head] =
                args.lse_base_e ? lse2 * 0.6931471805599453f : lse2;
          if constexpr (Kv::kMaskInvalid) kvm.store_max_logit(token, head, m_max[r]);
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
              (static_cast<int64_t>(out_slot) * kRowsPerTile + row) * kHeadDimCkv;
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
          typename TKv = T, bool kNarrow = false>
__global__ void __launch_bounds__(kThreads, 1)
    mla_sm90_kernel(const MlaPlan plan, const MlaRunArgs args, const Kv kvm,
                    const __grid_constant__ KvTensorMaps maps,
                    const __grid_constant__ QTensorMaps qmaps) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(1024) char smem_raw[];
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
      // one arrival a consumer warp (the narrow instance: a thread, narrow_tiles)
      mbar_init(&empty[s], kNarrow ? kConsumerThreads : kConsumerThreads / 32);
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
    produce<T, TKv, kNarrow>(plan, args, kvm, maps, start, smem_addr(smem + kSmemKv), full, empty,
                    empty + kStages + 3);
  } else {
    setmaxnreg_inc<kWidenedKv<TKv> ? kConsumerRegsE4m3 : kConsumerRegs>();
    consume<T, kQTma, kEarlyQ, kWidenedKv<TKv>, std::is_same<TKv, KvDsMla>::value, kNarrow>(
        plan, args, kvm, qmaps, start, smem, full, empty);
  }
#endif
}

}  // namespace sm90
}  // namespace mlaw
