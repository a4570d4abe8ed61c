// The three-stage Hopper MLA kernel for paged caches that TMA can tile (page size a multiple of
// 64, strides TMA can express): Q's 512 nope columns live in the scoring warpgroup's registers
// (wgmma A fragments), so the 72 KB the shared Q tile takes in mla_kernel.cuh hold a third KV
// stage instead. Same plan, partials and combine as mla_kernel.cuh (which keeps cp.async pages,
// the sparse gather mode and every case this one does not take).
//
// Why (logs/sm90_s9_h100_2026-11-25): with two 72 KB stages next to the 72 KB Q tile, one KV load
// is in flight per SM at any time and a tile takes ~3650 clocks from TMA issue to use at H=128
// (L2 at 64% of its peak): the kernel is bound by bytes in flight, not by its tensor work.
//
// Schedule of one CTA (384 threads = 3 warpgroups, one CTA per SM):
//   warpgroup 0, the scorer (setmaxnreg 200), per work item: Q's nope columns as A fragments
//     (128 registers, plain loads; rows past the item's rows are zeros) and Q's rope block
//     (8 KB, 128-byte swizzle) into shared memory; then per KV tile i (stage i % 3):
//       wait `full`, S_i = Q K_i^T (32 x wgmma m64n64k16 with A from registers and B = K from
//       shared memory, then 4 with both from shared memory for the rope columns); softmax in
//       registers as in mla_kernel.cuh (raw-score max, scale folded into the exponent, lazy
//       rescaling: the running max moves only past kRescaleSlack); P (16-bit) goes into the
//       stage's rope block (dead once S_i is done) and the rescale factors into alpha[stage];
//       arrive on `pready`. The scorer never waits for P V: it runs ahead as far as the ring
//       holds tiles, so S_{i+1} shares the tensor cores with P_i V.
//     epilogue: row sums into shared memory (after the P V warpgroups took the previous item's),
//       lse = m + log2(l) from the scorer's registers.
//   warpgroups 1 and 2, P V (setmaxnreg 152), g = 0, 1 holding O[64 rows, 256 columns of g] in
//     fp32 registers: per tile, wait `pready`, rescale O when a factor of the warp's rows is not
//     1, zero the V rows past the item's end in a partial tile (TMA loads the whole page box),
//     O += P V (4 x wgmma m64n256k16, P and V from shared memory), release the stage (`empty`).
//     Thread 0 of warpgroup 1 also issues the loads: the first three tiles at the start, then
//     tile i + 3 into the stage of tile i as soon as both warpgroups released it (9 TMA boxes
//     of 64 tokens x 64 columns, L2 evict-first; page ids looked up one tile ahead).
//     epilogue: O / l (l from the scorer) straight from registers to out or the item's 16-bit
//     partial slot.
// Tokens past a row's limit are masked in S; a row that sees nothing writes o = 0, lse = -inf.
#pragma once

#include <math.h>

#include "mla_wrapper/common/kv_access.cuh"
#include "mla_wrapper/common/plan.h"
#include "mla_wrapper/sm90/config.h"
#include "mla_wrapper/sm90/mla_kernel.cuh"
#include "mla_wrapper/sm90/traits.cuh"

