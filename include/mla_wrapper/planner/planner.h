// The split-KV planner (host C++): lengths -> the plan of common/plan.h, written into a host
// int32 buffer (the pinned staging copy of the int workspace) at the workspace layout's offsets.
//
// Python (mla_wrapper/planner.py) builds a PlannerConfig once per (layout, heads, page size,
// causal, cost model) and calls mlaw_plan() once per step through ctypes; the layout's
// offsets and capacities come from mla_wrapper/workspace.py. Pure and deterministic: the same
// inputs give the same bytes. Thread-safe (scratch memory is thread_local).
//
// Algorithm (see mla_wrapper/planner.py for the full statement and the proofs of the bounds)
//   1. Row tiles in request order; tile t of request r covers rows [t*R, min((t+1)*R, q*H));
//      its kv length is the union of its rows' visible ranges: L (non-causal) or
//      clamp(L - q + i_last + 1, 0, L) (causal, i_last = the tile's last query token).
//   2. Cost of a work item (in kv-token equivalents):
//        tokens + fixed + fixed_per_row * rows  (+ split_per_row * rows if the tile is split).
//   3. Greedy sweep with a cap: CTAs are filled in order; a tile that does not fit in what is
//      left of the current CTA is cut at a multiple of kv_tile so that the CTA is filled up to
//      the cap, if both parts keep >= min_chunk tokens (min_chunk_sqrt > 0 raises min_chunk to
//      that many times the square root of the batch's longest kv_len, per plan); else the CTA
//      is closed. The last CTA
//      takes whatever is left. A split only ever happens when a CTA closes, so a plan has at
//      most num_ctas - 1 splits: work items <= row tiles + num_ctas - 1, merge items <=
//      num_ctas - 1, partial slots <= 2 * (num_ctas - 1).
//   3b. Lockstep groups: when the row tiles come in groups of G >= 2 identical consecutive
//      tiles of a request (all of a request's tiles when every request has G equal ones; else
//      the G = num_heads / rows_per_tile tiles of one query token, e.g. causal MTP or varlen
//      qo at H=128) and G divides num_ctas, steps 3-4 run on one tile per group over
//      num_ctas / G CTAs and each CTA's work is replicated to G consecutive CTAs, one tile of
//      the group each: the tiles of a group then read the same KV at the same time (L2 hits).
//   4. The cap is searched (Newton steps, then regula falsi; a handful of O(tiles) passes)
//      for the smallest max CTA cost. The plan without splits is used when it is within
//      merge_launch of the plan with splits (or of the lower bound): no split when the batch
//      already fills the GPU in balance.
#pragma once

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include <algorithm>
#include <cmath>

#include <vector>

#include "mla_wrapper/common/plan.h"
#include "mla_wrapper/common/status.h"

namespace mlaw {
namespace planner {

// Built once in Python (mla_wrapper/planner.py: PlannerConfigStruct mirrors it field by field).
// Offsets are int32 element offsets into the int workspace (== the staging buffer).
struct PlannerConfig {
  int32_t struct_size;  // sizeof(PlannerConfig): guards against a stale Python mirror
  int32_t num_heads;
  int32_t page_size;
  int32_t causal;
  int32_t num_ctas;
  int32_t rows_per_tile;
  int32_t kv_tile;
  int32_t max_batch;
  int32_t max_row_tiles;
  int32_t max_work_items;
  int32_t max_merge_items;
  int32_t max_partial_slots;
  int32_t off_counts;
  int32_t off_cta_work_indptr;
  int32_t off_request_info;
  int32_t off_merge_info;
  int32_t off_work_info;
  int32_t int_workspace_elems;
  int32_t allow_split;
  int32_t min_chunk;          // tokens, a multiple of kv_tile
  int32_t min_chunk_sqrt;     // > 0: the shortest piece is also >= this x sqrt(the longest
                              // kv_len of the batch), rounded up to kv_tile
  int32_t pair_merge;         // 1: tiles cut in two pieces that are the only items of CTAs 2k
                              // and 2k + 1 are merged on chip by that cluster of two (sm90)
  int32_t min_chunk_div;      // > 0: min_chunk_sqrt's piece is at most the longest kv_len / this
                              // (rounded up to kv_tile; never below min_chunk)
  int32_t fine_split_div;     // > 0: a batch of at most num_ctas / this kv tiles in all (summed
                              // over its row tiles) may be cut into pieces of the longest
                              // kv_len / min_chunk_div (one kv tile without that cap)
  int64_t fixed_cost;         // tokens per work item
  int64_t fixed_cost_per_row; // tokens per query row per work item
  int64_t split_cost_per_row; // tokens per query row per partial piece
  int64_t merge_launch_cost;  // tokens a split plan must win by
  int32_t* ws;                // the staging buffer the plan is written to (int_workspace_elems)
  int64_t* stats;             // int64[kStatCount] written by plan(), or NULL
};

// stats[] written by mlaw_plan (int64).
enum {
  kStatNumWork = 0,
  kStatNumMerge = 1,
  kStatNumPartial = 2,
  kStatCopyBytes = 3,   // bytes of the staging buffer the device needs: [0, copy_bytes)
  kStatMaxCost = 4,     // max CTA cost of the plan (cost-model units)
  kStatTotalCost = 5,   // sum of CTA costs
  kStatLowerBound = 6,  // ceil(sum of whole-tile costs / num_ctas): no plan beats it
  kStatPasses = 7,      // greedy passes run (search effort)
  kStatNumTiles = 8,
  kStatCount = 9,
};

struct Tile {
  int32_t len;      // visible kv tokens (union over the tile's rows)
  int32_t fixed;    // cost-model fixed cost of one work item of this tile
  int32_t split;    // extra cost of one partial piece of this tile
  int32_t request;  // the tile's request (tiles of a request are consecutive, index 0, 1, ..)
};

struct PassResult {
  int64_t max_load;
  int64_t open_load;   // load of the CTA open at the end (the last one used)
  int64_t total;
  int32_t num_closed;  // CTAs closed before it
};

// Writes work items, per-CTA ranges and merge items while a pass runs.
struct Emitter {
  int32_t* work;
  int32_t* cta_indptr;
  int32_t* merge;
  int32_t max_work, max_merge, max_slots;
  int32_t num_work = 0, num_merge = 0, num_slots = 0;
  int32_t tile_first = 0, tile_index = -1, prev_request = -1;
  bool overflow = false;

