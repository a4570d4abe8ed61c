// Device building blocks of the sm90 MLA family: wgmma operand descriptors for the 128-byte
// swizzled tiles (config.h), the wgmma instructions per element type (CuTe's SM90 GMMA atoms),
// mbarrier waits/arrivals, cp.async and TMA box loads with an L2 evict-first policy, and
// register budgets.
#pragma once

#include <cuda.h>  // CUtensorMap (the type only: nothing here links the driver)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include <type_traits>
#include <utility>

#include <cute/arch/mma_sm90_gmma.hpp>

#include "mla_wrapper/sm80/traits.cuh"
#include "mla_wrapper/sm90/config.h"

namespace mlaw {
namespace sm90 {

namespace gmma = cute::SM90::GMMA;

// The wgmma atoms per element type; pack() (two floats -> one 16-bit pair) is the sm80 family's.
template <typename T>
struct ElementTraits;

template <>
struct ElementTraits<__nv_bfloat16> : sm80::ElementTraits<__nv_bfloat16> {
  // S = Q K^T: A = Q [rows][k] and B = K [tokens][k], both K-major; N = 32 or 64 tokens.
  template <int N>
  using MmaS = std::conditional_t<
      N == 64, gmma::MMA_64x64x16_F32BF16BF16_SS<gmma::Major::K, gmma::Major::K>,
      gmma::MMA_64x32x16_F32BF16BF16_SS<gmma::Major::K, gmma::Major::K>>;
  // O += P V: A = P [rows][tokens] K-major, B = V [tokens][columns] MN-major.
  using MmaO = gmma::MMA_64x256x16_F32BF16BF16_SS<gmma::Major::K, gmma::Major::MN>;
};

template <>
struct ElementTraits<__half> : sm80::ElementTraits<__half> {
  template <int N>
  using MmaS = std::conditional_t<
      N == 64, gmma::MMA_64x64x16_F32F16F16_SS<gmma::Major::K, gmma::Major::K>,
      gmma::MMA_64x32x16_F32F16F16_SS<gmma::Major::K, gmma::Major::K>>;
  using MmaO = gmma::MMA_64x256x16_F32F16F16_SS<gmma::Major::K, gmma::Major::MN>;
};

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Byte offset of element (row, col) in a swizzled [rows][576] tile of `rows` rows.
template <int kRows>
__host__ __device__ __forceinline__ constexpr int tile_offset(int row, int col) {
  return (col / kBlockCols) * (kRows * kRowBytes) + row * kRowBytes +
         ((((col % kBlockCols) / 8) ^ (row % 8)) << 4) + (col % 8) * 2;
}

// wgmma shared-memory descriptor, 128-byte swizzle. K-major: rows 128 bytes apart, 8-row
// groups `sbo` apart (the leading offset is unused). MN-major: 64-element blocks along M/N
// `lbo` apart, 8-row groups along K `sbo` apart.
__device__ __forceinline__ uint64_t make_desc(uint32_t smem_byte_addr, uint32_t lbo, uint32_t sbo) {
  uint64_t d = 0;
  d |= static_cast<uint64_t>((smem_byte_addr & 0x3FFFF) >> 4);
  d |= static_cast<uint64_t>((lbo >> 4) & 0x3FFF) << 16;
  d |= static_cast<uint64_t>((sbo >> 4) & 0x3FFF) << 32;
  d |= static_cast<uint64_t>(1) << 62;  // SWIZZLE_128B
  return d;
}
// The descriptor of the address `bytes` past desc's (a multiple of 16; shared-memory addresses
// stay below 2^18, so the 14-bit address field does not carry into the next field).
__device__ __forceinline__ uint64_t desc_add(uint64_t desc, uint32_t bytes) {
  return desc + (bytes >> 4);
}

// One wgmma with its accumulator array (or the part of it from kOff on) expanded into the
// instruction's register list.
template <typename Op, int kOff, int N, size_t... I>
__device__ __forceinline__ void wgmma_impl(uint64_t da, uint64_t db, float (&d)[N],
                                           gmma::ScaleOut scale, std::index_sequence<I...>) {
  Op::fma(da, db, d[kOff + I]..., scale);
}
template <typename Op, int N>
__device__ __forceinline__ void wgmma(uint64_t da, uint64_t db, float (&d)[N],
                                      gmma::ScaleOut scale = gmma::ScaleOut::One) {
  wgmma_impl<Op, 0>(da, db, d, scale, std::make_index_sequence<N>{});
}
// The same into d[kOff .. kOff + kCount) (the tall instance keeps several accumulators in one
// array: tall.cuh).
template <typename Op, int kOff, int kCount, int N>
__device__ __forceinline__ void wgmma_part(uint64_t da, uint64_t db, float (&d)[N],
                                           gmma::ScaleOut scale) {
  static_assert(kOff + kCount <= N, "the accumulator lies inside the array");
  wgmma_impl<Op, kOff>(da, db, d, scale, std::make_index_sequence<kCount>{});
}

// One wgmma with A from registers (4 per thread: the m64k16 fragment) and B from a descriptor.
template <typename Op, int N, size_t... I>
__device__ __forceinline__ void wgmma_rs_impl(const uint32_t (&a)[4], uint64_t db, float (&d)[N],
                                              gmma::ScaleOut scale, std::index_sequence<I...>) {
  Op::fma(a[0], a[1], a[2], a[3], db, d[I]..., scale);
}
template <typename Op, int N>
__device__ __forceinline__ void wgmma_rs(const uint32_t (&a)[4], uint64_t db, float (&d)[N],
                                         gmma::ScaleOut scale = gmma::ScaleOut::One) {
  wgmma_rs_impl<Op>(a, db, d, scale, std::make_index_sequence<N>{});
}

// The same into d[kOff .. kOff + kCount) (the tall instance's accumulators: tall.cuh).
template <typename Op, int kOff, int N, size_t... I>
__device__ __forceinline__ void wgmma_rs_part_impl(const uint32_t (&a)[4], uint64_t db,
                                                   float (&d)[N], gmma::ScaleOut scale,
                                                   std::index_sequence<I...>) {
  Op::fma(a[0], a[1], a[2], a[3], db, d[kOff + I]..., scale);
}
template <typename Op, int kOff, int kCount, int N>
__device__ __forceinline__ void wgmma_rs_part(const uint32_t (&a)[4], uint64_t db, float (&d)[N],
                                              gmma::ScaleOut scale) {
  static_assert(kOff + kCount <= N, "the accumulator lies inside the array");
  wgmma_rs_part_impl<Op, kOff>(a, db, d, scale, std::make_index_sequence<kCount>{});
}

template <int N>
__device__ __forceinline__ void fence_operands(float (&d)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// Generic-proxy writes of this thread (ordinary stores, completed cp.async) become visible to
// the async proxy (wgmma operand reads) once ordered by a later barrier.
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

__device__ __forceinline__ void mbar_init(uint64_t* bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar))
               : "memory");
}
// `count` arrivals at once (the narrow instance's wgmma path: a warp's 32, narrow.cuh)
__device__ __forceinline__ void mbar_arrive(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)),
               "r"(count)
               : "memory");
}
// Waits for the phase of `bar` with this parity. A wait that lasts MLAW_SM90_WAIT_TIMEOUT_CYCLES
// (tens of seconds: a healthy wait lasts microseconds) traps instead of hanging the GPU: a
// protocol bug then surfaces as a launch error ("unspecified launch failure"), not a hung server.
#ifndef MLAW_SM90_WAIT_TIMEOUT_CYCLES
#define MLAW_SM90_WAIT_TIMEOUT_CYCLES (1ll << 36)
#endif
// Each try_wait may suspend the thread for up to MLAW_SM90_WAIT_SUSPEND_NS (it resumes as soon as
// the phase completes). Without the hint the hardware's default time limit is short: the
// producer's wait for a free stage spun ~38 times a tile at H=128 (H100 ncu source counters,
// 16.5% of the kernel's warp instructions, issue slots taken from the consumer warps of the
// same SM sub-partitions; logs/sm90_s20_h100_2026-11-26 run 10).
#ifndef MLAW_SM90_WAIT_SUSPEND_NS
#define MLAW_SM90_WAIT_SUSPEND_NS 0x989680
#endif
// kCluster: acquire at cluster scope (the phase was completed from another CTA of the cluster).
template <bool kCluster = false>
__device__ __forceinline__ bool mbar_try_wait(uint32_t addr, uint32_t parity) {
  uint32_t done;
#define MLAW_MBAR_TRY_WAIT(scope)                                                            \
  asm volatile("{\n.reg .pred p;\n"                                                        \
               "mbarrier.try_wait.parity.acquire." scope ".shared::cta.b64 p, [%1], %2, %3;\n" \
               "selp.u32 %0, 1, 0, p;\n}\n"                                                 \
               : "=r"(done)                                                                 \
               : "r"(addr), "r"(parity), "n"(MLAW_SM90_WAIT_SUSPEND_NS)                     \
               : "memory")
  if constexpr (kCluster)
    MLAW_MBAR_TRY_WAIT("cluster");
  else
    MLAW_MBAR_TRY_WAIT("cta");
#undef MLAW_MBAR_TRY_WAIT
  return done != 0;
}
template <bool kCluster = false>
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  const uint32_t addr = smem_addr(bar);
  if (mbar_try_wait<kCluster>(addr, parity)) return;  // (the usual case: no clock read)
  const long long start = clock64();
  while (!mbar_try_wait<kCluster>(addr, parity)) {
    // No printf here: a function call in the kernel makes ptxas serialize every wgmma (C7510).
    if (clock64() - start > MLAW_SM90_WAIT_TIMEOUT_CYCLES) __trap();
  }
}

