"""Standalone kernel ops with the sgl-kernel / vLLM APIs.

Sections, one per kernel family: its KernelSpec factory, its entry in ``warmup_specs`` and
its public functions. Kernel libraries are built/loaded on first use and cached per (dtype,
device), so the per-call cost is validation plus one ctypes call.

LSE conventions (they differ between the functions on purpose, matching their origins):
  merge_state        base 2 (log2-sum-exp), s [N, H]        -- FlashInfer / sgl-kernel
  merge_state_v2     natural log, s [N, H]                  -- vLLM kernel via sgl-kernel
  merge_attn_states  natural log, lse [H, N] (heads first)  -- vLLM
"""
from __future__ import annotations

import operator
from typing import Optional, Tuple

import torch

from ._validate import check_same_device, check_tensor, dtype_name
from .jit import KernelModule, load
from .jit.env import device_arch
from .kernels import MERGE_BASE2 as _MERGE_BASE2, MERGE_BASE_E as _MERGE_BASE_E, merge_spec

__all__ = ["merge_state", "merge_state_v2", "merge_attn_states", "merge_spec"]


# ------------------------------------------------------------------------------------------
# merge ops: merge_state, merge_state_v2 (sgl-kernel), merge_attn_states (vLLM)
# Kernels: include/mla_wrapper/merge/merge_ops.cuh; instantiation: jit_templates/merge.cu.jinja
# ------------------------------------------------------------------------------------------

MERGE_DTYPES = (torch.bfloat16, torch.float16, torch.float32)
_LSE_IN_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.float64)

_MERGE_MODULES: dict[tuple[torch.dtype, torch.device], KernelModule] = {}


def _merge_module(dtype: torch.dtype, device: torch.device) -> KernelModule:
    mod = _MERGE_MODULES.get((dtype, device))
    if mod is None:
        mod = load(merge_spec(dtype_name(dtype), device_arch(device)))
        _MERGE_MODULES[(dtype, device)] = mod
    return mod


def _check_cuda(**tensors) -> torch.device:
    """The CUDA checks, run after every dtype/shape/stride check so those fire on CPU too."""
    for name, t in tensors.items():
        if t is not None:
            check_tensor(name, t, cuda=True)
    return check_same_device(**tensors)


def _run_merge(base_e: bool, out: torch.Tensor, out_lse: Optional[torch.Tensor],
               a: torch.Tensor, a_lse: torch.Tensor, b: torch.Tensor, b_lse: torch.Tensor,
               lse_token_dim: int, tokens_with_context: int) -> None:
    """Launch the merge kernel. lse_token_dim: the lse tensors' token dim (0: [N, H], 1: [H, N])."""
    num_tokens, num_heads, head_dim = out.shape
    if num_tokens * num_heads == 0:
        return
    device = out.device
    mod = _merge_module(out.dtype, device)
    name = _MERGE_BASE_E if base_e else _MERGE_BASE2
    head_dim_of_lse = 1 - lse_token_dim
    out_lse_strides = ((out_lse.stride(lse_token_dim), out_lse.stride(head_dim_of_lse))
                       if out_lse is not None else (0, 0))
    args = (out.data_ptr(), out_lse.data_ptr() if out_lse is not None else None,
            a.data_ptr(), a_lse.data_ptr(), b.data_ptr(), b_lse.data_ptr(),
            num_tokens, num_heads, head_dim,
            out.stride(0), out.stride(1), a.stride(0), a.stride(1), b.stride(0), b.stride(1),
            *out_lse_strides,
            a_lse.stride(lse_token_dim), a_lse.stride(head_dim_of_lse),
            b_lse.stride(lse_token_dim), b_lse.stride(head_dim_of_lse),
            tokens_with_context)
    fn = getattr(mod, name)
    if device.index != torch.cuda.current_device():
        with torch.cuda.device(device):
            status = fn(*args, torch.cuda.current_stream(device).cuda_stream)
    else:
        status = fn(*args, torch.cuda.current_stream(device).cuda_stream)
    if status != 0:
        raise mod.error(name, status)


def _merge_state_impl(base_e: bool, v_a, s_a, v_b, s_b, v_merged, s_merged):
    check_tensor("v_a", v_a, dtypes=MERGE_DTYPES, ndim=3, last_dim_contiguous=True)
    n, h, d = v_a.shape
    check_tensor("v_b", v_b, dtypes=(v_a.dtype,), shape=(n, h, d), last_dim_contiguous=True)
    check_tensor("s_a", s_a, dtypes=_LSE_IN_DTYPES, shape=(n, h))
    check_tensor("s_b", s_b, dtypes=_LSE_IN_DTYPES, shape=(n, h))
    if v_merged is not None:
        check_tensor("v_merged", v_merged, dtypes=(v_a.dtype,), shape=(n, h, d),
                     last_dim_contiguous=True)
    if s_merged is not None:
        check_tensor("s_merged", s_merged, dtypes=(torch.float32,), shape=(n, h))
    device = _check_cuda(v_a=v_a, s_a=s_a, v_b=v_b, s_b=s_b, v_merged=v_merged,
                         s_merged=s_merged)
    s_a = s_a.to(torch.float32)
    s_b = s_b.to(torch.float32)
    if v_merged is None:
        v_merged = torch.empty((n, h, d), dtype=v_a.dtype, device=device)
    if s_merged is None:
        s_merged = torch.empty((n, h), dtype=torch.float32, device=device)
    _run_merge(base_e, v_merged, s_merged, v_a, s_a, v_b, s_b, lse_token_dim=0,
               tokens_with_context=n)
    return v_merged, s_merged


