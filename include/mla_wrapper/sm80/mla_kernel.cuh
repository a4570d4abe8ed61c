// The portable (SM80+) MLA attention kernel: persistent CTAs walking the plan's work list.
// Templated on a KvConfig<KV tile, stages> (config.h): 64x2 on SM90-class GPUs, 32x2 on A100,
// 16x1 on Ada; the text below describes 64x2 (other tiles: kKvTile tokens, kStages stages).
//
// Schedule of one CTA (256 threads = 8 warps, one CTA per SM, 226 KB of shared memory):
//   as it starts (SM90+): griddepcontrol.launch_dependents, so that a separate combine kernel
//     (fallback path, launcher.cuh) is launched early (programmatic dependent launch; it waits
//     for this grid before reading).
//   for each work item (request r, row tile t, kv range [kv_start, kv_end), partial slot):
//     cp.async the Q tile (64 rows x 576, rows = (query token, head)) with KV tile 0, then
//     tiles 1 .. kStages-2 (one cp.async group per tile).
//     for each KV tile i of 64 tokens (tiles i+1 .. i+kStages-1 in flight while i is computed):
//       wait for tile i; __syncthreads; issue tile i+kStages-1 into the stage tile i-1 used
//       (16-byte cp.async gathers through the page table; the page ids of the tile after it
//       are prefetched into registers meanwhile). 1 stage: the next tile is issued after the
//       output phase (no overlap; the 99 KB config).
//       scores: warp (g = w % 4, half = w / 4) computes S[16 rows of g, 32 tokens of half]
//         over all 576 columns (mma.sync m16n8k16, Q and K by ldmatrix, fragments of k-step
//         kk+1 loaded while the MMAs of kk run), scales by
//         sm_scale * log2(e), masks (kv_end, causal limit per row), exchanges its row max with
//         the other half through shared memory (named barrier of the pair), computes
//         P = exp2(S - m), keeps a per-thread partial row sum and writes P (16-bit) and the
//         rescale factor alpha of each row to shared memory. (16-token tiles: warps 0-3 only,
//         16 rows x 16 tokens each, no exchange.)
//       __syncthreads_or (also tells whether any valid row's max moved; if none, no rescale)
//       output: warp w rescales O[64 rows, columns 64w..64w+63] (128 fp32 registers/thread)
//         by alpha and accumulates P[64 x 64] V[64 x 64w..] (V = first 512 columns of the
//         same KV tile, ldmatrix.trans); row blocks of 16 past the tile's valid rows are
//         skipped (H = 16 decode does 1/4 of the MMAs).
//     epilogue: row sums of the two halves are added, O /= l, lse = m + log2(l); written to
//       out/lse (partial_slot < 0) or to the float32 partial slot (base 2 lse).
//   fused combine (fused_combine = 1, cooperative launch): once its work items are done, when
//     the plan has merge items (plan.counts[1] > 0, the same for every CTA), the CTA waits at a
//     grid barrier (cooperative_groups grid sync: every CTA's partials are written and
//     visible), then every warp of the grid merges (merge item, row) pairs (combine_rows,
//     combine_kernel.cuh). One launch instead of attention + combine.
// Rows of the tile past the request's rows, and tokens past a row's limit, are masked; a row
// that sees nothing ends with l = 0 and writes o = 0, lse = -inf.
#pragma once

#include <cooperative_groups.h>
#include <math.h>

#include "mla_wrapper/common/kv_access.cuh"
#include "mla_wrapper/common/pdl.cuh"
#include "mla_wrapper/common/plan.h"
#include "mla_wrapper/common/q_rows.cuh"
#include "mla_wrapper/sm80/combine_kernel.cuh"
#include "mla_wrapper/sm80/config.h"
#include "mla_wrapper/sm80/traits.cuh"

// Row tiles with at most this many valid rows refill the KV ring before waiting for the
// current tile (see the main loop). Off (0): measured on an H200 (2026-11-22), it did not
// help H = 16 (-2..+1%: the cp.async stream is not limited by bytes in flight) and costs
// compute-bound tiles a barrier (-3%). Kept as a knob for experiments.
#ifndef MLAW_SM80_EARLY_REFILL_ROWS
#define MLAW_SM80_EARLY_REFILL_ROWS 0
#endif