// Named barrier over `threads` threads (ids 1..15; 0 is __syncthreads).
__device__ __forceinline__ void named_barrier(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
// Named barrier that also ANDs a predicate over its threads: true when every thread's `pred` was.
__device__ __forceinline__ bool named_barrier_and(int id, int threads, bool pred) {
  uint32_t all;
  asm volatile("{\n.reg .pred p, q;\nsetp.ne.u32 p, %1, 0;\nbar.red.and.pred q, %2, %3, p;\n"
               "selp.u32 %0, 1, 0, q;\n}\n"
               : "=r"(all)
               : "r"(uint32_t(pred)), "r"(id), "r"(threads)
               : "memory");
  return all != 0;
}

__device__ __forceinline__ uint64_t evict_first_policy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
__device__ __forceinline__ uint64_t evict_normal_policy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
__device__ __forceinline__ uint64_t evict_last_policy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}

// n / d and n % d for a divisor fixed per kernel (the page size) and 0 <= n < 2^31, by a
// multiply-high and a shift (Granlund and Montgomery): l = ceil(log2 d), m = 2^32 (2^l - d) / d
// + 1, n / d = (umulhi(n, m) + n) >> l. A power of two gets m = 1 (a shift) without the setup's
// 64-bit division. The compiler's division by a runtime int is ~25 instructions; the producer
// divides per token of a page-1 tile, which held its loads back (H200, 2026-11-26: page-1 H=128
// 1.11-1.15x with the shift; logs/sm90_s20_h100_2026-11-26 run 6).
// Divisors below 2^16 only (page sizes 1..1024, 1..128 heads: the wrapper's limits). Their
// m = floor(2^32 (2^l - d) / d) + 1 takes two 32-bit divisions; the 64-bit one was a call into a
// division routine placed after the kernel's code, and after an L2 flush every jump into code
// not fetched yet waits for DRAM, at the start of both roles (logs/sm90_s36_2026-11-27).
struct FastDiv {
  uint32_t m, l;
  __device__ __forceinline__ explicit FastDiv(int divisor) {
    const uint32_t d = uint32_t(divisor);
    l = d > 1 ? 32 - __clz(d - 1) : 0;
    // 2^32 = Q d + R; floor(2^32 a / d) = a Q + floor(a R / d), with a = 2^l - d < d < 2^16
    const uint32_t a = (1u << l) - d;
    const uint32_t q = 0xffffffffu / d, r1 = 0xffffffffu - q * d + 1;  // 2^32 - q d
    const uint32_t Q = r1 == d ? q + 1 : q, R = r1 == d ? 0u : r1;
    m = a == 0 ? 1u : a * Q + (a * R) / d + 1;  // (powers of two: umulhi(n, 1) = 0)
  }
  __device__ __forceinline__ int div(int n) const {
    return int((__umulhi(uint32_t(n), m) + uint32_t(n)) >> l);
  }
  // (d passed again rather than kept: a kernel parameter costs the producer no register)
  __device__ __forceinline__ int mod(int n, int d) const { return n - div(n) * d; }
};