namespace mlaw {
namespace sm90 {
namespace regq {

constexpr int kStages3 = 3;
constexpr int kScorerRegs = 176;
constexpr int kPvRegs = 160;
static_assert(kScorerRegs + 2 * kPvRegs <= kLaunchRegsPerThread * 3,
              "setmaxnreg budgets exceed the registers the launch allocates");
constexpr int kNopeSteps = kHeadDimCkv / 16;  // 32 k-steps with Q from registers

// Shared memory (byte offsets; the KV stages first, 1024-aligned).
constexpr int kSmemKv = 0;
constexpr int kSmemQRope = kSmemKv + kStages3 * kKvStageBytes;      // [64 rows][64] swizzled
constexpr int kSmemAlpha = kSmemQRope + kQBlockBytes;          // [3 stages][2 halves][64] float
constexpr int kSmemSum = kSmemAlpha + kStages3 * 2 * kRowsPerTile * 4;  // [64] float
constexpr int kSmemCursor = kSmemSum + kRowsPerTile * 4;            // TileCursor
constexpr int kSmemBars = kSmemCursor + 32;         // full [3], empty [3], pready [3][2 halves]
constexpr int kSmemBytes = kSmemBars + 4 * kStages3 * 8;
constexpr int kSmemAlloc = kSmemBytes + kSmemAlign;
static_assert(kSmemAlloc <= 232448, "regq kernel exceeds 227 KB of shared memory");
// P goes into the stage's K rope block once the score GEMM has read it: half h (tokens 32 h ..)
// as [64 rows][32 tokens] 16-bit in the 64-byte swizzle (16-byte chunk c of row r at chunk
// c ^ ((r / 2) % 4), 512-byte atoms of 8 rows) over the rope block's own tokens 32 h .. 32 h + 31.
constexpr int kRopeOffset = (kColBlocks - 1) * kKvBlockBytes;
constexpr int kPHalfBytes = kRowsPerTile * 64;  // 4096
__host__ __device__ __forceinline__ constexpr int p_offset(int row, int chunk) {
  return row * 64 + ((chunk ^ ((row / 2) % 4)) << 4);
}
// wgmma descriptor of a K-major operand in the 64-byte swizzle (8-row groups 512 bytes apart).
__device__ __forceinline__ uint64_t make_desc_sw64(uint32_t smem_byte_addr) {
  uint64_t d = 0;
  d |= static_cast<uint64_t>((smem_byte_addr & 0x3FFFF) >> 4);
  d |= static_cast<uint64_t>(1) << 16;              // leading offset (unused when swizzled)
  d |= static_cast<uint64_t>(512 >> 4) << 32;       // stride between 8-row groups
  d |= static_cast<uint64_t>(2) << 62;              // SWIZZLE_64B
  return d;
}

constexpr int kBarSums = 1;      // named: the scorer's row sums are written (384)
constexpr int kBarSumsRead = 2;  // named: the P V warpgroups have read them (384)
constexpr int kBarZero = 3;      // + g: warpgroup g zeroed its V rows (128)

// The loads: thread 0 of warpgroup 1 walks the CTA's tiles kStages3 ahead of the consumers.
struct TileCursor {
  int w, w_end, it, num_tiles, kv_start, page_start;
  int page;  // page id of the current tile, loaded ahead