namespace mlaw {
namespace sm80 {

template <typename Cfg>
struct SmemLayout {
  char* q;
  char* kv;         // kStages x [kKvTile][576]
  char* p;          // [kRowsPerTile][kKvTile]
  float* red_max;   // [kScoreHalves][kRowsPerTile]: row max of each half (this tile)
  float* alpha;     // [kRowsPerTile]: rescale factor of O for this tile
  float* red_sum;   // [kScoreHalves][kRowsPerTile]: final row sums
  float* row_max;   // [kRowsPerTile]: final running max (log2 units)

  __device__ __forceinline__ explicit SmemLayout(char* base) {
    q = base;
    kv = q + kQBytes;
    p = kv + Cfg::kStages * Cfg::kKvStageBytes;
    red_max = reinterpret_cast<float*>(p + Cfg::kPBytes);
    alpha = red_max + Cfg::kScoreHalves * kRowsPerTile;
    red_sum = alpha + kRowsPerTile;
    row_max = red_sum + Cfg::kScoreHalves * kRowsPerTile;
  }
};

// Page ids of the tokens this thread copies for the tile starting at t0, as loaded (kvm.fetch;
// load_kv_tile applies kvm.checked: a check here would wait for the loads before the cp.async
// group's commit, common/kv_access.cuh).
template <typename Cfg, typename Kv>
__device__ __forceinline__ void tile_pages(const Kv& kvm, const MlaRunArgs& args, int page_start,
                                           int t0, int kv_end, int tid,
                                           int (&page)[Cfg::kLoadPasses]) {
#pragma unroll
  for (int p = 0; p < Cfg::kLoadPasses; ++p) {
    const int j = tid / 8 + 32 * p;
    page[p] = j < Cfg::kKvTile ? kvm.fetch(args, page_start, t0 + j, kv_end) : -1;
  }
}

// Each thread copies tokens tid / 8 + 32 p x 9 chunks (tid % 8 + 8 k) of a KV tile: 8
// consecutive threads read 128 contiguous bytes of one token. (16-token tiles: threads
// 128..255 copy nothing.)
template <typename T, typename Cfg, typename Kv>
__device__ __forceinline__ void load_kv_tile(const Kv& kvm, const MlaRunArgs& args, char* stage,
                                             int t0, const int (&page)[Cfg::kLoadPasses],
                                             int tid) {
#pragma unroll
  for (int p = 0; p < Cfg::kLoadPasses; ++p) {
    const int j = tid / 8 + 32 * p;
    if (Cfg::kKvTile < 32 && j >= Cfg::kKvTile) continue;
    const int id = kvm.checked(page[p]);
    const bool valid = id >= 0;
    const int t = t0 + j;
    const int64_t pg = valid ? id : 0;
    const int64_t off = valid ? (t % args.page_size) : 0;
    const T* ckv_row = static_cast<const T*>(args.ckv) + pg * args.ckv_stride_page +
                       off * args.ckv_stride_token;
    const T* kpe_row = static_cast<const T*>(args.kpe) + pg * args.kpe_stride_page +
                       off * args.kpe_stride_token;
#pragma unroll
    for (int k = 0; k < kChunksPerRow / 8; ++k) {
      const int c = (tid % 8) + 8 * k;
      const T* src = c < kHeadDimCkv / 8 ? ckv_row + c * 8 : kpe_row + (c - kHeadDimCkv / 8) * 8;
      cp_async_16(stage + qkv_offset(j, c), src, valid);
    }
  }
}

// Loads Q rows [0, load_rows) (rows past valid_rows as zeros).
template <typename T>
__device__ __forceinline__ void load_q_tile(const MlaRunArgs& args, char* sq, int qo_start,
                                            int row0, int valid_rows, int load_rows, int tid) {
  for (int idx = tid; idx < load_rows * kChunksPerRow; idx += kThreads) {
    const int r = idx / kChunksPerRow;
    const int c = idx % kChunksPerRow;
    const bool valid = r < valid_rows;
    const T* src = valid ? q_chunk_ptr<T>(args, qo_start, row0 + r, c)
                         : static_cast<const T*>(args.q_nope);
    cp_async_16(sq + qkv_offset(r, c), src, valid);
  }
}

// O[16 kMi rows, 64 columns of this warp] += P[16 kMi x kKvTile] V[kKvTile x 64 columns]; all
// fragments of a 16-token step are loaded before its MMAs so the loads of step ks + 1 can be
// hoisted above the MMAs of ks.
template <typename T, typename Cfg, int kMi>
__device__ __forceinline__ void accumulate_pv(float (&acc)[4][8][4], const char* sp,
                                              const char* skv, int warp, int lane) {
  constexpr int kSteps = Cfg::kKvTile / 16;
  // Per-thread swizzled offsets (see qkv_offset / p_offset); the rest are immediates.
  const char* vptr[4];
  const char* pptr[kSteps];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const int tok = (lane % 8) + ((lane / 8) % 2) * 8;
    vptr[j] = skv + tok * kRowBytes + (kOutColsPerWarp / 8) * warp * 16 +
              (((2 * j + lane / 16) ^ (lane % 8)) << 4);
  }
#pragma unroll
  for (int ks = 0; ks < kSteps; ++ks)
    pptr[ks] = sp + p_offset<Cfg::kPChunks>(lane % 16, 2 * ks + lane / 16);
#pragma unroll
  for (int ks = 0; ks < kSteps; ++ks) {
    uint32_t b[4][4];
    uint32_t a[kMi][4];
#pragma unroll
    for (int np = 0; np < 4; ++np) ldsm_x4_trans(vptr[np] + ks * 16 * kRowBytes, b[np]);
#pragma unroll
    for (int mi = 0; mi < kMi; ++mi) ldsm_x4(pptr[ks] + mi * 16 * (Cfg::kKvTile * 2), a[mi]);
#pragma unroll
    for (int mi = 0; mi < kMi; ++mi)
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        mma_16816<T>(acc[mi][2 * np], a[mi], b[np][0], b[np][1]);
        mma_16816<T>(acc[mi][2 * np + 1], a[mi], b[np][2], b[np][3]);
      }
  }
}

