// Tile constants of the portable sm80 MLA kernel family (mma.sync m16n8k16 + ldmatrix +
// cp.async; runs on SM80 and later, including Hopper). The Python side mirrors the values
// that the planner needs in mla_wrapper/sm80.py (ROWS_PER_TILE, KV_TILE).
// Resources (nvcc 13.0, sm_90a): 248 registers, no spills, kSmemBytes = 230912 bytes of
// dynamic shared memory, so one CTA per SM and a GPU with >= 226 KB per block (H100/H200;
// A100's 164 KB needs a smaller config, not built yet: the launcher reports it).
#pragma once

namespace mlaw {
namespace sm80 {

constexpr int kHeadDimCkv = 512;              // latent (V = the first 512 columns of K)
constexpr int kHeadDimKpe = 64;               // rope part
constexpr int kHeadDimQk = kHeadDimCkv + kHeadDimKpe;  // 576

constexpr int kRowsPerTile = 64;              // query rows (token, head) per CTA tile
constexpr int kKvTile = 64;                   // KV tokens per main-loop iteration
constexpr int kStages = 2;                    // KV tiles resident in shared memory
constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;

// Score phase: warp w computes S[16 rows of group w % 4, 32 tokens of half w / 4].
constexpr int kScoreRowGroups = kRowsPerTile / 16;     // 4
constexpr int kScoreHalves = kWarps / kScoreRowGroups; // 2
constexpr int kScoreTokensPerWarp = kKvTile / kScoreHalves;  // 32
// Output phase: warp w accumulates O[all 64 rows, columns 64 w .. 64 w + 63].
constexpr int kOutColsPerWarp = kHeadDimCkv / kWarps;  // 64

// Shared memory (16-bit elements; rows of 576 elements = 72 chunks of 16 bytes, swizzled
// by chunk ^ (row & 7) so that ldmatrix reads of 8 rows hit 8 different bank groups).
constexpr int kChunksPerRow = kHeadDimQk / 8;          // 72
constexpr int kRowBytes = kHeadDimQk * 2;              // 1152
constexpr int kQBytes = kRowsPerTile * kRowBytes;      // 73728
constexpr int kKvStageBytes = kKvTile * kRowBytes;     // 73728
constexpr int kPBytes = kRowsPerTile * kKvTile * 2;    // 8192 (P, 64 x 64, 16-bit)
constexpr int kStatFloats = 6 * kRowsPerTile;          // row max x2, alpha, row sum x2, final max
constexpr int kSmemBytes = kQBytes + kStages * kKvStageBytes + kPBytes + kStatFloats * 4;

static_assert(kSmemBytes <= 232448, "sm80 MLA kernel exceeds 227 KB of shared memory");
static_assert(kKvTile % 16 == 0 && kRowsPerTile % 16 == 0, "tiles must be multiples of 16");

// Combine kernel: one warp per (merge item, row); each lane merges 16 columns.
constexpr int kCombineWarps = 8;
constexpr int kCombineVec = kHeadDimCkv / 32;          // 16

}  // namespace sm80
}  // namespace mlaw