  template <typename Kv>
  __device__ __forceinline__ void settle(const MlaPlan& plan, const MlaRunArgs& args,
                                         const Kv& kvm) {
    while (w < w_end && it >= num_tiles) {
      ++w;
      it = 0;
      if (w < w_end) {
        const WorkItem item(plan, w, args.num_heads, kvm);
        num_tiles = item.num_tiles;
        kv_start = item.kv_start;
        page_start = item.page_start;
      }
    }
    if (w < w_end) page = __ldg(args.kv_indices + page_start + (kv_start + it * kKvTile) / args.page_size);
  }
  __device__ __forceinline__ bool valid() const { return w < w_end; }
};

template <typename T>
__device__ __forceinline__ void issue_tile(const MlaRunArgs& args, const KvTensorMaps& maps,
                                           const TileCursor& c, uint32_t dst, uint64_t* full,
                                           uint64_t policy) {
  const int off = (c.kv_start + c.it * kKvTile) % args.page_size;
  mbar_arrive_expect_tx(full, kKvStageBytes);
#pragma unroll
  for (int b = 0; b < kColBlocks - 1; ++b)
    tma_load_3d(dst + b * kKvBlockBytes, &maps.ckv, full, b * kBlockCols, off, c.page, policy);
  tma_load_3d(dst + (kColBlocks - 1) * kKvBlockBytes, &maps.kpe, full, 0, off, c.page, policy);
}

// ------------------------------------------------------------------------------------ scorer
template <typename T, typename Kv>
__device__ __forceinline__ void score(const MlaPlan& plan, const MlaRunArgs& args, const Kv& kvm,
                                      int w_begin, int w_end, char* smem, uint64_t* full,
                                      uint64_t* pready) {
  using Et = ElementTraits<T>;
  using MmaRs = std::conditional_t<std::is_same<T, __nv_bfloat16>::value,
                                   gmma::MMA_64x32x16_F32BF16BF16_RS<gmma::Major::K, gmma::Major::K>,
                                   gmma::MMA_64x32x16_F32F16F16_RS<gmma::Major::K, gmma::Major::K>>;
  using MmaSs = typename Et::template MmaS<32>;
  const int tid = threadIdx.x;  // 0..127
  const int warp = tid / 32, lane = tid % 32;
  const int rows[2] = {16 * warp + lane / 4, 16 * warp + lane / 4 + 8};
  const uint32_t kv_smem = smem_addr(smem + kSmemKv);
  const uint32_t rope_smem = smem_addr(smem + kSmemQRope);
  float* alpha_smem = reinterpret_cast<float*>(smem + kSmemAlpha);
  float* sum_smem = reinterpret_cast<float*>(smem + kSmemSum);
  const float scale_log2 = args.sm_scale * 1.4426950408889634f;
  const int num_heads = args.num_heads;
  int seq = 0;
  bool sums_pending = false;  // the P V warpgroups have yet to read the last row sums
  uint32_t q[kNopeSteps][4];

  for (int w = w_begin; w < w_end; ++w) {
    int kv_start, num_tiles, limit[2];
    float m_run[2] = {-INFINITY, -INFINITY};
    float l_run[2] = {0.f, 0.f};
    {
    const WorkItem item(plan, w, num_heads, kvm);
    kv_start = item.kv_start;
    num_tiles = item.num_tiles;
    if (item.num_tiles > 0) {
      // Q's rope block into shared memory (4 chunks a thread), nope columns into registers.
      for (int idx = tid; idx < kRowsPerTile * 8; idx += 128) {
        const int r = idx / 8, c = idx % 8;
        const bool valid = r < item.valid_rows;
        const T* src = valid ? q_chunk_ptr<T>(args, item.qo_start, item.row0 + r, 64 + c)
                             : static_cast<const T*>(args.q_pe);
        cp_async_16(rope_smem + tile_offset<kRowsPerTile>(r, c * 8), src, valid);
      }
      cp_async_commit();
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int row = rows[h];
        const bool valid = row < item.valid_rows;
        const T* base = valid ? q_chunk_ptr<T>(args, item.qo_start, item.row0 + row, 0)
                              : static_cast<const T*>(args.q_nope);
#pragma unroll
        for (int kk = 0; kk < kNopeSteps; ++kk) {
          const int col = 16 * kk + 2 * (lane % 4);
          q[kk][h] = valid ? __ldg(reinterpret_cast<const uint32_t*>(base + col)) : 0u;
          q[kk][2 + h] = valid ? __ldg(reinterpret_cast<const uint32_t*>(base + col + 8)) : 0u;
        }
      }
      cp_async_wait<0>();
      fence_proxy_async();
      named_barrier(kBarZero + 2, 128);  // every scorer thread's rope chunks have landed
    }
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      if (rows[r] < item.valid_rows) {
        const int i = (item.row0 + rows[r]) / num_heads;
        const int lim = args.causal ? item.kv_len - item.qo_len + i + 1 : item.kv_len;
        limit[r] = min(lim, item.kv_end);
      } else {
        limit[r] = 0;
      }
    }
    }
    float s[16];
    for (int it = 0; it < num_tiles; ++it, ++seq) {
      const int stage = seq % kStages3;
      const uint32_t stage_smem = kv_smem + stage * kKvStageBytes;
      MLAW_TRACE(seq, 0);
      mbar_wait(&full[stage], (seq / kStages3) & 1);
      MLAW_TRACE(seq, 1);
      // Descriptors as one base plus an offset in 16-byte units (the low bits).
      const uint64_t k_desc = make_desc(stage_smem, 16, 1024);
      const uint64_t rope_desc = make_desc(rope_smem, 16, 1024);
#pragma unroll
      for (int h = 0; h < 2; ++h) {  // 32-token halves: S_h, softmax, P_h
        // ---- S_h = Q K_h^T ----
        fence_operands(s);
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < kNopeSteps; ++kk) {
          const uint64_t db =
              k_desc + (((kk / 4) * kKvBlockBytes + h * 32 * kRowBytes + (kk % 4) * 32) >> 4);
          wgmma_rs<MmaRs>(q[kk], db, s, kk == 0 ? gmma::ScaleOut::Zero : gmma::ScaleOut::One);
        }
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
          wgmma<MmaSs>(rope_desc + (kk * 32 >> 4),
                       k_desc + ((kRopeOffset + h * 32 * kRowBytes + kk * 32) >> 4), s);
        wgmma_commit();
        wgmma_wait<0>();
        MLAW_TRACE(seq, 2 + 2 * h);
        fence_operands(s);
        // ---- softmax of the half ----
        const int tok0 = kv_start + it * kKvTile + 32 * h + 2 * (lane % 4);
        if (tok0 + 32 > min(limit[0], limit[1])) {
#pragma unroll
          for (int j = 0; j < 4; ++j)
#pragma unroll
            for (int e = 0; e < 4; ++e)
              if (tok0 + 8 * j + (e % 2) >= limit[e / 2]) s[4 * j + e] = -INFINITY;
        }
        float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) mx[e / 2] = fmaxf(mx[e / 2], s[4 * j + e]);
        float m_use[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          mx[r] *= scale_log2;
          mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 1));
          mx[r] = fmaxf(mx[r], __shfl_xor_sync(0xffffffffu, mx[r], 2));
          const float m_new = mx[r] > m_run[r] + kRescaleSlack ? mx[r] : m_run[r];
          m_use[r] = m_new == -INFINITY ? 0.f : m_new;
          const float alpha = fast_exp2(m_run[r] - m_use[r]);
          m_run[r] = m_new;
          l_run[r] *= alpha;
          if (lane % 4 == 0) alpha_smem[(stage * 2 + h) * kRowsPerTile + rows[r]] = alpha;
        }
        // P_h [64 rows][32 tokens] in the 64-byte swizzle, in the part of the K rope block
        // whose tokens S_h has just read.
        char* p_ptr = smem + kSmemKv + stage * kKvStageBytes + kRopeOffset + h * kPHalfBytes;
#pragma unroll
        for (int j = 0; j < 4; ++j)
#pragma unroll
          for (int r = 0; r < 2; ++r) {
            const float p0 = fast_exp2(fmaf(s[4 * j + 2 * r], scale_log2, -m_use[r]));
            const float p1 = fast_exp2(fmaf(s[4 * j + 2 * r + 1], scale_log2, -m_use[r]));
            l_run[r] += p0 + p1;
            *reinterpret_cast<uint32_t*>(p_ptr + p_offset(rows[r], j) + 4 * (lane % 4)) =
                Et::pack(p0, p1);
          }
        fence_proxy_async();
        mbar_arrive(&pready[stage * 2 + h]);
        MLAW_TRACE(seq, 3 + 2 * h);
      }
    }
    // ---- epilogue: row sums for the P V warpgroups, lse ----
    const WorkItem e(plan, w, num_heads, kvm);  // (reloaded: fewer registers live in the loop)
    if (sums_pending) named_barrier(kBarSumsRead, 384);
    sums_pending = true;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = l_run[r];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      if (lane % 4 == 0) {
        sum_smem[rows[r]] = l;
        if (rows[r] < e.valid_rows) {
          const float lse2 = l > 0.f ? m_run[r] + log2f(l) : -INFINITY;
          if (e.slot >= 0) {
            plan.partial_lse[static_cast<int64_t>(e.slot) * kRowsPerTile + rows[r]] = lse2;
          } else if (args.lse != nullptr) {
            const int grow = e.row0 + rows[r];
            const int64_t token = e.qo_start + grow / num_heads;
            args.lse[token * args.lse_stride_token + grow % num_heads] =
                args.lse_base_e ? lse2 * 0.6931471805599453f : lse2;
          }
        }
      }
    }
    named_barrier_arrive(kBarSums, 384);
  }
  if (sums_pending) named_barrier(kBarSumsRead, 384);
}

