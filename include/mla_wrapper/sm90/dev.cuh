// Development builds of the sm90 kernel (mla_kernel.cuh): the per-tile trace and the CTA
// spans (-DMLAW_SM90_TRACE=1, benchmarks/check_sm90_dev.py --trace / --spans) and the probes,
// builds that skip part of the work on purpose (wrong results) to time the rest.
#pragma once

#include "mla_wrapper/sm90/config.h"

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
// cache's Q tile converted (29, scorer, per item: q_to_f16); a narrow item's
// Q fragments staged (30, its first tile) and its O moved into `tiles`' layout (31, its last
// tile) (narrow_tiles).
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
// Probe (wrong results): an e4m3 tile handed to the consumers as soon as its bytes land, not
// widened (dequant_tile): what the widening's shared-memory traffic and the producer's chain cost
// the wide and tall instances (consumers widening their fragments in registers would keep part).
#ifndef MLAW_SM90_PROBE_NO_WIDEN
#define MLAW_SM90_PROBE_NO_WIDEN 0
#endif
#if MLAW_SM90_TRACE
constexpr int kTraceCtas = 4, kTraceTiles = 64, kTraceEvents = 32;
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

}  // namespace sm90
}  // namespace mlaw