// S[16 rows, kTokW tokens] += Q K^T over k-steps [K0, K0 + NK) of 16 columns. Fragments of
// k-step kk+1 are loaded while the MMAs of kk run (fully unrolled, so the double buffer lives
// in registers). Swizzled addresses: chunk 2 kk + x of row r sits at ((2 kk + x) ^ (r & 7)) *
// 16, i.e. a per-thread offset for kk % 4 (qptr / kptr) plus the compile-time (kk / 4) * 128.
template <typename T, int kTokW, int K0, int NK>
__device__ __forceinline__ void score_mma(float (&s)[kTokW / 8][4], const char* const (&qptr)[4],
                                          const char* const (&kptr)[4]) {
  uint32_t a[2][4], b[2][kTokW / 16][4];
  auto load_frags = [&](int kk, int buf) {
    ldsm_x4(qptr[kk % 4] + (kk / 4) * 128, a[buf]);
#pragma unroll
    for (int np = 0; np < kTokW / 16; ++np)
      ldsm_x4(kptr[kk % 4] + (kk / 4) * 128 + np * 16 * kRowBytes, b[buf][np]);
  };
  load_frags(K0, 0);
#pragma unroll
  for (int i = 0; i < NK; ++i) {
    const int cur = i & 1;
    if (i + 1 < NK) load_frags(K0 + i + 1, cur ^ 1);
#pragma unroll
    for (int np = 0; np < kTokW / 16; ++np) {
      mma_16816<T>(s[2 * np], a[cur], b[cur][np][0], b[cur][np][1]);
      mma_16816<T>(s[2 * np + 1], a[cur], b[cur][np][2], b[cur][np][3]);
    }
  }
}

