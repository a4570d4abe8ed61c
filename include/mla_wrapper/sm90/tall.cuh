// The tall instance's items (mla_kernel.cuh kTall; launcher.cuh picks it for plans made with
// rows_per_tile = kTallRows, which the sm90 backend makes for large decode batches over an e4m3
// cache with 17-32 heads, TP4): an item of at most 32 rows runs both GEMMs transposed, its rows
// the N of the wgmma and the tokens (scores) or output columns (P V) its M:
//   S^T[64 tokens, 32 rows] = K Q^T (36 x m64n32k16, K the A operand, Q's rows 0-31 the B
//     operand), by the scoring warpgroup (g = 0), where a 64-row tile's S = Q K^T takes 36 x
//     m64n64k16 of which half would be rows no item has;
//   O^T[256 columns of g, 32 rows] += V^T P^T (per 16-token k-step four m64n32k16: V^T the A
//     operand read MN-major from the stage, `.tnspA` in the SASS; P's rows 0-31 the B operand in
//     the P tile's usual [row][token] layout), by both warpgroups;
// so the tile's tensor work is half the 64-row tile's and O^T takes 64 accumulator registers
// instead of 128. Each row's max comes from the four scorer warps through shared memory (a
// row's 64 tokens are spread over them), read after the tile's kBarMax, and the row sums at the
// end likewise after kBarP2: every barrier here is one of all 256 consumer threads, in the same
// order in both warpgroups. (Session 58's version exchanged them across 128-thread barriers of
// the scorer alone, one more per tile; compute-sanitizer racecheck then reported hazards
// between the scorer's writes and the other warpgroup's reads across the 256-thread barriers
// that do order them, logs/sm90_s58_2026-11-28 runs 3-4.) The rows are stored by the item's
// own epilogue from O^T through the Q tile (fp32, two [32][256] halves, rows padded to 260
// floats: conflict-free staging, and each lane reading and storing 4 columns of each 128;
// H200, session 59 run 6: up to 1.16x faster than unpadded rows of 16 columns a lane, the most
// at B=1, 1.00-1.02x at B>=64); a cluster pair's two halves of one kv range (B <= half the
// CTAs, B=1's pieces) trade the fp32 halves each other stores through their first stages
// (tall_pair_exchange).
// Why an instance of its own (session 57, logs/sm90_s57_2026-11-28 runs 7-8): with this loop and
// the 64-row one in one kernel, ptxas held all of o live through an item whatever its path and
// spilled (16-88 bytes; every path ran 0.67-0.86x), while the loop alone ran 0 spills and the
// e4m3 H=32 rows 1.02-1.08x faster. Its plans have no item of more than 32 rows (MTP at H=32:
// one item per query token), and the instance is chosen by the plan's rows_per_tile, which the
// backend derives from the heads and the cache's dtype, so a CUDA graph's captured instance
// fits every later plan.
#pragma once

#include <math.h>
#include <type_traits>
#include "mla_wrapper/common/plan.h"
#include "mla_wrapper/common/q_rows.cuh"
#include "mla_wrapper/sm90/config.h"
#include "mla_wrapper/sm90/consumer_steps.cuh"
#include "mla_wrapper/sm90/dev.cuh"
#include "mla_wrapper/sm90/traits.cuh"
#include "mla_wrapper/sm90/work.cuh"

