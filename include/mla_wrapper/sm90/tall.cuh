// The tall instance's items (mla_kernel.cuh kTall; launcher.cuh picks it for plans made with
// rows_per_tile = kTallRows, which the sm90 backend makes for large decode batches over an e4m3
// cache with 17-32 heads, TP4): an item of at most 32 rows runs both GEMMs transposed, its rows
// the N of the wgmma and the tokens (scores) or output columns (P V) its M:
//   S^T[64 tokens, 32 rows] = K Q^T (36 x m64n32k16, K the A operand, Q's rows 0-31 the B
//     operand), by the scoring warpgroup (g = 0), where a 64-row tile's S = Q K^T takes 36 x
//     m64n64k16 of which half would be rows no item has;
//   O^T[256 columns of g, 32 rows] += V^T P^T (per 16-token k-step four m64n32k16: V^T the A
//     operand; P's rows 0-31 the B operand in the P tile's usual [row][token] layout), by both
//     warpgroups;
// so the tile's tensor work is half the 64-row tile's and O^T takes 64 accumulator registers
// instead of 128. Both A operands come from registers (wgmma RS), each thread widening its
// fragments from the stage's e4m3 bytes as they landed (issue_scores_t, issue_pv_t): the
// producer does not widen these tiles, and the consumers wait on the stage's `raw` barrier.
// H200 (session 60, logs/sm90_s60_2026-11-29 runs 4-6): the kernel with its tiles not widened at
// all (a probe) ran the TP4 rows 1.22-1.32x faster than with the producer's widening, whose chain
// (land ~1330 clocks, widen ~2120) set the tile period (~3740); with the fragments widened in
// registers B >= 16 run 1.035-1.08x faster at page 64 (1.01-1.04x at page 1), B <= 8 0.97-1.0x
// (graphs 0.94-0.97x; the Q conversion's permutation adds instructions to every item, not measured
// apart). An RS m64n32k16 takes ~36 clocks where the SS one took ~28 (the scores ~1410 clocks
// instead of ~1020), so the period is ~3550, set by the consumers. Split over both warpgroups (half
// of the k-steps each, the second half's S^T through the Q tile's free rows: tall_split_s.patch)
// the scores still took ~1315 clocks (the tensor pipe, not the issue, bounds RS at N = 32): B >= 32
// 1.01-1.03x, B <= 8 0.96-0.99x, 4 bytes spilled; not kept. Each row's max comes from the four
// scorer warps through shared memory (a row's 64 tokens are spread over them), read after the
// tile's kBarMax, and the row sums at the end likewise after kBarP2: every barrier here is one of
// all 256 consumer threads, in the same order in both warpgroups. (Session 58's version exchanged
// them across 128-thread barriers of the scorer alone, one more per tile; compute-sanitizer
// racecheck then reported hazards between the scorer's writes and the other warpgroup's reads
// across the 256-thread barriers that do order them, logs/sm90_s58_2026-11-28 runs 3-4.) The rows
// are stored by the item's own epilogue: straight from O^T's registers (8 consecutive columns of
// a row a thread, since session 61), or, for a cluster pair's two halves of one kv range (B <=
// half the CTAs, B=1's pieces), through the Q tile (fp32, two [32][256] halves, rows padded to
// 260 floats, each lane staging 4 consecutive columns of a row as a float4 and reading and
// storing 4 columns of each 128 of a row; H200, session 59 run 6: the padding and those reads up
// to 1.16x faster than unpadded rows of 16 columns a lane), whose fp32 halves the two trade
// through their first stages (tall_pair_exchange).
// Why an instance of its own (session 57, logs/sm90_s57_2026-11-28 runs 7-8): with this loop and
// the 64-row one in one kernel, ptxas held all of o live through an item whatever its path and
// spilled (16-88 bytes; every path ran 0.67-0.86x), while the loop alone ran 0 spills and the
// e4m3 H=32 rows 1.02-1.08x faster. Its plans have no item of more than 32 rows (MTP at H=32:
// one item per query token; since session 67 MTP at <= 16 heads of 17-32 rows a request, 16 x 2
// or 8 x 3-4: one item per request, its tokens' rows apart by their limits in tall_lim), and
// the instance is chosen by the plan's rows_per_tile, which the backend derives from the
// heads, the query tokens and the cache's dtype, so a CUDA graph's captured instance fits
// every later plan.
#pragma once

