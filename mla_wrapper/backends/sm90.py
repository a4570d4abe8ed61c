"""The Hopper sm90 MLA kernel family (wgmma + TMA / cp.async, warp-specialized).

Runs on SM90 GPUs (H100, H200, H20, GH200) only: wgmma needs the arch-specific target
``sm_90a``. Kernel sources: include/mla_wrapper/sm90/, instantiated by
jit_templates/sm90_mla.cu.jinja. One library per dtype exports the same C ABI as sm80::

    int mlaw_sm90_mla_run(const MlaPlan* plan, const MlaRunArgs* args, cudaStream_t stream)
    int mlaw_sm90_mla_config(int32_t out[8])   # rows_per_tile, kv_tile, 512, 64, smem, threads,
                                               # kernel kv tile, stages

It runs the plan format of sm80 unchanged (same planner, same host path:
backends/planned.py): ROWS_PER_TILE query rows per tile, KV ranges split at multiples of
KV_TILE tokens, CTAS_PER_SM persistent CTAs per SM, a fixed combine grid (CUDA-graph safe).
"""
from __future__ import annotations

import ctypes
import os

from ..jit.spec import Export, KernelSpec
from .planned import (DTYPE_NAMES, DTYPES, HEAD_DIM_CKV, HEAD_DIM_KPE, FamilyABI,  # noqa: F401
                      is_fp8_kv)

ROWS_PER_TILE = 64        # query rows (token, head) per CTA tile (one wgmma M=64 warpgroup tile)
KV_TILE = 64              # KV tokens per kernel iteration (split granularity)
CTAS_PER_SM = 1
PAIR_MERGE = True         # the paged kernel runs in clusters of two: plans may hold cluster pairs
MAX_HEADS = 128
# The tall instance's row tile (include/mla_wrapper/sm90/tall.cuh): large decode batches over
# an fp8 (e4m3) cache with more than NARROW_HEADS and at most TALL_ROWS heads (TP4) are planned
# in 32-row tiles, which the launcher runs with both GEMMs transposed (the rows the wgmma's N:
# half a 64-row tile's tensor work); rows_per_tile_for. On by default since session 59 (its row
# exchanges across barriers of all consumer threads: racecheck clean, logs/sm90_s59_2026-11-28);
# MLA_WRAPPER_SM90_TALL=0 turns it off, =all takes it to every such decode batch (cluster
# pairs at small batches, which the 64-row plans run faster).
TALL_ROWS = 32
TALL_BATCH_DIV = 8        # tall plans from num_ctas / 8 requests (16 on 132 SMs) ...
TALL_TILES_PER_CTA = 6    # ... of at least 6 kv tiles a CTA in all, lengths not known: any
                          # (a CUDA-graph capacity; rows_per_tile_for)
NARROW_HEADS = 16         # at most this many heads: the e4m3 kernel's narrow instance instead
TALL_ENV = "MLA_WRAPPER_SM90_TALL"
# MTP batches over an fp8 cache whose requests' rows (heads x query tokens, at most NARROW_HEADS
# heads) fill more than a narrow tile and at most a tall one (H=16 x 2 tokens: TP8 with one draft
# token; H=8 x 3-4) go in the tall instance's 32-row tiles too, each request's rows one item
# (their causal limits per row: tall.cuh tall_lim), under TP4 decode's batch rule
# (rows_per_tile_for). H200 against the 64-row plans (logs/sm90_s67_2026-11-29 run 4, page 64,
# H=16 x 2): B=16-32 L=4096 1.05-1.09x faster, B=64 L=4096 / 16384 1.09 / 1.12x, B=128
# 1.12-1.13x, B=64 L=1024 1.02x, H=8 x 4 B=64 1.07x; at every batch size (TALL=all) B=1-4
# 0.89-0.99x and B=64 L=256 0.90x, which the rule leaves on 64-row plans.
# MLA_WRAPPER_SM90_TALL_MTP=0 (or MLA_WRAPPER_SM90_TALL=0) keeps them all on 64-row plans.
TALL_MTP_ENV = "MLA_WRAPPER_SM90_TALL_MTP"
TALL_MTP_DEFAULT = True
# The narrow plans (include/mla_wrapper/sm90/work.cuh kNarrowPlans): decode batches over an fp8
# cache with NARROW_MIN_HEADS..NARROW_HEADS heads that divide ROWS_PER_TILE (8 or 16: TP16 /
# TP8; the heads whose query rows the kernel loads by TMA) are planned in NARROW_ROWS-row tiles,
# whose items the narrow instance without a wgmma path runs (every item <= 16 rows, MTP's too);
# rows_per_tile_for. MLA_WRAPPER_SM90_NARROW_PLANS=0 turns them off (64-row plans: the narrow
# instance with a wgmma path for items past 16 rows or of one tile).
NARROW_ROWS = 16
NARROW_MIN_HEADS = 8      # fewer heads: the query by cp.async, the 64-row plans' kernel
NARROW_ENV = "MLA_WRAPPER_SM90_NARROW_PLANS"
ARCH = "sm_90a"           # wgmma / setmaxnreg need the arch-specific target
# warmup's --dtype names: fp8_e4m3 builds the fp8-cache library of each 16-bit query dtype
WARMUP_DTYPES = DTYPES + ("fp8_e4m3",)