def merge_state(v_a: torch.Tensor, s_a: torch.Tensor, v_b: torch.Tensor, s_b: torch.Tensor,
                v_merged: Optional[torch.Tensor] = None,
                s_merged: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """Merge two partial attention states; LSE in **base 2** (sgl-kernel ``merge_state``,
    FlashInfer's cascade ``merge_state``).

    Args:
        v_a, v_b: partial outputs ``[N, H, D]``, bf16 / fp16 / fp32 (one dtype for both, and
            for ``v_merged``); any strides with a contiguous last dim (no copies are made).
        s_a, s_b: their log2-sum-exp ``[N, H]``, any float dtype (converted to float32; any
            strides). -inf marks an empty side (contributes nothing); +inf is treated as
            empty too, as vLLM does. Both sides empty gives v = 0 and s = -inf.
        v_merged: optional output ``[N, H, D]`` of v_a's dtype (contiguous last dim).
        s_merged: optional output ``[N, H]`` float32.

    Returns:
        ``(v_merged, s_merged)``: ``[N, H, D]`` in v_a's dtype and ``[N, H]`` float32, with
        ``s_merged = log2(2^s_a + 2^s_b)`` and ``v_merged`` the matching weighted average.
    """
    return _merge_state_impl(False, v_a, s_a, v_b, s_b, v_merged, s_merged)


def merge_state_v2(v_a: torch.Tensor, s_a: torch.Tensor, v_b: torch.Tensor, s_b: torch.Tensor,
                   v_merged: Optional[torch.Tensor] = None,
                   s_merged: Optional[torch.Tensor] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """Merge two partial attention states; LSE in **natural log** (sgl-kernel
    ``merge_state_v2``, vLLM's merge kernel with sgl-kernel's ``[N, H]`` LSE layout).

    Args:
        v_a, v_b: partial outputs ``[N, H, D]``, bf16 / fp16 / fp32 (one dtype for both, and
            for ``v_merged``); any strides with a contiguous last dim (no copies are made).
        s_a, s_b: their log-sum-exp (natural log) ``[N, H]``, any float dtype (converted to
            float32; any strides). -inf marks an empty side; +inf is treated as empty too
            (vLLM's convention for a partial that saw no token). Both empty: v = 0, s = -inf.
        v_merged: optional output ``[N, H, D]`` of v_a's dtype (contiguous last dim).
        s_merged: optional output ``[N, H]`` float32.

    Returns:
        ``(v_merged, s_merged)``: ``[N, H, D]`` in v_a's dtype and ``[N, H]`` float32, with
        ``s_merged = ln(e^s_a + e^s_b)``.
    """
    return _merge_state_impl(True, v_a, s_a, v_b, s_b, v_merged, s_merged)


def merge_attn_states(output: torch.Tensor, prefix_output: torch.Tensor,
                      prefix_lse: torch.Tensor, suffix_output: torch.Tensor,
                      suffix_lse: torch.Tensor, output_lse: Optional[torch.Tensor] = None,
                      prefill_tokens_with_context: Optional[int] = None) -> None:
    """Merge prefix (KV cache) and suffix (new tokens) partial attention into ``output``
    (vLLM's ``merge_attn_states``); LSE in **natural log**, laid out **[H, N]**.

    Args:
        output: ``[N, H, D]`` bf16 / fp16 / fp32, written in place.
        prefix_output, suffix_output: ``[N, H, D]``, output's dtype.
        prefix_lse, suffix_lse: ``[H, N]`` float32 (any strides).
        output_lse: optional ``[H, N]`` float32 (any strides) receiving the merged LSE.
        prefill_tokens_with_context: tokens with index >= this value take ``suffix_output``
            (and ``suffix_lse`` into ``output_lse``) unchanged, bit for bit; None means all N
            tokens are merged; values above N count as N.

    All value tensors may be views with any token/head strides; their last dim must be
    contiguous. Nothing is copied. -inf marks an empty side, +inf counts as empty too (as in
    vLLM); a merged token with both sides empty gets output 0 and LSE -inf.
    """
    check_tensor("output", output, dtypes=MERGE_DTYPES, ndim=3, last_dim_contiguous=True)
    n, h, d = output.shape
    for name, t in (("prefix_output", prefix_output), ("suffix_output", suffix_output)):
        check_tensor(name, t, dtypes=(output.dtype,), shape=(n, h, d), last_dim_contiguous=True)
    for name, t in (("prefix_lse", prefix_lse), ("suffix_lse", suffix_lse),
                    ("output_lse", output_lse)):
        if t is not None:
            check_tensor(name, t, dtypes=(torch.float32,), shape=(h, n))
    if prefill_tokens_with_context is None:
        tokens_with_context = n
    else:
        try:
            tokens_with_context = operator.index(prefill_tokens_with_context)
        except TypeError:
            raise ValueError(f"prefill_tokens_with_context: expected an int or None, got "
                             f"{type(prefill_tokens_with_context).__name__}") from None
        if tokens_with_context < 0:
            raise ValueError(f"prefill_tokens_with_context: expected >= 0, got "
                             f"{tokens_with_context}")
        tokens_with_context = min(tokens_with_context, n)
    _check_cuda(output=output, prefix_output=prefix_output, prefix_lse=prefix_lse,
                suffix_output=suffix_output, suffix_lse=suffix_lse, output_lse=output_lse)
    _run_merge(True, output, output_lse, prefix_output, prefix_lse, suffix_output, suffix_lse,
               lse_token_dim=1, tokens_with_context=tokens_with_context)