template <typename T, typename Cfg, typename Kv = PagedKv>
__global__ void __launch_bounds__(kThreads, 1)
    mla_attention_kernel(const MlaPlan plan, const MlaRunArgs args, const int fused_combine,
                         const Kv kvm) {
  constexpr int kKvTile = Cfg::kKvTile;
  constexpr int kStages = Cfg::kStages;
  constexpr int kScoreHalves = Cfg::kScoreHalves;
  constexpr int kTokW = Cfg::kScoreTokensPerWarp;  // score tokens per warp (16 or 32)
  constexpr int kNi = kTokW / 8;                   // n-tiles of 8 tokens per score warp
  constexpr int kPasses = Cfg::kLoadPasses;
  extern __shared__ __align__(128) char smem_raw[];
  SmemLayout<Cfg> sm(smem_raw);
  launch_dependents();  // the combine kernel (it waits for this grid before reading)

  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int g = warp % kScoreRowGroups;    // score phase: row group
  const int half = warp / kScoreRowGroups; // score phase: token half
  const bool score_warp = warp < Cfg::kScoreWarps;
  const float scale_log2 = args.sm_scale * 1.4426950408889634f;
  const int num_heads = args.num_heads;

  const int w_begin = plan.cta_work_indptr[blockIdx.x];
  const int w_end = plan.cta_work_indptr[blockIdx.x + 1];

  for (int w = w_begin; w < w_end; ++w) {
    const int* wi = plan.work_info + w * kWorkFields;
    const int row_tile = wi[kWorkRowTile];
    const int kv_start = wi[kWorkKvStart];
    const int qo_start = wi[kWorkQoStart];  // the request's fields, carried by the item
    const int kv_end = kvm.clamp_kv_end(qo_start, wi[kWorkKvEnd]);
    const int slot = wi[kWorkPartialSlot];
    const int qo_len = wi[kWorkQoLen];
    const int kv_len = wi[kWorkKvLen];
    const int page_start = wi[kWorkPageStart];
    const int row0 = row_tile * kRowsPerTile;
    const int valid_rows = min(kRowsPerTile, qo_len * num_heads - row0);
    const int num_tiles = kv_end > kv_start ? (kv_end - kv_start + kKvTile - 1) / kKvTile : 0;
    const bool early_refill = valid_rows <= MLAW_SM80_EARLY_REFILL_ROWS;

    __syncthreads();  // the previous work item is done with every shared buffer

    // Prologue: Q with tile 0 (one cp.async group), then tiles 1 .. kStages - 2 (one group
    // each, empty past the end, so that group i always holds tile i).
    int page_next[kPasses];  // pages of the next tile to issue (tile `issued`)
    int issued = 0;
    if (num_tiles > 0)
      load_q_tile<T>(args, sm.q, qo_start, row0, valid_rows, kRowsPerTile, tid);
    tile_pages<Cfg>(kvm, args, page_start, kv_start, kv_end, tid, page_next);
#pragma unroll
    for (int s = 0; s < (kStages > 1 ? kStages - 1 : 1); ++s) {
      if (issued < num_tiles) {
        load_kv_tile<T, Cfg>(kvm, args, sm.kv + s * Cfg::kKvStageBytes, kv_start + issued * kKvTile,
                             page_next, tid);
        ++issued;
        tile_pages<Cfg>(kvm, args, page_start, kv_start + issued * kKvTile, kv_end, tid, page_next);
      }
      cute::cp_async_fence();
    }

    // Score-phase rows of this thread and their exclusive kv limits.
    int srow[2], limit[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      srow[r] = 16 * g + lane / 4 + 8 * r;
      if (srow[r] < valid_rows) {
        const int i = (row0 + srow[r]) / num_heads;
        const int lim = args.causal ? kv_len - qo_len + i + 1 : kv_len;
        limit[r] = min(lim, kv_end);
      } else {
        limit[r] = 0;  // masks every token (tokens are >= kv_start >= 0)
      }
    }
    const bool score_active = score_warp && 16 * g < valid_rows;
    float m_run[2] = {-INFINITY, -INFINITY};  // running row max, log2 units
    float l_run[2] = {0.f, 0.f};              // this thread's partial row sums

    float acc[4][8][4];
#pragma unroll
    for (int mi = 0; mi < 4; ++mi)
#pragma unroll
      for (int ni = 0; ni < 8; ++ni)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[mi][ni][e] = 0.f;

    for (int it = 0; it < num_tiles; ++it) {
      if constexpr (kStages > 1) {
        auto refill = [&]() {  // the stage that tile it-1 used gets tile it + kStages - 1
          if (issued < num_tiles) {
            load_kv_tile<T, Cfg>(kvm, args, sm.kv + (issued % kStages) * Cfg::kKvStageBytes,
                                 kv_start + issued * kKvTile, page_next, tid);
            ++issued;
            tile_pages<Cfg>(kvm, args, page_start, kv_start + issued * kKvTile, kv_end, tid,
                            page_next);
          }
          cute::cp_async_fence();
        };
        if (early_refill) {
          // Memory-bound tiles (few rows): refill before waiting for tile `it`, so that the
          // next tile's requests are in flight while this one's last bytes arrive (one more
          // barrier per tile; with 2 stages this doubles the bytes in flight).
          __syncthreads();  // everyone is done with tile it-1 and P
          refill();
          cute::cp_async_wait<kStages - 1>();  // tile `it` has landed (this thread's part)
          __syncthreads();  // tile `it` visible to all
        } else {
          cute::cp_async_wait<kStages - 2>();  // tile `it` has landed (this thread's part)
          __syncthreads();  // tile `it` visible to all; everyone is done with tile it-1 and P
          refill();
        }
      } else {
        cute::cp_async_wait<0>();
        __syncthreads();
      }
      const int t0 = kv_start + it * kKvTile;
      const char* skv = sm.kv + (it % kStages) * Cfg::kKvStageBytes;

      // ---- scores: S[16 rows of g, kTokW tokens of half] over 576 columns ----
      float s[kNi][4];
#pragma unroll
      for (int ni = 0; ni < kNi; ++ni)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[ni][e] = 0.f;
      int rescale = 0;
      if (score_warp) {
        const int tok_base = t0 + kTokW * half + 2 * (lane % 4);
        // Gather mode: the slot ids of this thread's tokens, loaded before the MMAs so that their
        // latency hides behind them, and checked (kvm.checked) only at the masking after them.
        int slot[kNi][2] = {};
        if constexpr (Kv::kMaskInvalid) {
#pragma unroll
          for (int ni = 0; ni < kNi; ++ni)
#pragma unroll
            for (int e = 0; e < 2; ++e)
              slot[ni][e] = kvm.fetch(args, page_start, tok_base + 8 * ni + e, kv_end);
        }
        if (score_active) {
          const int a_row = 16 * g + lane % 16;
          const int b_tok = kTokW * half + (lane % 8) + (lane / 16) * 8;
          const char* qptr[4];
          const char* kptr[4];
#pragma unroll
          for (int j = 0; j < 4; ++j) {
            qptr[j] = sm.q + a_row * kRowBytes + (((2 * j + lane / 16) ^ (a_row & 7)) << 4);
            kptr[j] = skv + b_tok * kRowBytes + (((2 * j + (lane / 8) % 2) ^ (b_tok & 7)) << 4);
          }
          score_mma<T, kTokW, 0, kHeadDimQk / 16>(s, qptr, kptr);
        }
        float mx[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const bool need_mask = t0 + kKvTile > limit[r];
          mx[r] = -INFINITY;
#pragma unroll
          for (int ni = 0; ni < kNi; ++ni)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              float v = s[ni][2 * r + e] * scale_log2;
              if (need_mask && tok_base + 8 * ni + e >= limit[r]) v = -INFINITY;
              if (Kv::kMaskInvalid && kvm.checked(slot[ni][e]) < 0) v = -INFINITY;
              s[ni][2 * r + e] = v;
              mx[r] = fmaxf(mx[r], v);
            }
          mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
          mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
          if (kScoreHalves > 1 && lane % 4 == 0) sm.red_max[half * kRowsPerTile + srow[r]] = mx[r];
        }
        if constexpr (kScoreHalves > 1) named_barrier(1 + g, 64);  // the two warps of group g
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const float other =
              kScoreHalves > 1 ? sm.red_max[(1 - half) * kRowsPerTile + srow[r]] : -INFINITY;
          const float m_new = fmaxf(m_run[r], fmaxf(mx[r], other));
          const float m_use = m_new == -INFINITY ? 0.f : m_new;
          const float alpha = fast_exp2(m_run[r] - m_use);
          m_run[r] = m_new;
          float sum = 0.f;
#pragma unroll
          for (int ni = 0; ni < kNi; ++ni)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const float p = fast_exp2(s[ni][2 * r + e] - m_use);
              s[ni][2 * r + e] = p;
              sum += p;
            }
          l_run[r] = l_run[r] * alpha + sum;
          if (half == 0 && lane % 4 == 0) sm.alpha[srow[r]] = alpha;
          rescale |= alpha != 1.f && srow[r] < valid_rows;
#pragma unroll
          for (int ni = 0; ni < kNi; ++ni) {
            const int chunk = (kTokW / 8) * half + ni;
            *reinterpret_cast<uint32_t*>(sm.p + p_offset<Cfg::kPChunks>(srow[r], chunk) +
                                         4 * (lane % 4)) =
                ElementTraits<T>::pack(s[ni][2 * r], s[ni][2 * r + 1]);
          }
        }
      }
      // P and alpha of every row are ready; skip the rescale when no row max moved.
      rescale = __syncthreads_or(rescale);

      // ---- output: O[64 rows, 64 columns of this warp] = alpha * O + P V ----
      if (rescale) {
#pragma unroll
        for (int mi = 0; mi < 4; ++mi) {
          const float a0 = sm.alpha[16 * mi + lane / 4];
          const float a1 = sm.alpha[16 * mi + lane / 4 + 8];
#pragma unroll
          for (int ni = 0; ni < 8; ++ni) {
            acc[mi][ni][0] *= a0;
            acc[mi][ni][1] *= a0;
            acc[mi][ni][2] *= a1;
            acc[mi][ni][3] *= a1;
          }
        }
      }
      // Row tiles of H = 16 / 32 / 48 rows (decode with few heads) skip the empty row blocks.
      if (valid_rows > 48) {
        accumulate_pv<T, Cfg, 4>(acc, sm.p, skv, warp, lane);
      } else if (valid_rows > 32) {
        accumulate_pv<T, Cfg, 3>(acc, sm.p, skv, warp, lane);
      } else if (valid_rows > 16) {
        accumulate_pv<T, Cfg, 2>(acc, sm.p, skv, warp, lane);
      } else {
        accumulate_pv<T, Cfg, 1>(acc, sm.p, skv, warp, lane);
      }
      if constexpr (kStages == 1) {  // one stage: load the next tile once everyone is done
        if (it + 1 < num_tiles) {
          __syncthreads();
          load_kv_tile<T, Cfg>(kvm, args, sm.kv, kv_start + issued * kKvTile, page_next, tid);
          ++issued;
          tile_pages<Cfg>(kvm, args, page_start, kv_start + issued * kKvTile, kv_end, tid, page_next);
          cute::cp_async_fence();
        }
      }
    }
    cute::cp_async_wait<0>();  // nothing may still write Q when the next item starts

    // ---- epilogue ----
    if (score_warp) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float l = l_run[r];
        l += __shfl_xor_sync(0xffffffffu, l, 1);
        l += __shfl_xor_sync(0xffffffffu, l, 2);
        if (lane % 4 == 0) {
          sm.red_sum[half * kRowsPerTile + srow[r]] = l;
          if (half == 0) sm.row_max[srow[r]] = m_run[r];
        }
      }
    }
    __syncthreads();

    auto row_sum = [&](int row) {
      float l = sm.red_sum[row];
      if (kScoreHalves > 1) l += sm.red_sum[kRowsPerTile + row];
      return l;
    };