// 16-byte cp.async through L2 with a cache policy; pred = false writes zeros.
__device__ __forceinline__ void cp_async_16(uint32_t smem, const void* gmem, bool pred,
                                            uint64_t policy) {
  const int src_bytes = pred ? 16 : 0;
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;" ::"r"(smem),
               "l"(gmem), "r"(src_bytes), "l"(policy)
               : "memory");
}
__device__ __forceinline__ void cp_async_16(uint32_t smem, const void* gmem, bool pred) {
  const int src_bytes = pred ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(smem), "l"(gmem),
               "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// Four e4m3 values (bytes 0-3 of w) exactly as f16 pairs (cvt.rn.f16x2.e4m3x2, one instruction
// a pair): lo = bytes 0-1, hi = bytes 2-3, the lower byte in the lower half.
__device__ __forceinline__ void widen_e4m3x4(uint32_t w, uint32_t& lo, uint32_t& hi) {
  asm("{\n .reg .b16 lo, hi;\n mov.b32 {lo, hi}, %2;\n cvt.rn.f16x2.e4m3x2 %0, lo;\n"
      " cvt.rn.f16x2.e4m3x2 %1, hi;\n}"
      : "=r"(lo), "=r"(hi)
      : "r"(w));
}
// Columns 0-3 of two tokens' e4m3 rows (4-byte words u of token t, v of token t + 1) as four f16
// pairs (token t low, token t + 1 high), the k pairs of an MMA fragment whose k is the tokens
// (narrow.cuh's V fragments, tall.cuh's V^T): two byte permutes, then one cvt a pair.
__device__ __forceinline__ void widen_e4m3_token_pairs(uint32_t u, uint32_t v, uint32_t& c0,
                                                       uint32_t& c1, uint32_t& c2, uint32_t& c3) {
  widen_e4m3x4(__byte_perm(u, v, 0x5140), c0, c1);
  widen_e4m3x4(__byte_perm(u, v, 0x7362), c2, c3);
}
// Eight e4m3 values (8 bytes, the first in the lowest byte) as eight f16 values. An e4m3
// cache's GEMMs run in f16 whatever the query's element (consume's Q conversion), so the
// widening is these four instructions.
__device__ __forceinline__ uint4 widen_e4m3x8(uint2 v) {
  uint4 h;
  widen_e4m3x4(v.x, h.x, h.y);
  widen_e4m3x4(v.y, h.z, h.w);
  return h;
}

// Arrives on `bar` once every cp.async this thread issued so far has completed (the arrival
// is counted in the barrier's expected count: no increment).
__device__ __forceinline__ void cp_async_mbar_arrive(uint64_t* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_addr(bar))
               : "memory");
}

