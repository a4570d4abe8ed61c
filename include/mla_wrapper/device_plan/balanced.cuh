// A balanced plan made on the GPU from device lengths, for FlashMLA's dense decode API
// (flash_mla_with_kvcache without indices: mla_wrapper/ops.py flash_mla_dense).
//
// FlashMLA's callers keep cache_seqlens on the device and capture the call in CUDA graphs, so
// the host cannot read the lengths. common/device_plan.cuh (cutlass_mla_decode's plan) gives
// every request the same number of pieces, which leaves a ragged batch waiting on its longest
// request; this kernel cuts the batch's work into near-equal shares instead, in one CTA:
//
//   A request r (q query tokens, kv_len L_r) has T = ceil(q * H / R) row tiles. Its work is
//   w_r = F + ceil(L_r / K) units (F units of fixed cost, then one unit per kv tile of K
//   tokens); the batch is the stream of its requests' units in request order, W in all, with
//   prefix P_r. The CTAs form groups of G = T CTAs (1 where T > num_ctas); group g runs the
//   stream's units in [b_g, b_{g+1}) and its G CTAs run the same pieces for their own row
//   tiles (tile t on CTA g * G + t) in lockstep, so a kv tile one of them loads from DRAM is
//   in L2 for the others (the CPU planner's lockstep pairs at H=128).
//   Where the batch has no more requests than groups and none is longer than cap + cap / 8,
//   each group runs one request whole (no partials, no merges: B=64 at H=128 ran 1.03-1.08x
//   slower with cut requests, whose pieces each pay a fill). Where the batch has no more
//   requests than groups but some request is longer, each request r gets n_r groups of its
//   own, cut in n_r near-equal pieces of at most X - F kv tiles, X the least cost that fits
//   (2F <= X <= cap + F; step 2). Where there are more requests than groups, every
//   boundary g * cap moves to the nearer request end if then no group runs more than
//   cap + cap / 8 units (uniform batches: no cuts). Otherwise
//   boundaries: b_g = g * cap, cap = ceil(W / groups), each moved to the nearer end of the
//   request it falls in where that end is at most cap / 8 units away, so a group runs at most
//   cap + cap / 4 units and a request of at most cap / 4 units is never cut (no partials, no
//   merge for it); other requests are cut at the boundaries. (Snapping to request ends
//   further away, so that requests up to a share stay whole, ran a ragged H=128 batch 1.5x
//   slower: groups of up to twice the share.) A request's piece in group g covers its kv
//   tiles in [b_g, b_{g+1}); a piece that would hold only fixed units goes to the next group.
//   A request of n_r > 1 pieces writes partials (n_r consecutive slots per row tile) that one
//   merge item per row tile combines; otherwise its items write out / lse directly. Causal
//   (q > 1): each row tile's range stops where its last query token's view ends.
//
// Execution: one CTA, a chain of block-wide steps (scans, reductions, barriers). A request's
// pieces are spread over the threads a chunk of requests at a time (chunk_request_of), and the
// direct plans (one request a group, request-aligned pieces) name each group's request in step 2
// and skip step 3's searches. An H200 runs it in 6-10 us a CUDA-graph replay for decode batches up
// to 128 requests, ~16 us at 512 (bench_plan.py --gpu, session 72; ~13k clocks at B=1 over
// every step, benchmarks/micro/balanced_plan_probe.cu): FlashMLA's dense call runs it once a
// step, the routed cutlass_mla_decode on every call, where the workspace's memo (below,
// balanced_plan_kept) lets a call with unchanged lengths keep the plan it holds (4-5 us).
//
// The plan (common/plan.h): CTA c = g * G + t's items are consecutive in work_info (its
// group's pieces in request order; the requests of a group are consecutive, so piece k of
// group g is request first[g] + k). Capacities: pieces <= B + groups - 1, so items <=
// T * (B + groups), slots <= items, merges <= B * T; scratch holds B + 1 int64 prefixes.
#pragma once

#include <stdint.h>

#include <cub/block/block_reduce.cuh>
#include <cub/block/block_scan.cuh>

#include "mla_wrapper/common/device_plan.cuh"
#include "mla_wrapper/common/plan.h"