#include <math.h>
#include <type_traits>
#include "mla_wrapper/common/plan.h"
#include "mla_wrapper/common/q_rows.cuh"
#include "mla_wrapper/sm90/config.h"
#include "mla_wrapper/sm90/consumer_steps.cuh"
#include "mla_wrapper/sm90/dequant.cuh"
#include "mla_wrapper/sm90/dev.cuh"
#include "mla_wrapper/sm90/traits.cuh"
#include "mla_wrapper/sm90/work.cuh"

namespace mlaw {
namespace sm90 {

// The e4m3 bytes of a stage's raw area (config.h kRawOffset; the producer does not widen the
// tall instance's tiles) feed both GEMMs as wgmma A fragments widened in registers (H200,
// session 60 run 4: the kernel with its tiles not widened at all ran the TP4 rows 1.22-1.32x
// faster, the widening's shared-memory traffic slowing the GEMMs and its chain the producer).
// (lds32 / lds64: dequant.cuh)
// S^T = K Q^T into o[64 .. 79] (issued, not waited), kGroup k-steps a commit group. K's A
// fragment of k-step kk (tokens r0 = 16 warp + lane / 4 and r0 + 8, columns 2 q, 2 q + 1,
// 2 q + 8, 2 q + 9 of its 16, q = lane % 4) is the e4m3 word at columns 16 kk + 4 q of each of
// its two rows, as Q's columns are permuted within each 16 (q_to_f16's kPairPermute): latent box
// kk / 8 in the 128-byte swizzle (16-byte chunk x of row r at x ^ (r % 8)), then the rope's
// unswizzled 64-byte rows. A group's words are loaded, then widened once the group two before
// has released its registers.
__device__ __forceinline__ void issue_scores_t(float (&o)[128], uint32_t q_smem, uint32_t raw,
                                               int warp, int lane) {
  using Mma = gmma::MMA_64x32x16_F32F16F16_RS<gmma::Major::K, gmma::Major::K>;
  constexpr int kSteps = kHeadDimQk / 16, kGroup = 4;
  static_assert(kSteps % kGroup == 0 && kRawLatentBoxes * 8 == kHeadDimCkv / 16, "K's k-steps");
  const uint64_t dq = make_desc(q_smem, 16, 1024);
  const int r0 = 16 * warp + lane / 4, q = lane % 4;
  auto word = [&](int kk, int r) {
    return kk < kHeadDimCkv / 16
               ? raw + (kk / 8) * kRawBlockBytes + r * kRawRowBytes +
                     (((kk % 8) ^ (r % 8)) << 4) + 4 * q
               : raw + kRawRopeOffset + r * kRawRopeRowBytes + 16 * (kk - kHeadDimCkv / 16) +
                     4 * q;
  };
  uint32_t a[2][kGroup][4];
#pragma unroll
  for (int gi = 0; gi < kSteps / kGroup; ++gi) {
    uint32_t w[kGroup][2];
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      w[j][0] = lds32(word(gi * kGroup + j, r0));
      w[j][1] = lds32(word(gi * kGroup + j, r0 + 8));
    }
    if (gi >= 2) wgmma_wait<1>();  // group gi - 2 is done with a[gi % 2]
    uint32_t (&ag)[kGroup][4] = a[gi % 2];
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      widen_e4m3x4(w[j][0], ag[j][0], ag[j][2]);
      widen_e4m3x4(w[j][1], ag[j][1], ag[j][3]);
    }
    wgmma_fence();
#pragma unroll
    for (int j = 0; j < kGroup; ++j) {
      const int kk = gi * kGroup + j;
      const uint64_t db = desc_add(dq, (kk / 4) * kQBlockBytes + (kk % 4) * 32);
      wgmma_rs_part<Mma, 64, 16>(ag[j], db, o,
                                 kk == 0 ? gmma::ScaleOut::Zero : gmma::ScaleOut::One);
    }
    wgmma_commit();
  }
}