// ------------------------------------------------------------------------------------ P V
template <typename T, typename Kv>
__device__ __forceinline__ void accumulate(const MlaPlan& plan, const MlaRunArgs& args,
                                           const Kv& kvm, const KvTensorMaps& maps, int w_begin,
                                           int w_end, char* smem, uint64_t* full, uint64_t* empty,
                                           uint64_t* pready) {
  using Mma = typename ElementTraits<T>::MmaO;
  const int ctid = threadIdx.x - 128;  // 0..255
  const int g = ctid / 128;
  const int tid = ctid % 128;
  const int warp = tid / 32, lane = tid % 32;
  const int rows[2] = {16 * warp + lane / 4, 16 * warp + lane / 4 + 8};
  const uint32_t kv_smem = smem_addr(smem + kSmemKv);
  const float* alpha_smem = reinterpret_cast<const float*>(smem + kSmemAlpha);
  const float* sum_smem = reinterpret_cast<const float*>(smem + kSmemSum);
  const int num_heads = args.num_heads;
  const bool issuer = ctid == 0;
  // The issuer's cursor lives in shared memory (only thread 0 uses it: registers would be
  // allocated for the whole warpgroup).
  TileCursor* cursor = reinterpret_cast<TileCursor*>(smem + kSmemCursor);
  if (issuer) {  // the first kStages3 tiles
    TileCursor cur{w_begin - 1, w_end, 0, 0, 0, 0, 0};
    const uint64_t policy = evict_first_policy();
    cur.settle(plan, args, kvm);
    for (int k = 0; k < kStages3 && cur.valid(); ++k) {
      issue_tile<T>(args, maps, cur, kv_smem + k * kKvStageBytes, &full[k], policy);
      ++cur.it;
      cur.settle(plan, args, kvm);
    }
    *cursor = cur;
  }
  __syncwarp();
  int seq = 0;
  for (int w = w_begin; w < w_end; ++w) {
    int kv_start, kv_end, num_tiles;  // (only these stay live through the tile loop)
    {
      const WorkItem item(plan, w, num_heads, kvm);
      kv_start = item.kv_start;
      kv_end = item.kv_end;
      num_tiles = item.num_tiles;
    }
    float o[128];
#pragma unroll
    for (int i = 0; i < 128; ++i) o[i] = 0.f;
    for (int it = 0; it < num_tiles; ++it, ++seq) {
      const int stage = seq % kStages3;
      const uint32_t phase = (seq / kStages3) & 1;
      const uint32_t stage_smem = kv_smem + stage * kKvStageBytes;
      mbar_wait(&full[stage], phase);
      // A partial tile: TMA loaded the page's whole box, so V rows past the item's end hold
      // whatever the cache has there (0 * NaN would poison O): zero this half's rows.
      const int valid = kv_end - (kv_start + it * kKvTile);
      if (valid < kKvTile) {
        mbar_wait(&pready[stage * 2 + 1], phase);  // both score GEMMs are done with the stage
        char* v = smem + kSmemKv + stage * kKvStageBytes + g * 4 * kKvBlockBytes;
        for (int idx = tid; idx < 4 * kKvTile * 8; idx += 128) {
          const int b = idx / (kKvTile * 8), r = (idx / 8) % kKvTile, c = idx % 8;
          if (r >= valid)
            *reinterpret_cast<uint4*>(v + b * kKvBlockBytes + r * kRowBytes + c * 16) = uint4{0, 0, 0, 0};
        }
        fence_proxy_async();
        named_barrier(kBarZero + g, 128);
      }
      const uint32_t v_base = stage_smem + g * (kOutCols / kBlockCols) * kKvBlockBytes;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        if (g == 0) MLAW_TRACE(seq, 7 + h);
        mbar_wait(&pready[stage * 2 + h], phase);
        if (g == 0) MLAW_TRACE(seq, 9 + h);
        wgmma_wait<0>();  // (the first half's P V, before O is rescaled)
        fence_operands(o);
        float alpha[2];
#pragma unroll
        for (int r = 0; r < 2; ++r) alpha[r] = alpha_smem[(stage * 2 + h) * kRowsPerTile + rows[r]];
        if (__any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) {
#pragma unroll
          for (int i = 0; i < 128; ++i) o[i] *= alpha[(i % 4) / 2];
        }
        fence_operands(o);
        wgmma_fence();
        const uint32_t p_smem = stage_smem + kRopeOffset + h * kPHalfBytes;
#pragma unroll
        for (int ks = 0; ks < 2; ++ks) {
          const uint64_t da = make_desc_sw64(p_smem + ks * 32);
          const uint64_t db = make_desc(v_base + (32 * h + 16 * ks) * kRowBytes, kKvBlockBytes, 1024);
          wgmma<Mma>(da, db, o);
        }
        wgmma_commit();
      }
      wgmma_wait<0>();
      if (g == 0) MLAW_TRACE(seq, 11);
      fence_operands(o);
      if (lane == 0) mbar_arrive(&empty[stage]);
      if (issuer) {  // refill this stage with the tile kStages3 ahead
        TileCursor cur = *cursor;
        if (cur.valid()) {
          MLAW_TRACE(seq + kStages3, 14);
          mbar_wait(&empty[stage], phase);
          issue_tile<T>(args, maps, cur, stage_smem, &full[stage], evict_first_policy());
          MLAW_TRACE(seq + kStages3, 15);
          ++cur.it;
          cur.settle(plan, args, kvm);
          *cursor = cur;
        }
      }
      __syncwarp();
    }
    // ---- epilogue: O / l from registers ----
    const WorkItem item(plan, w, num_heads, kvm);
    named_barrier(kBarSums, 384);
    float inv[2];
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const float l = sum_smem[rows[r]];
      inv[r] = l > 0.f ? 1.f / l : 0.f;
    }
    named_barrier_arrive(kBarSumsRead, 384);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int row = rows[r];
      if (row >= item.valid_rows) continue;
      T* dst;
      if (item.slot < 0) {
        const int grow = item.row0 + row;
        const int64_t token = item.qo_start + grow / num_heads;
        dst = static_cast<T*>(args.out) + token * args.out_stride_token +
              static_cast<int64_t>(grow % num_heads) * args.out_stride_head;
      } else {
        dst = static_cast<T*>(plan.partial_o) +
              (static_cast<int64_t>(item.slot) * kRowsPerTile + row) * kHeadDimCkv;
      }
      dst += g * kOutCols + 2 * (lane % 4);
