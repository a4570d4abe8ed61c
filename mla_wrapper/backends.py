"""Backend selection: which kernel family serves a call on which GPU.

  sm80     portable CuTe mma.sync kernel; any SM80+ GPU (the Hopper fallback today)
  cutlass  CUTLASS's SM100 MLA kernel (Blackwell only; decode, qo_len 1)
  sm90     our Hopper wgmma kernel (not built yet; `auto` falls back to sm80 on Hopper)

``backend="auto"`` picks by device and falls back (logging why) when the preferred backend
cannot serve a call; an explicit backend that cannot serve it raises.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import torch

log = logging.getLogger("mla_wrapper")

ALIASES = {"fa2": "sm80", "fa3": "sm90"}
KNOWN = ("auto", "sm80", "sm90", "cutlass")


@dataclass(frozen=True)
class Problem:
    """What a backend must serve (from plan())."""

    num_heads: int
    page_size: int
    dtype: torch.dtype
    kv_dtype: torch.dtype
    max_qo_len: int
    causal: bool
    cuda_graph: bool = False


@dataclass(frozen=True)
class DeviceInfo:
    capability: tuple[int, int]
    smem_per_block_optin: int   # bytes of shared memory one CTA may use


def device_info(device: torch.device) -> DeviceInfo:
    props = torch.cuda.get_device_properties(device)
    return DeviceInfo((props.major, props.minor), props.shared_memory_per_block_optin)


def why_not(backend: str, problem: Problem, dev: DeviceInfo) -> str | None:
    """None when backend can serve problem on this GPU, else the reason."""
    capability = dev.capability
    major = capability[0]
    if problem.dtype != problem.kv_dtype:
        return f"q dtype {problem.dtype} differs from kv dtype {problem.kv_dtype}"
    if problem.dtype not in (torch.bfloat16, torch.float16):
        return f"dtype {problem.dtype} is not bf16/fp16"
    if not 1 <= problem.num_heads <= 128:
        return f"num_heads {problem.num_heads} is outside 1..128"
    if backend == "sm80":
        if major < 8:
            return f"needs SM80 or newer, this GPU is sm_{capability[0]}{capability[1]}"
        from . import sm80  # noqa: PLC0415

        need = sm80.smem_bytes_needed(dev.smem_per_block_optin)
        if need is None:
            return (f"this GPU allows {dev.smem_per_block_optin} bytes of shared memory per "
                    "block, fewer than any sm80 kernel configuration needs")
        return None
    if backend == "cutlass":
        if major != 10:
            return ("the CUTLASS SM100 MLA kernel runs on Blackwell (SM100) only, this GPU is "
                    f"sm_{capability[0]}{capability[1]}; use backend='auto' or 'sm80'")
        if problem.cuda_graph:
            return "CUDA-graph mode is not supported by the SM100 backend yet"
        if problem.max_qo_len != 1:
            return f"decode only (qo_len 1), got qo_len up to {problem.max_qo_len}"
        if problem.page_size & (problem.page_size - 1):
            return f"page_size must be a power of two, got {problem.page_size}"
        return None
    if backend == "sm90":
        return "the sm90 (Hopper wgmma) backend is not available in this version; use 'auto' or 'sm80'"
    return f"unknown backend {backend!r}"


def resolve(backend: str, problem: Problem, device: torch.device) -> str:
    """The backend that serves problem on device; raises ValueError naming the reason."""
    name = ALIASES.get(backend, backend)
    if name not in KNOWN:
        raise ValueError(f"backend: expected one of {KNOWN + tuple(ALIASES)}, got {backend!r}")
    dev = device_info(device)
    cap = dev.capability
    if name != "auto":
        reason = why_not(name, problem, dev)
        if reason:
            raise ValueError(f"backend={backend!r} cannot serve this call: {reason}")
        return name
    preferred = ["cutlass", "sm80"] if cap[0] == 10 else ["sm90", "sm80"] if cap[0] == 9 else ["sm80"]
    reasons = []
    for cand in preferred:
        reason = why_not(cand, problem, dev)
        if reason is None:
            if reasons:
                log.info("mla_wrapper: backend auto -> %s (%s)", cand, "; ".join(reasons))
            return cand
        reasons.append(f"{cand}: {reason}")
    raise ValueError("no backend can serve this call: " + "; ".join(reasons))