namespace mlaw {

struct BalancedPlanArgs {
  const int32_t* seq_lens;      // [batch], device
  int32_t* cta_work_indptr;     // [num_ctas + 1]
  int32_t* work_info;           // [>= T * (batch + groups)] records
  int32_t* request_info;        // [batch * kRequestFields]
  int32_t* merge_info;          // [batch * T * kMergeFields]
  int32_t* counts;              // [4]
  int64_t* scratch;             // [batch + 1]: the stream prefixes P_r, then W
  int32_t* memo;                // [kMemoHeader + batch] or NULL: the plan last written here
  int32_t batch;
  int32_t qo_len;               // query tokens per request (s_q)
  int32_t num_heads;
  int32_t rows_per_tile;
  int32_t kv_tile;
  int32_t num_ctas;
  int32_t causal;               // 1: per-row causal limits (qo_len > 1)
  int32_t fixed_units;          // F: a piece's fixed cost, in kv tiles
  int32_t allow_pairs;          // 1: the family merges cluster pairs' halves on chip (sm90)
  int64_t page_table_stride;    // entries per page-table row
};

// Cluster pairs (the sm90 family's, plan.h mlaw_pair_slot): where every request has one row
// tile and at least kBalancedPairMinTiles kv tiles, there are at most half as many requests as
// CTAs, and half the longest request fits a share and an eighth, request r runs on CTAs 2r and
// 2r + 1, one half of its kv tiles each, merged on chip: no partials, no combine (the CPU
// planner's pair_split / pair_halves plans; H=16 B=64 cut in pieces and combined ran 0.91-0.93x
// the wrapper on an H200).
constexpr int kBalancedPairMinTiles = 4;

// Phase timestamps for a probe build (benchmarks/micro/balanced_plan_probe.cu defines
// MLAW_BALANCED_PROBE and the mlaw_balanced_probe array); nothing in the library's build.
#ifdef MLAW_BALANCED_PROBE
#define MLAW_PLAN_STAMP(i) \
  do {                                                        \
    if (threadIdx.x == 0) mlaw_balanced_probe[i] = clock64(); \
  } while (0)
#else
#define MLAW_PLAN_STAMP(i) \
  do {                     \
  } while (0)
#endif

constexpr int kBalancedThreads = 256;     // (512 spilled 44 bytes at 128 registers a thread)
constexpr int kBalancedMaxGroups = 1024;  // (the export refuses more CTAs)
// (Lengths and stream prefixes are read from seq_lens and scratch in each step: keeping them in
// shared memory changed nothing at B <= 512 on an H200, session 72 run 6; the steps' cost is
// their barriers and scans, not these loads.)

// Two maxima reduced at once.
struct BalancedMax2 {
  int64_t x, y;
};

// A request's pieces, partial slots and merge items, scanned at once.
struct BalancedCounts {
  int32_t pieces, slots, merges;
};
struct BalancedCountsSum {
  __device__ BalancedCounts operator()(const BalancedCounts& x, const BalancedCounts& y) const {
    return BalancedCounts{x.pieces + y.pieces, x.slots + y.slots, x.merges + y.merges};
  }
};

// The geometry every thread derives from the arguments.
struct BalancedShape {
  int tiles;   // T: row tiles per request
  int group;   // G: CTAs per group
  int groups;  // CTAs / G
  int per;     // T / G: row tiles a CTA of a group runs per piece
  __device__ explicit BalancedShape(const BalancedPlanArgs& a) {
    tiles = (a.qo_len * a.num_heads + a.rows_per_tile - 1) / a.rows_per_tile;
    group = tiles <= a.num_ctas ? tiles : 1;
    groups = a.num_ctas / group;
    per = tiles / group;
  }
};

__device__ __forceinline__ int32_t kv_tiles_of(const BalancedPlanArgs& a, int32_t L) {
  return (L + a.kv_tile - 1) / a.kv_tile;
}

// The group whose range holds stream position pos: the last g with bound[g] <= pos.
__device__ __forceinline__ int group_of(const int64_t* bound, int groups, int64_t pos) {
  int lo = 0, hi = groups - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (bound[mid] <= pos) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// Request r's pieces: groups first..last (a share holding only its fixed units takes none).
struct BalancedPieces {
  int64_t start;  // P_r
  int32_t kv_tiles;
  int first, last;
  __device__ BalancedPieces(int64_t start_, int32_t kv_tiles_, int first_, int last_)
      : start(start_), kv_tiles(kv_tiles_), first(first_), last(last_) {}
  __device__ BalancedPieces(const BalancedPlanArgs& a, const int64_t* bound, int groups,
                            int64_t prefix, int32_t L)
      : start(prefix), kv_tiles(kv_tiles_of(a, L)) {
    const int64_t w = int64_t(a.fixed_units) + kv_tiles;
    first = group_of(bound, groups, kv_tiles > 0 ? start + a.fixed_units : start);
    const int end_group = group_of(bound, groups, start + w - 1);
    last = kv_tiles > 0 && end_group > first ? end_group : first;
  }
  __device__ int count() const { return last - first + 1; }
  // kv tiles [t0, t1) of the piece in group g
  __device__ void tiles_in(const BalancedPlanArgs& a, const int64_t* bound, int g, int32_t& t0,
                           int32_t& t1) const {
    const int64_t lo = g == first ? 0 : bound[g] - start - a.fixed_units;
    const int64_t hi = g == last ? kv_tiles : bound[g + 1] - start - a.fixed_units;
    t0 = int32_t(min(max(lo, int64_t(0)), int64_t(kv_tiles)));
    t1 = int32_t(min(max(hi, int64_t(t0)), int64_t(kv_tiles)));
  }
};

// A chunk's piece i (the chunk's requests' pieces in order; off: the exclusive prefix of their
// piece counts, kBalancedThreads entries): its request, the last lr with off[lr] <= i (a
// request without pieces shares its successor's offset). The chunks' pieces are spread over
// the CTA's threads: a request's pieces (up to one a group: B=1 has 64-132) on one thread made
// the plan 15-33 us at B=1 on an H200, 9.2-9.4 us spread (session 72 runs 3-4).
__device__ __forceinline__ int chunk_request_of(const int32_t* off, int i) {
  int lo = 0, hi = kBalancedThreads - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (off[mid] <= i) lo = mid; else hi = mid - 1;
  }
  return lo;
}

// Request r's fields (kv_len L): its qo_len query tokens, its page-table row.
__device__ __forceinline__ PlanRequest balanced_request(const BalancedPlanArgs& a, int r,
                                                        int32_t L) {
  return PlanRequest{r * a.qo_len, a.qo_len, L, int32_t(r * a.page_table_stride)};
}

// The kv end row tile t of a request sees (plan.h mlaw_tile_visible_len).
__device__ __forceinline__ int32_t tile_visible_end(const BalancedPlanArgs& a, int t, int32_t L) {
  const int rows = a.qo_len * a.num_heads;
  return int32_t(mlaw_tile_visible_len(L, a.qo_len, a.num_heads,
                                       min((t + 1) * a.rows_per_tile, rows), a.causal));
}

// The plan, by one CTA of kBalancedThreads threads (balanced_plan_kernel's body).
__device__ __forceinline__ void balanced_plan(const BalancedPlanArgs& a) {
  // (warp-scan scans: the lower latency; a plan is a chain of block-wide steps)
  using Scan = cub::BlockScan<int64_t, kBalancedThreads, cub::BLOCK_SCAN_WARP_SCANS>;
  using Scan32 = cub::BlockScan<int32_t, kBalancedThreads, cub::BLOCK_SCAN_WARP_SCANS>;
  using Counts = cub::BlockScan<BalancedCounts, kBalancedThreads, cub::BLOCK_SCAN_WARP_SCANS>;
  using Reduce = cub::BlockReduce<int64_t, kBalancedThreads>;
  using Reduce2 = cub::BlockReduce<BalancedMax2, kBalancedThreads>;
  __shared__ union {
    typename Scan::TempStorage scan;
    typename Scan32::TempStorage scan32;
    typename Counts::TempStorage counts;
    typename Reduce::TempStorage reduce;
    typename Reduce2::TempStorage reduce2;
  } tmp;
  // one chunk of kBalancedThreads requests: their pieces' exclusive prefix, first and last
  // groups (aligned step: kv tiles and piece count), kv_len, first partial slot, P_r
  __shared__ int32_t c_off[kBalancedThreads];
  __shared__ int32_t c_first[kBalancedThreads];
  __shared__ int32_t c_last[kBalancedThreads];
  __shared__ int32_t c_len[kBalancedThreads];
  __shared__ int32_t c_slot0[kBalancedThreads];
  __shared__ int64_t c_start[kBalancedThreads];
  __shared__ int64_t s_bound[kBalancedMaxGroups + 1];  // the groups' stream ranges
  __shared__ int32_t s_count[kBalancedMaxGroups];      // pieces per group
  __shared__ int32_t s_first[kBalancedMaxGroups];      // first request of each group
  __shared__ int32_t s_start[kBalancedMaxGroups + 1];  // exclusive prefix of s_count
  __shared__ int64_t s_carry[3];
  __shared__ int32_t s_gfirst[kBalancedMaxGroups + 1];  // aligned pieces: request r's first group

  MLAW_PLAN_STAMP(0);
  const BalancedShape shape(a);
  const int tid = threadIdx.x;
  const int B = a.batch;
  // request r's kv_len and stream prefix P_r (r == B: W)
  auto len_of = [&](int r) -> int32_t { return max(a.seq_lens[r], 0); };
  auto prefix_of = [&](int r) -> int64_t { return a.scratch[r]; };
  if (tid < 3) s_carry[tid] = 0;
  for (int g = tid; g < shape.groups; g += kBalancedThreads) {
    s_count[g] = 0;
    s_first[g] = 0x7fffffff;
  }
  __syncthreads();
  MLAW_PLAN_STAMP(1);
  // 1. the stream prefixes P_r, W, the longest request and the fewest kv tiles
  // (the longest request's units and minus the fewest kv tiles, reduced at once)
  BalancedMax2 most{0, -0x7fffffff};
  for (int base = 0; base < B; base += kBalancedThreads) {
    const int r = base + tid;
    const int32_t L = r < B ? max(a.seq_lens[r], 0) : 0;
    const int64_t w = r < B ? a.fixed_units + kv_tiles_of(a, L) : 0;
    most.x = max(most.x, w);
    if (r < B) most.y = max(most.y, a.fixed_units - w);
    int64_t prefix, chunk;
    Scan(tmp.scan).ExclusiveSum(w, prefix, chunk);
    if (r < B) a.scratch[r] = prefix + s_carry[0];
    __syncthreads();
    if (tid == 0) s_carry[0] += chunk;
    __syncthreads();
  }
  most = Reduce2(tmp.reduce2).Reduce(most, [](BalancedMax2 p, BalancedMax2 q) {
    return BalancedMax2{p.x > q.x ? p.x : q.x, p.y > q.y ? p.y : q.y};
  });
  if (tid == 0) {
    a.scratch[B] = s_carry[0];
    s_carry[1] = most.x;
    s_carry[2] = -most.y;
  }
  __syncthreads();  // (the prefixes are read by other threads below: global memory, same CTA)
  MLAW_PLAN_STAMP(2);
  const int64_t total = s_carry[0];
  const int64_t cap = max((total + shape.groups - 1) / shape.groups, int64_t(1));
  const int64_t slack = cap / 8;
  // (the pairs plan: half the longest request and its fixed units against a share)
  const int64_t longest_half = a.fixed_units + (s_carry[1] - a.fixed_units + 1) / 2;
  if (a.allow_pairs && shape.tiles == 1 && a.num_ctas % 2 == 0 && B > 0 &&
      2 * B <= a.num_ctas && s_carry[2] >= kBalancedPairMinTiles && longest_half <= cap + slack) {
    for (int c = tid; c <= a.num_ctas; c += kBalancedThreads)
      a.cta_work_indptr[c] = min(c, 2 * B);
    for (int r = tid; r < B; r += kBalancedThreads) {
      const int32_t L = len_of(r);
      const int32_t mid = min((kv_tiles_of(a, L) + 1) / 2 * a.kv_tile, L);
      const PlanRequest q = balanced_request(a, r, L);
      write_request(a.request_info, r, q);
      for (int h = 0; h < 2; ++h)
        write_work(a.work_info, 2 * int64_t(r) + h, r, 0, h ? mid : 0, h ? L : mid,
                   mlaw_pair_slot(-1, h), q);
    }
    if (tid == 0) write_counts(a.counts, 2 * B, 0, B);
    return;
  }
  // 2. the group boundaries: g * cap, moved to the nearer end of the request they cut when
  // that end is within cap / 8 (a slack under cap / 2 keeps them in order); or, where every
  // request fits a share and a slack and there are no more requests than groups, one request
  // a group (no cuts: the CPU planner's plan for such batches)
  const bool one_each = B <= shape.groups && s_carry[1] <= cap + slack;
  // or, where no more requests than groups and each request's pieces can stay its own, request
  // aligned pieces: the least X for which n_r = ceil(tiles_r / (X - F)) pieces of X - F kv tiles
  // at most (1 for an empty request) fit the groups, taken where F <= X - F and X <= cap + F
  // (no piece shorter than its fill: one-tile pieces over most of the GPU ran 0.92-0.97x on
  // the CPU planner's plans, sm90.py planner_cost; tiny batches keep the stream's). The stream's
  // boundaries give a request's inner pieces a share of kv tiles each, so a piece of up to
  // cap + F units with its fill, and a group holding a request's tail and the next one's head
  // pays two fills; the aligned plan's largest piece is X, with one fill a group (H=128 B=16
  // L=4096: four 16-tile pieces a request on 64 groups, the CPU planner's plan, against pieces
  // of 14-17 tiles cut across requests).
  MLAW_PLAN_STAMP(3);
  int64_t aligned = 0;  // X, or 0: the stream's boundaries
  if (!one_each && B <= shape.groups) {
    __syncthreads();  // (every thread has read the longest request from s_carry[1])
    const int64_t F = a.fixed_units;
    // (block-uniform: every thread gets the sum)
    auto pieces_at = [&](int64_t X) {
      int64_t n = 0;
      for (int r = tid; r < B; r += kBalancedThreads) {
        const int64_t t = kv_tiles_of(a, len_of(r));
        n += t > 0 ? (t + X - F - 1) / (X - F) : 1;
      }
      n = Reduce(tmp.reduce).Sum(n);
      if (tid == 0) s_carry[1] = n;
      __syncthreads();
      n = s_carry[1];
      __syncthreads();
      return n;
    };
    int64_t lo = 2 * F, hi = cap + F;
    if (pieces_at(hi) <= shape.groups) {
      while (lo < hi) {  // the least X that fits (the count falls as X grows)
        const int64_t X = (lo + hi) / 2;
        if (pieces_at(X) <= shape.groups) hi = X; else lo = X + 1;
      }
      aligned = hi;
    }
  }
  MLAW_PLAN_STAMP(4);
  if (aligned > 0) {
    // request r's pieces take groups [G_r, G_r + n_r): piece k starts at kv tile k * t_r / n_r
    // of it (piece 0 at the request's start, fixed units included), so BalancedPieces reads
    // them off the boundaries as it reads the stream's; the groups past the last piece are empty
    const int64_t per_piece = aligned - a.fixed_units;
    if (tid == 0) s_carry[0] = 0;  // (total is in registers)
    __syncthreads();
    for (int base = 0; base < B; base += kBalancedThreads) {
      const int r = base + tid;
      const int32_t t = r < B ? kv_tiles_of(a, len_of(r)) : 0;
      const int32_t n = r < B ? (t > 0 ? int32_t((t + per_piece - 1) / per_piece) : 1) : 0;
      int32_t g0, chunk;
      Scan32(tmp.scan32).ExclusiveSum(n, g0, chunk);
      c_off[tid] = g0;
      c_len[tid] = t;
      c_last[tid] = n;
      c_start[tid] = r < B ? prefix_of(r) : 0;
      __syncthreads();
      const int64_t at = s_carry[0];
      if (r < B) s_gfirst[r] = int32_t(at + g0);  // (B <= groups <= kBalancedMaxGroups here)
      for (int i = tid; i < chunk; i += kBalancedThreads) {  // (pieces of a chunk <= groups)
        const int lr = chunk_request_of(c_off, i);
        const int64_t k = i - c_off[lr];
        s_bound[at + i] = c_start[lr] + (k == 0 ? 0 : a.fixed_units + k * c_len[lr] / c_last[lr]);
        s_count[at + i] = 1;  // (a direct plan: step 3 is not run)
        s_first[at + i] = base + lr;
      }
      __syncthreads();
      if (tid == 0) s_carry[0] += chunk;
      __syncthreads();
    }
    for (int g = int(s_carry[0]) + tid; g <= shape.groups; g += kBalancedThreads)
      s_bound[g] = total;
    if (tid == 0) s_gfirst[B] = int32_t(s_carry[0]);
  }
  // g * cap moved to the nearer end of the request it cuts where that end is at most `limit` away
  auto snapped = [&](int g, int64_t limit) {
    int64_t b = min(int64_t(g) * cap, total);
    if (g == shape.groups) return total;
    if (g > 0 && b < total && limit > 0) {
      int lo = 0, hi = B - 1;  // the request r holding b: P_r <= b < P_{r+1}
      while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (prefix_of(mid) <= b) lo = mid; else hi = mid - 1;
      }
      const int64_t p0 = prefix_of(lo), p1 = prefix_of(lo + 1);
      if (b - p0 <= limit && b - p0 <= p1 - b) b = p0;
      else if (p1 - b <= limit) b = p1;
    }
    return b;
  };
  // or, with more requests than groups, every boundary at the nearer request end (no cuts)
  // where then no group runs more than a share and a slack (B=128 H=128 L=4096: two requests
  // a group, the CPU planner's plan, against 34 requests cut in two and the combine)
  MLAW_PLAN_STAMP(5);
  bool uncut = false;
  if (!one_each && aligned == 0 && B > shape.groups) {
    for (int g = tid; g <= shape.groups; g += kBalancedThreads) s_bound[g] = snapped(g, total);
    __syncthreads();
    int64_t most = 0;
    for (int g = tid; g < shape.groups; g += kBalancedThreads)
      most = max(most, s_bound[g + 1] - s_bound[g]);
    most = Reduce(tmp.reduce).Reduce(most, [](int64_t x, int64_t y) { return x > y ? x : y; });
    if (tid == 0) s_carry[1] = most;
    __syncthreads();
    uncut = s_carry[1] <= cap + slack;
    __syncthreads();
  }
  for (int g = tid; g <= shape.groups && aligned == 0 && !uncut; g += kBalancedThreads) {
    s_bound[g] = one_each ? (g == shape.groups ? total : prefix_of(min(g, B))) : snapped(g, slack);
    if (one_each && g < B) {  // (a direct plan: step 3 is not run)
      s_count[g] = 1;
      s_first[g] = g;
    }
  }
  __syncthreads();
  MLAW_PLAN_STAMP(6);
  if (tid == 0) s_carry[1] = s_carry[2] = 0;  // (the slot and merge carries of step 4)
  // 3. each request's pieces (groups p.first..p.last), partial slots and merge items (one
  // scan a chunk of requests), then each group's pieces and first request (the chunk's pieces
  // spread over the threads) and s_start, the groups' exclusive prefix of pieces. A batch of one
  // chunk keeps its requests' pieces and scan for step 4.
  // Direct plans (one request a group, request-aligned pieces) put at most one piece in a
  // group, and step 2 named each group's request and each request's groups: no search; their
  // counts and first requests are set (step 3 took ~3700 of ~10k clocks at B=64 H=128, one
  // request a pair of CTAs, session 72's probe).
  const bool direct = one_each || aligned > 0;
  // request r's first group (r == B: the groups in use)
  auto gfirst_of = [&](int r) { return one_each ? r : s_gfirst[r]; };
  const bool one_chunk = B <= kBalancedThreads;
  BalancedPieces mine(0, 0, 0, -1);
  BalancedCounts mine_at{0, 0, 0}, mine_all{0, 0, 0};
  auto pieces_of = [&](int r) {
    return r < B ? BalancedPieces(a, s_bound, shape.groups, prefix_of(r), len_of(r))
                 : BalancedPieces(0, 0, 0, -1);
  };
  auto counts_of = [&](const BalancedPieces& p) {
    const int32_t n = p.count();
    return BalancedCounts{n, n > 1 ? n * shape.tiles : 0, n > 1 ? shape.tiles : 0};
  };
  for (int base = 0; base < B && !direct; base += kBalancedThreads) {
    const BalancedPieces p = pieces_of(base + tid);
    BalancedCounts at, all;
    Counts(tmp.counts).ExclusiveScan(counts_of(p), at, BalancedCounts{0, 0, 0},
                                     BalancedCountsSum(), all);
    c_off[tid] = at.pieces;
    c_first[tid] = p.first;
    if (one_chunk) {
      mine = p;
      mine_at = at;
      mine_all = all;
    }
    __syncthreads();
    for (int i = tid; i < all.pieces; i += kBalancedThreads) {
      const int lr = chunk_request_of(c_off, i);
      const int g = c_first[lr] + (i - c_off[lr]);
      atomicAdd(&s_count[g], 1);
      atomicMin(&s_first[g], base + lr);
    }
    __syncthreads();
  }
  {
    constexpr int kPer = kBalancedMaxGroups / kBalancedThreads;  // groups a thread, blocked
    int32_t in[kPer], out[kPer], all;
    for (int i = 0; i < kPer; ++i) {
      const int g = tid * kPer + i;
      in[i] = g < shape.groups ? s_count[g] : 0;
    }
    Scan32(tmp.scan32).ExclusiveSum(in, out, all);
    for (int i = 0; i < kPer; ++i) {
      const int g = tid * kPer + i;
      if (g < shape.groups) s_start[g] = out[i];
    }
    if (tid == 0) s_start[shape.groups] = all;
  }
  __syncthreads();
  MLAW_PLAN_STAMP(7);
  const int64_t num_items = int64_t(s_start[shape.groups]) * shape.tiles;
  for (int c = tid; c <= a.num_ctas; c += kBalancedThreads) {
    int64_t at = num_items;
    if (c < shape.groups * shape.group) {
      const int g = c / shape.group, t = c % shape.group;
      at = int64_t(s_start[g]) * shape.tiles + int64_t(t) * s_count[g] * shape.per;
    }
    a.cta_work_indptr[c] = int32_t(at);
  }
  MLAW_PLAN_STAMP(8);
  // 4. each request's record, merge items and partial slots, then its pieces' items (a
  // chunk's pieces spread over the threads)
  for (int base = 0; base < B; base += kBalancedThreads) {
    const int r = base + tid;
    BalancedPieces p = mine;
    BalancedCounts at = mine_at, all = mine_all;
    if (direct) {
      p = r < B ? BalancedPieces(prefix_of(r), kv_tiles_of(a, len_of(r)), gfirst_of(r),
                                 gfirst_of(r + 1) - 1)
                : BalancedPieces(0, 0, 0, -1);
    } else if (!one_chunk) {
      p = pieces_of(r);
    }
    if (direct || !one_chunk) {
      Counts(tmp.counts).ExclusiveScan(counts_of(p), at, BalancedCounts{0, 0, 0},
                                       BalancedCountsSum(), all);
    }
    const int n = p.count();
    const int32_t L = r < B ? len_of(r) : 0;
    const int32_t slot0 = at.slots + int32_t(s_carry[1]);
    const int32_t merge0 = at.merges + int32_t(s_carry[2]);
    const int pieces = all.pieces;
    c_off[tid] = at.pieces;
    c_first[tid] = p.first;
    c_last[tid] = p.last;
    c_len[tid] = L;
    c_slot0[tid] = slot0;
    c_start[tid] = p.start;
    if (r < B) {
      write_request(a.request_info, r, balanced_request(a, r, L));
      if (n > 1) {
        for (int t = 0; t < shape.tiles; ++t)
          write_merge(a.merge_info, merge0 + t, r, t, slot0 + t * n, n);
      }
    }
    __syncthreads();
    for (int i = tid; i < pieces; i += kBalancedThreads) {
      const int lr = chunk_request_of(c_off, i);
      const int rr = base + lr;
      const int32_t Lr = c_len[lr];
      const BalancedPieces pr(c_start[lr], kv_tiles_of(a, Lr), c_first[lr], c_last[lr]);
      const int nr = pr.count();
      const int j = i - c_off[lr];     // the request's piece j
      const int g = pr.first + j;
      const int k = rr - s_first[g];   // the group's piece k
      const PlanRequest q = balanced_request(a, rr, Lr);
      int32_t t0, t1;
      pr.tiles_in(a, s_bound, g, t0, t1);
      for (int t = 0; t < shape.tiles; ++t) {
        const int64_t item = int64_t(s_start[g]) * shape.tiles +
                             int64_t(t % shape.group) * s_count[g] * shape.per +
                             int64_t(k) * shape.per + t / shape.group;
        const int32_t vis = tile_visible_end(a, t, Lr);
        write_work(a.work_info, item, rr, t, min(t0 * a.kv_tile, vis), min(t1 * a.kv_tile, vis),
                   nr > 1 ? int32_t(c_slot0[lr] + int64_t(t) * nr + j) : kSlotDirect, q);
      }
    }
    __syncthreads();
    if (tid == 0) {
      s_carry[1] += all.slots;
      s_carry[2] += all.merges;
    }
    __syncthreads();
  }
  MLAW_PLAN_STAMP(9);
  if (tid == 0) {
    write_counts(a.counts, int32_t(num_items), int32_t(s_carry[2]), B);
  }
}