  void begin_tile(const Tile& t) {
    tile_first = num_work;
    tile_index = t.request == prev_request ? tile_index + 1 : 0;
    prev_request = t.request;
  }
  void piece(const Tile& t, int64_t start, int64_t end) {
    if (num_work >= max_work) {
      overflow = true;
      return;
    }
    int32_t* w = work + int64_t(num_work) * kWorkFields;
    w[kWorkRequest] = t.request;
    w[kWorkRowTile] = tile_index;
    w[kWorkKvStart] = int32_t(start);
    w[kWorkKvEnd] = int32_t(end);
    w[kWorkPartialSlot] = -1;
    ++num_work;
  }
  void end_tile(const Tile& t) {
    const int32_t pieces = num_work - tile_first;
    if (pieces <= 1) return;
    if (num_merge >= max_merge || num_slots + pieces > max_slots) {
      overflow = true;
      return;
    }
    for (int32_t j = 0; j < pieces; ++j)
      work[int64_t(tile_first + j) * kWorkFields + kWorkPartialSlot] = num_slots + j;
    int32_t* m = merge + int64_t(num_merge) * kMergeFields;
    m[kMergeRequest] = t.request;
    m[kMergeRowTile] = tile_index;
    m[kMergeFirstSlot] = num_slots;
    m[kMergeNumSlots] = pieces;
    ++num_merge;
    num_slots += pieces;
  }
  void close_cta(int32_t c) { cta_indptr[c + 1] = num_work; }
};

// Rounds a kv position down to a multiple of kv_tile (a mask when it is a power of two: the
// sweep's cut path runs up to num_ctas times per pass, and 64-bit divisions are slow).
struct TileFloor {
  int64_t kv, mask;  // mask = ~(kv - 1) when kv is a power of two, else 0
  explicit TileFloor(int64_t kv_tile)
      : kv(kv_tile), mask((kv_tile & (kv_tile - 1)) == 0 ? ~(kv_tile - 1) : 0) {}
  int64_t operator()(int64_t x) const { return mask ? (x & mask) : x / kv * kv; }
};

// One greedy sweep with cap `cap`. kSplit: tiles may be cut; kEmit: write the plan.
// m: min_chunk, kv: kv_tile.
// kGallop (search passes on large batches): runs of whole tiles that fit are skipped with an
// exponential + binary search on the prefix sums of the tiles' whole costs (prefix[i] = sum of
// fixed + len over tiles < i), O(num_ctas * log(tiles / num_ctas)) instead of O(tiles); the
// decisions, and so the plan, are exactly those of the linear sweep.
template <bool kSplit, bool kEmit, bool kGallop = false>
inline PassResult sweep(const Tile* tiles, int32_t num_tiles, int32_t num_ctas, int64_t cap,
                        int64_t m, int64_t kv, Emitter* out, const int64_t* prefix = nullptr) {
  // A local copy keeps the emitter's counters in registers (stores through its int32
  // pointers could otherwise alias them).
  Emitter local;
  if (kEmit) local = *out;
  Emitter* const e = &local;
  const TileFloor floor_kv(kv);
  int32_t c = 0;
  int64_t load = 0, max_load = 0, total = 0;
  const int32_t last = num_ctas - 1;
  for (int32_t i = 0; i < num_tiles; ++i) {
    if (kGallop) {
      if (c == last) {  // the last CTA takes the rest
        load += prefix[num_tiles] - prefix[i];
        break;
      }
      // Largest j >= i with prefix[j] - prefix[i] <= cap - load: tiles i..j-1 fit whole.
      const int64_t limit = prefix[i] + (cap - load);
      int32_t lo = i, hi, step = 1;
      for (;;) {
        int32_t nx = lo + step;
        if (nx > num_tiles) nx = num_tiles;
        if (nx == lo || prefix[nx] > limit) {
          hi = nx;
          break;
        }
        lo = nx;
        step <<= 1;
      }
      while (hi - lo > 1) {
        const int32_t mid = lo + (hi - lo) / 2;
        if (prefix[mid] <= limit) {
          lo = mid;
        } else {
          hi = mid;
        }
      }
      load += prefix[lo] - prefix[i];
      i = lo;
      if (i == num_tiles) break;
    }
    const Tile& t = tiles[i];
    int64_t whole = int64_t(t.fixed) + t.len;
    if (kEmit) e->begin_tile(t);
    // Fast path: the whole tile fits.
    if (!kGallop && (load + whole <= cap || c == last)) {
      if (kEmit) e->piece(t, 0, t.len);
      load += whole;
      if (kEmit) e->end_tile(t);
      continue;
    }
    int64_t pos = 0;
    for (;;) {
      if (kSplit && t.len >= 2 * m) {  // cut so that this CTA is full, both parts >= min_chunk
        const int64_t avail = cap - load - t.fixed - t.split;
        if (avail >= m) {
          int64_t end = floor_kv(pos + avail);
          const int64_t end_max = floor_kv(t.len - m);
          if (end > end_max) end = end_max;
          if (end - pos >= m) {
            if (kEmit) {
              e->piece(t, pos, end);
              e->close_cta(c);
            }
            load += t.fixed + t.split + (end - pos);
            total += load;
            if (load > max_load) max_load = load;
            ++c;
            load = 0;
            pos = end;
            whole = t.fixed + t.split + (t.len - pos);
            if (whole <= cap || c == last) break;
            continue;
          }
        }
      }
      if (load == 0) break;  // an empty CTA that cannot be filled to the cap: take it all
      if (kEmit) e->close_cta(c);  // close this CTA; retry the rest in the next one
      total += load;
      if (load > max_load) max_load = load;
      ++c;
      load = 0;
      if (whole <= cap || c == last) break;
    }
    if (kEmit) e->piece(t, pos, t.len);
    load += whole;
    if (kEmit) e->end_tile(t);
  }
  total += load;
  if (load > max_load) max_load = load;
  if (kEmit) {
    for (int32_t j = c; j < num_ctas; ++j) e->close_cta(j);
    *out = local;
  }
  PassResult r;
  r.max_load = max_load;
  r.open_load = load;
  r.total = total;
  r.num_closed = c;
  return r;
}

struct SearchResult {
  int64_t cap;
  int64_t max_load;
};

template <bool kSplit>
inline PassResult sweep_search(const Tile* tiles, const int64_t* prefix, int32_t num_tiles,
                               int32_t num_ctas, int64_t cap, int64_t m, int64_t kv) {
  // Galloping pays off once CTAs take many tiles each (measured: the linear sweep predicts
  // its branches well and wins below ~32 tiles per CTA).
  if (num_tiles >= 48 * int64_t(num_ctas))
    return sweep<kSplit, false, true>(tiles, num_tiles, num_ctas, cap, m, kv, nullptr, prefix);
  return sweep<kSplit, false, false>(tiles, num_tiles, num_ctas, cap, m, kv, nullptr);
}

// Searches the cap for the smallest max CTA cost. A cap x is "met" when the sweep's max CTA
// cost is <= x. The deficit D(x) = open_load - (num_ctas - num_closed) * x (the last CTA's
// overflow when all are used, minus the room left otherwise) drops by about num_ctas per unit
// of x, so: a Newton step x + D / C until the cap is bracketed by a failed and a met cap, then
// regula falsi (with bisection fallback) until the bracket is within tolerance. The sweep is
// not exactly monotone in x, so every evaluated cap is a candidate and the best max wins.
// When only met caps were seen and the room left says a lower cap gains little on the mean,
// one cap a kv tile under the best max is still tried (cuts are kv-tile multiples, so the max
// can drop by a whole tile). hi must be met (the caller passes the proven bound); it is tried
// if nothing else was met.
template <bool kSplit>
inline SearchResult search(const Tile* tiles, const int64_t* prefix, int32_t num_tiles,
                           int32_t num_ctas, int64_t lo, int64_t hi, int64_t x0, int64_t m,
                           int64_t kv, int max_passes, int64_t* passes) {
  SearchResult best{hi, INT64_MAX};
  if (hi < lo) hi = lo;
  int64_t x = x0 < lo ? lo : (x0 > hi ? hi : x0);
  int64_t fail_x = lo - 1, fail_d = 0, ok_x = -1, ok_d = 0;
  bool has_fail = false, has_ok = false, stepped = false;
  const int64_t C = num_ctas;
  for (int it = 0; it < max_passes; ++it) {
    const PassResult r = sweep_search<kSplit>(tiles, prefix, num_tiles, num_ctas, x, m, kv);
    ++*passes;
#ifdef MLAW_PLANNER_TRACE
    fprintf(stderr, "  %s cap %lld -> max %lld open %lld closed %d total %lld\n",
            kSplit ? "split" : "nosplit", (long long)x, (long long)r.max_load,
            (long long)r.open_load, r.num_closed, (long long)r.total);
#endif
    if (r.max_load < best.max_load || (r.max_load == best.max_load && x < best.cap)) {
      best.cap = x;
      best.max_load = r.max_load;
    }
    const int64_t d = r.open_load - (C - r.num_closed) * x;
    const int64_t tol = (x / 96 > kv / 2) ? x / 96 : kv / 2;  // ~1%
    if (r.max_load <= x) {
      if (!has_ok || x < ok_x) {
        ok_x = x;
        ok_d = d;
      }
      has_ok = true;
      if (x <= lo) break;  // the lower bound is met: optimal
      // The room left (-d) spread over the CTAs bounds what a lower cap could gain on the
      // mean, not on the max: cuts fall on multiples of kv_tile, so a cap one kv tile under
      // the max met can still fit (e.g. 64 requests of 1024 tokens on 132 CTAs: pieces of
      // 576 + 448 tokens at the first cap met, 512 + 512 one tile lower). Try that once.
      if (!has_fail && -d / C < tol) {
        if (stepped || r.max_load - kv < lo) break;
        stepped = true;
        x = r.max_load - kv;
        continue;
      }
    } else {
      if (!has_fail || x > fail_x) {
        fail_x = x;
        fail_d = d > 0 ? d : 1;
      }
      has_fail = true;
    }
    int64_t next;
    if (has_ok && has_fail) {
      // The bracket's upper side: the smallest met cap, or the best max seen if lower (a
      // failed cap can still give a plan whose max beats every met cap).
      const int64_t upper = best.max_load < ok_x ? best.max_load : ok_x;
      const int64_t width = upper - fail_x;
      if (width <= tol) break;
      // Regula falsi between (fail_x, fail_d > 0) and (ok_x, ok_d <= 0), kept inside the
      // middle 3/4 of the bracket so that it always shrinks.
      const double t = double(fail_d) / double(fail_d - ok_d);
      next = fail_x + int64_t(t * double(ok_x - fail_x));
      const int64_t margin = width / 8 > 1 ? width / 8 : 1;
      if (next < fail_x + margin) next = fail_x + margin;
      if (next > upper - margin) next = upper - margin;
    } else if (has_fail) {  // go up: Newton step plus a little (land on the met side)
      next = x + (d > 0 ? d / C : 0) + tol;
      if (next >= hi) next = hi;
      if (next <= x) break;  // x == hi failed: cannot happen for a proven hi
    } else {  // only met caps so far: go down
      next = x + d / C;  // d <= 0
      if (next > x - tol) next = x - tol;
      if (next < lo) next = lo;
      if (next >= x) break;
    }
    x = next;
  }
  if (!has_ok) {  // the proven cap
    const PassResult r = sweep_search<kSplit>(tiles, prefix, num_tiles, num_ctas, hi, m, kv);
    ++*passes;
    if (r.max_load < best.max_load) {
      best.cap = hi;
      best.max_load = r.max_load;
    }
  }
  return best;
}

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Sums over the row tiles that the plan choice needs.
struct TileTotals {
  int64_t w0 = 0, w_splittable = 0, max_tile_cost = 0, max_unsplittable = 0;
  int64_t min_piece = INT64_MAX, cut_overhead = 0, num_splittable = 0;
  void add(const Tile& tl, int64_t m) {
    const int64_t cost = int64_t(tl.fixed) + tl.len;
    w0 += cost;
    if (cost > max_tile_cost) max_tile_cost = cost;
    if (tl.len >= 2 * m) {
      w_splittable += cost;
      cut_overhead += int64_t(tl.fixed) + 2 * int64_t(tl.split);
      ++num_splittable;
      const int64_t p = int64_t(tl.fixed) + tl.split + m;
      if (p < min_piece) min_piece = p;
    } else if (cost > max_unsplittable) {
      max_unsplittable = cost;
    }
  }
};

// Cluster pairs in place of a combine (cfg.pair_merge, real CTAs: `pairs_ok`): when at most
// C / 2 equal tiles were cut into more pieces (the combine merges them after the attention
// grid), each cut in two halves on CTAs 2k, 2k + 1 instead (pair_merges then merges them on
// chip) if that plan's max CTA cost is within merge_launch of the cut plan's: the cap that
// makes the sweep cut each tile at its middle kv tile. 0: no such plan.
// H=16 B=64 L=16384 (three pieces a request on 131 CTAs and the combine, whose tail came 5.3 us
// after the attention on an H200): 1.020x on an H200 and on an H100, H=64 1.003-1.010x
// (logs/sm90_s24_2026-11-27 runs 2, 9, 10). Only for halves of at least kPairHalvesMinTiles kv
// tiles: shorter tiles (H=16 B=48 L=1024) were not measured and keep the cut plan.
constexpr int64_t kPairHalvesMinTiles = 32;
inline int64_t pair_halves_cap(const PlannerConfig& cfg, const Tile* tiles, int32_t T, int32_t C,
                               int64_t cut_max) {
  if (!cfg.pair_merge || C % 2 != 0 || T < 1 || 2 * int64_t(T) > C) return 0;
  const int64_t kv = cfg.kv_tile, m = cfg.min_chunk;
  for (int32_t t = 1; t < T; ++t)
    if (tiles[t].len != tiles[0].len || tiles[t].fixed != tiles[0].fixed ||
        tiles[t].split != tiles[0].split)
      return 0;
  const int64_t len = tiles[0].len;
  const int64_t first = (len + 2 * kv - 1) / (2 * kv) * kv;  // the middle kv tile, rounded up
  if (len - first < m || len - first < kPairHalvesMinTiles * kv) return 0;
  const int64_t cap = int64_t(tiles[0].fixed) + tiles[0].split + first;
  return cap <= cut_max + cfg.merge_launch_cost ? cap : 0;
}

// Chooses the cap (and whether to cut) for tiles[0, T) on C CTAs, then emits that plan
// through e. Returns the emitting pass; *passes counts the sweeps. pairs_ok: C are real CTAs
// (not plan_lockstep's virtual ones), so pair_halves_cap applies.
inline PassResult choose_and_emit(const PlannerConfig& cfg, const Tile* tiles,
                                  const int64_t* prefix, int32_t T, int32_t C,
                                  const TileTotals& tt, Emitter& e, int64_t* passes,
                                  bool pairs_ok) {
  const int64_t m = cfg.min_chunk, kv = cfg.kv_tile;
  const int64_t f0 = cfg.fixed_cost, f1 = cfg.fixed_cost_per_row, s1 = cfg.split_cost_per_row;
  const int32_t R = cfg.rows_per_tile;
  const int64_t w0 = tt.w0, max_tile_cost = tt.max_tile_cost;
  const int64_t lower = ceil_div(w0, C);
  bool use_split = false;
  int64_t cap;
  const bool can_split = cfg.allow_split && C > 1 && tt.min_piece != INT64_MAX;
  if (!can_split) {
    // No cut possible: one tile per CTA when they fit, else a searched contiguous partition.
    if (T <= C) {
      cap = max_tile_cost;
    } else {
      const int64_t lo = lower > max_tile_cost ? lower : max_tile_cost;
      cap = search<false>(tiles, prefix, T, C, lo, lower + max_tile_cost, lo, m, kv, 12, passes).cap;
    }
  } else {
    // The plan with cuts. lo: no plan beats it (its max CTA cost is at least the mean, at
    // least an uncuttable tile, and, if anything is cut, at least a minimal piece).
    // hi: any cap >= ceil(W_max / C) + G is met, W_max = w0 + (C-1)(Fmax + 2 Smax) bounds the
    // total cost with cuts, G = Fmax + Smax + 2 min_chunk + kv_tile bounds a closed CTA's
    // unused room. x0: the mean plus the expected cost of cuts (about one per CTA boundary
    // that falls in a cuttable tile).
    int64_t lo = lower;
    if (tt.max_unsplittable > lo) lo = tt.max_unsplittable;
    const int64_t piece_or_tile = tt.min_piece < max_tile_cost ? tt.min_piece : max_tile_cost;
    if (piece_or_tile > lo) lo = piece_or_tile;
    // No split when the batch already fills the GPU in balance: if the plan without cuts is
    // within merge_launch of lo, no plan with cuts can beat it by more (one tile per CTA when
    // the tiles fit in the CTAs, else one sweep).
    int64_t ns_lo = lower > max_tile_cost ? lower : max_tile_cost;
    bool decided = false;
    if (ns_lo <= lo + cfg.merge_launch_cost) {
      if (T <= C) {
        cap = max_tile_cost;
        decided = true;
      } else {
        const int64_t x = lo + cfg.merge_launch_cost;
        const PassResult r = sweep_search<false>(tiles, prefix, T, C, x, m, kv);
        ++*passes;
        if (r.max_load <= x) {
          cap = x;
          decided = true;
        } else {  // estimate (not a bound) of the no-cut plan's cap, to skip a hopeless check
          const int64_t d = r.open_load - (int64_t(C) - r.num_closed) * x;
          const int64_t est = x + (d > 0 ? d / C : 0);
          if (est > ns_lo) ns_lo = est;
        }
      }
    }
    if (!decided) {
      const int64_t fmax = f0 + f1 * R, smax = s1 * R;
      const int64_t hi =
          ceil_div(w0 + int64_t(C - 1) * (fmax + 2 * smax), C) + fmax + smax + 2 * m + kv;
      const double frac = double(tt.w_splittable) / double(w0);
      const double cut_cost = double(tt.cut_overhead) / double(tt.num_splittable);  // fixed + 2 split
      const int64_t x0 = ceil_div(w0 + int64_t(frac * double(C - 1) * cut_cost), C);
      const SearchResult s = search<true>(tiles, prefix, T, C, lo, hi, x0, m, kv, 8, passes);
      cap = s.cap;
      use_split = true;
      // The plan without cuts, if it is within merge_launch of the plan with cuts.
      const int64_t ns_target = s.max_load + cfg.merge_launch_cost;
      if (T <= C) {
        if (max_tile_cost <= ns_target) {
          use_split = false;
          cap = max_tile_cost;
        }
      } else if (ns_lo <= ns_target) {
        const PassResult r = sweep_search<false>(tiles, prefix, T, C, ns_target, m, kv);
        ++*passes;
        if (r.max_load <= ns_target) {
          use_split = false;
          cap = ns_target;
        }
      }
      if (use_split && pairs_ok) {
        const int64_t pc = pair_halves_cap(cfg, tiles, T, C, s.max_load);
        if (pc > 0) cap = pc;
      }
    }
  }

  const PassResult r = use_split ? sweep<true, true>(tiles, T, C, cap, m, kv, &e)
                                 : sweep<false, true>(tiles, T, C, cap, m, kv, &e);
  ++*passes;
  return r;
}

// Lockstep groups: the row tiles come in groups of G identical consecutive tiles of one
// request (tile j G + g of a request, g < G, all alike), which read the same KV. Planned with
// one representative tile per group over C / G virtual CTAs; virtual CTA v's work goes to CTAs
// G v .. G v + G - 1, one tile of the group each, with the same cuts: the G tiles then stream
// the same KV range at the same time and L2 serves all but one of the reads (a plain sweep
// gives a CTA ~T / C consecutive tiles, so the tiles of a request run one after another and
// each reads the KV from DRAM; with cuts, a CTA's later pieces run when the CTAs holding the
// group's other tiles are elsewhere, even with fewer tiles than CTAs). Every bound of the plain
// plan holds with w0 / G over C / G CTAs (the same or tighter). Emits through e (the real
// plan's buffers); returns the emitting pass with its total over all C CTAs.
inline PassResult plan_lockstep(const PlannerConfig& cfg, const Tile* tiles, int32_t T,
                                int32_t C, int32_t G, Emitter& e, int64_t* passes) {
  static thread_local std::vector<Tile> vtile_buf;
  static thread_local std::vector<int64_t> vprefix_buf;
  static thread_local std::vector<int32_t> vwork_buf, vind_buf, vmerge_buf, slot_buf;
  const int32_t Tv = T / G, Cv = C / G;
  vtile_buf.resize(Tv);
  vprefix_buf.resize(int64_t(Tv) + 1);
  TileTotals vt;
  vprefix_buf[0] = 0;
  for (int32_t i = 0; i < Tv; ++i) {
    vtile_buf[i] = tiles[int64_t(i) * G];
    vt.add(vtile_buf[i], cfg.min_chunk);
    vprefix_buf[i + 1] = vt.w0;
  }
  Emitter ve;
  ve.max_work = cfg.max_work_items / G;
  ve.max_merge = cfg.max_merge_items / G;
  ve.max_slots = cfg.max_partial_slots / G;
  vwork_buf.resize(int64_t(ve.max_work) * kWorkFields);
  vind_buf.resize(Cv + 1);
  vmerge_buf.resize(int64_t(ve.max_merge) * kMergeFields);
  ve.work = vwork_buf.data();
  ve.cta_indptr = vind_buf.data();
  ve.merge = vmerge_buf.data();
  ve.cta_indptr[0] = 0;
  PassResult r =
      choose_and_emit(cfg, vtile_buf.data(), vprefix_buf.data(), Tv, Cv, vt, ve, passes, false);
  if (ve.overflow) {
    e.overflow = true;
    return r;
  }
  // Virtual slot s of a merge (first, n) -> slot first G + g n + (s - first) of tile g.
  slot_buf.resize(int64_t(ve.num_slots) * 2);
  for (int32_t k = 0; k < ve.num_merge; ++k) {
    const int32_t* mv = ve.merge + int64_t(k) * kMergeFields;
    for (int32_t j = 0; j < mv[kMergeNumSlots]; ++j) {
      slot_buf[2 * int64_t(mv[kMergeFirstSlot] + j)] = mv[kMergeFirstSlot];
      slot_buf[2 * int64_t(mv[kMergeFirstSlot] + j) + 1] = mv[kMergeNumSlots];
    }
    for (int32_t g = 0; g < G; ++g) {
      int32_t* mo = e.merge + int64_t(k * G + g) * kMergeFields;
      mo[kMergeRequest] = mv[kMergeRequest];
      mo[kMergeRowTile] = mv[kMergeRowTile] * G + g;  // the virtual plan's j: group j
      mo[kMergeFirstSlot] = mv[kMergeFirstSlot] * G + g * mv[kMergeNumSlots];
      mo[kMergeNumSlots] = mv[kMergeNumSlots];
    }
  }
  for (int32_t c = 0; c < C; ++c) {
    const int32_t v = c / G, g = c % G;
    for (int32_t i = ve.cta_indptr[v]; i < ve.cta_indptr[v + 1]; ++i) {
      const int32_t* wv = ve.work + int64_t(i) * kWorkFields;
      int32_t* wo = e.work + int64_t(e.num_work) * kWorkFields;
      for (int f = 0; f < kWorkFields; ++f) wo[f] = wv[f];
      wo[kWorkRowTile] = wv[kWorkRowTile] * G + g;
      const int32_t sv = wv[kWorkPartialSlot];
      if (sv >= 0) {
        const int32_t first = slot_buf[2 * int64_t(sv)], n = slot_buf[2 * int64_t(sv) + 1];
        wo[kWorkPartialSlot] = first * G + g * n + (sv - first);
      }
      ++e.num_work;
    }
    e.cta_indptr[c + 1] = e.num_work;
  }
  e.num_merge = ve.num_merge * G;
  e.num_slots = ve.num_slots * G;
  r.total *= G;  // max_load is per CTA: the same
  return r;
}

// Cluster pairs (cfg.pair_merge; the sm90 kernel launches clusters of two CTAs): a tile cut in
// exactly two pieces that are the only work items of CTAs 2k and 2k + 1 is merged by that
// cluster on chip (mla_kernel.cuh) instead of by the combine kernel: its pieces get kSlotPairLow
// / kSlotPairHigh and its merge item goes. A batch of B = num_ctas / 2 equal requests is
// planned that way (every request cut in two), where the combine kernel's launch and its
// round trip through L2 came after the whole attention grid. The remaining merge items keep
// their order; slot numbers are kept (the unused ones cost nothing).
inline void pair_merges(Emitter& e, int32_t C) {
  static thread_local std::vector<int32_t> merge_of_first_slot;
  merge_of_first_slot.assign(e.num_slots, -1);
  for (int32_t k = 0; k < e.num_merge; ++k) {
    const int32_t* m = e.merge + int64_t(k) * kMergeFields;
    if (m[kMergeNumSlots] == 2) merge_of_first_slot[m[kMergeFirstSlot]] = k;
  }
  bool any = false;
  for (int32_t c = 0; c + 1 < C; c += 2) {
    const int32_t w = e.cta_indptr[c];
    if (e.cta_indptr[c + 1] != w + 1 || e.cta_indptr[c + 2] != w + 2) continue;
    int32_t* a = e.work + int64_t(w) * kWorkFields;
    int32_t* b = a + kWorkFields;
    const int32_t sa = a[kWorkPartialSlot];
    if (sa < 0 || b[kWorkPartialSlot] != sa + 1 || merge_of_first_slot[sa] < 0) continue;
    e.merge[int64_t(merge_of_first_slot[sa]) * kMergeFields + kMergeNumSlots] = 0;  // goes
    a[kWorkPartialSlot] = mlaw_pair_slot(-1, 0);
    b[kWorkPartialSlot] = mlaw_pair_slot(-1, 1);
    any = true;
  }
  if (!any) return;
  int32_t kept = 0;
  for (int32_t k = 0; k < e.num_merge; ++k) {
    const int32_t* m = e.merge + int64_t(k) * kMergeFields;
    if (m[kMergeNumSlots] == 0) continue;
    int32_t* d = e.merge + int64_t(kept++) * kMergeFields;
    for (int f = 0; f < kMergeFields; ++f) d[f] = m[f];
  }
  e.num_merge = kept;
}

// Cluster pairs for a batch that leaves half the CTAs idle (cfg.pair_merge, no pair made by
// pair_merges): when every busy CTA runs one work item of at least kPairSplitTiles kv tiles
// and there are at least twice as many CTAs, item k is cut in two halves at a kv tile, run by
// CTAs 2k and 2k + 1 and merged on chip into what the item wrote (out, or its partial slot:
// mlaw_pair_slot). B=1: a CTA's time is mostly its bytes in and out (Q, its tiles, a 64 KB
// output row block at ~24 bytes a clock per SM), and cutting a tile into more pieces adds
// slots for the combine to merge. The merge items and the cost statistics stay those of the
// plan before the cut. The exchange costs a pair ~4000-7700 clocks (cluster barrier ~1500, the
// bulk copy at ~18 bytes a clock, the merge; H100 trace, 2026-11-25), about what one tile
// fewer per CTA saves: halving items of 2 tiles ran B=1 L=1024 at 0.92x (H=128) / 0.98x (H=16)
// from a CUDA graph, items of 4 tiles (L=4096) at 1.0x / 1.10x.
#ifndef MLAW_PAIR_SPLIT_TILES  // (A/B builds of the planner library)
#define MLAW_PAIR_SPLIT_TILES 4
#endif
constexpr int32_t kPairSplitTiles = MLAW_PAIR_SPLIT_TILES;
inline void pair_split(Emitter& e, int32_t C, int32_t kv_tile) {
  const int32_t n = e.num_work;
  if (n == 0 || 2 * n > C) return;
  for (int32_t c = 0; c < C; ++c)
    if (e.cta_indptr[c + 1] - e.cta_indptr[c] > 1) return;
  for (int32_t w = 0; w < n; ++w) {
    const int32_t* a = e.work + int64_t(w) * kWorkFields;
    if (a[kWorkKvEnd] - a[kWorkKvStart] <= (kPairSplitTiles - 1) * kv_tile ||
        a[kWorkPartialSlot] < kSlotDirect)
      return;
  }
  static thread_local std::vector<int32_t> items;
  items.assign(e.work, e.work + int64_t(n) * kWorkFields);  // in CTA order: one per busy CTA
  for (int32_t k = 0; k < n; ++k) {
    const int32_t* a = items.data() + int64_t(k) * kWorkFields;
    const int32_t tiles = (a[kWorkKvEnd] - a[kWorkKvStart] + kv_tile - 1) / kv_tile;
    const int32_t mid = a[kWorkKvStart] + (tiles + 1) / 2 * kv_tile;
    for (int32_t h = 0; h < 2; ++h) {
      int32_t* o = e.work + int64_t(2 * k + h) * kWorkFields;
      for (int f = 0; f < kWorkFields; ++f) o[f] = a[f];
      o[h ? kWorkKvStart : kWorkKvEnd] = mid;
      o[kWorkPartialSlot] = mlaw_pair_slot(a[kWorkPartialSlot] >= 0 ? a[kWorkPartialSlot] : -1, h);
    }
  }
  e.num_work = 2 * n;
  for (int32_t c = 0; c < C; ++c) e.cta_indptr[c + 1] = c < 2 * n ? c + 1 : 2 * n;
}

// The planner. Returns 0, or -1 with a message in mlaw::status_buffer() naming the argument.
inline int plan(const PlannerConfig& cfg_in, int32_t batch, const int32_t* qo_indptr,
                const int32_t* kv_indptr, const int32_t* kv_len) {
  int32_t* const ws = cfg_in.ws;
  int64_t* const stats = cfg_in.stats;
  if (ws == nullptr) return fail("out: no staging buffer set");
  if (cfg_in.struct_size != int32_t(sizeof(PlannerConfig)))
    return fail("planner: config struct size %d != %d (stale Python mirror of planner.h)",
                cfg_in.struct_size, int32_t(sizeof(PlannerConfig)));
  if (batch < 0 || batch > cfg_in.max_batch)
    return fail("batch size %d exceeds the CUDA-graph capacity %d set at construction", batch,
                cfg_in.max_batch);
  // A length-dependent shortest piece (min_chunk_sqrt > 0): the best number of pieces of one
  // long request grows like sqrt(its length) (each piece pays a prologue and a merged partial;
  // H200 B=1 graph replay: 128-token pieces best at L=1024, 256 at L=4096, 2026-11-23), capped
  // at L / min_chunk_div (H100 2026-11-26, sm90: 128-token pieces 1.02-1.04x 192 at L=2048).
  // A batch too small to fill a quarter of the GPU even in one-tile pieces (fine_split_div)
  // drops the floor (min_chunk) and the square root: its pieces are L / min_chunk_div (at least
  // one kv tile): B=1 at L=512 / 1024 ran 1.05-1.18x faster from a CUDA graph in one-tile
  // pieces, while batches that would spread over 64+ CTAs so ran 0.92-0.97x (the pieces' Q
  // loads and partials), and B=1 H=16 L=2048 0.98-1.03x in 32 one-tile pieces against
  // 1.03-1.04x in 16 of two (benchmarks/results/logs/sm90_s18_h100_2026-11-26, runs 4-6).
  PlannerConfig cfg = cfg_in;
  bool fine = false;
  if (cfg.fine_split_div > 0) {  // total kv tiles, counted until they pass the threshold
    const int64_t limit = cfg.num_ctas / cfg.fine_split_div;
    int64_t units = 0;
    for (int32_t r = 0; r < batch && units <= limit; ++r) {
      const int64_t q = int64_t(qo_indptr[r + 1]) - qo_indptr[r], L = kv_len[r];
      if (q > 0 && L > 0)
        units += ceil_div(q * cfg.num_heads, cfg.rows_per_tile) * ceil_div(L, cfg.kv_tile);
    }
    fine = units <= limit;
  }
  if (cfg.min_chunk_sqrt > 0 || fine) {
    int32_t lmax = 0;
    for (int32_t r = 0; r < batch; ++r) lmax = kv_len[r] > lmax ? kv_len[r] : lmax;
    const int64_t cap = cfg.min_chunk_div > 0 ? ceil_div(lmax, cfg.min_chunk_div) : INT64_MAX;
    const int64_t root = int64_t(std::ceil(cfg.min_chunk_sqrt * std::sqrt(double(lmax))));
    const int64_t want = fine ? (cfg.min_chunk_div > 0 ? cap : 1) : std::min(root, cap);
    const int64_t rounded = ceil_div(std::max<int64_t>(want, 1), cfg.kv_tile) * cfg.kv_tile;
    if (fine || rounded > cfg.min_chunk) cfg.min_chunk = int32_t(rounded);
  }
  const int32_t H = cfg.num_heads, R = cfg.rows_per_tile, P = cfg.page_size, C = cfg.num_ctas;
  const int64_t m = cfg.min_chunk, kv = cfg.kv_tile;
  const int64_t f0 = cfg.fixed_cost, f1 = cfg.fixed_cost_per_row, s1 = cfg.split_cost_per_row;

  static thread_local std::vector<Tile> tile_buf;
  if (int64_t(tile_buf.size()) < cfg.max_row_tiles) tile_buf.resize(cfg.max_row_tiles);
  Tile* tiles = tile_buf.data();
  static thread_local std::vector<int64_t> prefix_buf;
  if (int64_t(prefix_buf.size()) < int64_t(cfg.max_row_tiles) + 1) prefix_buf.resize(cfg.max_row_tiles + 1);
  int64_t* prefix = prefix_buf.data();
  prefix[0] = 0;

  int32_t* counts = ws + cfg.off_counts;
  int32_t* request_info = ws + cfg.off_request_info;

  // Validate, fill request_info, build the row tiles.
  int64_t num_tiles = 0, rows_total = 0;
  TileTotals tt;
  // Lockstep groups (below): every request has the same G >= 2 row tiles, all of one length
  // and one row count; failing that, the tiles of each query token when num_heads is a
  // multiple of the tile's rows (those are always alike).
  int64_t group = -1;  // G so far; 0 once a request rules grouping out
  int32_t memo_q = -1;
  int64_t memo_nt = 0;
  if (batch > 0 && (qo_indptr[0] < 0 || kv_indptr[0] < 0))
    return fail("%s: first entry must be >= 0, got %d", qo_indptr[0] < 0 ? "qo_indptr" : "kv_indptr",
                qo_indptr[0] < 0 ? qo_indptr[0] : kv_indptr[0]);
  for (int32_t r = 0; r < batch; ++r) {
    const int32_t qs = qo_indptr[r], qe = qo_indptr[r + 1];
    const int32_t ps = kv_indptr[r], pe = kv_indptr[r + 1];
    const int32_t L = kv_len[r];
    if (qe < qs)
      return fail("qo_indptr: must be non-decreasing, got qo_indptr[%d] = %d > qo_indptr[%d] = %d",
                  r, qs, r + 1, qe);
    if (pe < ps)
      return fail("kv_indptr: must be non-decreasing, got kv_indptr[%d] = %d > kv_indptr[%d] = %d",
                  r, ps, r + 1, pe);
    if (L < 0) return fail("kv_len_arr: negative length %d for request %d", L, r);
    if ((int64_t(pe) - ps) * P < L)  // fewer than ceil(L / P) pages (no division: hot loop)
      return fail("kv_indptr: request %d has %d pages (kv_indptr[%d] - kv_indptr[%d]) but "
                  "kv_len_arr[%d] = %d needs %lld pages of page_size %d",
                  r, pe - ps, r + 1, r, r, L, (long long)((int64_t(L) + P - 1) / P), P);
    const int32_t q = qe - qs;
    int32_t* ri = request_info + int64_t(r) * kRequestFields;
    ri[kRequestQoStart] = qs;
    ri[kRequestQoLen] = q;
    ri[kRequestKvLen] = L;
    ri[kRequestPageStart] = ps;
    const int64_t rows = int64_t(q) * H;
    rows_total += rows;
    if (q != memo_q) {  // decode batches share one qo_len: divide once
      memo_q = q;
      memo_nt = ceil_div(rows, R);
    }
    const int64_t nt = memo_nt;
    if (num_tiles + nt > cfg.max_row_tiles) {  // keep counting for the message
      num_tiles += nt;
      continue;
    }
    for (int64_t t = 0; t < nt; ++t) {
      Tile& tl = tiles[num_tiles + t];
      const int64_t row_end = (t + 1) * R < rows ? (t + 1) * R : rows;
      const int64_t tile_rows = row_end - t * R;
      tl.len = int32_t(mlaw_tile_visible_len(L, q, H, row_end, cfg.causal));
      tl.fixed = int32_t(f0 + f1 * tile_rows);
      tl.split = int32_t(s1 * tile_rows);
      tl.request = r;
      tt.add(tl, m);
      prefix[num_tiles + t + 1] = tt.w0;
      if (t > 0 && (tl.len != tiles[num_tiles].len || tl.fixed != tiles[num_tiles].fixed))
        group = 0;
    }
    if (group != 0) group = (group < 0 || group == nt) && nt >= 2 ? nt : 0;
    num_tiles += nt;
  }
  if (num_tiles > cfg.max_row_tiles)
    return fail("qo_indptr: the batch needs %lld row tiles (ceil(qo_len * num_heads / %d) summed "
                "over requests) but the workspace layout holds %d (max_row_tiles, fixed at "
                "construction)",
                (long long)num_tiles, R, cfg.max_row_tiles);
  if (rows_total > INT32_MAX)
    return fail("qo_indptr: %lld query rows overflow int32", (long long)rows_total);
  const int32_t T = int32_t(num_tiles);

  // Choose the plan and emit it.
  const int64_t lower = ceil_div(tt.w0, C);
  int64_t passes = 0;
  Emitter e;
  e.work = ws + cfg.off_work_info;
  e.cta_indptr = ws + cfg.off_cta_work_indptr;
  e.merge = ws + cfg.off_merge_info;
  e.max_work = cfg.max_work_items;
  e.max_merge = cfg.max_merge_items;
  e.max_slots = cfg.max_partial_slots;
  e.cta_indptr[0] = 0;
  const int32_t G_token = H % R == 0 ? H / R : 0;
  const int32_t G = group >= 2 && C % group == 0 ? int32_t(group)
                    : G_token >= 2 && C % G_token == 0 ? G_token : 0;
  const PassResult r = G >= 2
                           ? plan_lockstep(cfg, tiles, T, C, G, e, &passes)
                           : choose_and_emit(cfg, tiles, prefix, T, C, tt, e, &passes, true);
  if (e.overflow)
    return fail("planner: internal error: plan exceeds the layout's capacities (work %d/%d, "
                "merge %d/%d, slots %d/%d)",
                e.num_work, cfg.max_work_items, e.num_merge, cfg.max_merge_items, e.num_slots,
                cfg.max_partial_slots);
  if (cfg.pair_merge && C % 2 == 0) {
    pair_merges(e, C);
    pair_split(e, C, cfg.kv_tile);
  }
  // Each item carries its request's fields (plan.h kWorkQoStart..kWorkPageStart).
  for (int32_t w = 0; w < e.num_work; ++w) {
    int32_t* wi = e.work + int64_t(w) * kWorkFields;
    const int32_t* ri = request_info + int64_t(wi[kWorkRequest]) * kRequestFields;
    wi[kWorkQoStart] = ri[kRequestQoStart];
    wi[kWorkQoLen] = ri[kRequestQoLen];
    wi[kWorkKvLen] = ri[kRequestKvLen];
    wi[kWorkPageStart] = ri[kRequestPageStart];
  }
  counts[0] = e.num_work;
  counts[1] = e.num_merge;
  counts[2] = batch;
  counts[3] = int32_t(rows_total);
  if (stats) {
    stats[kStatNumWork] = e.num_work;
    stats[kStatNumMerge] = e.num_merge;
    stats[kStatNumPartial] = e.num_slots;
    stats[kStatCopyBytes] = (int64_t(cfg.off_work_info) + int64_t(e.num_work) * kWorkFields) * 4;
    stats[kStatMaxCost] = r.max_load;
    stats[kStatTotalCost] = r.total;
    stats[kStatLowerBound] = lower;
    stats[kStatPasses] = passes;
    stats[kStatNumTiles] = T;
  }
  return 0;
}

}  // namespace planner
}  // namespace mlaw