// O^T[256 columns of g, 32 rows] (+)= V^T P^T into o[0 .. 63] (issued); first: = (an item's
// first tile). V^T's A fragments from the stage's e4m3 rows: accumulator row M = 64 mb +
// 16 warp + lane / 4 + 8 i of block mb holds output column 256 g + 64 warp + 8 (lane / 4) +
// 2 mb + i (tall_item's staging puts it there), so that a thread's 8 columns of a token are one
// 8-byte read; per k-step its tokens 2 q, 2 q + 1 (+ 8) of 16 are paired by byte permutes.
__device__ __forceinline__ void issue_pv_t(float (&ot)[128], uint32_t p_smem, uint32_t raw,
                                           int g, int warp, int lane, bool first) {
  using Mma = gmma::MMA_64x32x16_F32F16F16_RS<gmma::Major::K, gmma::Major::K>;
  const uint64_t dp = make_desc(p_smem, 16, 1024);
  const int l4 = lane / 4, q = lane % 4;
  const int c0 = kOutCols * g + 64 * warp + 8 * l4;  // this thread's 8 columns' first byte
  const int x = (c0 % kRawBoxCols) / 16;             // their 16-byte chunk of a box row
  const uint32_t col0 = raw + (c0 / kRawBoxCols) * kRawBlockBytes + (l4 % 2) * 8;
  auto row8 = [&](int t) { return lds64(col0 + t * kRawRowBytes + ((x ^ (t % 8)) << 4)); };
  // the pairs (token t, t + 1) of columns 2 mb, 2 mb + 1 into (i = 0, i = 1) of fragment mb
  auto pair = [&](const uint2& u, const uint2& v, uint32_t (&a)[4][4], int hi) {
    widen_e4m3_token_pairs(u.x, v.x, a[0][hi], a[0][hi + 1], a[1][hi], a[1][hi + 1]);
    widen_e4m3_token_pairs(u.y, v.y, a[2][hi], a[2][hi + 1], a[3][hi], a[3][hi + 1]);
  };
  // (one fragment set: a second one spilled; this k-step's rows are read before the wait)
  uint32_t a[4][4];
#pragma unroll
  for (int ks = 0; ks < kKvTile / 16; ++ks) {
    const int t = 16 * ks + 2 * q;
    const uint2 v0 = row8(t), v1 = row8(t + 1), v8 = row8(t + 8), v9 = row8(t + 9);
    if (ks >= 1) wgmma_wait<0>();  // k-step ks - 1 is done with a
    pair(v0, v1, a, 0);
    pair(v8, v9, a, 2);
    wgmma_fence();
    const uint64_t db = desc_add(dp, ks * 32);
    const gmma::ScaleOut sc = first && ks == 0 ? gmma::ScaleOut::Zero : gmma::ScaleOut::One;
    wgmma_rs_part<Mma, 0, 16>(a[0], db, ot, sc);
    wgmma_rs_part<Mma, 16, 16>(a[1], db, ot, sc);
    wgmma_rs_part<Mma, 32, 16>(a[2], db, ot, sc);
    wgmma_rs_part<Mma, 48, 16>(a[3], db, ot, sc);
    wgmma_commit();
  }
}

// One half of O^T (fp32 [32 rows][256 columns]: a warpgroup's columns) in the Q tile, its rows
// kTallPitch floats apart (the staging's float4 stores, tall_item's end: a lane's 4 columns
// 64 warp + 8 (lane / 4) + 4 p of rows 2 (lane % 4) + e, at 256 floats in 4 of the 8 16-byte
// bank groups; since session 59 the readers take 4 columns of each 128 a lane).
constexpr int kTallPitch = kOutCols + 4;
constexpr int kTallHalf = kTallRows * kTallPitch;
static_assert(2 * kTallHalf * 4 <= kQBytes, "O^T's two fp32 halves fit in the Q tile");