// The memo (a.memo): what the plan in this workspace was made from, so that a call with the
// same arguments and lengths keeps it (the routed cutlass_mla_decode plans on every call: a
// step's later layers find their lengths unchanged). Words: a magic, the plan's arguments,
// a 64-bit checksum of the plan's records as written, their item and merge counts, a count of
// the times it was kept (tests read it), then each request's kv_len. A plan is kept only when
// all of these match, the checksum recomputed over the records now in memory: a workspace
// whose records another user overwrote (a caching allocator's freed block reused between
// steps) plans again.
constexpr int kMemoHeader = 20;
constexpr int32_t kMemoMagic = 0x504c4d4d;
enum : int { kMemoSumLo = 12, kMemoSumHi = 13, kMemoItems = 14, kMemoMerges = 15, kMemoKept = 16 };

// The memo's argument words 0..11.
__device__ __forceinline__ int32_t memo_arg(const BalancedPlanArgs& a, int i) {
  const int32_t args[12] = {kMemoMagic, a.batch, a.qo_len, a.num_heads, a.rows_per_tile,
                            a.kv_tile, a.num_ctas, a.causal, a.fixed_units, a.allow_pairs,
                            int32_t(a.page_table_stride), int32_t(a.page_table_stride >> 32)};
  return args[i];
}