# exports, dtype names, problem checks, launch and config query: planned.FamilyABI
_ABI = FamilyABI("sm90", MAX_HEADS, kv_fp8=True)   # also an fp8 (e4m3) cache: bf16/fp16 q
RUN_EXPORT = _ABI.run_export          # "mlaw_sm90_mla_run"
dtype_name, why_not, supports, launch, kernel_config = _ABI.interface()
KV_MAPS_EXPORT = "mlaw_sm90_kv_maps"  # the paged cache's TMA maps for given run arguments
KV_MAPS_KEYS = ("enabled", "wide", "paced_rows", "evict_normal_max_heads", "promotion_none",
                "paced_tile_mask")
EXPORTS = _ABI.exports + (Export(KV_MAPS_EXPORT, ("ptr", "ptr")),)


def spec(dtype, arch: str, device=None, kv_dtype=None) -> KernelSpec:
    """The kernel library for q/kv dtype ``dtype`` ('bf16' / 'fp16' or a torch dtype) on
    ``arch``, which must be sm_90a ('9.0a' and 'sm_90a' both name it); ValueError otherwise.
    ``kv_dtype`` torch.float8_e4m3fn (or 'fp8_e4m3'): the library for ``dtype`` queries over an
    fp8 e4m3 cache (its kernel widens each tile to f16 in shared memory and runs both GEMMs in
    f16, the query converted row by row; the run's ckv_scale / kpe_scale are folded in); None
    or ``dtype``: the 16-bit cache's. ``device`` is accepted for the planned-family interface
    (one configuration fits every SM90 GPU)."""
    from ..jit import env  # noqa: PLC0415

    normalized = env.normalize_arch(arch)
    if normalized != ARCH:
        raise ValueError(f"sm90 MLA: arch must be {ARCH} (Hopper, wgmma), got {arch!r}")
    params = (("dtype", dtype_name(dtype)),)
    if is_fp8_kv(kv_dtype):
        params += (("kv_dtype", "e4m3"),)
    elif kv_dtype is not None and DTYPE_NAMES.get(str(kv_dtype)) != params[0][1]:
        raise ValueError(f"sm90 MLA: kv_dtype must be {dtype}, the query's, or "
                         f"torch.float8_e4m3fn, got {kv_dtype}")
    return KernelSpec(family="sm90", template="sm90_mla.cu.jinja", arch=ARCH,
                      params=params, exports=EXPORTS,
                      header_dirs=("common", "merge", "sm80", "sm90"), use_cutlass=True)


def kv_maps(module, run_args_ptr: int) -> dict[str, int]:
    """The TMA maps the launcher makes for the MlaRunArgs struct at host address
    ``run_args_ptr`` (as run() last packed it): whether whole tiles go by TMA ('enabled'),
    whether a tile's latent goes as one 4-D box ('wide'), the paced box tokens, the KV
    stream's evict-normal head limit, whether the whole-tile maps go without L2 promotion
    ('promotion_none': few heads) and which of a paced CTA's tiles use the paced boxes
    ('paced_tile_mask', bit i: tile i; 0xffffffff: all). Host only (no launch); needs the CUDA
    driver."""
    buf = (ctypes.c_uint32 * len(KV_MAPS_KEYS))()
    module.call(KV_MAPS_EXPORT, run_args_ptr, ctypes.addressof(buf))
    return dict(zip(KV_MAPS_KEYS, buf))