#pragma unroll
      for (int j = 0; j < 32; ++j)
        *reinterpret_cast<uint32_t*>(dst + 8 * j) =
            ElementTraits<T>::pack(o[4 * j + 2 * r] * inv[r], o[4 * j + 2 * r + 1] * inv[r]);
    }
  }
}

template <typename T, typename Kv = PagedKv>
__global__ void __launch_bounds__(kThreads, 1)
    mla_sm90_regq_kernel(const MlaPlan plan, const MlaRunArgs args, const Kv kvm,
                         const __grid_constant__ KvTensorMaps maps) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(1024) char smem_raw[];
  asm volatile("griddepcontrol.launch_dependents;");
  char* smem = smem_raw + ((kSmemAlign - smem_addr(smem_raw) % kSmemAlign) % kSmemAlign);
  uint64_t* full = reinterpret_cast<uint64_t*>(smem + kSmemBars);
  uint64_t* empty = full + kStages3;
  uint64_t* pready = empty + kStages3;
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages3; ++s) {
      mbar_init(&full[s], 1);
      mbar_init(&empty[s], 8);      // the P V warpgroups' warps
      mbar_init(&pready[2 * s], 128);   // the scorer's threads, per half
      mbar_init(&pready[2 * s + 1], 128);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  const int w_begin = plan.cta_work_indptr[blockIdx.x];
  const int w_end = plan.cta_work_indptr[blockIdx.x + 1];
  if (threadIdx.x < 128) {
    setmaxnreg_inc<kScorerRegs>();
    score<T>(plan, args, kvm, w_begin, w_end, smem, full, pready);
  } else {
    setmaxnreg_dec<kPvRegs>();
    if (threadIdx.x == 128) {
      prefetch_tensor_map(&maps.ckv);
      prefetch_tensor_map(&maps.kpe);
    }
    accumulate<T>(plan, args, kvm, maps, w_begin, w_end, smem, full, empty, pready);
  }
#endif
}

}  // namespace regq
}  // namespace sm90
}  // namespace mlaw