// An order-free 64-bit checksum of the plan's records (items work records, merges merge
// records, clamped to the workspace's capacities), in thread 0 (a block reduction). The five
// regions are one index space, read kChecksumLoads words a thread at a time: every load of a
// pass in flight at once, a decode batch's plan up to ~B=64 in one pass. A region at a time,
// one word a thread a pass, made a chain of dependent L2 round trips; the routed call's middle
// rows ran 1-2 us faster with this than with that (H200, session 73 runs 3 and 5), and than with
// each region read in passes of eight words a thread (run 6: one pass a region at least).
constexpr int kChecksumLoads = 8;
__device__ __forceinline__ uint64_t plan_checksum(const BalancedPlanArgs& a, int64_t items,
                                                  int64_t merges) {
  using Sum = cub::BlockReduce<uint64_t, kBalancedThreads>;
  __shared__ typename Sum::TempStorage tmp;
  const BalancedShape shape(a);
  items = min(max(items, int64_t(0)), int64_t(shape.tiles) * (a.batch + shape.groups));
  merges = min(max(merges, int64_t(0)), int64_t(shape.tiles) * a.batch);
  // the regions' ends in the index space: counts, cta_work_indptr, request_info, merge_info,
  // work_info
  const int64_t end0 = 4, end1 = end0 + a.num_ctas + 1,
                end2 = end1 + int64_t(a.batch) * kRequestFields,
                end3 = end2 + merges * kMergeFields, total = end3 + items * kWorkFields;
  uint64_t sum = 0;
  for (int64_t base = threadIdx.x; base < total;
       base += int64_t(kChecksumLoads) * kBalancedThreads) {
    uint32_t word[kChecksumLoads];
    uint64_t tag[kChecksumLoads];  // the word's region and index
#pragma unroll
    for (int j = 0; j < kChecksumLoads; ++j) {
      const int64_t g = base + int64_t(j) * kBalancedThreads;
      const int32_t* p = g < end0 ? a.counts + g
                         : g < end1 ? a.cta_work_indptr + (g - end0)
                         : g < end2 ? a.request_info + (g - end1)
                         : g < end3 ? a.merge_info + (g - end2)
                                    : a.work_info + (g - end3);
      const uint64_t k = (g >= end0) + (g >= end1) + (g >= end2) + (g >= end3);
      const int64_t i = g - (k == 0 ? 0 : k == 1 ? end0 : k == 2 ? end1 : k == 3 ? end2 : end3);
      word[j] = g < total ? uint32_t(*p) : 0;
      tag[j] = (k << 56) ^ uint64_t(i);
    }
#pragma unroll
    for (int j = 0; j < kChecksumLoads; ++j) {
      if (base + int64_t(j) * kBalancedThreads >= total) break;
      // (splitmix64's finalizer over the word, its region and its index)
      uint64_t z = (uint64_t(word[j]) << 32) ^ tag[j];
      z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
      z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
      sum += z ^ (z >> 31);
    }
  }
  return Sum(tmp).Sum(sum);
}