#pragma unroll
    for (int mi = 0; mi < 4; ++mi)
#pragma unroll
      for (int rr = 0; rr < 2; ++rr) {
        const int row = 16 * mi + lane / 4 + 8 * rr;
        if (row >= valid_rows) continue;
        const float l = row_sum(row);
        const float inv = l > 0.f ? 1.f / l : 0.f;
        const int col0 = kOutColsPerWarp * warp + 2 * (lane % 4);
        if (slot < 0) {
          const int grow = row0 + row;
          const int64_t token = qo_start + grow / num_heads;
          const int64_t head = grow % num_heads;
          T* dst = static_cast<T*>(args.out) + token * args.out_stride_token +
                   head * args.out_stride_head + col0;
#pragma unroll
          for (int ni = 0; ni < 8; ++ni)
            *reinterpret_cast<uint32_t*>(dst + 8 * ni) = ElementTraits<T>::pack(
                acc[mi][ni][2 * rr] * inv, acc[mi][ni][2 * rr + 1] * inv);
        } else {
          float* dst = static_cast<float*>(plan.partial_o) +
                       (static_cast<int64_t>(slot) * kRowsPerTile + row) * kHeadDimCkv + col0;
#pragma unroll
          for (int ni = 0; ni < 8; ++ni)
            *reinterpret_cast<float2*>(dst + 8 * ni) =
                make_float2(acc[mi][ni][2 * rr] * inv, acc[mi][ni][2 * rr + 1] * inv);
        }
      }
    if (tid < valid_rows) {
      const float l = row_sum(tid);
      const float lse2 = l > 0.f ? sm.row_max[tid] + log2f(l) : -INFINITY;
      const int grow = row0 + tid;
      const int64_t token = qo_start + grow / num_heads;
      const int head = grow % num_heads;
      store_row_lse<kRowsPerTile>(plan, args, slot, tid, token, head, lse2);
      if (slot < 0) kvm.store_max_logit(token, head, sm.row_max[tid]);
    }
  }

  // ---- fused split-KV combine (cooperative launch only) ----
  if (fused_combine && plan.counts[1] > 0) {
    cooperative_groups::this_grid().sync();  // all partials of the grid written and visible
    combine_rows<T, float, kFusedCombineSlotBatch, 1>(plan, args, blockIdx.x * kWarps + warp,
                                                      gridDim.x * kWarps);
  }
}

}  // namespace sm80
}  // namespace mlaw
