"""Backend selection: which kernel family serves a call on which GPU, and its host object.

  sm90     our Hopper wgmma kernel (SM90 only)                          backends/sm90.py
  sm80     portable CuTe mma.sync kernel; any SM80+ GPU                 backends/sm80.py
  cutlass  CUTLASS's SM100 MLA kernel (Blackwell only; decode, qo_len 1) backends/cutlass.py

sm80 and sm90 are *planned* families: they run our CPU planner's plan through one shared host
path (backends/planned.py). ``backend="auto"`` picks by device (SM100: cutlass, SM90: sm90,
else sm80) and falls back (logging why) when the preferred backend cannot serve a call; an
explicit backend that cannot serve it raises. Aliases (FlashInfer's names): ``fa2`` is sm80
(explicit); ``fa3`` prefers sm90 but, since FlashInfer users pass it whatever the GPU, falls
back like ``auto`` (with a log line) where sm90 cannot serve instead of raising.
``MLA_WRAPPER_SM90=0`` makes ``auto`` / ``fa3`` (and the routed ``cutlass_mla_decode``) leave
sm90 out (SM90_IN_AUTO_DEFAULT is the default); an explicit ``backend="sm90"`` is always served.

Torch-free at import time (warmup imports the family modules of this package).
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

log = logging.getLogger("mla_wrapper")

ALIASES = {"fa2": "sm80", "fa3": "sm90"}
# aliases that prefer their backend but fall back like "auto" where it cannot serve
SOFT_ALIASES = frozenset({"fa3"})
KNOWN = ("auto", "sm80", "sm90", "cutlass")
PLANNED = ("sm80", "sm90")
SM90_ENV = "MLA_WRAPPER_SM90"
PDL_ENV = "MLA_WRAPPER_PDL"
# Whether auto / fa3 pick sm90 on Hopper without MLA_WRAPPER_SM90 (=0 opts out). On since the
# sm90 grid, CUDA-graph and routed tests, memcheck and racecheck passed on an H200
# (2026-11-23); it is 1.05-1.8x sm80 on every decode case but B=1 L=4096 (0.85-0.94x: its
# split-KV combine is a second launch where sm80 fuses it).
SM90_IN_AUTO_DEFAULT = True


@dataclass(frozen=True)
class Problem:
    """What a backend must serve (from plan())."""

    num_heads: int
    page_size: int
    dtype: Any          # torch.dtype
    kv_dtype: Any
    max_qo_len: int
    causal: bool
    cuda_graph: bool = False


@dataclass(frozen=True)
class DeviceInfo:
    capability: tuple[int, int]
    smem_per_block_optin: int   # bytes of shared memory one CTA may use


def device_info(device) -> DeviceInfo:
    import torch  # noqa: PLC0415

    props = torch.cuda.get_device_properties(device)
    return DeviceInfo((props.major, props.minor), props.shared_memory_per_block_optin)


def _env_switch(name: str, default: bool) -> bool:
    """An on / off environment switch: 0 / false / no / off (any case) is off, unset or empty
    is `default`, anything else is on."""
    value = os.environ.get(name, "").strip().lower()
    if value == "":
        return default
    return value not in ("0", "false", "no", "off")


def pdl_enabled() -> bool:
    """Whether a planned wrapper lets sm90 launch attention with programmatic dependent launch
    (its start overlaps the stream's previous kernel; launcher.cuh MLAW_SM90_PDL):
    MLA_WRAPPER_PDL=0 turns it off, unset or anything else keeps it on."""
    return _env_switch(PDL_ENV, True)


def sm90_disabled() -> bool:
    """Whether auto selection skips sm90: MLA_WRAPPER_SM90=1 / 0 opts in / out, unset means
    SM90_IN_AUTO_DEFAULT."""
    return not _env_switch(SM90_ENV, SM90_IN_AUTO_DEFAULT)


def family(name: str):
    """The family module of a planned backend ('sm80' / 'sm90')."""
    if name == "sm80":
        from . import sm80  # noqa: PLC0415
        return sm80
    if name == "sm90":
        from . import sm90  # noqa: PLC0415
        return sm90
    raise ValueError(f"backend {name!r} is not a planned kernel family {PLANNED}")


def routed_family(capability: tuple[int, int]):
    """The planned family that serves the page-table API (cutlass_mla_decode) on a non-SM100
    GPU of this compute capability: sm90 on Hopper (unless disabled), else sm80."""
    return family("sm90" if capability[0] == 9 and not sm90_disabled() else "sm80")


def why_not(backend: str, problem: Problem, dev: DeviceInfo) -> str | None:
    """None when backend can serve problem on this GPU, else the reason."""
    import torch  # noqa: PLC0415

    capability = dev.capability
    major = capability[0]
    gpu = f"sm_{capability[0]}{capability[1]}"
    fp8_kv = problem.kv_dtype == torch.float8_e4m3fn   # bf16/fp16 q over an e4m3 cache: sm90
    if problem.dtype != problem.kv_dtype and not fp8_kv:
        return f"q dtype {problem.dtype} differs from kv dtype {problem.kv_dtype}"
    if problem.dtype not in (torch.bfloat16, torch.float16):
        return f"dtype {problem.dtype} is not bf16/fp16"
    if not 1 <= problem.num_heads <= 128:
        return f"num_heads {problem.num_heads} is outside 1..128"
    if backend == "sm80":
        if major < 8:
            return f"needs SM80 or newer, this GPU is {gpu}"
        from . import sm80  # noqa: PLC0415

        need = sm80.smem_bytes_needed(dev.smem_per_block_optin)
        if need is None:
            return (f"this GPU allows {dev.smem_per_block_optin} bytes of shared memory per "
                    "block, fewer than any sm80 kernel configuration needs")
        return sm80.why_not(problem.num_heads, problem.page_size, problem.dtype, problem.kv_dtype)
    if backend == "sm90":
        if major != 9:
            return (f"sm90 needs a Hopper (SM90) GPU, this GPU is {gpu}; use backend='auto' "
                    "or 'sm80'")
        from . import sm90  # noqa: PLC0415

        return sm90.why_not(problem.num_heads, problem.page_size, problem.dtype, problem.kv_dtype)
    if backend == "cutlass":
        if major != 10:
            return ("the CUTLASS SM100 MLA kernel runs on Blackwell (SM100) only, this GPU is "
                    f"{gpu}; use backend='auto' or 'sm80'")
        if fp8_kv:
            return ("an fp8 KV cache with bf16/fp16 queries is served by the sm90 kernel "
                    "(Hopper) only (cutlass_mla_decode takes fp8 queries with an fp8 cache)")
        if problem.cuda_graph:
            return "CUDA-graph mode is not supported by the SM100 backend yet"
        if problem.max_qo_len != 1:
            return f"decode only (qo_len 1), got qo_len up to {problem.max_qo_len}"
        if problem.page_size & (problem.page_size - 1):
            return f"page_size must be a power of two, got {problem.page_size}"
        return None
    return f"unknown backend {backend!r}"


def auto_order(capability: tuple[int, int]) -> list[str]:
    """The backends ``auto`` tries on a GPU of this compute capability, best first."""
    if capability[0] == 10:
        return ["cutlass", "sm80"]
    if capability[0] == 9:
        return ["sm90", "sm80"]
    return ["sm80"]


def resolve(backend: str, problem: Problem, device) -> str:
    """The backend that serves problem on device (a torch device, or a DeviceInfo); raises
    ValueError naming the reason."""
    name = ALIASES.get(backend, backend)
    if name not in KNOWN:
        raise ValueError(f"backend: expected one of {KNOWN + tuple(ALIASES)}, got {backend!r}")
    dev = device if isinstance(device, DeviceInfo) else device_info(device)
    if name != "auto" and backend not in SOFT_ALIASES:
        reason = why_not(name, problem, dev)
        if reason:
            raise ValueError(f"backend={backend!r} cannot serve this call: {reason}")
        return name
    order = auto_order(dev.capability)
    if name != "auto":          # a soft alias: its backend first, then auto's order
        order = [name] + [c for c in order if c != name]
    reasons = []
    for cand in order:
        if cand == "sm90" and sm90_disabled():
            reason = (f"left out of automatic selection by {SM90_ENV} (set {SM90_ENV}=1 or "
                      "pass backend='sm90')")
        else:
            reason = why_not(cand, problem, dev)
        if reason is None:
            if reasons:
                log.info("mla_wrapper: backend %s -> %s (%s)", backend, cand, "; ".join(reasons))
            return cand
        reasons.append(f"{cand}: {reason}")
    raise ValueError("no backend can serve this call: " + "; ".join(reasons))


def make_impl(name: str, wrapper):
    """The host object of backend ``name`` (a resolved name) for a wrapper: plan() / run()."""
    if name in PLANNED:
        from .planned import PlannedKernel  # noqa: PLC0415

        return PlannedKernel(name, wrapper, family(name))
    if name == "cutlass":
        from .cutlass import CutlassKernel  # noqa: PLC0415

        return CutlassKernel(name, wrapper)
    raise ValueError(f"backend {name!r} has no implementation")