// Arrives on `bar` and adds `bytes` to the transaction count its phase waits for (TMA).
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.release.cta.shared::cta.b64 _, [%0], %1;" ::"r"(
                   smem_addr(bar)), "r"(bytes)
               : "memory");
}

// TMA: copies the box at coordinates (c0, c1, c2) of the 3-D tensor map `map` (a kernel
// parameter: __grid_constant__) into shared memory at `smem`, completing its bytes on `bar`.
__device__ __forceinline__ void tma_load_3d(uint32_t smem, const CUtensorMap* map, uint64_t* bar,
                                            int c0, int c1, int c2, uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".L2::cache_hint [%0], [%1, {%3, %4, %5}], [%2], %6;" ::"r"(smem),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2),
      "l"(policy)
      : "memory");
}
__device__ __forceinline__ void tma_load_4d(uint32_t smem, const CUtensorMap* map, uint64_t* bar,
                                            int c0, int c1, int c2, int c3, uint64_t policy) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".L2::cache_hint [%0], [%1, {%3, %4, %5, %6}], [%2], %7;" ::"r"(smem),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "r"(c2),
      "r"(c3), "l"(policy)
      : "memory");
}
// Prefetch of a 3-D TMA box into L2 (no shared memory, no barrier, nothing to wait for).
__device__ __forceinline__ void tma_prefetch_3d(const CUtensorMap* map, int c0, int c1, int c2) {
  asm volatile("cp.async.bulk.prefetch.tensor.3d.L2.global.tile [%0, {%1, %2, %3}];" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(c0), "r"(c1), "r"(c2)
               : "memory");
}
// The same for a 4-D box.
__device__ __forceinline__ void tma_prefetch_4d(const CUtensorMap* map, int c0, int c1, int c2,
                                                int c3) {
  asm volatile("cp.async.bulk.prefetch.tensor.4d.L2.global.tile [%0, {%1, %2, %3, %4}];" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}
// Prefetch of the 128-byte line at `gmem` into L2.
__device__ __forceinline__ void prefetch_line_l2(const void* gmem) {
  asm volatile("prefetch.global.L2 [%0];" ::"l"(gmem) : "memory");
}
__device__ __forceinline__ void prefetch_tensor_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}

