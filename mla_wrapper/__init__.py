"""mla_wrapper: fast Multi-head Latent Attention (MLA) over a paged KV cache.

Public API (imported lazily: ``import mla_wrapper`` compiles nothing and loads no kernel):
  BatchMLAPagedAttentionWrapper   drop-in for flashinfer.mla.BatchMLAPagedAttentionWrapper
  cutlass_mla_decode, cutlass_mla_get_workspace_size   sgl-kernel's API
  merge_state, merge_state_v2     sgl-kernel's merge ops (base-2 / natural-log LSE)
  merge_attn_states               vLLM's prefix/suffix merge (natural-log LSE, [H, N] layout)
  mla_wrapper.torch_ops           torch.ops.mla_wrapper.* custom ops for torch.compile (import
                                  it to register them; see its docstring)
  flash_mla_sparse_fwd            FlashMLA's sparse (top-k) prefill contract
  flash_mla_with_kvcache          FlashMLA's decode call, dense or sparse (get_mla_metadata)
  BatchSparseMLAWrapper           sparse (top-k) MLA plan/run wrapper for the serving loop
  cp_gather_cache, gather_and_maybe_dequant_cache, cp_gather_and_upconvert_fp8_kv_cache
                                  vLLM's paged -> contiguous cache gathers (fp8 dequantized)
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

if TYPE_CHECKING:   # real types for checkers; at run time the names below load lazily
    from .ops import (cutlass_mla_decode, cutlass_mla_get_workspace_size, merge_attn_states,
                      merge_state, merge_state_v2)
    from .wrapper import BatchMLAPagedAttentionWrapper

_LAZY = {
    "BatchMLAPagedAttentionWrapper": "mla_wrapper.wrapper",
    "cutlass_mla_decode": "mla_wrapper.ops",
    "cutlass_mla_get_workspace_size": "mla_wrapper.ops",
    "merge_state": "mla_wrapper.ops",
    "merge_state_v2": "mla_wrapper.ops",
    "merge_attn_states": "mla_wrapper.ops",
    "flash_mla_sparse_fwd": "mla_wrapper.sparse",
    "flash_mla_with_kvcache": "mla_wrapper.sparse",
    "get_mla_metadata": "mla_wrapper.sparse",
    "BatchSparseMLAWrapper": "mla_wrapper.sparse",
    "cp_gather_cache": "mla_wrapper.cache_ops",
    "gather_and_maybe_dequant_cache": "mla_wrapper.cache_ops",
    "cp_gather_and_upconvert_fp8_kv_cache": "mla_wrapper.cache_ops",
}

__all__ = list(_LAZY) + ["__version__"]


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mla_wrapper' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(__all__)
