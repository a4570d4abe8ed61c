// Tile constants of the Hopper (sm_90a) MLA kernel family: wgmma (warpgroup MMA) from shared
// memory, a producer warpgroup (TMA boxes, or cp.async gathers) feeding a 2-stage KV ring
// through mbarriers, two consumer warpgroups that split the KV tile's tokens for Q K^T and the
// 512 output columns for P V. The Python side mirrors what the planner needs in mla_wrapper/backends/sm90.py
// (ROWS_PER_TILE, KV_TILE); the plan format is the sm80 family's (common/plan.h).
#pragma once

#include <type_traits>

namespace mlaw {
namespace sm90 {

constexpr int kHeadDimCkv = 512;
constexpr int kHeadDimKpe = 64;
constexpr int kHeadDimQk = kHeadDimCkv + kHeadDimKpe;  // 576

constexpr int kRowsPerTile = 64;   // query rows (token, head) per CTA tile: the wgmma M
// The tall instance's row tile (tall.cuh; plans made with rows_per_tile = kTallRows): its rows
// are the N of both GEMMs, the tokens and the output columns their M.
constexpr int kTallRows = 32;
constexpr int kKvTile = 64;        // KV tokens per stage
constexpr int kPlanKvTile = 64;    // the planner's split granularity (a multiple of kKvTile)
#ifndef MLAW_SM90_PROBE_STAGES3  // probe (wrong results): 3 KV stages, the first over the Q tile
#define MLAW_SM90_PROBE_STAGES3 0
#endif
constexpr int kStages = MLAW_SM90_PROBE_STAGES3 ? 3 : 2;

constexpr int kConsumerWarpgroups = 2;
constexpr int kThreads = 128 * (1 + kConsumerWarpgroups);  // warpgroup 0 = producer
constexpr int kConsumerThreads = 128 * kConsumerWarpgroups;
// setmaxnreg budgets. The CTA's register pool is what the launch allocated: with
// __launch_bounds__(kThreads, 1), at most 64K / kThreads per thread in steps of 8 (168). An
// increase past what the decrease freed waits forever (a 48 / 232 split hung every launch on
// an H200, 2026-11-23). ptxas does allocate the code after setmaxnreg.inc up to the new count
// (probe in benchmarks/results/logs/sm90_pipe_h200_2026-11-23), but only up to 384 threads: with
// more it compiles every role within 128 registers.
// 48 / 224 since session 20: the producer's page arithmetic (FastDiv) needs more than 40, and
// the consumers compile within 224 without spills (H200, 2026-11-26: with it the H=128 page-64
// grid ran 1.03-1.05x the 40 / 232 build; logs/sm90_s20_h100_2026-11-26 run 7).
constexpr int kProducerRegs = 48;
constexpr int kConsumerRegs = 224;
constexpr int kLaunchRegsPerThread = 65536 / kThreads / 8 * 8;  // 168
static_assert(128 * kProducerRegs + 256 * kConsumerRegs <= kLaunchRegsPerThread * kThreads,
              "setmaxnreg budgets exceed the registers the launch allocates");
// An e4m3 cache's producer also widens each tile (dequant.cuh dequant_tile): with 48 / 224
// it spilled (16 bytes stored, 28-64 loaded), with 56 / 224 the fp16 instance still spilled 4
// bytes (the CTA's first plan word); 72 / 216 compiles both instances without spills (the
// consumers' SASS 16 instructions longer).
constexpr int kProducerRegsE4m3 = 72;
constexpr int kConsumerRegsE4m3 = 216;
static_assert(128 * kProducerRegsE4m3 + 256 * kConsumerRegsE4m3 <=
                  kLaunchRegsPerThread * kThreads,
              "setmaxnreg budgets exceed the registers the launch allocates");

// Q K^T: kScorers consumer warpgroups compute the scores, scorer g S[64 rows, tokens
// kScoreTokens g ..] (36 x wgmma m64nNk16, N = kScoreTokens): 2 scorers split the tile's tokens
// (N = 32), 1 scorer takes all 64 (N = 64: a third less shared-memory operand traffic, the
// other warpgroup waits) and passes the rescale factors on through shared memory.
#ifndef MLAW_SM90_SCORERS
#define MLAW_SM90_SCORERS 1
#endif
constexpr int kScorers = MLAW_SM90_SCORERS;
static_assert(kScorers == 1 || kScorers == 2, "1 or 2 scoring warpgroups");
constexpr int kScoreTokens = kKvTile / kScorers;                 // 64 or 32
// P V: consumer warpgroup g accumulates O[64 rows, columns 256 g .. 256 g + 255] (m64n256k16).
constexpr int kOutCols = kHeadDimCkv / kConsumerWarpgroups;      // 256

// Shared-memory tiles of 16-bit elements in the wgmma 128-byte-swizzle K-major layout: a
// [rows][576] tile is 9 column blocks of [rows][64 elements]; row r of a block is 128 bytes
// whose 16-byte chunks are permuted by chunk ^ (r % 8). Blocks and tiles are 1024-aligned.
constexpr int kBlockCols = 64;
constexpr int kColBlocks = kHeadDimQk / kBlockCols;              // 9
constexpr int kRowBytes = kBlockCols * 2;                        // 128
constexpr int kQBlockBytes = kRowsPerTile * kRowBytes;           // 8192
constexpr int kKvBlockBytes = kKvTile * kRowBytes;               // 8192
constexpr int kQBytes = kColBlocks * kQBlockBytes;               // 73728
constexpr int kKvStageBytes = kColBlocks * kKvBlockBytes;        // 73728
constexpr int kPBytes = kRowsPerTile * kRowBytes;                // 8192: one column block

// An FP8 (e4m3) KV cache (KvE4m3 below): a tile's 36 KB of e4m3 bytes land in the upper half of
// its 72 KB stage: the latent as 4 boxes of [64 tokens][128 columns] in the 128-byte swizzle of
// the 16-bit tiles (16-byte chunk x of token r at x ^ (r % 8)), then the rope columns as
// [64 tokens][64] unswizzled (the TMA boxes and the cp.async gathers both write this layout);
// the producer then widens them in place into the stage's 16-bit swizzled layout
// (dequant.cuh dequant_tile), or the consumers read them as they are (narrow_tiles).
constexpr int kRawBoxCols = 128;                                 // a latent box's columns (bytes)
constexpr int kRawLatentBoxes = kHeadDimCkv / kRawBoxCols;       // 4
constexpr int kRawRowBytes = kRawBoxCols;                        // 128
constexpr int kRawBlockBytes = kKvTile * kRawRowBytes;           // 8192: one latent box
constexpr int kRawRopeOffset = kRawLatentBoxes * kRawBlockBytes;  // 32768
constexpr int kRawRopeRowBytes = kHeadDimKpe;                    // 64
constexpr int kRawBytes = kRawRopeOffset + kKvTile * kRawRopeRowBytes;  // 36864
constexpr int kRawOffset = kKvStageBytes - kRawBytes;            // 36864
static_assert(kRawOffset % 1024 == 0, "the e4m3 bytes start on a 1024-byte boundary");

// Tag type of an e4m3 KV cache (the kernel's TKv; a 16-bit cache uses q's element type).
struct KvE4m3 {};

// Tag type of FlashMLA's fp8 rows (vLLM's "fp8_ds_mla" cache; the gather mode only): a token is
// 656 bytes, 512 e4m3 latent values, 4 float32 scales (one per 128 values) and 64 bf16 rope
// values. A tile lands by cp.async as: the latent in the e4m3 area's box layout, from
// kDsRawOffset (the stage's 16-bit blocks 4-7; an odd token's 128-byte box rows with their
// 64-byte halves swapped, for conflict-free reads in the widening); the scales as [64 tokens][4]
// floats just below it (the end of block 3); the rope bf16 values straight into their swizzled
// place in block 8.
// The widening (dequant.cuh dequant_tile_ds) multiplies each value by its scale in f16 and
// converts the rope to f16 in place.
struct KvDsMla {};
constexpr int kDsRowBytes = 656;
constexpr int kDsScaleByte = 512;   // a row's scales
constexpr int kDsRopeByte = 528;    // a row's rope values
constexpr int kDsRawOffset = 4 * kKvBlockBytes;                        // 32768
constexpr int kDsScaleOffset = kDsRawOffset - kKvTile * 16;            // 31744
static_assert(kDsRawOffset + kRawLatentBoxes * kRawBlockBytes == (kColBlocks - 1) * kKvBlockBytes,
              "the latent's e4m3 bytes end where the rope block begins");

// Whether the kernel widens the cache's tiles in shared memory (and runs its GEMMs in f16).
template <typename TKv>
constexpr bool kWidenedKv = std::is_same<TKv, KvE4m3>::value || std::is_same<TKv, KvDsMla>::value;

// Layout of dynamic shared memory (byte offsets).
constexpr int kSmemQ = 0;
constexpr int kSmemKv = MLAW_SM90_PROBE_STAGES3 ? kSmemQ : kSmemQ + kQBytes;
constexpr int kSmemP = kSmemKv + kStages * kKvStageBytes;
constexpr int kSmemRedMax = kSmemP + kPBytes;                                 // [2][64] float
constexpr int kSmemRedSum = kSmemRedMax + kConsumerWarpgroups * kRowsPerTile * 4;  // [2][64]
constexpr int kSmemBarriers = kSmemRedSum + kConsumerWarpgroups * kRowsPerTile * 4;
// full, empty, pair ready / exchange, Q landed, then `raw` (an e4m3 tile's bytes landed)
constexpr int kSmemBytes = kSmemBarriers + (3 * kStages + 3) * 8;
constexpr int kSmemAlign = 1024;  // swizzled tiles need 1024-byte alignment
constexpr int kSmemAlloc = kSmemBytes + kSmemAlign;

// Q rows by TMA (QTensorMaps, work.cuh) where the query layout allows; 0: always cp.async
// (A/B builds).
#ifndef MLAW_SM90_TMA_Q
#define MLAW_SM90_TMA_Q 1
#endif
#ifndef MLAW_SM90_TMA_Q_MIN_HEADS  // fewer heads: cp.async (at least 8, see make_q_maps)
#define MLAW_SM90_TMA_Q_MIN_HEADS 8
#endif

// Epilogue: consumer warpgroup g stages its O / l half as 16-bit rows in the Q tile (unused
// once the item's last score GEMM is done) at a pitch padded by 16 bytes (conflict-free
// fragment stores), then copies the rows out with 16-byte stores (512 contiguous bytes per
// warp instruction), to out or, for a split item, to its 16-bit partial slot.
constexpr int kEpiPitch = kOutCols * 2 + 16;  // 528 bytes
static_assert(kConsumerWarpgroups * kRowsPerTile * kEpiPitch <= kQBytes,
              "the epilogue's staged rows must fit in the Q tile");

// Cluster pairs (plan.h mlaw_pair_slot): each CTA writes its rows' running max and sum ([64]
// float each) and one warpgroup's O half (normalized, 16-bit, warp-major fragment order:
// [4 warps][32][32 lanes] x 4 values) into its second KV stage, and a bulk copy takes them into
// the partner's first (both are free once the item's last tile is consumed).
constexpr int kXchgSend = kSmemKv + kKvStageBytes;
constexpr int kXchgRecv = kSmemKv;
constexpr int kXchgOOffset = 2 * kRowsPerTile * 4;      // after max and sum
constexpr int kXchgWarpBytes = 32 * 32 * 8;             // one warp's O fragment
static_assert(kXchgOOffset + 4 * kXchgWarpBytes <= kKvStageBytes && kStages >= 2,
              "the pair exchange must fit in one KV stage");

static_assert(kSmemAlloc <= 232448, "sm90 MLA kernel exceeds 227 KB of shared memory");
static_assert(kPlanKvTile % kKvTile == 0, "the plan granularity must be a multiple of the tile");

// Producer: 8 threads per token (128 contiguous bytes each pass), 16 tokens per pass.
constexpr int kProducerThreads = 128;
constexpr int kLoadPasses = kKvTile / (kProducerThreads / 8);    // 4

// Named barrier ids (bar.sync / bar.arrive; 0 is __syncthreads), all in one table so that no
// two uses share one. Where each is used says why it is there.
constexpr int kBarQ = 1;            // consumers (256 threads): the previous item is done with Q
constexpr int kBarMax = 2;          // consumers: the rows' maxima (and sums at the end) written
constexpr int kBarP = 3;            // consumers: P (its first half, split roles) written
constexpr int kBarP2 = 4;           // consumers: split roles' second half of P written
constexpr int kBarEpi = 5;          // + g (5, 6): warpgroup g's output rows staged (128 threads)
constexpr int kBarXchg = 7;         // consumers: a cluster pair's exchange written
constexpr int kBarStageFree = 8;    // producer (128 threads): warp 0 has seen a stage free
constexpr int kBarWiden = 9;        // producer: dequant_tile's phases
constexpr int kBarQF16 = 10;        // consumers: q_to_f16's phases
constexpr int kBarNarrowPair = 11;  // + pm (11-14): narrow_tiles' warp pairs (64 threads)
constexpr int kBarTall = 15;        // consumers: the tall instance's rows' scales and limits
static_assert(kBarNarrowPair + 3 < kBarTall && kBarTall < 16, "a CTA has 16 named barriers");

}  // namespace sm90
}  // namespace mlaw
