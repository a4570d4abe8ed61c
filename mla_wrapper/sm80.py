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

import ctypes
import sys

from .jit.spec import Export, KernelSpec

ROWS_PER_TILE = 64        # query rows (token, head) per CTA tile: kRowsPerTile
KV_TILE = 64              # KV tokens per kernel iteration: kKvTile (split granularity)
CTAS_PER_SM = 1           # one CTA per SM (every config uses most of the SM's shared memory)
HEAD_DIM_CKV = 512
HEAD_DIM_KPE = 64
MAX_HEADS = 128
DTYPES = ("bf16", "fp16")

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

_EXPORTS = (
    Export("mlaw_sm80_mla_run", ("ptr", "ptr", "stream")),
    Export("mlaw_sm80_mla_config", ("ptr",)),
)

_DTYPE_NAMES = {"bf16": "bf16", "bfloat16": "bf16", "torch.bfloat16": "bf16",
                "fp16": "fp16", "float16": "fp16", "half": "fp16", "torch.float16": "fp16"}


def dtype_name(dtype) -> str:
    """'bf16' / 'fp16' for a torch dtype or a name; ValueError otherwise."""
    name = _DTYPE_NAMES.get(str(dtype))
    if name is None:
        raise ValueError(f"sm80 MLA: dtype must be bf16 or fp16, got {dtype}")
    return name


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
    from .jit import env  # noqa: PLC0415

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
    from .jit import env  # noqa: PLC0415

    arch = env.normalize_arch(arch)
    if arch == "host" or env.arch_major(arch) < 8:
        raise ValueError(f"sm80 MLA: arch must be sm_80 or newer, got {arch!r}")
    if config is None:
        config = default_config(arch, device)
    if config not in CONFIGS:
        raise ValueError(f"sm80 MLA: config must be one of {sorted(CONFIGS)}, got {config!r}")
    return KernelSpec(family="sm80", template="sm80_mla.cu.jinja", arch=arch,
                      params=(("dtype", dtype_name(dtype)), ("config", config)),
                      exports=_EXPORTS, header_dirs=("common", "merge", "sm80"),
                      use_cutlass=True)


def warmup_specs(arch: str, dtypes: list[str]) -> list[KernelSpec]:
    """Specs `python -m mla_wrapper warmup` builds for this arch (sm_80 and newer)."""
    from .jit import env  # noqa: PLC0415

    arch = env.normalize_arch(arch)
    if arch == "host" or env.arch_major(arch) < 8:
        return []
    return [spec(d, arch) for d in dtypes if _DTYPE_NAMES.get(str(d)) in DTYPES]


def why_not(num_heads: int, page_size: int, dtype, kv_dtype=None, head_dim_ckv: int = 512,
            head_dim_kpe: int = 64) -> str | None:
    """None when the sm80 kernel serves this problem, else the reason (for logs / errors)."""
    kv_dtype = dtype if kv_dtype is None else kv_dtype
    if _DTYPE_NAMES.get(str(dtype)) is None:
        return f"dtype {dtype} is not bf16/fp16"
    if _DTYPE_NAMES.get(str(kv_dtype)) != _DTYPE_NAMES.get(str(dtype)):
        return f"q dtype {dtype} differs from kv dtype {kv_dtype}"
    if (head_dim_ckv, head_dim_kpe) != (HEAD_DIM_CKV, HEAD_DIM_KPE):
        return (f"head dims must be ({HEAD_DIM_CKV}, {HEAD_DIM_KPE}), "
                f"got ({head_dim_ckv}, {head_dim_kpe})")
    if not 1 <= num_heads <= MAX_HEADS:
        return f"num_heads {num_heads} is outside 1..{MAX_HEADS}"
    if page_size < 1:
        return f"page_size must be >= 1, got {page_size}"
    return None


def smem_bytes_needed(smem_per_block_optin: int):
    """Shared memory per CTA of the config used on a GPU allowing this much per block, or None
    when no config fits."""
    try:
        return CONFIGS[config_for_smem(smem_per_block_optin)][2]
    except ValueError:
        return None


def supports(num_heads: int, page_size: int, dtype, kv_dtype=None, head_dim_ckv: int = 512,
             head_dim_kpe: int = 64) -> bool:
    """Whether the sm80 kernel serves this problem (any page size, causal or not)."""
    return why_not(num_heads, page_size, dtype, kv_dtype, head_dim_ckv, head_dim_kpe) is None


def launch(module, plan_struct_ptr: int, run_args_ptr: int, stream: int) -> None:
    """Run attention + combine; raises KernelError naming the kernel on a nonzero status.

    plan_struct_ptr / run_args_ptr: host addresses of MlaPlan / MlaRunArgs structs (they are
    read during the call only); stream: a cudaStream_t as int (0 = default stream).
    """
    status = module.mlaw_sm80_mla_run(plan_struct_ptr, run_args_ptr, stream)
    if status != 0:
        raise module.error("mlaw_sm80_mla_run", status)


def kernel_config(module) -> dict[str, int]:
    """The compiled kernel's constants (to check that this module's mirror matches)."""
    buf = (ctypes.c_int32 * 8)()
    module.call("mlaw_sm80_mla_config", ctypes.addressof(buf))
    keys = ("rows_per_tile", "kv_tile", "head_dim_ckv", "head_dim_kpe", "smem_bytes", "threads",
            "kernel_kv_tile", "stages")
    return dict(zip(keys, buf))