def rows_per_tile_for(num_heads: int, kv_dtype=None, batch: int = 1, decode: bool = True,
                      num_ctas: int = 132, kv_lens=None, qo_indptr=None) -> int:
    """Rows per tile of this family's plans for ``num_heads`` heads over a cache of
    ``kv_dtype`` (None: the query's 16-bit dtype), ``batch`` requests (``decode``: as many query
    tokens) of ``kv_lens`` tokens (an array; None: not known) on ``num_ctas`` CTAs:
    NARROW_ROWS (the narrow plans) for an fp8 cache with 8 or 16 heads and decode, unless
    MLA_WRAPPER_SM90_NARROW_PLANS=0 or the lengths are known and so few that the planner cuts
    them in one-tile pieces (at most num_ctas / 4 kv tiles in all, none past 16 tiles:
    planner_cost), which the 64-row plans' narrow instance runs on its wgmma path (H200,
    H=16 B=1 L=1024: 0.96x with every item narrow; logs/sm90_s65_2026-11-29); TALL_ROWS
    (the tall instance) for an fp8 cache with NARROW_HEADS < num_heads <= TALL_ROWS and decode,
    or with at most NARROW_HEADS heads and not decode whose requests hold NARROW_ROWS <
    num_heads x their most query tokens (from ``qo_indptr``, host) <= TALL_ROWS rows (MTP:
    _tall_mtp), where the CTAs' work is long: more requests than cluster pairs (batch > num_ctas / 2), or
    at least num_ctas / TALL_BATCH_DIV requests of at least TALL_TILES_PER_CTA kv tiles a CTA
    in all (any lengths where they are not known: a CUDA-graph wrapper's capacity); unless
    MLA_WRAPPER_SM90_TALL=0, or at any batch with MLA_WRAPPER_SM90_TALL=all; else
    ROWS_PER_TILE.
    H200, fp8 H=32, against 64-row plans on the same tensors (logs/sm90_s61_2026-11-29 run 2,
    session 60's register-widened tall; below 1: tall faster), pages 64 / 16 / 1: B=16-128
    L=4096 0.904-0.942 / 0.844-0.924 / 0.909-0.940x, B=64 L=16384 0.887 / 0.834 / 0.916x,
    B=64 L=1024 0.936-0.942x, H=24 B=64 0.911-0.964x; but B=64 L=256 1.036-1.059x, B=16 L=512
    1.006-1.033x, B=8 0.992-1.011x, B=4 1.069-1.078x, B=1 1.006-1.070x (CUDA graphs
    1.049-1.100x): short items, whose fp32 epilogue and per-tile row exchange cost more than
    the halved GEMMs save. MTP 0.53-0.64x (session 58: every query token an item of its own,
    its tiles widened once per item). A wrapper with a CUDA-graph capacity decides once, at its
    first plan, with batch = its capacity and no lengths (backends/planned.py): tall from 16
    requests (132 CTAs), where L >= 1024 gains 6-16% and short contexts lose up to 6% (L=256
    at B=64, L=512 at B=16: 1-3%); its smaller batches then run tall plans, with cluster pairs
    where they fit."""
    from . import _env_switch  # noqa: PLC0415

    if (is_fp8_kv(kv_dtype) and decode and NARROW_MIN_HEADS <= num_heads <= NARROW_HEADS
            and ROWS_PER_TILE % num_heads == 0 and _env_switch(NARROW_ENV, True)):
        one_tile_pieces = kv_lens is not None and len(kv_lens) > 0 and \
            int(kv_lens.max()) <= 16 * KV_TILE and \
            int(((kv_lens + KV_TILE - 1) // KV_TILE).sum()) <= num_ctas // 4
        return ROWS_PER_TILE if one_tile_pieces else NARROW_ROWS
    if not (is_fp8_kv(kv_dtype) and (NARROW_HEADS < num_heads <= TALL_ROWS and decode
                                     or _tall_mtp(num_heads, decode, qo_indptr))):
        return ROWS_PER_TILE
    if os.environ.get(TALL_ENV, "").strip().lower() == "all":
        return TALL_ROWS
    if not _env_switch(TALL_ENV, True):
        return ROWS_PER_TILE
    if 2 * batch > num_ctas:
        return TALL_ROWS
    if batch >= num_ctas // TALL_BATCH_DIV and (
            kv_lens is None or int(kv_lens.sum()) >= TALL_TILES_PER_CTA * KV_TILE * num_ctas):
        return TALL_ROWS
    return ROWS_PER_TILE


def _tall_mtp(num_heads: int, decode: bool, qo_indptr) -> bool:
    """Whether an MTP batch over an fp8 cache (not ``decode``; host ``qo_indptr``) of at most
    NARROW_HEADS heads has requests of more than NARROW_ROWS and at most TALL_ROWS rows (its
    longest request's query tokens x num_heads) for the tall plans (TALL_MTP_ENV). The query
    lengths are read only here, so that other plans do not pay for them."""
    from . import _env_switch  # noqa: PLC0415

    if decode or num_heads > NARROW_HEADS or qo_indptr is None or len(qo_indptr) < 2:
        return False
    rows = num_heads * int((qo_indptr[1:] - qo_indptr[:-1]).max())
    return NARROW_ROWS < rows <= TALL_ROWS and _env_switch(TALL_MTP_ENV, TALL_MTP_DEFAULT)


def planner_cost():
    """The planner's cost model for this family: the default, with pieces of a split request at
    least 4 x sqrt(longest kv_len) tokens but at most kv_len / 16 (128 at L=1024 and 2048, 256
    at L=4096, 512 at L=16384); a batch of at most num_ctas / 4 kv tiles in all is cut in pieces
    of kv_len / 16 tokens (one kv tile up to L=1024: B=1 at most 32 CTAs busy). B=1 replayed from a CUDA graph on an H200
    (2026-11-23, benchmarks/results/decode_tuning.jsonl, tags mc128 / mc256 / mc512): 256-token
    pieces at L=4096 (22 / 27 us at H=16 / 128 against 25 / 30 with 128). H100 (2026-11-26,
    benchmarks/results/logs/sm90_s18_h100_2026-11-26 runs 4-6): this rule against the sqrt rule
    alone, B=1 from a CUDA graph: 1.15x at L=256 (H=16), 1.13 / 1.18x at L=512 (H=128 / 16),
    1.01 / 1.05x at L=1024, 1.01 / 1.04x at L=2048; B=2-8 equal; one-tile pieces that spread a
    batch over 64 or more CTAs ran 0.92-0.97x (hence the num_ctas / 4 bound).
    pair_merge: a tile cut in two pieces that are the only items of CTAs 2k and 2k + 1 is merged
    on chip by that cluster of two (the launcher runs the paged kernel in clusters of two); see
    planner.h pair_merges."""
    from ..planner import CostModel  # noqa: PLC0415

    return CostModel(min_chunk_sqrt=4, pair_merge=True, min_chunk_div=16, fine_split_div=4)


def warmup_specs(arch: str, dtypes: list[str]) -> list[KernelSpec]:
    """Specs `python -m mla_wrapper warmup` builds for this arch: the bf16/fp16 libraries on
    sm_90a, and with 'fp8_e4m3' in dtypes also the fp8-cache library of each of those query
    dtypes (bf16 alone when neither is listed); nothing elsewhere."""
    from ..jit import env  # noqa: PLC0415

    try:
        if env.normalize_arch(arch) != ARCH:
            return []
    except ValueError:
        return []
    q_dtypes = [d for d in dtypes if DTYPE_NAMES.get(str(d)) in DTYPES]
    specs = [spec(d, ARCH) for d in q_dtypes]
    if any(is_fp8_kv(d) for d in dtypes):
        specs += [spec(d, ARCH, kv_dtype="fp8_e4m3") for d in (q_dtypes or ["bf16"])]
    return specs
