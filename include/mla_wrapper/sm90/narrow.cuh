// The narrow tiles of the sm90 kernel's e4m3 instance for <= 16 heads (mla_kernel.cuh's
// schedule): an item's tiles on mma.sync over its 16 rows, the e4m3 bytes read as they land.
#pragma once

#include <math.h>
#include "mla_wrapper/sm90/config.h"
#include "mla_wrapper/sm90/consumer_steps.cuh"
#include "mla_wrapper/sm90/dev.cuh"
#include "mla_wrapper/sm90/traits.cuh"
#include "mla_wrapper/sm90/work.cuh"

namespace mlaw {
namespace sm90 {

// Narrow tiles (an e4m3 cache's kernel instances for <= 16 heads, kNarrow: work.cuh): an item
// of at most kNarrowRows valid rows (H <= 16 decode) and at least kNarrowMinTiles tiles (every
// item of the kNarrowPlans instance's 16-row plans) runs its tiles on mma.sync m16n8k16 over
// those 16 rows instead of wgmma's 64-row tile, 48 rows of which are padding there, and reads
// the tile's e4m3 bytes where they land (the `raw` barrier; the producer does not widen these
// tiles, produce): each warp widens the K and V fragments it needs in registers
// (cvt.rn.f16x2.e4m3x2, exact). Warp W = 4 g + q (q = warp) = 2 pm + ph:
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
// - session 63 (logs/sm90_s63_2026-11-29 run 4): the item-end move of O into `tiles`' layout by
//   float4s (below): B=1-8 L=2048-16384 1.02-1.06x faster after do_bench's flush, 1.01-1.02x
//   from CUDA graphs; B >= 16 and the memory rows 0.99-1.01x. Trace (H=16 B=1 L=4096): the
//   last P V to the epilogue's row sums ~1600 clocks instead of ~2130.
//   Not kept (runs 2-3, narrow_q_regs.patch there): Q converted in registers from the words
//   the staging reads (no q_to_f16 pass over the tile): more instructions than the pass saves
//   at B <= 4 (0.98-1.05x slower from CUDA graphs), and with the pass's slow path inlined in
//   narrow_tiles 1.15-1.21x slower after do_bench's flush (cold code).
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
// (kBarNarrowPair + pm, config.h: warps 2 pm and 2 pm + 1's partial scores written)

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
  MLAW_TRACE(seq, 30);
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
          widen_e4m3_token_pairs(x ? v[h][0].y : v[h][0].x, x ? v[h][1].y : v[h][1].x,
                                 b[h][4 * x], b[h][4 * x + 1], b[h][4 * x + 2],
                                 b[h][4 * x + 3]);
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
  // warp (g, w)'s 32 values a lane in rows 32-63 of column block 4 g + w (warp 0's too: its o
  // then fills from shared memory alone), in the order of warp 0's o: oc[jn][e] (row
  // gr + 8 (e / 2), column 64 W + 8 (2 c + e % 2) + jn) is o[32 w + i] of lane L = 4 gr + jn / 2,
  // i = 4 (2 c + e % 2) + 2 (e / 2) + jn % 2. As float4s (session 63; 32-bit stores and loads
  // before, 4x the instructions): o[32 w + 4 ib .. + 3] of lane L is slot ib * 32 + (L ^ ib / 2)
  // of the block, so a thread stores 8 (ib = 2 c + x, L = 4 gr + k: oc[2 k][x], oc[2 k + 1][x],
  // oc[2 k][x + 2], oc[2 k + 1][x + 2]) and warp 0 loads 8 a warp, each quarter warp's
  // 16-byte accesses on 8 distinct bank groups either way.
  auto xo = [&](int w) {
    return reinterpret_cast<float4*>(q + (4 * g + w) * kQBlockBytes +
                                     2 * kNarrowRows * kRowBytes);
  };
#pragma unroll
  for (int x = 0; x < 2; ++x)
#pragma unroll
    for (int k = 0; k < 4; ++k)
      xo(warp)[(2 * c + x) * 32 + ((4 * gr + k) ^ c)] =
          make_float4(oc[2 * k][x], oc[2 * k + 1][x], oc[2 * k][x + 2], oc[2 * k + 1][x + 2]);
  named_barrier(kBarQ, kConsumerThreads);
  MLAW_TRACE(seq - 1, 31);
  if (warp == 0) {
#pragma unroll
    for (int w = 0; w < 4; ++w)
#pragma unroll
      for (int ib = 0; ib < 8; ++ib) {
        const float4 v = xo(w)[ib * 32 + (lane ^ (ib / 2))];
        o[32 * w + 4 * ib] = v.x, o[32 * w + 4 * ib + 1] = v.y;
        o[32 * w + 4 * ib + 2] = v.z, o[32 * w + 4 * ib + 3] = v.w;
      }
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

}  // namespace sm90
}  // namespace mlaw