// Clusters of two CTAs (the on-chip merge of a pair's halves, consumer_steps.cuh pair_merge).
__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
__device__ __forceinline__ uint32_t cluster_size() {
  uint32_t n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  return n;
}
// The address of this CTA's shared-memory byte `smem` in CTA `rank` of the cluster.
__device__ __forceinline__ uint32_t map_to_rank(uint32_t smem, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(smem), "r"(rank));
  return r;
}
// Bulk copy of `bytes` (a multiple of 16) from this CTA's shared memory into another CTA's
// (dst and its mbarrier: cluster addresses from map_to_rank), completing `bytes` of the
// mbarrier's transaction count; then the issuing thread's wait until its source has been read.
__device__ __forceinline__ void bulk_copy_to_cluster(uint32_t dst, uint32_t src, uint32_t bytes,
                                                     uint32_t mbar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.shared::cta.mbarrier::complete_tx::bytes [%0], [%1], %2, "
      "[%3];" ::"r"(dst), "r"(src), "r"(bytes), "r"(mbar)
      : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
// Arrival on an mbarrier of another CTA of the cluster (a cluster address from map_to_rank),
// releasing this thread's (and, after a CTA barrier, its CTA's) prior accesses.
__device__ __forceinline__ void mbar_arrive_cluster(uint32_t bar) {
  asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(bar)
               : "memory");
}
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}
// Four 8 x 8 16-bit matrices to shared memory: matrix i from register r_i of every lane (lane l
// holds row l / 4, columns 2 (l % 4) and + 1: an mma accumulator fragment), lanes 8i .. 8i + 7
// give the addresses of matrix i's rows (16 bytes each).
__device__ __forceinline__ void stmatrix_x4(uint32_t smem, uint32_t r0, uint32_t r1, uint32_t r2,
                                            uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(smem),
               "r"(r0), "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}

template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(kRegs));
}
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(kRegs));
}

__device__ __forceinline__ float fast_exp2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

}  // namespace sm90
}  // namespace mlaw
