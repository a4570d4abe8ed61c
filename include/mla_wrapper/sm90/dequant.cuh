// The producer's widening of an e4m3 cache's tiles in shared memory (mla_kernel.cuh's schedule:
// an FP8 cache), for the paged kernel and the gather mode, FlashMLA's fp8 rows included.
#pragma once

#include "mla_wrapper/sm90/config.h"
#include "mla_wrapper/sm90/dev.cuh"
#include "mla_wrapper/sm90/traits.cuh"

namespace mlaw {
namespace sm90 {

// History (sm90_history.md, moved from mla_kernel.cuh): sessions 41-42 widened to the query's type
// (bf16: cvt to f16, to f32, pack: ~34 issue clocks a 16-byte chunk) and multiplied the rope block;
// on the H200 a tile took 2565 clocks to widen (period 4521 at H=128 B=128 L=4096, 16-bit 3522),
// memory rows 0.95-1.02x fa3, compute 0.81-0.94x (logs/sm90_s42_2026-11-28). f16 GEMMs (session 43,
// logs/sm90_s43_2026-11-28, H200, A/B against that build on the same tensors): compute rows
// 1.09-1.10x faster, memory and middle rows 1.07-1.08x, B=1 0.92-0.96x from a CUDA graph (the Q
// conversion, ~4300 clocks an item then, ~3300 since session 44, outlasts the first tile's widening
// there; ~2800 at H=128 since session 50, ending before it); period 4040, widening 1930-2100 clocks
// (eight loads of a thread in flight, three barriers). Not kept: an mbarrier per TMA box
// (0.96-0.97x), a widening by bit moves (slower), the next tile's boxes issued between the
// widening's phases (0.93-0.97x), Q converted by the scorer alone or with its loop unrolled
// (~5700-6400 clocks an item); a cp.async tile's copies issued by each producer thread between the
// widening's phases once it saw the stage free (session 45: page 1 0.90-0.92x at B >= 64, the
// gather mode equal; logs/sm90_s45_2026-11-28 run 7), although its trace (run 6) showed the stage
// free ~1000-1350 clocks before the widening ended and a tile taking issue -> landed ~2440 +
// widening ~1700-2100 clocks. Nor (session 56, logs/sm90_s56_2026-11-28 run 2, e4m3_ldg.patch) the
// wide instance's tiles read by the producer's threads straight from global memory into registers
// (16-byte loads, no e4m3 bytes landing in shared memory, 8 or 4 of a thread in flight within its
// 72 registers; correct): 0.59-0.78x as fast at H=32-128 (4 in flight: 0.53-0.69x). ~16 KB in
// flight an SM is latency-bound where a TMA box has a whole tile in flight.
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
// (kBarWiden, config.h: the phases' barrier)
__device__ __forceinline__ uint32_t lds32(uint32_t addr) {
  uint32_t v;
  asm volatile("ld.shared.u32 %0, [%1];" : "=r"(v) : "r"(addr) : "memory");
  return v;
}
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
  if (MLAW_SM90_PROBE_NO_WIDEN) {
    MLAW_TRACE(seq, 28);
    mbar_arrive(full);
    return;
  }
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

}  // namespace sm90
}  // namespace mlaw