// Whether the workspace holds the plan of these arguments and lengths (block-uniform).
__device__ __forceinline__ bool balanced_plan_kept(const BalancedPlanArgs& a) {
  __shared__ int s_kept;
  const int32_t* m = a.memo;
  bool differs = false;
  const int32_t items = m[kMemoItems], merges = m[kMemoMerges];  // (loaded with the rest)
  if (threadIdx.x < kMemoSumLo) differs = m[threadIdx.x] != memo_arg(a, threadIdx.x);
  for (int r = threadIdx.x; r < a.batch; r += kBalancedThreads)
    differs |= m[kMemoHeader + r] != max(a.seq_lens[r], 0);
  if (__syncthreads_or(differs)) return false;
  const uint64_t sum = plan_checksum(a, items, merges);
  if (threadIdx.x == 0) {
    s_kept = sum == (uint64_t(uint32_t(m[kMemoSumHi])) << 32 | uint32_t(m[kMemoSumLo]));
    if (s_kept) a.memo[kMemoKept] += 1;
  }
  __syncthreads();
  return s_kept;
}

// Record the plan just written (after every thread's writes: the barrier makes them visible).
__device__ __forceinline__ void balanced_plan_remember(const BalancedPlanArgs& a) {
  __syncthreads();
  const int32_t items = a.counts[0], merges = a.counts[1];
  const uint64_t sum = plan_checksum(a, items, merges);
  int32_t* m = a.memo;
  for (int r = threadIdx.x; r < a.batch; r += kBalancedThreads)
    m[kMemoHeader + r] = max(a.seq_lens[r], 0);
  if (threadIdx.x < kMemoSumLo) m[threadIdx.x] = memo_arg(a, threadIdx.x);
  if (threadIdx.x == 0) {
    m[kMemoSumLo] = int32_t(uint32_t(sum));
    m[kMemoSumHi] = int32_t(uint32_t(sum >> 32));
    m[kMemoItems] = items;
    m[kMemoMerges] = merges;
    m[kMemoKept] = 0;
  }
}

// (one CTA: bounded at one an SM, ptxas gives it 78 registers; with the thread bound alone it
// held 64, and spilled with the checksum read a region at a time in passes of eight words)
__global__ void __launch_bounds__(kBalancedThreads, 1) balanced_plan_kernel(BalancedPlanArgs a) {
  launch_dependents();     // (attention, launched with enable_pdl 2, waits for this grid)
  grid_dependency_wait();  // (launched programmatically: the stream's previous kernel first)
  if (a.memo != nullptr && balanced_plan_kept(a)) return;
  balanced_plan(a);
  if (a.memo != nullptr) balanced_plan_remember(a);
}

}  // namespace mlaw