namespace mlaw {
namespace sm90 {

// S^T = K Q^T into o[64 .. 79] (issued, not waited).
template <typename T>
__device__ __forceinline__ void issue_scores_t(float (&o)[128], uint32_t q_smem,
                                               uint32_t kv_stage) {
  using Mma = typename ElementTraits<T>::template MmaS<kTallRows>;
  const uint64_t dq = make_desc(q_smem, 16, 1024);
  const uint64_t dk = make_desc(kv_stage, 16, 1024);
  wgmma_fence();
#pragma unroll
  for (int kk = 0; kk < kHeadDimQk / 16; ++kk) {
    const uint64_t da = desc_add(dk, (kk / 4) * kKvBlockBytes + (kk % 4) * 32);
    const uint64_t db = desc_add(dq, (kk / 4) * kQBlockBytes + (kk % 4) * 32);
    wgmma_part<Mma, 64, 16>(da, db, o, kk == 0 ? gmma::ScaleOut::Zero : gmma::ScaleOut::One);
  }
  wgmma_commit();
}

// O^T[256 columns of g, 32 rows] (+)= V^T P^T into o[0 .. 63] (issued); first: = (an item's
// first tile).
template <typename T>
__device__ __forceinline__ void issue_pv_t(float (&ot)[128], uint32_t p_smem, uint32_t kv_stage,
                                           int g, bool first) {
  using Mma = std::conditional_t<
      std::is_same<T, __half>::value,
      gmma::MMA_64x32x16_F32F16F16_SS<gmma::Major::MN, gmma::Major::K>,
      gmma::MMA_64x32x16_F32BF16BF16_SS<gmma::Major::MN, gmma::Major::K>>;
  const uint64_t dp = make_desc(p_smem, 16, 1024);
  wgmma_fence();
#pragma unroll
  for (int ks = 0; ks < kKvTile / 16; ++ks) {
    const uint64_t dv = make_desc(
        kv_stage + g * (kOutCols / kBlockCols) * kKvBlockBytes + ks * 16 * kRowBytes,
        kKvBlockBytes, 1024);
    const uint64_t db = desc_add(dp, ks * 32);
    const gmma::ScaleOut sc = first && ks == 0 ? gmma::ScaleOut::Zero : gmma::ScaleOut::One;
    wgmma_part<Mma, 0, 16>(dv, db, ot, sc);
    wgmma_part<Mma, 16, 16>(desc_add(dv, kKvBlockBytes), db, ot, sc);
    wgmma_part<Mma, 32, 16>(desc_add(dv, 2 * kKvBlockBytes), db, ot, sc);
    wgmma_part<Mma, 48, 16>(desc_add(dv, 3 * kKvBlockBytes), db, ot, sc);
  }
  wgmma_commit();
}

// One half of O^T (fp32 [32 rows][256 columns]: a warpgroup's columns) in the Q tile, its rows
// kTallPitch floats apart: a warp's staging store (tall_item's end) writes 8 columns of rows
// 2 (lane % 4) + c, which a pitch of 256 floats puts in 8 banks (4-way conflicts) and one of
// 260 in all 32.
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
  const uint32_t q_smem = smem_addr(smem + kSmemQ);
  const uint32_t kv_smem = smem_addr(smem + kSmemKv);
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
    mbar_wait(&full[stage], (seq / kStages) & 1);
    MLAW_TRACE(seq, 1 + 7 * g);
    fence_proxy_async();  // the producer's writes, acquired above, feed wgmma
    const uint32_t kv_stage = kv_smem + stage * kKvStageBytes;
    float cm[8];
    if constexpr (kSc) {
      fence_operands(o);
      issue_scores_t<TG>(o, q_smem, kv_stage);
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
    issue_pv_t<TG>(ot, p_smem, kv_stage, g, it == 0);
    wgmma_wait<0>();
    fence_operands(ot);
    MLAW_TRACE(seq, 6 + 7 * g);
    if (lane == 0) mbar_arrive(&empty[stage]);  // one arrival per consumer warp
  }
  // The item's end: O^T into the Q tile as fp32, warpgroup g's 256 columns in [32][kTallPitch]
  // at ob + g * kTallHalf (the score GEMMs are done with Q), the rows' sums (four parts, one a
  // scorer warp) and maxima into tall_red and row_m (the scorer); a cluster pair's half then
  // trades halves with its partner (tall_pair_exchange); each warp normalizes and stores whole
  // rows from there (rows 4 g + warp, + 8, ...: all 512 columns, or a pair's half `keep`) and
  // their lse.
  float* ob = reinterpret_cast<float*>(smem + kSmemQ);
  float* row_m = red_max + kTallRows;  // [32] (after the rescales)
#pragma unroll
  for (int mb = 0; mb < 4; ++mb)
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      const int j = i / 4, e = i % 4;
      const int row = 8 * j + 2 * (lane % 4) + e % 2;
      const int col = 64 * mb + 16 * warp + lane / 4 + 8 * (e / 2);
      ob[g * kTallHalf + row * kTallPitch + col] = ot[16 * mb + i];
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
  const bool pair = item.slot <= kSlotPairLow;
  if (pair) fence_proxy_async();  // (the bulk copy to the partner reads them)
  if (g == 0) MLAW_TRACE(seq0, 21);
  named_barrier(kBarP2, kConsumerThreads);  // O^T, the rows' maxima and their sums' parts staged
  if (g == 0) MLAW_TRACE(seq0, 20);
  const int keep = pair ? mlaw_pair_high(item.slot) : 0;
  const int out_slot = pair ? mlaw_pair_out_slot(item.slot) : item.slot;  // < 0: out
  // the partner's half `keep` of O^T, its sums' parts and maxima (tall_pair_exchange)
  const float* peer_o = reinterpret_cast<const float*>(smem + kXchgRecv);
  const float* peer_red = peer_o + kTallHalf;
  const float* peer_m = peer_red + 4 * kTallRows;
  if (pair)
    tall_pair_exchange(smem, ob + (1 - keep) * kTallHalf, tall_red, row_m, full + 2 * kStages,
                       full + 2 * kStages + 1, g == 0 && warp == 0 && lane == 0);
  if (g == 0 && pair) MLAW_TRACE(seq0, 23);
  const int num_heads = args.num_heads;
  for (int row = 4 * g + warp; row < item.valid_rows; row += 8) {
    const float4 lv = *reinterpret_cast<const float4*>(tall_red + row * 4);
    float l = (lv.x + lv.y) + (lv.z + lv.w), m = row_m[row];
    float w_own = 1.f, w_peer = 0.f;  // the weights of this CTA's O and of the partner's
    if (pair) {
      const float4 pv = *reinterpret_cast<const float4*>(peer_red + row * 4);
      const float lp = (pv.x + pv.y) + (pv.z + pv.w), mp = peer_m[row];
      const float mx = fmaxf(m, mp);
      w_own = m == -INFINITY ? 0.f : exp2f(m - mx);
      w_peer = mp == -INFINITY ? 0.f : exp2f(mp - mx);
      l = l * w_own + lp * w_peer;
      m = mx;
    }
    float inv = l > 0.f ? 1.f / l : 0.f;
    if constexpr (kE4m3) inv *= args.ckv_scale;  // (lse stays: the scores were scaled)
    w_own *= inv;
    w_peer *= inv;
    const int grow = item.row0 + row;
    const int64_t token = item.qo_start + heads.div(grow);
    const int64_t head = heads.mod(grow, num_heads);
    if (lane == 0 && keep == 0) {
      const float lse2 = l > 0.f ? m + log2f(l) : -INFINITY;
      if (out_slot >= 0) {
        plan.partial_lse[static_cast<int64_t>(out_slot) * kTallRows + row] = lse2;
      } else if (args.lse != nullptr) {
        args.lse[token * args.lse_stride_token + head] =
            args.lse_base_e ? lse2 * 0.6931471805599453f : lse2;
      }
    }
    T* dst = out_slot < 0 ? static_cast<T*>(args.out) + token * args.out_stride_token +
                                head * args.out_stride_head
                          : static_cast<T*>(plan.partial_o) +
                                (static_cast<int64_t>(out_slot) * kTallRows + row) * kHeadDimCkv;
    // Each lane 4 columns of each 128: a warp's shared-memory reads and global stores are
    // 512 / 256 contiguous bytes each.
    if (pair) {  // columns keep * 256 + 128 q + 4 lane .. + 3
#pragma unroll
      for (int q = 0; q < 2; ++q) {
        const int c = row * kTallPitch + 128 * q + 4 * lane;
        const float4 v = *reinterpret_cast<const float4*>(ob + keep * kTallHalf + c);
        const float4 u = *reinterpret_cast<const float4*>(peer_o + c);
        *reinterpret_cast<uint2*>(dst + keep * kOutCols + 128 * q + 4 * lane) = make_uint2(
            ElementTraits<T>::pack(v.x * w_own + u.x * w_peer, v.y * w_own + u.y * w_peer),
            ElementTraits<T>::pack(v.z * w_own + u.z * w_peer, v.w * w_own + u.w * w_peer));
      }
    } else {  // columns 128 q + 4 lane .. + 3
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float4 v = *reinterpret_cast<const float4*>(
            ob + (q / 2) * kTallHalf + row * kTallPitch + 128 * (q % 2) + 4 * lane);
        *reinterpret_cast<uint2*>(dst + 128 * q + 4 * lane) =
            make_uint2(ElementTraits<T>::pack(v.x * w_own, v.y * w_own),
                       ElementTraits<T>::pack(v.z * w_own, v.w * w_own));
      }
    }
  }
  if (g == 0) MLAW_TRACE(seq0, 19);
}

}  // namespace sm90
}  // namespace mlaw
