// Tile constants of the portable sm80 MLA kernel family (mma.sync m16n8k16 + ldmatrix +
// cp.async; runs on SM80 and later, including Hopper). The Python side mirrors the values
// that the planner needs in mla_wrapper/sm80.py (ROWS_PER_TILE, KV_TILE) and picks the
// shared-memory configuration (KvConfig) per device in sm80.py (CONFIGS / config_for_smem).
//
// Configurations (KV tile tokens x stages; bytes of dynamic shared memory):
//   64x2  230,912  (SM90-class: H100/H200, >= 227 KB per block)  the original schedule
//   32x4  226,816  (SM90-class)  4 stages of 32 tokens: 2-3 tiles in flight while computing
//         (slower than 64x2 on an H200 at every shape measured: kept for experiments)
//   32x2  153,088  (A100 / SM80 / SM87: 163 KB per block)
//   16x1   95,232  (Ada / SM86 / SM89 / SM120: 99 KB per block)  no load/compute overlap
// The plan's kv_tile (split granularity, KV_TILE = 64 in sm80.py) only has to be a multiple
// of the kernel's tile, so one plan serves every configuration.
#pragma once

namespace mlaw {
namespace sm80 {

constexpr int kHeadDimCkv = 512;              // latent (V = the first 512 columns of K)
constexpr int kHeadDimKpe = 64;               // rope part
constexpr int kHeadDimQk = kHeadDimCkv + kHeadDimKpe;  // 576

constexpr int kRowsPerTile = 64;              // query rows (token, head) per CTA tile
constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kPlanKvTile = 64;               // granularity the planner splits KV ranges at

// Output phase: warp w accumulates O[all 64 rows, columns 64 w .. 64 w + 63].
constexpr int kOutColsPerWarp = kHeadDimCkv / kWarps;  // 64

// Shared memory rows of Q / KV (16-bit elements; rows of 576 elements = 72 chunks of 16
// bytes, swizzled by chunk ^ (row & 7) so that ldmatrix reads of 8 rows hit 8 different
// bank groups).
constexpr int kChunksPerRow = kHeadDimQk / 8;          // 72
constexpr int kRowBytes = kHeadDimQk * 2;              // 1152
constexpr int kQBytes = kRowsPerTile * kRowBytes;      // 73728
constexpr int kScoreRowGroups = kRowsPerTile / 16;     // 4

// KV tile of kKvTile tokens, kStages tiles resident in shared memory.
template <int KvTile, int Stages>
struct KvConfig {
  static constexpr int kKvTile = KvTile;
  static constexpr int kStages = Stages;
  // Score phase: warp w < kScoreWarps computes S[16 rows of group w % 4, kScoreTokensPerWarp
  // tokens of half w / 4]; a 16-token tile has one half (warps 4..7 skip the score phase).
  static constexpr int kScoreHalves = KvTile >= 32 ? 2 : 1;
  static constexpr int kScoreWarps = kScoreRowGroups * kScoreHalves;
  static constexpr int kScoreTokensPerWarp = KvTile / kScoreHalves;  // 32 or 16
  // KV loads: 8 threads per token (9 chunks each), 32 tokens per pass.
  static constexpr int kLoadPasses = KvTile >= 32 ? KvTile / 32 : 1;
  static constexpr int kKvStageBytes = KvTile * kRowBytes;
  static constexpr int kPChunks = KvTile / 8;                  // 16-byte chunks of a P row
  static constexpr int kPBytes = kRowsPerTile * KvTile * 2;    // P, 64 x KvTile, 16-bit
  // row max per half, alpha, row sum per half, final max
  static constexpr int kStatFloats = (2 * kScoreHalves + 2) * kRowsPerTile;
  static constexpr int kSmemBytes = kQBytes + Stages * kKvStageBytes + kPBytes + kStatFloats * 4;