// A cluster pair's tall halves (plan.h mlaw_pair_slot: CTAs 2k and 2k + 1, each the only item of
// its CTA, each over its half of the kv range) trade what the other stores: thread `lead` tells
// the partner that this CTA's stages are free (a remote arrival on its `ready`), waits for the
// same from it, and bulk-copies the partner's half of this CTA's O^T (send: the columns the
// partner keeps), the rows' sum parts and maxima into the partner's first stage (kXchgRecv:
// O^T [32][kTallPitch], sums [32][4], maxima [32], completing the partner's `xchg`); every
// consumer thread then waits for the partner's copy into this CTA. Each CTA so waits for
// everything that targets it before it exits (the lead also for its copy's reads). Called
// after a barrier of both warpgroups that follows their last P V and their staging (with
// fence_proxy_async).
__device__ __forceinline__ void tall_pair_exchange(char* smem, const float* send,
                                                   const float* sums, const float* maxima,
                                                   uint64_t* ready, uint64_t* xchg, bool lead) {
  constexpr uint32_t kOBytes = kTallHalf * 4, kSumBytes = kTallRows * 4 * 4;
  constexpr uint32_t kMaxBytes = kTallRows * 4;
  static_assert(kOBytes + kSumBytes + kMaxBytes <= kKvStageBytes && kStages >= 1,
                "the partner's halves land in the first stage");
  if (lead) {
    const uint32_t peer = cluster_rank() ^ 1;
    mbar_arrive_cluster(map_to_rank(smem_addr(ready), peer));
    mbar_arrive_expect_tx(xchg, kOBytes + kSumBytes + kMaxBytes);
    mbar_wait<true>(ready, 0);  // the partner's stages are free (and its arrival landed)
    const uint32_t dst = map_to_rank(smem_addr(smem + kXchgRecv), peer);
    const uint32_t bar = map_to_rank(smem_addr(xchg), peer);
    bulk_copy_to_cluster(dst, smem_addr(send), kOBytes, bar);
    bulk_copy_to_cluster(dst + kOBytes, smem_addr(sums), kSumBytes, bar);
    bulk_copy_to_cluster(dst + kOBytes + kSumBytes, smem_addr(maxima), kMaxBytes, bar);
    bulk_wait_read();
  }
  mbar_wait(xchg, 0);
}

