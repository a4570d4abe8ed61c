"""The portable sm80 MLA kernel family (CuTe mma.sync m16n8k16 + ldmatrix + cp.async).

Runs on any SM80+ GPU (Ampere, Ada, Hopper). Kernel sources: include/mla_wrapper/sm80/
(config.h holds the tile constants mirrored here), instantiated by
jit_templates/sm80_mla.cu.jinja. One library per (dtype, arch) exports

    int mlaw_sm80_mla_run(const MlaPlan* plan, const MlaRunArgs* args, cudaStream_t stream)
    int mlaw_sm80_mla_config(int32_t out[8])   # rows_per_tile, kv_tile, 512, 64, smem, threads,
                                               # kernel kv tile, stages

``mlaw_sm80_mla_run`` launches the persistent attention kernel (grid = plan.num_ctas) and the
split-KV combine kernel (fixed grid, reads the merge count from the device), so it can be
captured in a CUDA graph. The planner must build its plan with ROWS_PER_TILE rows per tile
and split KV ranges at multiples of KV_TILE tokens.

Shared-memory configurations (``config`` of the spec: KV tile tokens x stages) let the same
kernel run on every SM80+ GPU; ``config_for_smem`` picks the fastest one that fits a device's
opt-in shared memory per block. All of them accept plans split at KV_TILE = 64 tokens.
"""
from __future__ import annotations

import sys

from ..jit.spec import KernelSpec
from .planned import DTYPE_NAMES, DTYPES, HEAD_DIM_CKV, HEAD_DIM_KPE, FamilyABI  # noqa: F401

ROWS_PER_TILE = 64        # query rows (token, head) per CTA tile: kRowsPerTile
KV_TILE = 64              # KV tokens per kernel iteration: kKvTile (split granularity)
CTAS_PER_SM = 1           # one CTA per SM (every config uses most of the SM's shared memory)
PAIR_MERGE = False        # no clusters: its plans must not hold cluster pairs (CostModel.pair_merge)
MAX_HEADS = 128

# config name -> (kernel KV tile, stages, bytes of dynamic shared memory); must match
# KvConfig<tile, stages>::kSmemBytes in include/mla_wrapper/sm80/config.h. Listed fastest
# first (as measured on an H200); config_for_smem takes the first that fits.
CONFIGS = {
    "64x2": (64, 2, 230912),   # SM90 / SM100 class (227 KB per block)
    "32x4": (32, 4, 226816),   # SM90 class
    "32x2": (32, 2, 153088),   # A100 / SM80 / SM87 (163 KB per block)
    "16x1": (16, 1, 95232),    # Ada / SM86 / SM89 / SM120 (99 KB per block)
}
DEFAULT_ORDER = ("64x2", "32x4", "32x2", "16x1")

# exports, dtype names, problem checks, launch and config query: planned.FamilyABI
_ABI = FamilyABI("sm80", MAX_HEADS)
RUN_EXPORT = _ABI.run_export          # "mlaw_sm80_mla_run"
dtype_name, why_not, supports, launch, kernel_config = _ABI.interface()


def config_for_smem(smem_optin: int) -> str:
    """The fastest config whose shared memory fits ``smem_optin`` bytes per block (a device's
    ``shared_memory_per_block_optin``); ValueError if none does."""
    for name in DEFAULT_ORDER:
        if CONFIGS[name][2] <= smem_optin:
            return name
    raise ValueError(f"sm80 MLA: every config needs more than the {smem_optin} bytes of shared "
                     f"memory per block this GPU allows (smallest: {CONFIGS['16x1'][2]})")


# Opt-in shared memory per block by compute capability, for builds without a GPU at hand.
_ARCH_SMEM_OPTIN = {(8, 0): 166912, (8, 7): 166912, (8, 6): 101376, (8, 9): 101376,
                    (9, 0): 232448, (10, 0): 232448, (10, 3): 232448, (12, 0): 101376,
                    (12, 1): 101376}


def default_config(arch: str, device=None) -> str:
    """The config for ``device`` (a torch device / index: read from its properties), else
    the one a GPU of ``arch`` allows (unknown arches get the smallest)."""
    from ..jit import env  # noqa: PLC0415

    arch = env.normalize_arch(arch)
    if device is None:  # the current GPU when torch is loaded already and it is of this arch
        torch = sys.modules.get("torch")
        try:
            if torch is not None and torch.cuda.is_available() and env.device_arch() == arch:
                device = torch.cuda.current_device()
        except Exception:  # noqa: BLE001 (no usable GPU: fall back to the arch table)
            device = None
    if device is not None:
        import torch  # noqa: PLC0415

        props = torch.cuda.get_device_properties(device)
        return config_for_smem(props.shared_memory_per_block_optin)
    num = arch[len("sm_"):].rstrip("af")
    cap = (int(num[:-1]), int(num[-1]))
    return config_for_smem(_ARCH_SMEM_OPTIN.get(cap, CONFIGS["16x1"][2]))


def spec(dtype: str, arch: str, config: str | None = None, device=None) -> KernelSpec:
    """The kernel library for q/kv dtype ``dtype`` ('bf16' or 'fp16') on ``arch`` (sm_80+).

    config: a key of CONFIGS; None picks it from ``device``'s opt-in shared memory per block
    when a device is given, else from ``arch`` (see default_config).
    """
    from ..jit import env  # noqa: PLC0415

    arch = env.normalize_arch(arch)
    if arch == "host" or env.arch_major(arch) < 8:
        raise ValueError(f"sm80 MLA: arch must be sm_80 or newer, got {arch!r}")
    if config is None:
        config = default_config(arch, device)
    if config not in CONFIGS:
        raise ValueError(f"sm80 MLA: config must be one of {sorted(CONFIGS)}, got {config!r}")
    return KernelSpec(family="sm80", template="sm80_mla.cu.jinja", arch=arch,
                      params=(("dtype", dtype_name(dtype)), ("config", config)),
                      exports=_ABI.exports, header_dirs=("common", "merge", "sm80"),
                      use_cutlass=True)


def warmup_specs(arch: str, dtypes: list[str]) -> list[KernelSpec]:
    """Specs `python -m mla_wrapper warmup` builds for this arch (sm_80 and newer)."""
    from ..jit import env  # noqa: PLC0415

    arch = env.normalize_arch(arch)
    if arch == "host" or env.arch_major(arch) < 8:
        return []
    return [spec(d, arch) for d in dtypes if DTYPE_NAMES.get(str(d)) in DTYPES]


def smem_bytes_needed(smem_per_block_optin: int):
    """Shared memory per CTA of the config used on a GPU allowing this much per block, or None
    when no config fits."""
    try:
        return CONFIGS[config_for_smem(smem_per_block_optin)][2]
    except ValueError:
        return None