  static_assert(KvTile == 16 || KvTile == 32 || KvTile == 64, "KV tile must be 16, 32 or 64");
  static_assert(Stages >= 1 && Stages <= 4, "1..4 stages");
  static_assert(kPlanKvTile % KvTile == 0, "the plan granularity must be a multiple of the tile");
  static_assert(kSmemBytes <= 232448, "sm80 MLA kernel exceeds 227 KB of shared memory");
};

static_assert(KvConfig<64, 2>::kSmemBytes == 230912 && KvConfig<32, 4>::kSmemBytes == 226816 &&
                  KvConfig<32, 2>::kSmemBytes == 153088 && KvConfig<16, 1>::kSmemBytes == 95232,
              "update CONFIGS in mla_wrapper/sm80.py and the table above");

// Combine kernel (combine_kernel.cuh): one warp per (merge item, row, column part).
constexpr int kCombineWarps = 8;
// CTAs an SM of the separate combine kernel's instances: each one's grid cap and its
// __launch_bounds__ minimum (combine_kernel.cuh), so that the grid fits the SMs at once
// (registers: the default instance 78-79 at three, the many-merges one <= 64 at four, the
// few-merges one 117-118 at two).
constexpr int kCombineCtasPerSm = 3;
constexpr int kCombineManyCtasPerSm = 4;
constexpr int kCombineFewCtasPerSm = 2;
constexpr int kCombineParts = 4;                      // column parts of a row (128 columns each)
constexpr int kCombineSlotBatch = 8;                  // partial slots a warp loads at once
// 16-bit partials (the sm90 family) of a plan whose merge items (max_merge_items: this plan's
// in eager mode, the capacity in a CUDA graph) exceed num_ctas / kCombineManyMergesDiv: a
// tile is then cut into about num_ctas / merges <= 5 pieces, and these are merged as half
// rows two slots at a time. 56 registers instead of 80 fit the grid in one wave (4 CTAs per
// SM) and a warp has half the units: H100 2026-11-25, 1.01-1.06x on such batches
// (logs/sm90_s11_h100_2026-11-25, run10), while B=1's 8-16 slots per merge keep the
// configuration above (2 slots at a time: 0.90x there; H=16 B=16, 8 slots: 0.99x).
constexpr int kCombineManyMergesDiv = 5;
constexpr int kCombineManyParts = 2;
constexpr int kCombineManySlotBatch = 2;
// A plan of at most kCombineFewMerges merge items (B=1..8: a few row tiles cut in 8-64
// pieces each, sm90's planner_cost) loads 16 slots at once where a merge has more than 8:
// one round trip to L2 for 16 slots. H100 2026-11-26 (logs/sm90_s18_h100_2026-11-26, runs
// 9-11): B=1 L=1024-65536 1.03-1.045x from a CUDA graph; merges of <= 8 slots ran 0.97-0.98x
// in 16-slot batches (hence the 8-slot path for them), and plans of 4-32 merges 0.97-0.99x
// then (hence a few-merges instance: a batch of 16 costs registers). Since the grid holds
// every unit at once (session 37), plans of up to 16 merges gain from it: H200, against 2
// (logs/sm90_s38_2026-11-27 run 4), H=64 B=4 L=2048 (four merges of 16 slots) 1.043-1.048x,
// H=128 B=4 L=1024 1.02x, H=128 B=2 1.01x, the other short and paced rows 0.99-1.01x. (The
// many-merges instance loading 4 slots a round, three CTAs an SM, ran 0.98-1.02x: run 5.)
#ifndef MLAW_COMBINE_FEW_MERGES
#define MLAW_COMBINE_FEW_MERGES 16
#endif
constexpr int kCombineFewMerges = MLAW_COMBINE_FEW_MERGES;
constexpr int kCombineFewSlotBatch = 16;
// Fused combine (8 warps per SM, mla_kernel.cuh): partial slots a warp loads at once.
constexpr int kFusedCombineSlotBatch = 8;
// The launcher fuses the combine only while merge rows <= this many per warp of the grid.
constexpr int kFusedCombineMaxRowsPerWarp = 2;

}  // namespace sm80
}  // namespace mlaw
