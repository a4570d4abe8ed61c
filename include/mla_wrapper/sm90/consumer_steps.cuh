// The steps of the sm90 kernel's consumer warpgroups (mla_kernel.cuh's schedule) that consume()
// and narrow_tiles build on: the two GEMMs' issue, Q's loads and its f16 conversion for an e4m3
// cache, the lazy running max and a cluster pair's on-chip merge (the named barrier ids:
// config.h).
#pragma once

#include <math.h>
#include <type_traits>
#include "mla_wrapper/common/plan.h"
#include "mla_wrapper/common/q_rows.cuh"
#include "mla_wrapper/sm90/config.h"
#include "mla_wrapper/sm90/dev.cuh"
#include "mla_wrapper/sm90/traits.cuh"
#include "mla_wrapper/sm90/work.cuh"

namespace mlaw {
namespace sm90 {

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
// stay as they are (their scores are masked) with the plain score scale; zeros written there
// instead, for a quieter A operand of the score GEMM (session 57, H200,
// logs/sm90_s57_2026-11-28 run 5, qzero.patch): H=32 rows 1.00-1.016x, H=64 0.98-1.003x, not
// kept. Fast path (session
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
// (kBarQF16, config.h: the conversion's phases)
// The fast path's bounds on each thread's row maxima (see above).
constexpr float kQF16FastMin = 0.0625f;   // 2^-4
constexpr float kQF16FastMax = 32768.f;   // 2^15
// kNarrow and narrow (an item narrow_tiles runs): sl is the scale of rows lane / 4 and
// lane / 4 + 8 (every consumer warp scores rows 0-15 there), not of `rows`.
// kPairPermute (the tall instance, tall.cuh issue_scores_t): within each 16 columns the Q tile
// holds column 4 q + 2 h + e at 8 h + 2 q + e (q < 4, h, e < 2), so that the score GEMM's A
// fragment of a k-step (K's columns 2 q, 2 q + 1, 2 q + 8, 2 q + 9) is one 4-byte word of an
// e4m3 row: the chunks 2 m and 2 m + 1 of a row are lanes l and l ^ 1's, which trade two words.
template <typename T, bool kNarrow = false, bool kPairPermute = false>
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
  // (kPairPermute: every lane calls it, and stores where `store`)
  auto store_f16 = [&](int row, int b, const uint4& v, bool scaled, float f, bool store = true) {
    const uint32_t w[4] = {v.x, v.y, v.z, v.w};
    uint32_t h[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 x = ElementTraits<T>::unpack(w[i]);
      h[i] = scaled ? ElementTraits<__half>::pack(x.x * f, x.y * f)
                    : ElementTraits<__half>::pack(x.x, x.y);
    }
    if constexpr (kPairPermute) {  // chunk 2 m: words 0, 2 of 2 m and 2 m + 1; 2 m + 1: 1, 3
      const bool odd = lane & 1;
      const uint32_t r0 = __shfl_xor_sync(0xffffffffu, odd ? h[0] : h[1], 1);
      const uint32_t r1 = __shfl_xor_sync(0xffffffffu, odd ? h[2] : h[3], 1);
      if (odd) {
        h[0] = r0, h[2] = h[1], h[1] = r1;  // (r0, r1, h1, h3)
      } else {
        h[1] = h[2], h[2] = r0, h[3] = r1;  // (h0, h2, r0, r1)
      }
    }
    if (store) *chunk(row, b) = make_uint4(h[0], h[1], h[2], h[3]);
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
      if (kPairPermute) {
#pragma unroll
        for (int b = 0; b < kColBlocks; ++b)
          store_f16(rows[r], b, c[r][b], b == kColBlocks - 1, rope_scale, valid[r]);
      } else if (valid[r]) {
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
      if (kPairPermute || valid[r]) {
#pragma unroll
        for (int b = 0; b < kColBlocks; ++b) {
          store_f16(row, b, c[r][b], true, b == kColBlocks - 1 ? pow2 * rope_scale : pow2,
                    valid[r]);
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

// A CTA's next item's Q by TMA as soon as its current item's last score GEMM is done with the Q
// tile (kEarlyQ, an instance of the paged kernel with Q by TMA that the launcher picks for grids of
// several items a CTA: launcher.cuh early_q_for): that item's epilogue then stages its rows in the
// KV stage of its last tile, released after the copy-out, instead of in the Q tile (see
// mla_kernel.cuh's schedule). The code costs one-item CTAs even where it does not run (B=1 from
// CUDA graphs 1.02-1.03x slower, H100, logs/sm90_s38_2026-11-27 run 12), hence the instance. 0:
// never (A/B builds).
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

}  // namespace sm90
}  // namespace mlaw