// One tall item's tiles and its epilogue (stores its rows to out or to its partial slot of
// kTallRows rows). kSc: this warpgroup scores (g = 0). limit / sl: the prologue's exclusive kv
// limits and score scales of this thread's rows rows[0..1] of the 64-row layout (consume);
// o: the item's accumulator registers (O^T, and the scorer's state in o[64 .. 103]; consume
// zeroes them for an item without tiles).
// Thread (warp, lane) of the scorer holds S^T's tokens 16 warp + lane / 4 (+ 8) of its 8 rows
// tall_row(k), k = 2 j + e % 2 for the accumulator's element 4 j + e.
template <typename T, typename TG, bool kE4m3, bool kSc>
__device__ __forceinline__ void tall_item(const MlaPlan& plan, const MlaRunArgs& args,
                                          const WorkItem& item, const FastDiv& heads,
                                          const int (&rows)[2], const int (&limit)[2],
                                          const float (&sl)[2], float (&o)[128], char* smem,
                                          uint64_t* full, uint64_t* empty, int& seq, int g,
                                          int warp, int lane) {
  static_assert(kE4m3 && std::is_same<TG, __half>::value,
                "the tall instance: an e4m3 cache, f16 GEMMs (issue_scores_t, issue_pv_t)");
  const uint32_t q_smem = smem_addr(smem + kSmemQ);
  const uint32_t kv_smem = smem_addr(smem + kSmemKv);
  uint64_t* raw = full + 2 * kStages + 3;  // (mla_kernel.cuh: the stages' e4m3 `raw` barriers)
  const uint32_t p_smem = smem_addr(smem + kSmemP);
  char* p_ptr = smem + kSmemP;
  // red_max: [0, 32) the rescales, [32, 64) the rows' maxima at the end
  float* red_max = reinterpret_cast<float*>(smem + kSmemRedMax);
  float* tall_red = reinterpret_cast<float*>(smem + kSmemRedSum);  // [32 rows][4 warps]
  float* tall_sl = red_max + kRowsPerTile;                         // [32] the rows' scales
  int* tall_lim = reinterpret_cast<int*>(tall_sl + kTallRows);     // [32] and limits
  auto tall_row = [&](int k) { return 8 * (k / 2) + 2 * (lane % 4) + k % 2; };
  float (&ot)[128] = o;  // O^T in o[0 .. 63]: accumulator block mb in o[16 mb .. 16 mb + 15]
  // S^T in o[64 .. 79]; each row's running max, sum and score scale in o[80 + k], o[88 + k],
  // o[96 + k].
  auto st = [&](int i) -> float& { return o[64 + i]; };
  auto mt = [&](int k) -> float& { return o[80 + k]; };
  auto lt = [&](int k) -> float& { return o[88 + k]; };
  auto sl8 = [&](int k) -> float& { return o[96 + k]; };
  int lim_min = 0x7fffffff;
  if constexpr (kSc) {
    if (lane % 4 == 0) {
#pragma unroll
      for (int r = 0; r < 2; ++r)
        if (rows[r] < kTallRows) tall_sl[rows[r]] = sl[r], tall_lim[rows[r]] = limit[r];
    }
  }
  // The rows' scales and limits are in shared memory (both warpgroups pass it: every barrier of
  // this loop is one of all 256 consumer threads).
  named_barrier(kBarTall, kConsumerThreads);
  if constexpr (kSc) {
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      sl8(k) = tall_sl[tall_row(k)];
      lim_min = min(lim_min, tall_lim[tall_row(k)]);
      mt(k) = -INFINITY;
      lt(k) = 0.f;
    }
  }
  const int seq0 = seq;
  (void)seq0;  // (trace builds only)
  for (int it = 0; it < item.num_tiles; ++it, ++seq) {
    const int stage = __shfl_sync(0xffffffffu, seq % kStages, 0);
    MLAW_TRACE(seq, 0 + 7 * g);
    mbar_wait(raw + stage, (seq / kStages) & 1);  // the tile's e4m3 bytes landed
    MLAW_TRACE(seq, 1 + 7 * g);
    const uint32_t raw_stage = kv_smem + stage * kKvStageBytes + kRawOffset;
    float cm[8];
    if constexpr (kSc) {
      fence_operands(o);
      issue_scores_t(o, q_smem, raw_stage, warp, lane);
      wgmma_wait<0>();
      fence_operands(o);
      MLAW_TRACE(seq, 2);
      // st(4 j + e): token 16 warp + lane / 4 + 8 (e / 2) of row tall_row(2 j + e % 2)
      const int t_lo = item.kv_start + it * kKvTile + 16 * warp + lane / 4;
      if (t_lo + 8 >= lim_min) {
#pragma unroll
        for (int j = 0; j < kTallRows / 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            if (t_lo + 8 * (e / 2) >= tall_lim[tall_row(2 * j + e % 2)]) st(4 * j + e) = -INFINITY;
      }
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        cm[k] = fmaxf(st(4 * (k / 2) + k % 2), st(4 * (k / 2) + 2 + k % 2));
        cm[k] = fmaxf(cm[k], __shfl_xor_sync(0xffffffffu, cm[k], 4));
        cm[k] = fmaxf(cm[k], __shfl_xor_sync(0xffffffffu, cm[k], 8));
        cm[k] = fmaxf(cm[k], __shfl_xor_sync(0xffffffffu, cm[k], 16));
        if (lane < 4) tall_red[tall_row(k) * 4 + warp] = cm[k];
      }
    }
    // the scorer warps' maxima are in tall_red; both warpgroups' P V reads of the last P, and of
    // its rescale factors, are done
    named_barrier(kBarMax, kConsumerThreads);
    MLAW_TRACE(seq, 3 + 7 * g);
    float a8[8];
    if constexpr (kSc) {
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        const float4 v = *reinterpret_cast<const float4*>(tall_red + tall_row(k) * 4);
        cm[k] = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)) * sl8(k);
      }
#pragma unroll
      for (int k = 0; k < 8; ++k) {
        const float m_use = lazy_max(cm[k], mt(k), lt(k), a8[k]);
        if (warp == 0 && lane < 4) red_max[tall_row(k)] = a8[k];  // for warpgroup 1
#pragma unroll
        for (int h = 0; h < 2; ++h) {  // this thread's two tokens of row tall_row(k)
          const int e = 2 * h + k % 2, j = k / 2;
          const int tok = 16 * warp + lane / 4 + 8 * h;
          const int row = tall_row(k);
          const float pv = fast_exp2(fmaf(st(4 * j + e), sl8(k), -m_use));
          lt(k) += pv;
          // (one element: pack's low half)
          *reinterpret_cast<uint16_t*>(p_ptr + row * kRowBytes + (((tok / 8) ^ (row % 8)) << 4) +
                                       2 * (tok % 8)) = ElementTraits<TG>::pack(pv, 0.f);
        }
      }
      fence_proxy_async();  // P's generic stores before wgmma reads them
      MLAW_TRACE(seq, 4);
    }
    named_barrier(kBarP, kConsumerThreads);  // P written
    MLAW_TRACE(seq, 5 + 7 * g);
    if constexpr (!kSc) {
#pragma unroll
      for (int k = 0; k < 8; ++k) a8[k] = red_max[tall_row(k)];
    }
    bool moved = false;
#pragma unroll
    for (int k = 0; k < 8; ++k) moved = moved || a8[k] != 1.f;
    if (__any_sync(0xffffffffu, moved)) {
#pragma unroll
      for (int i = 0; i < 64; ++i) ot[i] *= a8[2 * (i % 16 / 4) + i % 2];
    }
    fence_operands(ot);
    issue_pv_t(ot, p_smem, raw_stage, g, warp, lane, it == 0);
    wgmma_wait<0>();
    fence_operands(ot);
    MLAW_TRACE(seq, 6 + 7 * g);
    // Every thread releases its own ld.shared reads of the stage (the tall instance's `empty`
    // counts threads, and each producer thread acquires them itself: narrow_tiles' protocol; a
    // warp's one arrival let racecheck flag those reads against the next cp.async writes,
    // logs/sm90_s60_2026-11-29 run 8).
    mbar_arrive(&empty[stage]);
  }
  // The item's end: the rows' sums (four parts, one a scorer warp) and maxima into tall_red and
  // row_m (the scorer). An item of its own (not a cluster pair's half) then stores its rows
  // straight from O^T: a thread holds 8 consecutive columns of each of its 8 rows (issue_pv_t's
  // permutation), one 16-byte store a row, a warp's store 4 rows x 128 contiguous bytes, and
  // each lane of the first warp one row's lse. H200 (session 61, logs/sm90_s61_2026-11-29 runs
  // 3-5): at B=1 L=1024 (one tile an item) the staging through the Q tile took ~1380 clocks and
  // the rows' copy-out ~3500 (the 64-row kernel's epilogue ~3050 in all); stored from the
  // registers, TP4 B=1 from CUDA graphs runs 1.02-1.045x faster, B=8-16 1.01-1.03x, B >= 32
  // 0.99-1.01x. With the lse of 8 rows a lane in a serial loop of one warp's lanes 0-3 (after
  // the stores) it ran 1.01-1.05x slower.
  // A cluster pair's half stages O^T in the Q tile as fp32 first, warpgroup g's 256 columns in
  // [32][kTallPitch] at ob + g * kTallHalf (the score GEMMs are done with Q), trades halves with
  // its partner (tall_pair_exchange), and each warp merges, normalizes and stores whole rows'
  // halves `keep` from there (rows 4 g + warp, + 8, ...) and their lse.
  float* ob = reinterpret_cast<float*>(smem + kSmemQ);
  float* row_m = red_max + kTallRows;  // [32] (after the rescales)
  const bool pair = item.slot <= kSlotPairLow;
  // (block mb's element 4 j + e: row 8 j + 2 (lane % 4) + e % 2, column 64 warp + 8 (lane / 4)
  // + 2 mb + e / 2, issue_pv_t: four consecutive columns of a row from blocks 2 p and 2 p + 1)
  if (pair) {
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e)
#pragma unroll
        for (int p = 0; p < 2; ++p) {
          const int row = 8 * j + 2 * (lane % 4) + e;
          const int i = 4 * j + e;
          *reinterpret_cast<float4*>(ob + g * kTallHalf + row * kTallPitch + 64 * warp +
                                     8 * (lane / 4) + 4 * p) =
              make_float4(ot[32 * p + i], ot[32 * p + i + 2], ot[32 * p + 16 + i],
                          ot[32 * p + 16 + i + 2]);
        }
  }
  if constexpr (kSc) {
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      float l = lt(k);
      l += __shfl_xor_sync(0xffffffffu, l, 4);
      l += __shfl_xor_sync(0xffffffffu, l, 8);
      l += __shfl_xor_sync(0xffffffffu, l, 16);
      if (lane < 4) tall_red[tall_row(k) * 4 + warp] = l;
      if (warp == 0 && lane < 4) row_m[tall_row(k)] = mt(k);
    }
  }
  if (pair) fence_proxy_async();  // (the bulk copy to the partner reads them)
  if (g == 0) MLAW_TRACE(seq0, 21);
  named_barrier(kBarP2, kConsumerThreads);  // the rows' maxima and their sums' parts (and O^T)
  if (g == 0) MLAW_TRACE(seq0, 20);
  if (!pair) {
    const int num_heads = args.num_heads;
    const bool to_out = item.slot < 0;
    T* const base = (to_out ? static_cast<T*>(args.out) + item.qo_start * args.out_stride_token
                            : static_cast<T*>(plan.partial_o) +
                                  static_cast<int64_t>(item.slot) * kTallRows * kHeadDimCkv) +
                    kOutCols * g + 64 * warp + 8 * (lane / 4);
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const int row = tall_row(k), i = 4 * (k / 2) + k % 2;
      const float4 lv = *reinterpret_cast<const float4*>(tall_red + row * 4);
      const float l = (lv.x + lv.y) + (lv.z + lv.w);
      float inv = l > 0.f ? 1.f / l : 0.f;
      if constexpr (kE4m3) inv *= args.ckv_scale;  // (lse stays: the scores were scaled)
      if (row < item.valid_rows) {
        const int grow = item.row0 + row;
        T* dst = base + (to_out ? heads.div(grow) * args.out_stride_token +
                                      heads.mod(grow, num_heads) * args.out_stride_head
                                : static_cast<int64_t>(row) * kHeadDimCkv);
        *reinterpret_cast<uint4*>(dst) =
            make_uint4(ElementTraits<T>::pack(ot[i] * inv, ot[i + 2] * inv),
                       ElementTraits<T>::pack(ot[16 + i] * inv, ot[18 + i] * inv),
                       ElementTraits<T>::pack(ot[32 + i] * inv, ot[34 + i] * inv),
                       ElementTraits<T>::pack(ot[48 + i] * inv, ot[50 + i] * inv));
      }
    }
    // the rows' lse: the first warp, a row a lane (k = lane / 4)
    if (g == 0 && warp == 0) {
      const int row = tall_row(lane / 4);
      if (row < item.valid_rows) {
        const float4 lv = *reinterpret_cast<const float4*>(tall_red + row * 4);
        const float l = (lv.x + lv.y) + (lv.z + lv.w);
        const int grow = item.row0 + row;
        store_row_lse<kTallRows>(plan, args, item.slot, row, item.qo_start + heads.div(grow),
                                 heads.mod(grow, num_heads),
                                 l > 0.f ? row_m[row] + log2f(l) : -INFINITY);
      }
    }
    if (g == 0) MLAW_TRACE(seq0, 19);
    return;
  }
  const int keep = mlaw_pair_high(item.slot);
  const int out_slot = mlaw_pair_out_slot(item.slot);  // < 0: out
  // the partner's half `keep` of O^T, its sums' parts and maxima (tall_pair_exchange)
  const float* peer_o = reinterpret_cast<const float*>(smem + kXchgRecv);
  const float* peer_red = peer_o + kTallHalf;
  const float* peer_m = peer_red + 4 * kTallRows;
  tall_pair_exchange(smem, ob + (1 - keep) * kTallHalf, tall_red, row_m, full + 2 * kStages,
                     full + 2 * kStages + 1, g == 0 && warp == 0 && lane == 0);
  if (g == 0) MLAW_TRACE(seq0, 23);
  const int num_heads = args.num_heads;
  for (int row = 4 * g + warp; row < item.valid_rows; row += 8) {
    const float4 lv = *reinterpret_cast<const float4*>(tall_red + row * 4);
    const float4 pv = *reinterpret_cast<const float4*>(peer_red + row * 4);
    const float m = row_m[row], mp = peer_m[row];
    const float mx = fmaxf(m, mp);
    // the weights of this CTA's O and of the partner's
    float w_own = m == -INFINITY ? 0.f : exp2f(m - mx);
    float w_peer = mp == -INFINITY ? 0.f : exp2f(mp - mx);
    const float l = ((lv.x + lv.y) + (lv.z + lv.w)) * w_own + ((pv.x + pv.y) + (pv.z + pv.w)) *
                                                                  w_peer;
    float inv = l > 0.f ? 1.f / l : 0.f;
    if constexpr (kE4m3) inv *= args.ckv_scale;  // (lse stays: the scores were scaled)
    w_own *= inv;
    w_peer *= inv;
    const int grow = item.row0 + row;
    const int64_t token = item.qo_start + heads.div(grow);
    const int64_t head = heads.mod(grow, num_heads);
    if (lane == 0 && keep == 0)
      store_row_lse<kTallRows>(plan, args, out_slot, row, token, head,
                               l > 0.f ? mx + log2f(l) : -INFINITY);
    T* dst = out_slot < 0 ? static_cast<T*>(args.out) + token * args.out_stride_token +
                                head * args.out_stride_head
                          : static_cast<T*>(plan.partial_o) +
                                (static_cast<int64_t>(out_slot) * kTallRows + row) * kHeadDimCkv;
    // Each lane 4 columns of each 128 of the half `keep`: a warp's shared-memory reads and
    // global stores are 512 / 256 contiguous bytes each.
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      const int c = row * kTallPitch + 128 * q + 4 * lane;
      const float4 v = *reinterpret_cast<const float4*>(ob + keep * kTallHalf + c);
      const float4 u = *reinterpret_cast<const float4*>(peer_o + c);
      *reinterpret_cast<uint2*>(dst + keep * kOutCols + 128 * q + 4 * lane) = make_uint2(
          ElementTraits<T>::pack(v.x * w_own + u.x * w_peer, v.y * w_own + u.y * w_peer),
          ElementTraits<T>::pack(v.z * w_own + u.z * w_peer, v.w * w_own + u.w * w_peer));
    }
  }
  if (g == 0) MLAW_TRACE(seq0, 19);
}

}  // namespace sm90
}  // namespace mlaw
